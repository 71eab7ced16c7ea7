# claims_and_outage BACKEND NAME WHAT: the claims-and-outage scenario of
# every driver. While the backend hangs, a Buckety for NAME waits, holding
# no claim (the adoption check comes first), and is deleted unprovisioned;
# the next Buckety for NAME waits for the backend, not for a conflict, and
# is Ready soon after the backend answers again (WHAT names the backend in
# messages).
claims_and_outage() {
  local backend=$1 name=$2 what=$3 reason back took
  wait_cond buckety/steady Ready True
  step "the $what hangs; a Buckety for $name waits, unclaimed, and is deleted unprovisioned"
  hang_backend
  k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: first}
spec: {backend: $backend, name: "$name"}
Y
  wait_cond buckety/first Ready False BackendUnreachable
  # The adoption check comes before the claim: nothing is claimed while the
  # $what cannot be checked.
  expect_eq "claims on $name while the $what hangs" "" \
    "$("$KUBECTL" get bucketyclaims -o jsonpath="{.items[?(@.spec.resourceName==\"$name\")].metadata.name}")"
  k delete buckety first --wait=false >/dev/null
  wait_gone buckety/first
  expect_eq "claims left for $name" "" \
    "$("$KUBECTL" get bucketyclaims -o jsonpath="{.items[?(@.spec.resourceName==\"$name\")].metadata.name}")"
  step "another Buckety for the same name waits for the $what, not for a conflict"
  k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: second}
spec: {backend: $backend, name: "$name", defaultAccess: {credentialsSecretName: second-creds}}
Y
  wait_cond buckety/second Ready False BackendUnreachable
  sleep 12
  reason=$(cond buckety/second Ready reason)
  [ "$reason" != NameConflict ] || fail "second: NameConflict after the first Buckety was deleted: $(cond buckety/second Ready message)"
  step "the $what answers again: Ready"
  resume_backend
  back=$SECONDS
  # A figure, not a bound: a loaded machine stretches it while the
  # product is right (wait_cond's E2E_TIMEOUT is the backstop).
  wait_cond buckety/second Ready True
  took=$((SECONDS - back))
  echo "figure: Ready ${took}s after the $what answered again"
  expect_eq "provenance" "Created" "$(jp buckety/second '{.status.provenance}')"
  secret_keys second-creds >/dev/null
  wait_cond buckety/steady Ready True
}
