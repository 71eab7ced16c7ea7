package kadm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
)

// scopedData is the default keys of a SASL_SSL access with a per-access
// credential.
func scopedData(password string) map[string][]byte {
	return map[string][]byte{
		SecretBootstrap:        []byte("k1:9093,k2:9093"),
		SecretTopic:            []byte("team.orders"),
		SecretSecurityProtocol: []byte("SASL_SSL"),
		SecretSSLCAPEM:         []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
		SecretSASLMechanism:    []byte("SCRAM-SHA-512"),
		SecretSASLUsername:     []byte("bky-team-orders-1"),
		SecretSASLPassword:     []byte(password),
		SecretGroupPrefix:      []byte("bky.team.orders.ab12_"),
	}
}

// javaRead parses client.properties with the JDK: java.util.Properties and
// the JAAS configuration parser (testdata/ReadClientProperties.java).
func javaRead(t *testing.T, props []byte) map[string]string {
	t.Helper()
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatalf("java (a JDK) reads client.properties as the Java client does; none on PATH: %v", err)
	}
	f := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(f, props, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(java, filepath.Join("testdata", "ReadClientProperties.java"), f).CombinedOutput()
	if err != nil {
		t.Fatalf("java read %s: %v\n%s", props, err, out)
	}
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimRight(string(out), "\n"), "\n") {
		k, v, ok := strings.Cut(l, "\t")
		if !ok {
			t.Fatalf("java printed %q", l)
		}
		got[k] = strings.NewReplacer(`\n`, "\n", `\r`, "\r", `\t`, "\t", `\\`, `\`).Replace(v)
	}
	return got
}

// TestJavaFormatReadByJava: the java format's client.properties, read as
// the Java client reads it, holds exactly the Secret's connection, and its
// sasl.jaas.config parses to the Secret's user and password, also for a
// password with every character the escapes must carry.
func TestJavaFormatReadByJava(t *testing.T) {
	for _, password := range []string{"Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2RlZmdoaWo", `a"b\c d=e:f#g!h` + "\u00e9\u4e16\U0001F600"} {
		data := scopedData(password)
		if err := renderFormats([]string{FormatJava}, data); err != nil {
			t.Fatal(err)
		}
		got := javaRead(t, data[SecretClientProperties])
		want := map[string]string{
			"bootstrap.servers":           "k1:9093,k2:9093",
			"security.protocol":           "SASL_SSL",
			"sasl.mechanism":              "SCRAM-SHA-512",
			"sasl.jaas.config":            string(data[SecretJAASConfig]),
			"ssl.truststore.type":         "PEM",
			"ssl.truststore.certificates": string(data[SecretSSLCAPEM]),
			"jaas.module":                 "org.apache.kafka.common.security.scram.ScramLoginModule",
			"jaas.flag":                   "LoginModuleControlFlag: required",
			"jaas.username":               "bky-team-orders-1",
			"jaas.password":               password,
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("password %q: Java reads %s = %q, want %q", password, k, got[k], v)
			}
		}
		if len(got) != len(want) {
			t.Errorf("password %q: Java reads %d keys, want %d: %v", password, len(got), len(want), got)
		}
		if string(data[SecretBootstrapServers]) != "k1:9093,k2:9093" {
			t.Errorf("bootstrap.servers = %q", data[SecretBootstrapServers])
		}
	}
}

// TestJavaFormatPlainAndNoUser: PLAIN gets the PlainLoginModule; a Secret
// without a user (the consumer brings its own) gets no JAAS line.
func TestJavaFormatPlainAndNoUser(t *testing.T) {
	data := map[string][]byte{SecretBootstrap: []byte("k:9092"), SecretTopic: []byte("t"), SecretSecurityProtocol: []byte("SASL_PLAINTEXT"),
		SecretSASLMechanism: []byte("PLAIN"), SecretSASLUsername: []byte("shared"), SecretSASLPassword: []byte("pw")}
	if err := renderFormats([]string{FormatJava}, data); err != nil {
		t.Fatal(err)
	}
	if got := javaRead(t, data[SecretClientProperties]); got["jaas.module"] != "org.apache.kafka.common.security.plain.PlainLoginModule" || got["jaas.password"] != "pw" {
		t.Errorf("PLAIN: Java reads %v", got)
	}
	data = map[string][]byte{SecretBootstrap: []byte("k:9092"), SecretTopic: []byte("t")}
	if err := renderFormats([]string{FormatJava}, data); err != nil {
		t.Fatal(err)
	}
	if _, ok := data[SecretJAASConfig]; ok {
		t.Errorf("a Secret without a user got sasl.jaas.config %q", data[SecretJAASConfig])
	}
	if got := javaRead(t, data[SecretClientProperties]); len(got) != 1 || got["bootstrap.servers"] != "k:9092" {
		t.Errorf("plaintext: Java reads %v, want only bootstrap.servers", got)
	}
}

// TestLibrdkafkaFormat: one property per line under librdkafka's names,
// and a value with a line break refused rather than written.
func TestLibrdkafkaFormat(t *testing.T) {
	data := scopedData("pw")
	if err := renderFormats([]string{FormatLibrdkafka}, data); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, l := range strings.Split(string(data[SecretLibrdkafkaConfig]), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		k, v, _ := strings.Cut(l, "=")
		got[k] = v
	}
	want := map[string]string{"bootstrap.servers": "k1:9093,k2:9093", "security.protocol": "sasl_ssl", "sasl.mechanisms": "SCRAM-SHA-512", "sasl.username": "bky-team-orders-1", "sasl.password": "pw"}
	if len(got) != len(want) {
		t.Errorf("librdkafka.config holds %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("librdkafka.config %s = %q, want %q", k, got[k], v)
		}
	}
	if !strings.Contains(string(data[SecretLibrdkafkaConfig]), "ssl.ca.location=<mount path>/ssl.ca.pem") {
		t.Errorf("a Secret with a CA: librdkafka.config does not say how to use it:\n%s", data[SecretLibrdkafkaConfig])
	}
	bad := scopedData("line\nsasl.username=admin")
	if err := renderFormats([]string{FormatLibrdkafka}, bad); err == nil || !strings.Contains(err.Error(), "sasl.password holds a line break") {
		t.Errorf("a password with a line break: err = %v", err)
	}
}

// TestFormatsDeclared: every key a format renders is declared by it, and
// a Secret with every format passes the driver's declaration.
func TestFormatsDeclared(t *testing.T) {
	for _, f := range drivers.FormatNames(New()) {
		data := scopedData("pw")
		if err := renderFormats([]string{f}, data); err != nil {
			t.Fatal(err)
		}
		var decl []drivers.SecretKey
		for _, sf := range New().SecretFormats() {
			if sf.Name == f {
				decl = sf.Keys
			}
		}
		for k := range data {
			if _, base := scopedData("pw")[k]; base {
				continue
			}
			found := false
			for _, d := range decl {
				found = found || d.Name == k
			}
			if !found {
				t.Errorf("format %s renders key %s it does not declare", f, k)
			}
		}
		for _, d := range decl {
			if _, ok := data[d.Name]; !ok && !d.Optional {
				t.Errorf("format %s declares key %s, always present, and did not render it", f, d.Name)
			}
		}
		if err := drivers.CheckSecretData(drivers.AllSecretKeys(New()), data); err != nil {
			t.Errorf("format %s: %v", f, err)
		}
	}
	if err := renderFormats([]string{"yaml"}, scopedData("pw")); err == nil || !strings.Contains(err.Error(), "java, librdkafka") {
		t.Errorf("an unknown format: err = %v", err)
	}
}
