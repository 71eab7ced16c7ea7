# lifecycle_refused [PARAMS]: the lifecycle-refused scenario of an
# implementation whose capability gate leaves lifecycle out: a new Buckety
# with lifecycle (and PARAMS, flow YAML entries of spec.parameters) is
# refused at admission naming the implementation and nothing is stored;
# the Buckety logs without it is Ready, not Degraded, and works; adding
# lifecycle to it is refused too.
lifecycle_refused() {
  local extra=${1:-} gate out
  gate="lifecycle is only supported for implementation aws, minio, r2, and the backend's implementation is $IMPLEMENTATION"
  step "a new Buckety with lifecycle is refused at admission, naming the implementation"
  rejected "lifecycle on $IMPLEMENTATION" "spec.parameters[lifecycle]: Forbidden: $gate" <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: expiring}
spec:
  backend: s3
  name: "\${namespace}-expiring"
  parameters: {lifecycle: '{"expirationDays": 30, "prefix": "tmp/"}'${extra:+, $extra}}
Y
  expect_eq "nothing stored" "" "$(k get bucketies expiring --ignore-not-found -o name)"
  step "the Buckety without lifecycle is Ready, not Degraded, and works"
  wait_cond buckety/logs Ready True
  wait_cond buckety/logs Degraded False
  probe logs-bucket consumer
  step "adding lifecycle to it is refused too"
  if out=$(k patch bucketies logs --type=merge -p '{"spec":{"parameters":{"lifecycle":"{\"expirationDays\": 30}"}}}' 2>&1); then
    fail "adding lifecycle to an existing Buckety was admitted"
  fi
  expect_contains "update refused" "$gate" "$out"
  expect_eq "parameters unchanged" "" "$(jp buckety/logs '{.spec.parameters.lifecycle}')"
}
