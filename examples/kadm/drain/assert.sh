#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
topic="$NAMESPACE.events"
wait_cond buckety/events Ready True Reconciled
wait_cond bucketyaccess/events Ready True
step "produce 10,000 records"
kafka_admin events-topic produce "$topic" 10000 >/dev/null
expect_eq "records before the drain" 10000 "$(kafka_admin events-topic records "$topic" | tail -1)"
step "drain it"
k patch buckety events --type=merge -p '{"spec":{"drain":{"request":"reset-1"}}}' >/dev/null
k wait --for=jsonpath='{.status.drain.phase}'=Drained buckety/events --timeout="${E2E_TIMEOUT}s" >/dev/null ||
  fail "drain reset-1: expected Drained, seen $(jp buckety/events '{.status.drain}')"
expect_eq "records after the drain" 0 "$(kafka_admin events-topic records "$topic" | tail -1)"
expect_eq "the topic is kept" true "$(kafka_admin events-topic exists "$topic" | tail -1)"
expect_eq "status.drain.initial.objects" 10000 "$(jp buckety/events '{.status.drain.initial.objects}')"
expect_eq "status.drain.deleted.objects" 10000 "$(jp buckety/events '{.status.drain.deleted.objects}')"
wait_cond buckety/events Draining False Drained
wait_cond buckety/events Ready True
step "the topic still works"
probe events-topic after-drain
step "a backend without drain.allow refuses spec.drain"
rejected "spec.drain on backend kafka" 'spec.drain: Forbidden: spec.drain is not allowed on backend "kafka"' <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: refused}
spec:
  backend: kafka
  name: "$NAMESPACE.refused"
  drain: {request: "reset-1"}
Y
