#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
name="$NAMESPACE.contested"
wait_cond buckety/steady Ready True
step "the broker hangs; a Buckety claims topic $name and is deleted unprovisioned"
hang_backend
k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: first}
spec: {backend: kafka, name: "$name"}
Y
wait_cond buckety/first Ready False BackendUnreachable
expect_eq "claim of the first Buckety" "$(jp buckety/first '{.metadata.uid}')" \
  "$("$KUBECTL" get bucketyclaims -o jsonpath="{.items[?(@.spec.resourceName==\"$name\")].spec.owner.uid}")"
k delete buckety first --wait=false >/dev/null
wait_gone buckety/first
expect_eq "claims left for $name" "" \
  "$("$KUBECTL" get bucketyclaims -o jsonpath="{.items[?(@.spec.resourceName==\"$name\")].metadata.name}")"
step "another Buckety for the same name waits for the broker, not for a conflict"
k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: second}
spec: {backend: kafka, name: "$name", defaultAccess: {credentialsSecretName: second-creds}}
Y
wait_cond buckety/second Ready False BackendUnreachable
sleep 12
reason=$(cond buckety/second Ready reason)
[ "$reason" != NameConflict ] || fail "second: NameConflict after the first Buckety was deleted: $(cond buckety/second Ready message)"
step "the broker answers again: Ready within seconds"
resume_backend
back=$SECONDS
wait_cond buckety/second Ready True
took=$((SECONDS - back))
echo "figure: Ready ${took}s after the broker answered again"
[ $took -le 45 ] || fail "second: Ready only ${took}s after the broker came back (retries must not wait for the drift re-check)"
expect_eq "provenance" "Created" "$(jp buckety/second '{.status.provenance}')"
secret_keys second-creds >/dev/null
wait_cond buckety/steady Ready True
