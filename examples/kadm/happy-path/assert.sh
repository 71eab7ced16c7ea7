#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"

step "the Buckety turns Ready with its resolved name"
wait_cond buckety/orders Ready True Reconciled
expect_eq "status.backendResourceName" "$NAMESPACE.orders" "$(jp buckety/orders '{.status.backendResourceName}')"
expect_eq "status.provenance" "Created" "$(jp buckety/orders '{.status.provenance}')"

step "the implicit access and its Secret"
expect_eq "implicit label" "true" "$(jp bucketyaccess/orders '{.metadata.labels.buckety\.yolean\.se/implicit}')"
wait_cond bucketyaccess/orders Ready True
expect_secret_keys orders-topic kadm
expect_eq "Secret topic" "$NAMESPACE.orders" "$(secret_value orders-topic topic)"

step "the topic on the broker"
desc=$(kafka_admin orders-topic describe "$NAMESPACE.orders")
expect_contains "topic partitions" "partitions=3" "$desc"
expect_contains "topic config" "config.retention.ms=604800000" "$desc"

step "a consumer uses only the Secret"
probe orders-topic consumer

step "kubectl get bucketybackends lists the backend Ready"
# Cluster-scoped, read by anyone authenticated: NAME DRIVER IMPLEMENTATION
# PER-ACCESS-KEYS READY REASON ...
backend_listed() { "$KUBECTL" get bucketybackends | awk '$1 == "kafka" && $2 == "kadm" && $3 == "kafka" && / True +Reachable /' | grep -q .; }
eventually "kubectl get bucketybackends: kafka kadm kafka ... True Reachable" backend_listed
