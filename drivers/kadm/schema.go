package kadm

import (
	"slices"

	"github.com/invopop/jsonschema"

	"github.com/Yolean/buckety-controller/drivers"
)

// CEL rules of the parameters schema, evaluated by the admission webhook on
// update with oldSelf bound to the previous parameters. They mirror
// validateParams.
const (
	ruleRFImmutable   = "has(self.replicationFactor) == has(oldSelf.replicationFactor) && (!has(self.replicationFactor) || self.replicationFactor == oldSelf.replicationFactor)"
	rulePartitionGrow = "!has(oldSelf.partitions) || (has(self.partitions) && int(self.partitions) >= int(oldSelf.partitions))"
)

// noOverlap is the rule refusing a config key that duplicates a driver key.
func noOverlap(key, use string) map[string]string {
	return map[string]string{
		"rule":      "!('" + key + "' in self)",
		"message":   key + " duplicates the driver parameter " + use + "; use " + use + " instead",
		"fieldPath": "['" + key + "']",
	}
}

// notOperational is the rule refusing an operational config (see
// operationalConfigs): buckety never sets or removes it.
func notOperational(name string) map[string]string {
	key := ConfigPrefix + name
	return map[string]string{
		"rule":      "!('" + key + "' in self)",
		"message":   operationalMessage(name, operationalConfigs[name]),
		"fieldPath": "['" + key + "']",
	}
}

// The keys of a kadm access Secret.
const (
	SecretBootstrap = "bootstrap"
	// SecretTopic is the topic of an access naming one Buckety; of an
	// access naming several, it is the base of the per-resource keys
	// topic.<buckety> (drivers.SeveralKey).
	SecretTopic = "topic"
	// SecretTopics lists the topics of an access naming several
	// Bucketies (drivers.SeveralList).
	SecretTopics = "topics"
)

// secretKeys is the declaration of the kadm Secret: the one place its keys
// are listed.
var secretKeys = []drivers.SecretKey{
	{Name: SecretBootstrap, Description: "The comma-separated host:port addresses consumers bootstrap from: the backend's bootstrap, or its seedBrokers joined by \",\"."},
	{Name: SecretTopic, Optional: true, Description: "The topic name (the Buckety's status.backendResourceName), for an access naming one Buckety (spec.bucketyRef)."},
	{Name: SecretTopics, Optional: true, Description: "The topic names, comma-separated in the order the access names its Bucketies, for an access naming several (spec.bucketyRefs); added in driver 0.9.0."},
	{Name: SecretSecurityProtocol, Optional: true, Description: "Kafka's security.protocol as the backend connects: SSL, SASL_PLAINTEXT or SASL_SSL. Present when the backend has tls or sasl; absent means PLAINTEXT."},
	{Name: SecretSSLCAPEM, Optional: true, Description: "PEM CA certificates to trust (librdkafka's ssl.ca.pem; Java: ssl.truststore.type=PEM with ssl.truststore.certificates). Present when the backend has tls.ca or tls.caFile."},
	{Name: SecretSASLMechanism, Optional: true, Description: "Kafka's sasl.mechanism: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512. Present when the backend uses sasl; for a scoped access, the mechanism of its own user (credentials.mechanism, SCRAM-SHA-512 by default)."},
	{Name: SecretSASLUsername, Optional: true, Description: "The SASL username: the access's own SCRAM user when the access is scoped (ScopingNotImplemented=False), or the backend's own user when the backend sets shareCredentials: true (not scoped)."},
	{Name: SecretSASLPassword, Optional: true, Description: "The password of sasl.username: random (256 bits) for a scoped access, and stored nowhere but this Secret."},
	{Name: SecretGroupPrefix, Optional: true, Description: "The prefix of the consumer groups (group.id) and transactional ids (transactional.id) a scoped access may use: bky.<namespace>.<access>.<hash>_ followed by its consumerGroupPrefix parameter. Present when the access is scoped; added in driver 0.3.0."},
	{Name: SecretTopic, Optional: true, PerResource: true, Description: "The topic of one Buckety of an access naming several (spec.bucketyRefs): topic.<buckety> (<namespace>_<buckety> for another namespace's) holds that Buckety's status.backendResourceName. The one user has the role's rights on every one of them. Added in driver 0.9.0."},
}

// SecretKeys implements drivers.Driver.
func (*Driver) SecretKeys() []drivers.SecretKey { return slices.Clone(secretKeys) }

