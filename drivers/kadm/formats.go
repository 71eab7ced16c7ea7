package kadm

import (
	"fmt"
	"slices"
	"strings"
	"unicode/utf16"

	"github.com/Yolean/buckety-controller/drivers"
)

// Secret formats of a kadm access (spec.secretFormats): the same
// connection and credentials as the default keys, shaped as the Java
// client and librdkafka read them. They are rendered from the default
// keys of the grant (renderFormats), so every shape holds what they hold.
const (
	// FormatJava adds a Java client properties file, its JAAS line under
	// Strimzi's key name, and bootstrap.servers.
	FormatJava = "java"
	// FormatLibrdkafka adds a librdkafka properties file.
	FormatLibrdkafka = "librdkafka"

	// SecretBootstrapServers is Kafka's bootstrap.servers: the bootstrap.
	SecretBootstrapServers = "bootstrap.servers"
	// SecretClientProperties is a Java client properties file.
	SecretClientProperties = "client.properties"
	// SecretJAASConfig is the sasl.jaas.config value, as Strimzi's
	// KafkaUser Secrets name it.
	SecretJAASConfig = "sasl.jaas.config"
	// SecretLibrdkafkaConfig is a librdkafka properties file.
	SecretLibrdkafkaConfig = "librdkafka.config"
)

var secretFormats = []drivers.SecretFormat{
	{
		Name:        FormatJava,
		Description: "The Java client (kafka-clients, Spring Kafka, Kafka's own CLI tools): mount the Secret and pass client.properties as the client config (--command-config, --producer.config, Properties.load), or set sasl.jaas.config from its key as Strimzi's KafkaUser Secrets hold it.",
		Keys: []drivers.SecretKey{
			{Name: SecretBootstrapServers, Description: "Kafka's bootstrap.servers: the same addresses as bootstrap."},
			{Name: SecretClientProperties, Description: "A Java client properties file (ISO 8859-1, escaped as java.util.Properties reads it): bootstrap.servers, security.protocol, sasl.mechanism and sasl.jaas.config when the Secret holds a SASL user, ssl.truststore.type=PEM and ssl.truststore.certificates when it holds ssl.ca.pem; comments name the topic (the topics, for an access naming several Bucketies) and the group.id.prefix."},
			{Name: SecretJAASConfig, Optional: true, Description: "The sasl.jaas.config line of the SASL user (ScramLoginModule or PlainLoginModule, username and password quoted). Present when the Secret holds sasl.username."},
		},
		Several: "The same keys: the one user reaches every topic, so the properties are the same; client.properties' comment line names the topics (# topics: a,b,c) instead of the topic.",
	},
	{
		Name:        FormatLibrdkafka,
		Description: "librdkafka and the clients built on it (kcat -F, confluent-kafka-python, -go, node-rdkafka): mount the Secret and read librdkafka.config, one property=value per line.",
		Keys: []drivers.SecretKey{
			{Name: SecretLibrdkafkaConfig, Description: "A librdkafka properties file (kcat -F): bootstrap.servers, security.protocol, sasl.mechanisms, sasl.username and sasl.password as the Secret holds them; # comments name the topic (the topics, for an access naming several Bucketies) and the group.id.prefix. With a CA (ssl.ca.pem), a comment says to add ssl.ca.location pointing at the mounted ssl.ca.pem key: a properties line cannot hold a PEM."},
		},
		Several: "The same key: the one user reaches every topic, so the properties are the same; its comment line names the topics (# topics: a,b,c) instead of the topic.",
	},
}

// SecretFormats implements drivers.SecretFormatter.
func (*Driver) SecretFormats() []drivers.SecretFormat { return slices.Clone(secretFormats) }

// renderFormats adds the keys of formats to data, from data's default keys.
func renderFormats(formats []string, data map[string][]byte) error {
	for _, f := range formats {
		switch f {
		case FormatJava:
			props, jaas, err := javaProperties(data)
			if err != nil {
				return err
			}
			data[SecretBootstrapServers] = data[SecretBootstrap]
			data[SecretClientProperties] = []byte(props)
			if jaas != "" {
				data[SecretJAASConfig] = []byte(jaas)
			}
		case FormatLibrdkafka:
			conf, err := librdkafkaConfig(data)
			if err != nil {
				return err
			}
			data[SecretLibrdkafkaConfig] = []byte(conf)
		default:
			return fmt.Errorf("secret format %q: the kadm driver offers %s", f, strings.Join(drivers.FormatNames(New()), ", "))
		}
	}
	return nil
}

