#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" kadm
adoption_safety claims-full full-topic "$NAMESPACE.preexisting" records "no broker detail about a resource not yet owned"

step "an empty topic made outside buckety is refused too, and Delete leaves it"
empty="$NAMESPACE.preexisting-empty"
kafka_admin helper-topic create "$empty" 1 >/dev/null
k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: claims-empty}
spec: {backend: kafka, name: "$empty", retentionPolicy: Delete, defaultAccess: {credentialsSecretName: claims-empty}}
Y
wait_cond buckety/claims-empty Ready False AdoptionRefused
expect_contains "refusal" "$empty on backend kafka already exists and no buckety installation records it" "$(cond buckety/claims-empty Ready message)"
expect_eq "nothing stamped" "" "$(jp buckety/claims-empty '{.status.provenance}')"
if k get secret claims-empty >/dev/null 2>&1; then fail "a Secret was written for a refused empty topic"; fi
k delete buckety claims-empty --wait=false >/dev/null
wait_gone buckety/claims-empty
expect_eq "refused topic kept" "true" "$(kafka_admin helper-topic exists "$empty" | tail -1)"
