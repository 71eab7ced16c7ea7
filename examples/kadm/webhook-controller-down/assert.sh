#!/usr/bin/env bash
# e2e: exclusive (scales the controller to zero)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/orders Ready True
trap 'scale_controller 1' EXIT
scale_controller 0
rejected "unknown backend" 'no such backend in the controller config; available: "kafka"' <<'Y'
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: b1}
spec: {backend: kafak}
Y
rejected "missing label" 'the Buckety has no label "team"' <<'Y'
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: b2}
spec: {backend: kafka, name: "${label['team']}-b2"}
Y
rejected "invalid parameter" 'spec.parameters[partitions]' <<'Y'
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: b3}
spec: {backend: kafka, parameters: {partitions: "zero"}}
Y
out=$(k patch buckety orders --type=merge -p '{"spec":{"parameters":{"replicationFactor":"2"}}}' 2>&1) && fail "an immutable change was admitted"
expect_contains "immutable update" "is immutable after creation" "$out"