// Schemas implements drivers.Driver.
func (*Driver) Schemas() drivers.Schemas {
	props := jsonschema.NewProperties()
	props.Set(ParamPartitions, &jsonschema.Schema{
		Type:        "string",
		Pattern:     `^[1-9][0-9]{0,9}$`,
		Description: "Partition count. Grows in place; Kafka cannot shrink it (a lower value is rejected on update, and a topic that has more partitions than this reports ParameterDrift). Omitted: the broker's num.partitions at creation, never touched later.",
	})
	props.Set(ParamReplicationFactor, &jsonschema.Schema{
		Type:        "string",
		Pattern:     `^[1-9][0-9]{0,4}$`,
		Description: "Replication factor, set at creation. Immutable. Omitted: the broker's default.replication.factor.",
	})
	params := &jsonschema.Schema{
		Type:        "object",
		Title:       "kadm driver: Buckety spec.parameters",
		Description: "Parameters of a Kafka topic. Values are strings. Keys are partitions, replicationFactor, or config.<name> for any Kafka topic config (passed through unmodified; keys not in spec are removed from the topic so the broker default applies, except the operational configs Kafka's tools set during reassignments, leader.replication.throttled.replicas and follower.replication.throttled.replicas, which buckety never sets or removes and refuses here).",
		Properties:  props,
		PatternProperties: map[string]*jsonschema.Schema{
			`^config\.[a-z][a-z0-9]*([._-][a-z0-9]+)*$`: {Type: "string", Description: "A Kafka topic config under its Kafka name, e.g. config.retention.ms."},
		},
		AdditionalProperties: jsonschema.FalseSchema,
		Extras: map[string]any{
			"x-kubernetes-validations": append([]map[string]string{
				{"rule": ruleRFImmutable, "message": "replicationFactor is immutable after creation: Kafka cannot change a topic's replication factor in place", "fieldPath": ".replicationFactor"},
				{"rule": rulePartitionGrow, "message": "partitions can only grow, and cannot be removed once set: Kafka cannot remove partitions", "fieldPath": ".partitions"},
				noOverlap("config.num.partitions", ParamPartitions),
				noOverlap("config.partitions", ParamPartitions),
				noOverlap("config.replication.factor", ParamReplicationFactor),
				noOverlap("config.default.replication.factor", ParamReplicationFactor),
			}, operationalRules()...),
			"x-buckety-immutable": []string{ParamReplicationFactor},
		},
	}
	accessProps := jsonschema.NewProperties()
	accessProps.Set(AccessConsumerGroupPrefix, &jsonschema.Schema{
		Type:        "string",
		Pattern:     `^[a-zA-Z0-9._-]{1,249}$`,
		Description: "Appended to the access's own group prefix (Secret key group.id.prefix) on a scoped backend, whose ACLs then allow only groups and transactional ids starting with the result. Not enforced on a backend that does not scope (ScopingNotImplemented).",
	})
	for _, q := range quotaKeys {
		accessProps.Set(q.param, q.schema())
	}
	access := &jsonschema.Schema{
		Type:                 "object",
		Title:                "kadm driver: BucketyAccess spec.parameters",
		Properties:           accessProps,
		AdditionalProperties: jsonschema.FalseSchema,
	}
	return drivers.Schemas{Parameters: params, AccessParameters: access}
}

// quotaDocs describes each quota parameter, for the access-parameters
// schema.
var quotaDocs = map[string]string{
	AccessProducerByteRate:       "Kafka client quota producer_byte_rate of the access's own user: the bytes per second it may produce, per broker, as a positive integer.",
	AccessConsumerByteRate:       "Kafka client quota consumer_byte_rate of the access's own user: the bytes per second it may fetch, per broker, as a positive integer.",
	AccessRequestPercentage:      "Kafka client quota request_percentage of the access's own user: the percentage of one broker thread's time its requests may take (above 100 spans threads), as a positive decimal such as 25 or 12.5.",
	AccessControllerMutationRate: "Kafka client quota controller_mutation_rate of the access's own user: the partitions per second it may create or delete, as a positive decimal.",
}

// schema is the access-parameters schema of a quota parameter.
func (q quotaKey) schema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     q.pattern().String(),
		Description: quotaDocs[q.param] + " At most the backend's quotas." + q.maxField() + "; when unset, the backend's quotas." + q.defaultField() + " applies, if any. Only on a backend that issues a user per access (sasl without shareCredentials): refused elsewhere, where it would throttle every tenant.",
	}
}

// operationalRules refuses every operational config, in a stable order.
func operationalRules() []map[string]string {
	var out []map[string]string
	for _, name := range OperationalConfigs() {
		out = append(out, notOperational(name))
	}
	return out
}
