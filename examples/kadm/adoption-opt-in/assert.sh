#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm
topic="$NAMESPACE.legacy"

adoption_prepare() { kafka_admin helper-topic set-config "$1" retention.ms=1000000 >/dev/null; }

# adoption_drift TOPIC: refused without spec.adoption; with Adopt, the
# differences are reported and nothing is applied.
adoption_drift() {
  local msg desc
  step "without spec.adoption the topic is refused"
  k apply -f - >/dev/null <<'Y'
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: legacy}
spec:
  backend: kafka-adopt
  name: "${namespace}.legacy"
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
  desc=$(kafka_admin helper-topic describe "$1")
  expect_contains "partitions untouched" "partitions=2" "$desc"
  expect_contains "retention untouched" "config.retention.ms=1000000" "$desc"
  if k get secret legacy-topic >/dev/null 2>&1; then fail "a Secret was written before the adoption settled"; fi
}

# adoption_settle TOPIC: the parameters match the topic.
adoption_settle() {
  step "parameters matched: the adoption settles"
  k patch buckety legacy --type=merge -p '{"spec":{"parameters":{"partitions":"2","config.retention.ms":"1000000"}}}' >/dev/null
}

# adoption_settled TOPIC: the claim is Adopted; the topic is managed like any.
adoption_settled() {
  grep -qx Adopted <<<"$("$KUBECTL" get bkyc -o jsonpath="{range .items[?(@.spec.resourceName==\"$1\")]}{.spec.phase}{end}")" || fail "claim not Adopted"
  step "settled: managed like any topic"
  k patch buckety legacy --type=merge -p '{"spec":{"parameters":{"config.retention.ms":"3000000"}}}' >/dev/null
  wait_cond buckety/legacy Ready True
  expect_contains "retention applied" "config.retention.ms=3000000" "$(kafka_admin helper-topic describe "$1")"
}
adoption_opt_in "$topic" "$topic"