// topicComment is what the formats' comment line names: the topics of an
// access naming several Bucketies (the Secret's topics key), or its topic.
func topicComment(data map[string][]byte) (string, string) {
	if t, ok := data[SecretTopics]; ok {
		return SecretTopics, string(t)
	}
	return SecretTopic, string(data[SecretTopic])
}

// jaasConfig is the sasl.jaas.config line of the Secret's SASL user, ""
// without one. Quoted values escape \ and " as Kafka's JaasConfig parser
// (a StreamTokenizer) reads them.
func jaasConfig(data map[string][]byte) string {
	user, ok := data[SecretSASLUsername]
	if !ok {
		return ""
	}
	module := "org.apache.kafka.common.security.scram.ScramLoginModule"
	if string(data[SecretSASLMechanism]) == "PLAIN" {
		module = "org.apache.kafka.common.security.plain.PlainLoginModule"
	}
	q := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return fmt.Sprintf(`%s required username="%s" password="%s";`, module, q.Replace(string(user)), q.Replace(string(data[SecretSASLPassword])))
}

// javaProperties renders client.properties and returns the JAAS line too.
func javaProperties(data map[string][]byte) (string, string, error) {
	var b strings.Builder
	b.WriteString("# Kafka client properties (buckety, secret format java)\n")
	name, topics := topicComment(data)
	fmt.Fprintf(&b, "# %s: %s\n", name, propertyValue(topics))
	if p, ok := data[SecretGroupPrefix]; ok {
		fmt.Fprintf(&b, "# group.id and transactional.id must start with: %s\n", propertyValue(string(p)))
	}
	prop := func(k, v string) { fmt.Fprintf(&b, "%s=%s\n", k, propertyValue(v)) }
	prop("bootstrap.servers", string(data[SecretBootstrap]))
	if p, ok := data[SecretSecurityProtocol]; ok {
		prop("security.protocol", string(p))
	}
	if m, ok := data[SecretSASLMechanism]; ok {
		prop("sasl.mechanism", string(m))
	}
	jaas := jaasConfig(data)
	if jaas != "" {
		prop("sasl.jaas.config", jaas)
	}
	if ca, ok := data[SecretSSLCAPEM]; ok {
		prop("ssl.truststore.type", "PEM")
		prop("ssl.truststore.certificates", string(ca))
	}
	return b.String(), jaas, nil
}

// propertyValue escapes v as java.util.Properties.load reads a value:
// backslash, line breaks and other control characters escaped, a leading
// space kept, and every character outside printable ASCII as \uXXXX
// (load reads ISO 8859-1).
func propertyValue(v string) string {
	var b strings.Builder
	for i, r := range v {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\f':
			b.WriteString(`\f`)
		case r == ' ' && i == 0:
			b.WriteString(`\ `)
		case r < 0x20 || r > 0x7e:
			for _, u := range utf16.Encode([]rune{r}) {
				fmt.Fprintf(&b, `\u%04x`, u)
			}
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// librdkafkaConfig renders librdkafka.config. librdkafka's file format
// has no escapes: a value with a line break cannot be written, and is
// refused rather than split into lines that would read as other
// properties.
func librdkafkaConfig(data map[string][]byte) (string, error) {
	var b strings.Builder
	b.WriteString("# librdkafka properties (buckety, secret format librdkafka): kcat -F librdkafka.config\n")
	name, topics := topicComment(data)
	fmt.Fprintf(&b, "# %s: %s\n", name, topics)
	if p, ok := data[SecretGroupPrefix]; ok {
		fmt.Fprintf(&b, "# group.id and transactional.id must start with: %s\n", p)
	}
	var err error
	prop := func(k string, v []byte) {
		if strings.ContainsAny(string(v), "\r\n") && err == nil {
			err = fmt.Errorf("secret format %s: the value of %s holds a line break, which a librdkafka properties file cannot hold", FormatLibrdkafka, k)
		}
		fmt.Fprintf(&b, "%s=%s\n", k, v)
	}
	prop("bootstrap.servers", data[SecretBootstrap])
	if p, ok := data[SecretSecurityProtocol]; ok {
		prop("security.protocol", []byte(strings.ToLower(string(p))))
	}
	if m, ok := data[SecretSASLMechanism]; ok {
		prop("sasl.mechanisms", m)
	}
	if u, ok := data[SecretSASLUsername]; ok {
		prop("sasl.username", u)
		prop("sasl.password", data[SecretSASLPassword])
	}
	if _, ok := data[SecretSSLCAPEM]; ok {
		b.WriteString("# The CA is this Secret's ssl.ca.pem key: mount the Secret and add\n# ssl.ca.location=<mount path>/ssl.ca.pem\n")
	}
	return b.String(), err
}
