#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm
adoption_safety claims-full full-topic "$NAMESPACE.preexisting" records "no broker detail about a resource not yet owned"

step "an empty topic is adopted, and Delete keeps it"
empty="$NAMESPACE.preexisting-empty"
kafka_admin helper-topic create "$empty" 1 >/dev/null
k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: claims-empty}
spec: {backend: kafka, name: "$empty", retentionPolicy: Delete}
Y
wait_cond buckety/claims-empty Ready True
expect_eq "provenance" "Adopted" "$(jp buckety/claims-empty '{.status.provenance}')"
k delete buckety claims-empty --wait=false >/dev/null
wait_gone buckety/claims-empty
expect_eq "adopted topic kept" "true" "$(kafka_admin helper-topic exists "$empty" | tail -1)"
