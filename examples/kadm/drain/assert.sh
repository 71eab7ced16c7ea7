#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm

drain_drained() { expect_eq "status.drain.initial.objects" 10000 "$(jp buckety/events '{.status.drain.initial.objects}')"; }

drain_after() {
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
}
drain events events-topic "$NAMESPACE.events" reset-1 10000
