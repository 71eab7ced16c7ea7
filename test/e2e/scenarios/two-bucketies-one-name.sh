# two_on_one BACKEND SHARED ADMIN-TEMPLATE ADMIN-SECRET EXISTS: the
# two-Bucketies-one-name scenario of every driver. buckety/first owns SHARED
# on BACKEND; a second Buckety for SHARED gets NameConflict, and deleting it
# (retentionPolicy Delete) leaves the owner's resource alone. A third
# Buckety, named by ADMIN-TEMPLATE with the Secret ADMIN-SECRET, gives the
# credentials EXISTS (called as EXISTS SECRET NAME, printing true or false
# last) checks with.
two_on_one() {
  local backend=$1 shared=$2 admin=$3 secret=$4 exists=$5
  wait_cond buckety/first Ready True
  k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: second}
spec: {backend: $backend, name: "$shared", retentionPolicy: Delete}
Y
  wait_cond buckety/second Ready False NameConflict
  expect_contains "conflict names the owner" "owned by Buckety $NAMESPACE/first" "$(cond buckety/second Ready message)"
  k apply -f - >/dev/null <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: admin}
spec: {backend: $backend, name: "$admin", defaultAccess: {credentialsSecretName: $secret}}
Y
  wait_cond buckety/admin Ready True
  k delete buckety second --wait=false >/dev/null
  wait_gone buckety/second
  expect_eq "the owner's $shared survives" "true" "$($exists "$secret" "$shared" | tail -1)"
  wait_cond buckety/first Ready True
}
