# reinstall BUCKETY SECRET ADMIN: the reinstall scenario of every driver,
# on buckety/BUCKETY (retentionPolicy Delete) whose implicit access writes
# SECRET; ADMIN is kafka_admin or s3_admin. Data is written through the
# Secret; buckety is uninstalled as an operator would (controller stopped,
# every finalizer of buckety's kinds removed, the CRDs deleted, and with
# them every Buckety, access, claim and credential record in the cluster)
# and installed again from the same CRDs; the scenario's manifests are
# applied again. The Buckety is Ready on the resource it created before
# (provenance Created, by the owner record on the backend, without
# adoption keys), its new Secret reads the data, and retentionPolicy Delete
# deletes the resource. The controller and the CRDs are restored when the
# script exits, also after a failure, so the scenarios after it run.
reinstall() {
  local buckety=$1 secret=$2 admin=$3 resource value crd kind
  REINSTALL_SAVED=$(mktemp)
  trap reinstall_restore EXIT
  wait_cond "buckety/$buckety" Ready True
  resource=$(jp "buckety/$buckety" '{.status.backendResourceName}')
  [ -n "$resource" ] || fail "buckety/$buckety names no backend resource"
  value="kept-$RANDOM$RANDOM"
  step "write $value through Secret $secret"
  probe "$secret" before ReadWrite "{name: PROBE_VALUE, value: $value}"
  # The operator's Secret for the backend checks, outliving the tenant's.
  keep_secret "$secret" admin

  # Other scenarios' namespaces may still be going (their Bucketies
  # deleted by their retentionPolicy): let that finish first. A failed
  # scenario's Bucketies, left standing, go with the CRDs.
  others_deleted
  step "uninstall: stop the controller, drop every finalizer, delete the CRDs"
  scale_controller 0
  for kind in bucketies bucketyaccesses bucketyclaims bucketycredentials; do
    "$KUBECTL" get "$kind" -A -o jsonpath='{range .items[*]}{.metadata.namespace}{" "}{.metadata.name}{"\n"}{end}' |
      while read -r ns name; do
        [ -n "$name" ] || { name=$ns; ns=; }
        "$KUBECTL" ${ns:+-n "$ns"} patch "$kind" "$name" --type=merge -p '{"metadata":{"finalizers":null}}' >/dev/null ||
          fail "removing the finalizers of $kind $ns/$name"
      done
  done
  "$KUBECTL" get crd -l app.kubernetes.io/part-of=buckety -o json |
    py -c 'import json, sys
d = json.load(sys.stdin)
d.pop("metadata", None)
for i in d["items"]:
    i.pop("status", None)
    for k in ("uid", "resourceVersion", "creationTimestamp", "generation", "managedFields"):
        i["metadata"].pop(k, None)
json.dump(d, sys.stdout)' > "$REINSTALL_SAVED"
  expect_eq "buckety's CRDs saved" 5 "$(py -c 'import json, sys; print(len(json.load(open(sys.argv[1]))["items"]))' "$REINSTALL_SAVED")"
  "$KUBECTL" delete crd -l app.kubernetes.io/part-of=buckety --timeout="${E2E_TIMEOUT}s" >/dev/null || fail "deleting buckety's CRDs"
  expect_eq "CRDs left" "" "$("$KUBECTL" get crd -l app.kubernetes.io/part-of=buckety -o name)"
  if k get bucketies >/dev/null 2>&1; then fail "bucketies still served after the CRDs were deleted"; fi
  # Nothing was deleted on the backend: the finalizers were gone.
  expect_eq "$resource kept through the uninstall" true "$("$admin" admin exists "$resource" | tail -1)"

  step "reinstall: the same CRDs, the controller, the scenario's manifests"
  "$KUBECTL" create -f "$REINSTALL_SAVED" >/dev/null || fail "re-creating buckety's CRDs"
  for crd in $(py -c 'import json, sys
for i in json.load(open(sys.argv[1]))["items"]:
    print(i["metadata"]["name"])' "$REINSTALL_SAVED"); do
    "$KUBECTL" wait --for=condition=Established "crd/$crd" --timeout="${E2E_TIMEOUT}s" >/dev/null || fail "crd/$crd not Established"
  done
  scale_controller 1
  # The API server serves the kinds again a moment after Established:
  # apply until it takes them.
  eventually "the scenario's manifests applied again" reapply
  wait_cond "buckety/$buckety" Ready True
  expect_eq "provenance" Created "$(jp "buckety/$buckety" '{.status.provenance}')"
  expect_eq "the same resource" "$resource" "$(jp "buckety/$buckety" '{.status.backendResourceName}')"
  step "the new Secret $secret reads $value"
  probe "$secret" after ReadWrite "{name: PROBE_KEPT, value: $value}"

  step "retentionPolicy Delete deletes $resource"
  k delete buckety "$buckety" --wait=false >/dev/null
  wait_gone "buckety/$buckety"
  expect_eq "$resource deleted" false "$("$admin" admin exists "$resource" | tail -1)"
}

# reapply: the scenario's manifests (the directory of its assert.sh),
# applied again as run.sh applied them.
reapply() { k apply -k "$(dirname "$0")" >/dev/null; }

# others_deleted waits until no Buckety in the cluster is being deleted:
# the scenarios before it (alone, each of which stops or rolls the
# controller) leave their namespaces to go meanwhile, so this waits three
# times E2E_TIMEOUT, and on failure names what is still going, and why.
others_deleted() {
  local deadline=$((SECONDS + 3 * E2E_TIMEOUT))
  until no_buckety_deleting; do
    if [ $SECONDS -ge $deadline ]; then
      fail "the other namespaces' Bucketies deleted: not within $((3 * E2E_TIMEOUT))s; still going: $("$KUBECTL" get bucketies -A -o jsonpath='{range .items[?(@.metadata.deletionTimestamp)]}{.metadata.namespace}/{.metadata.name} {.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}; {end}')"
    fi
    sleep 2
  done
}

# no_buckety_deleting: no Buckety in the cluster is being deleted.
no_buckety_deleting() {
  [ -z "$("$KUBECTL" get bucketies -A -o jsonpath='{.items[?(@.metadata.deletionTimestamp)].metadata.name}')" ]
}

# reinstall_restore: buckety installed again, whatever reinstall reached:
# the CRDs it saved (when they are gone), the controller at one replica.
reinstall_restore() {
  if [ -s "${REINSTALL_SAVED:-}" ] && ! "$KUBECTL" get crd bucketies.buckety.yolean.se >/dev/null 2>&1; then
    echo "reinstall: restoring buckety's CRDs" >&2
    "$KUBECTL" create -f "$REINSTALL_SAVED" >/dev/null || true
    "$KUBECTL" wait --for=condition=Established crd -l app.kubernetes.io/part-of=buckety --timeout=60s >/dev/null || true
  fi
  scale_controller 1 || true
  rm -f "${REINSTALL_SAVED:-}"
}
