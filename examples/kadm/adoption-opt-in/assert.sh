#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/helper Ready True
topic="$NAMESPACE.legacy"
kafka_admin helper-topic create "$topic" 2 3 >/dev/null
kafka_admin helper-topic set-config "$topic" retention.ms=1000000 >/dev/null

step "the webhook rejects spec.adoption on a backend that does not allow it"
rejected "adoption without the maintainer's key" 'spec.adoption: Forbidden: Adopt is not allowed on backend "kafka"' <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: sneaky}
spec: {backend: kafka, name: "$topic", adoption: Adopt}
Y

step "without spec.adoption the topic is refused"
k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: legacy}
spec:
  backend: kafka-adopt
  name: "\${namespace}.legacy"
  parameters: {partitions: "3", config.retention.ms: "2000000"}
  defaultAccess: {credentialsSecretName: legacy-topic}
Y
wait_cond buckety/legacy Ready False AdoptionRefused
expect_contains "refusal says how to opt in" "set spec.adoption: Adopt" "$(cond buckety/legacy Ready message)"

step "Adopt: the differences are reported, nothing is applied"
k patch buckety legacy --type=merge -p '{"spec":{"adoption":"Adopt"}}' >/dev/null
wait_cond buckety/legacy Ready False AdoptionDrift
msg=$(cond buckety/legacy Ready message)
expect_contains "drift lists partitions" "partitions 2 -> 3" "$msg"
expect_contains "drift lists retention" 'config retention.ms "1000000" -> "2000000"' "$msg"
sleep 3
desc=$(kafka_admin helper-topic describe "$topic")
expect_contains "partitions untouched" "partitions=2" "$desc"
expect_contains "retention untouched" "config.retention.ms=1000000" "$desc"
k get secret legacy-topic >/dev/null 2>&1 && fail "a Secret was written before the adoption settled"

step "parameters matched: the adoption settles"
k patch buckety legacy --type=merge -p '{"spec":{"parameters":{"partitions":"2","config.retention.ms":"1000000"}}}' >/dev/null
wait_cond buckety/legacy Ready True
expect_eq "provenance" "Adopted" "$(jp buckety/legacy '{.status.provenance}')"
"$KUBECTL" get bkyc -o jsonpath="{range .items[?(@.spec.resourceName==\"$topic\")]}{.spec.phase}{end}" | grep -qx Adopted || fail "claim not Adopted"
probe legacy-topic adopted >/dev/null

step "settled: managed like any topic"
k patch buckety legacy --type=merge -p '{"spec":{"parameters":{"config.retention.ms":"3000000"}}}' >/dev/null
wait_cond buckety/legacy Ready True
expect_contains "retention applied" "config.retention.ms=3000000" "$(kafka_admin helper-topic describe "$topic")"

step "retentionPolicy Delete keeps an adopted topic"
k patch buckety legacy --type=merge -p '{"spec":{"retentionPolicy":"Delete"}}' >/dev/null
k delete buckety legacy --wait=false >/dev/null
wait_gone buckety/legacy
expect_eq "adopted topic kept" "true" "$(kafka_admin helper-topic exists "$topic" | tail -1)"
