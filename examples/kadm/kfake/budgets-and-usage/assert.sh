#!/usr/bin/env bash
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
scoped_kafka || fail "this scenario needs a broker that enforces SASL and ACLs (E2E_KAFKA_SCOPED=true)"

step "the topic and its access with client quotas are Ready"
wait_cond buckety/orders Ready True
wait_cond bucketyaccess/orders-writer Ready True

step "records written show in status.usage and in kubectl get within a usage refresh"
probe orders-topic writer ReadWrite >/dev/null
used() { [ "$(jp buckety/orders '{.status.usage.endOffsets}')" -gt 0 ] 2>/dev/null; }
eventually "status.usage.endOffsets above 0" used
expect_eq "usage counts the topic's partitions" 4 "$(jp buckety/orders '{.status.usage.partitions}')"
[ "$(jp buckety/orders '{.status.usage.bytes}')" -gt 0 ] || fail "status.usage.bytes: want more than 0, seen $(jp buckety/orders '{.status.usage}')"
expect_eq "usage names how it was measured" DescribeLogDirs "$(jp buckety/orders '{.status.usage.source}')"
expect_contains "kubectl get shows USED" USED "$(k get buckety orders)"
expect_contains "no quota: QuotaWarning stays False" False "$(cond buckety/orders QuotaWarning status)"

step "a topic that would take the namespace past 6 partitions is refused at admission, with the numbers"
rejected "7 partitions" "it uses 4 and asks for 3 more, over its budget of 6 partitions (limits.partitions)" <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: payments}
spec:
  backend: kafka-budget
  name: "\${namespace}.payments"
  parameters: {partitions: "3", config.retention.bytes: "1048576", config.segment.bytes: "1048576"}
Y
expect_eq "nothing stored" "" "$(k get bucketies payments --ignore-not-found -o name)"

step "a topic with unbounded retention is refused under a disk budget"
rejected "no retention.bytes" 'spec.parameters[config.retention.bytes]: Required value: backend kafka-budget gives each namespace a disk budget (limits.diskBytes: 12Mi' <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: audit}
spec:
  backend: kafka-budget
  name: "\${namespace}.audit"
  parameters: {partitions: "1"}
Y

step "one that fits is created"
k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: payments}
spec:
  backend: kafka-budget
  name: "\${namespace}.payments"
  parameters: {partitions: "2", config.retention.bytes: "1048576", config.segment.bytes: "1048576"}
Y
wait_cond buckety/payments Ready True

step "growing past the budget is refused; shrinking retention is not"
if out=$(k patch buckety orders --type=merge -p '{"spec":{"parameters":{"partitions":"5"}}}' 2>&1); then
  fail "growing orders to 5 partitions was admitted"
fi
expect_contains "growth refused" "it uses 6 and asks for 1 more, over its budget of 6 partitions (limits.partitions)" "$out"
k patch buckety orders --type=merge -p '{"spec":{"parameters":{"config.retention.bytes":"524288"}}}' >/dev/null
wait_cond buckety/orders Ready True

step "removing partitions, which the topic keeps, is refused by name"
if out=$(k patch buckety orders --type=json -p '[{"op":"remove","path":"/spec/parameters/partitions"}]' 2>&1); then
  fail "removing partitions from orders was admitted"
fi
expect_contains "removal refused" "spec.parameters[partitions]: Forbidden: cannot be removed once set (was 4)" "$out"

step "a topic left to the broker's 1 GiB segments is refused under the disk budget"
rejected "no segment.bytes" 'spec.parameters[config.segment.bytes]: Required value: backend kafka-budget gives each namespace a disk budget' <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: slack}
spec:
  backend: kafka-budget
  name: "\${namespace}.slack"
  parameters: {partitions: "1", config.retention.bytes: "1"}
Y

step "a producer byte rate above the backend's maximum is refused at admission"
rejected "producerByteRate above the maximum" "spec.parameters[producerByteRate]" <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: BucketyAccess
metadata: {name: greedy}
spec:
  bucketyRef: {name: payments}
  credentialsSecretName: greedy-topic
  parameters: {producerByteRate: "104857600"}
Y
