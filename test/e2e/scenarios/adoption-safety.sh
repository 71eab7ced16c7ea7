# adoption_safety BUCKETY SECRET NAME UNSAID WHAT: the adoption-safety
# scenario of every driver. NAME is made out of band holding content (with
# the Secret of buckety/helper, helper-<RESOURCE>); buckety/BUCKETY for it
# is refused, with a message that says nothing about the content (not
# UNSAID; WHAT says why), stamps no resource and writes no Secret SECRET.
adoption_safety() {
  local buckety=$1 secret=$2 name=$3 unsaid=$4 what=$5
  wait_cond buckety/helper Ready True
  create_full "helper-$RESOURCE" "$name" >/dev/null
  step "a $RESOURCE with $CONTENT is refused"
  k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: $buckety}
spec: {backend: $BACKEND, name: "$name", defaultAccess: {credentialsSecretName: $secret}}
Y
  wait_cond "buckety/$buckety" Ready False AdoptionRefused
  expect_contains "refusal" "$name on backend $BACKEND already exists and holds content" "$(cond "buckety/$buckety" Ready message)"
  expect_not_contains "$what" "$unsaid" "$(cond "buckety/$buckety" Ready message)"
  expect_eq "nothing stamped" "" "$(jp "buckety/$buckety" '{.status.backendResourceName}')"
  sleep 2
  if k get secret "$secret" >/dev/null 2>&1; then fail "a Secret was written for a refused adoption"; fi
}
