# webhook_controller_down AVAILABLE TYPO INVALID PATH IMMUTABLE: the
# webhook-controller-down scenario of every driver. With the controller
# scaled to zero the webhook still refuses, on its own: a Buckety naming
# backend TYPO (the message lists AVAILABLE, the configured backends,
# quoted), one whose name template needs a missing label, one with spec
# INVALID (flow YAML) whose refusal names PATH, and a change of buckety/
# orders' spec.parameters to IMMUTABLE (JSON) that a parameter immutable
# after creation refuses. The controller is scaled back when the script
# exits.
webhook_controller_down() {
  local available=$1 typo=$2 invalid=$3 path=$4 immutable=$5
  wait_cond buckety/orders Ready True
  trap 'scale_controller 1' EXIT
  scale_controller 0
  rejected "unknown backend" "no such backend in the controller config; available: $available" <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: b1}
spec: {backend: $typo}
Y
  rejected "missing label" 'the Buckety has no label "team"' <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: b2}
spec: {backend: $BACKEND, name: "\${label['team']}-b2"}
Y
  rejected "invalid parameter" "$path" <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: b3}
spec: $invalid
Y
  refused_patch orders "immutable update" "$immutable" "is immutable after creation"
}
