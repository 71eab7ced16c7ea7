# naming_templates BUCKETY WANT LABEL TEMPLATE: the naming-templates
# scenario of every driver. buckety/BUCKETY's name template resolves to
# WANT (then the assert.sh's hook naming_templates_resolved WANT); a
# template (TEMPLATE) that needs a label the Buckety lacks (LABEL) is
# rejected at admission.
naming_templates() {
  local buckety=$1 want=$2 label=$3 template=$4
  wait_cond "buckety/$buckety" Ready True
  expect_eq "resolved name" "$want" "$(jp "buckety/$buckety" '{.status.backendResourceName}')"
  naming_templates_resolved "$want"
  step "a missing label is rejected at admission"
  rejected "template with a missing label" "the Buckety has no label \"$label\"" <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: unlabelled}
spec:
  backend: $BACKEND
  name: "$template"
Y
}
