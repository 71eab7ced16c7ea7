# implicit_to_explicit SECRET: the implicit-to-explicit scenario of every
# driver, on buckety/orders whose implicit access writes SECRET. Explicit
# accesses replace the implicit one, which goes with its Secret.
implicit_to_explicit() {
  local secret=$1
  wait_cond buckety/orders Ready True
  expect_eq "implicit access" "true" "$(jp bucketyaccess/orders '{.metadata.labels.buckety\.yolean\.se/implicit}')"
  probe "$secret" implicit
  step "add explicit accesses"
  k apply -f - >/dev/null <<'Y'
apiVersion: buckety.yolean.se/v1alpha1
kind: BucketyAccess
metadata: {name: orders-app}
spec: {bucketyRef: {name: orders}, credentialsSecretName: orders-app}
---
apiVersion: buckety.yolean.se/v1alpha1
kind: BucketyAccess
metadata: {name: orders-reports}
spec: {bucketyRef: {name: orders}, credentialsSecretName: orders-reports, role: ReadOnly}
Y
  wait_gone bucketyaccess/orders
  wait_gone "secret/$secret"
  wait_cond bucketyaccess/orders-app Ready True
  wait_cond bucketyaccess/orders-reports Ready True
  wait_cond buckety/orders Ready True
  probe orders-app explicit
}
