// Package kadm is the kadm driver: Kafka topics on any broker that speaks the
// Kafka protocol (Apache Kafka, Redpanda, Confluent), through franz-go's kadm
// admin client.
//
// A Buckety is one topic. Its parameters are the topic's partition count,
// replication factor and topic configs, under Kafka's own names with a
// "config." prefix. Ensure converges the broker to the spec on every call:
// it grows partitions, sets configs that differ and deletes dynamic topic
// configs the spec does not have, so removing a key reverts it to the broker
// default and out-of-band additions are reverted too. The exception is the
// operational configs Kafka's tooling sets while it moves partitions (the
// replication throttles, see operationalConfigs): reverting them in the
// middle of a reassignment would undo the throttle an operator just set, so
// buckety never sets or deletes them and refuses them as parameters. What
// Kafka cannot do in place (shrink partitions, change the replication
// factor) is reported as a DriftError and never attempted.
//
// The driver keeps no defaults of its own: an omitted partitions or
// replicationFactor is sent as -1 at creation, so the broker's
// num.partitions and default.replication.factor apply.
//
// One Backend serves every reconcile worker, and Kafka's admin APIs take many
// topics per request, so the Backend coalesces concurrent calls into one
// request per kind of request (coalesce.go): a thousand reconciles at once
// cost a handful of requests instead of several per topic, which is what
// keeps a large cluster's drift re-check cheap for the brokers.
//
// Every access receives the bootstrap address and the topic name. Since
// 0.2.0 (a minor bump: the keys are additive) a Secret also says how to
// connect when the backend itself connects with TLS or SASL, under the
// Kafka client property names consumers already set (security.protocol,
// ssl.ca.pem, sasl.mechanism); a consumer holding only bootstrap and topic
// could not connect. The backend's own SASL credentials are the
// controller's, so they are written only when the maintainer opts in per
// backend (shareCredentials), and every access that receives them is
// reported as shared.
//
// Since 0.3.0 a SASL backend without shareCredentials, on a cluster that
// enforces ACLs, gives every access a SCRAM user of its own and ALLOW ACLs
// for its role (credentials.go, acls.go). Tenants choose access names, so
// nothing an access is granted may follow from another's name: its groups
// and transactional ids sit under a PREFIXED ACL whose access part ends
// in a character Kubernetes names cannot hold, so no tenant can name an
// access into another's prefix. Operators keep their say too: a DENY ACL
// on a buckety user is never buckety's to remove, because it only narrows
// what buckety granted and Kafka lets DENY win.
//
// Client quotas (quotas.go) are set on those per-access users only. Kafka
// throttles a quota's entity as a whole, so a quota on a user every access
// shares would throttle every tenant by the busiest one: where a backend
// has no per-access users the quota parameters are refused rather than
// applied to the shared user. Every quota on a buckety user's own entity is
// buckety's, for the same reason its ALLOW ACLs are: the user is.
//
// Usage (usage.go) is measured for the whole cluster at once, because
// Kafka answers that way: DescribeLogDirs reports every replica of a
// broker in one answer, so a thousand topics cost what one does. A topic
// counts one replica per partition, as retention.bytes does, so a topic's
// usage and its footprint ((retention.bytes + segment.bytes + a set max.message.bytes)
// × partitions, from the
// parameters alone, so the webhook agrees with the controller) compare.
//
// Owner records (owners.go), which say which installation of buckety owns
// each topic it created, cannot travel with their topics (Kafka refuses
// unknown topic configs), so they live in a compacted registry topic that
// only the backend's own user reaches. A record names its topic's ID too
// (topicid.go): a name is free the moment its topic is deleted, and a
// topic someone else created under it since is not this Buckety's to
// converge, drain or delete. Inspect asks the controller, with a
// validate-only create, whether a topic exists, because a broker that
// restarted a moment ago answers Metadata without it, and a topic another
// installation owns would look free to take.
package kadm
