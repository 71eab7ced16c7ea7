# sharing BUCKETY SECRET NAME KEY: the sharing scenario of every driver.
# buckety/BUCKETY (NAME, its implicit access writing SECRET) is Ready; a
# second namespace, the consumer, asks for ReadOnly access to it and is
# refused until the owner shares it (the refusal says what the owner
# adds); once shared, the consumer's access gets a Secret of its own whose
# KEY holds NAME and which a ReadOnly client uses; the owner sees the
# consumer by name; the rule removed, the consumer's Secret is gone and
# its access says NotShared.
sharing() {
  local buckety=$1 secret=$2 name=$3 key=$4 owner=$NAMESPACE consumer="$NAMESPACE-consumer"
  wait_cond "buckety/$buckety" Ready True Reconciled
  step "namespace $consumer asks for ReadOnly access: refused, nothing is shared by default"
  "$KUBECTL" delete namespace "$consumer" --ignore-not-found --wait=true >/dev/null
  "$KUBECTL" create namespace "$consumer" >/dev/null
  local access
  access=$(printf 'apiVersion: buckety.yolean.se/v1alpha1\nkind: BucketyAccess\nmetadata: {name: reader}\nspec: {bucketyRef: {namespace: %s, name: %s}, role: ReadOnly, credentialsSecretName: reader}\n' "$NAMESPACE" "$buckety")
  ( NAMESPACE=$consumer; rejected "an access the owner did not allow" \
    "Buckety $owner/$buckety does not exist or does not share role ReadOnly with namespace $consumer: its owner adds {namespace: $consumer, roles: [ReadOnly]} to the Buckety's spec.sharing" <<<"$access" ) || exit 1

  step "the owner writes to it, and shares it ReadOnly with $consumer"
  probe "$secret" owner-writes
  k patch buckety "$buckety" --type=merge -p "{\"spec\":{\"sharing\":[{\"namespace\":\"$consumer\",\"roles\":[\"ReadOnly\"]}]}}" >/dev/null
  (
    NAMESPACE=$consumer
    echo "$access" | k apply -f - >/dev/null
    wait_cond bucketyaccess/reader Ready True
    expect_keys reader
    expect_eq "the consumer's Secret $key" "$name" "$(secret_value reader "$key")"
    probe reader shared-reader ReadOnly
  ) || exit 1
  local holders
  holders=$(jp "buckety/$buckety" '{range .status.sharedWith.holders[*]}{.namespace}/{.name} {.role} {.granted}{"\n"}{end}')
  expect_eq "the owner's status.sharedWith" "$consumer/reader ReadOnly true" "$holders"
  expect_contains "kubectl describe buckety $buckety" "$consumer" "$(k describe buckety "$buckety")"

  step "the owner removes the rule: the consumer's Secret goes, its access says NotShared"
  k patch buckety "$buckety" --type=json -p '[{"op":"remove","path":"/spec/sharing"}]' >/dev/null
  (
    NAMESPACE=$consumer
    wait_cond bucketyaccess/reader Ready False NotShared
    eventually "the consumer's Secret deleted" secret_gone reader
    k delete bucketyaccess reader --wait=true >/dev/null
  ) || exit 1
  "$KUBECTL" delete namespace "$consumer" --wait=false >/dev/null
}

# secret_gone NAME: namespace $NAMESPACE has no Secret NAME.
secret_gone() { ! k get secret "$1" >/dev/null 2>&1; }
