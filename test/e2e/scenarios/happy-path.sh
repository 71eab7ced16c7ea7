# happy_path BUCKETY SECRET NAME KEY COLUMN...: the happy-path scenario of
# every driver. buckety/BUCKETY turns Ready as NAME, created, with an
# implicit access writing SECRET, whose KEY holds NAME; the assert.sh's
# hook happy_path_backend NAME SECRET checks the resource on the server; a
# consumer uses the Secret; and kubectl get bucketybackends lists the
# backend with the first columns COLUMN... (name, driver, ...) Ready.
happy_path() {
  local buckety=$1 secret=$2 name=$3 key=$4; shift 4
  step "the Buckety turns Ready with its resolved name"
  wait_cond "buckety/$buckety" Ready True Reconciled
  expect_eq "status.backendResourceName" "$name" "$(jp "buckety/$buckety" '{.status.backendResourceName}')"
  expect_eq "status.provenance" "Created" "$(jp "buckety/$buckety" '{.status.provenance}')"

  step "the implicit access and its Secret"
  expect_eq "implicit label" "true" "$(jp "bucketyaccess/$buckety" '{.metadata.labels.buckety\.yolean\.se/implicit}')"
  wait_cond "bucketyaccess/$buckety" Ready True
  expect_keys "$secret"
  expect_eq "Secret $key" "$name" "$(secret_value "$secret" "$key")"

  step "the $RESOURCE on the $SERVER"
  happy_path_backend "$name" "$secret"

  step "a consumer uses only the Secret"
  probe "$secret" consumer

  step "kubectl get bucketybackends lists the backend Ready"
  # Cluster-scoped, read by anyone authenticated: NAME DRIVER IMPLEMENTATION
  # PER-ACCESS-KEYS READY REASON ...
  eventually "kubectl get bucketybackends: $* ... True Reachable" backend_listed "$@"
}

# backend_listed COLUMN...: kubectl get bucketybackends has a line whose
# first columns are COLUMN..., Ready True Reachable.
backend_listed() {
  "$KUBECTL" get bucketybackends |
    awk -v want="$*" 'BEGIN { n = split(want, w, " ") } { for (i = 1; i <= n; i++) if ($i != w[i]) next } / True +Reachable /' | grep -q .
}
