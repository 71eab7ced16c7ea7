package kadm

import (
	"net"
	"strings"
)

// ServiceAddresses implements drivers.ServiceAddresser: the seed brokers as
// lower-case host:port, with Kafka's default port where none is given (as
// the client dials them).
func (c *Config) ServiceAddresses() []string {
	out := make([]string, 0, len(c.SeedBrokers))
	for _, s := range c.SeedBrokers {
		s = strings.ToLower(strings.TrimSpace(s))
		if s == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(s); err != nil {
			s = net.JoinHostPort(strings.Trim(s, "[]"), "9092")
		}
		out = append(out, s)
	}
	return out
}

// reservedNames are topics the services a kadm backend reaches keep for
// themselves or for well-known systems beside them: Kafka's internal topics
// (also refused by the name rules), Schema Registry, Kafka Connect's
// default topics, Confluent's and Redpanda's own. A Buckety never claims,
// adopts or converges them; a backend's reservedNames add more.
var reservedNames = []string{
	"__*",
	"_schemas",
	"_confluent*",
	"_redpanda*",
	"connect-configs", "connect-offsets", "connect-status",
}

// FoldName implements drivers.NameFolder: Kafka refuses a topic whose name
// differs from an existing one's only in '.' against '_' (they collide in
// its metric names), so reserving a name reserves its other spellings.
func (d *Driver) FoldName(name string) string { return foldTopicName(name) }

// foldTopicName is the form topic names Kafka takes for colliding share.
func foldTopicName(name string) string { return strings.ReplaceAll(name, ".", "_") }

// ReservedNames implements drivers.NameReserver.
func (d *Driver) ReservedNames() []string { return append([]string(nil), reservedNames...) }
