#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/kept Ready True
wait_cond buckety/dropped Ready True
bootstrap=$(secret_value kept-topic bootstrap)
# An admin Secret that outlives both Bucketies.
k create secret generic admin --from-literal=bootstrap="$bootstrap" >/dev/null
step "delete both"
k delete buckety kept dropped --wait=false >/dev/null
wait_gone buckety/kept
wait_gone buckety/dropped
expect_eq "Retain keeps the topic" "true" "$(kafka_admin admin exists "$NAMESPACE.kept" | tail -1)"
expect_eq "Delete removes the topic" "false" "$(kafka_admin admin exists "$NAMESPACE.dropped" | tail -1)"
