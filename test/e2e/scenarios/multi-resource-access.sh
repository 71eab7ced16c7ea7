# multi_resource_access SECRET BUCKETY...: the multi-resource-access
# scenario of every driver. One access (app, writing SECRET) names the
# Bucketies BUCKETY... (spec.bucketyRefs). Once it is Ready, its Secret has
# no $RESOURCE key but ${RESOURCE}s, the names in the order the access
# names them, and $RESOURCE.<buckety> for each, holding that Buckety's
# status.backendResourceName (the assert.sh's multi_resource_keys hook
# checks the Secret's exact keys). Then, for each Buckety,
# multi_resource_clients KEY runs the clients, each taking its $RESOURCE
# from the Secret's key KEY ($RESOURCE.<buckety>) and nothing else.
multi_resource_access() {
  local secret=$1 b names=() key; shift
  step "one access over $#: its Secret has ${RESOURCE}s and a $RESOURCE.<buckety> key each, no $RESOURCE"
  for b in "$@"; do wait_cond "buckety/$b" Ready True; done
  wait_cond bucketyaccess/app Ready True
  multi_resource_keys
  for b in "$@"; do
    key=$RESOURCE.$b
    names+=("$(jp "buckety/$b" '{.status.backendResourceName}')")
    expect_eq "Secret $secret $key" "${names[-1]}" "$(secret_value "$secret" "$key")"
  done
  expect_eq "Secret $secret ${RESOURCE}s" "$(IFS=,; echo "${names[*]}")" "$(secret_value "$secret" "${RESOURCE}s")"
  for b in "$@"; do
    step "the clients on $RESOURCE $b, from the Secret's key $RESOURCE.$b"
    multi_resource_clients "$RESOURCE.$b"
  done
}
