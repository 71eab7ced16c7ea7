#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
wait_cond buckety/helper Ready True
full="$NAMESPACE.preexisting"
empty="$NAMESPACE.preexisting-empty"
kafka_admin helper-topic create "$full" 2 3 >/dev/null
kafka_admin helper-topic create "$empty" 1 >/dev/null
step "a topic with records is refused"
k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: claims-full}
spec: {backend: kafka, name: "$full", defaultAccess: {credentialsSecretName: full-topic}}
Y
wait_cond buckety/claims-full Ready False AdoptionRefused
expect_contains "refusal" "$full on backend kafka already exists and holds content" "$(cond buckety/claims-full Ready message)"
expect_not_contains "no broker detail about a resource not yet owned" "records" "$(cond buckety/claims-full Ready message)"
expect_eq "nothing stamped" "" "$(jp buckety/claims-full '{.status.backendResourceName}')"
sleep 2
k get secret full-topic >/dev/null 2>&1 && fail "a Secret was written for a refused adoption"
step "an empty topic is adopted, and Delete keeps it"
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
