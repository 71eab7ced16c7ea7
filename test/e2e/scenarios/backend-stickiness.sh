# backend_stickiness BACKEND PARAMS UNCHANGED SECRET: the backend-stickiness
# scenario of every driver, on buckety/sticky of BACKEND. The backend is
# renamed in the controller's config: the Buckety keeps status.backend,
# reports BackendNotConfigured, and a parameter change (PARAMS, a JSON
# spec.parameters patch) is not written (UNCHANGED fails unless the backend
# resource still has the old value), while the Secret SECRET keeps working.
backend_stickiness() {
  local backend=$1 params=$2 unchanged=$3 secret=$4 cm
  wait_cond buckety/sticky Ready True
  cm=$(sys get deploy buckety-controller -o jsonpath='{.spec.template.spec.volumes[?(@.name=="config")].configMap.name}')
  [ -n "$cm" ] || fail "cannot find the controller's config ConfigMap"
  STICKY_CM=$cm STICKY_RENAMED=$(mktemp)
  trap restore_config EXIT
  step "rename the backend in the config and roll the controller"
  sys get configmap "$cm" -o go-template='{{index .data "buckety-controller.yaml"}}' | sed "s/^- name: $backend\$/- name: $backend-renamed/" > "$STICKY_RENAMED"
  grep -q "name: $backend-renamed" "$STICKY_RENAMED" || fail "could not rename the backend in: $(cat "$STICKY_RENAMED")"
  sys create configmap buckety-e2e-renamed --from-file=buckety-controller.yaml="$STICKY_RENAMED" >/dev/null
  set_config_map buckety-e2e-renamed
  wait_cond buckety/sticky BackendUnavailable True BackendNotConfigured
  expect_eq "status.backend stays" "$backend" "$(jp buckety/sticky '{.status.backend}')"
  expect_contains "message names the backend" "backend \"$backend\" is not in the controller config" "$(cond buckety/sticky BackendUnavailable message)"
  step "paused: a parameter change is not applied; the Secret still works"
  k patch buckety sticky --type=merge -p "{\"spec\":{\"parameters\":$params}}" >/dev/null
  sleep 12
  $unchanged
  probe "$secret" while-unavailable
}

# set_config_map NAME: rolls buckety-controller with its config from NAME.
set_config_map() {
  sys patch deploy buckety-controller --type=json -p "[{\"op\":\"replace\",\"path\":\"/spec/template/spec/volumes/0/configMap/name\",\"value\":\"$1\"}]" >/dev/null
  sys rollout status deploy/buckety-controller --timeout=120s >/dev/null
}

# restore_config undoes backend_stickiness's rename.
restore_config() {
  set_config_map "$STICKY_CM"
  sys delete configmap buckety-e2e-renamed --ignore-not-found >/dev/null
  rm -f "$STICKY_RENAMED"
}
