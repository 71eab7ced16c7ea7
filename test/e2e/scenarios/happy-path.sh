# happy_path BUCKETY SECRET NAME KEY COLUMN...: the happy-path scenario of
# every driver. buckety/BUCKETY turns Ready as NAME, created, with an
# implicit access writing SECRET, whose KEY holds NAME; the assert.sh's
# hook happy_path_backend NAME SECRET checks the resource on the server; a
# consumer uses the Secret; kubectl get bucketybackends lists the backend
# with the first columns COLUMN... (name, driver, ...) Ready; and a tenant
# lists it too, with no credential of the settings in what it reads.
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

  step "a tenant lists the backends, with their budgets, and no credential"
  # As the namespace's default ServiceAccount, a tenant's identity: the
  # buckety-backends-view binding (to system:authenticated) grants the read.
  local as=(--as="system:serviceaccount:$NAMESPACE:default") out
  out=$("$KUBECTL" get bucketybackends -o wide "${as[@]}") || fail "kubectl get bucketybackends as a tenant: $out"
  expect_contains "the tenant's kubectl get bucketybackends -o wide" "BUDGETS" "$out"
  awk -v want="$1" '$1 == want { found = 1 } END { exit !found }' <<<"$out" || fail "kubectl get bucketybackends as a tenant: expected backend $1, seen: $out"
  out=$("$KUBECTL" get bucketybackends -o yaml "${as[@]}") || fail "kubectl get bucketybackends -o yaml as a tenant: $out"
  local secret
  for secret in "${E2E_S3_ADMIN_ACCESS_KEY:-}" "${E2E_S3_ADMIN_SECRET_KEY:-}" "${E2E_KAFKA_ADMIN_PASSWORD:-}"; do
    # The message names the variable, never the value.
    case "$out" in *"$secret"*) [ -z "$secret" ] || fail "the backends as a tenant reads them hold a credential of the e2e settings (E2E_S3_ADMIN_* or E2E_KAFKA_ADMIN_PASSWORD)" ;; esac
  done
}

# backend_listed COLUMN...: kubectl get bucketybackends has a line whose
# first columns are COLUMN..., Ready True Reachable.
backend_listed() {
  grep -q . <<<"$("$KUBECTL" get bucketybackends |
    awk -v want="$*" 'BEGIN { n = split(want, w, " ") } { for (i = 1; i <= n; i++) if ($i != w[i]) next } / True +Reachable /')"
}
