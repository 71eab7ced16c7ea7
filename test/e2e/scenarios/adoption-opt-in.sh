# adoption_opt_in NAME SNEAKY: the adoption-opt-in scenario of every driver.
# NAME is made out of band, holding content (with the Secret of
# buckety/helper, helper-<RESOURCE>); the webhook refuses spec.adoption on
# a backend that does not allow it (a Buckety for SNEAKY). On the backend
# <BACKEND>-adopt, buckety/legacy (Secret legacy-<RESOURCE>) adopts NAME:
# the assert.sh's hook adoption_drift NAME brings it to AdoptionDrift with
# nothing applied, and adoption_settle NAME makes the change that settles
# it. Adopted, it is Ready (then the optional hook adoption_settled NAME,
# before the Secret's probe writes to it) and its Secret works;
# retentionPolicy Delete keeps an adopted resource.
adoption_opt_in() {
  local name=$1 sneaky=$2
  wait_cond buckety/helper Ready True
  create_full "helper-$RESOURCE" "$name" >/dev/null
  hook adoption_prepare "$name"

  step "the webhook rejects spec.adoption on a backend that does not allow it"
  rejected "adoption without the maintainer's key" "spec.adoption: Forbidden: Adopt is not allowed on backend \"$BACKEND\"" <<Y
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: sneaky}
spec: {backend: $BACKEND, name: "$sneaky", adoption: Adopt}
Y

  adoption_drift "$name"
  adoption_settle "$name"
  wait_cond buckety/legacy Ready True
  expect_eq "provenance" "Adopted" "$(jp buckety/legacy '{.status.provenance}')"
  hook adoption_settled "$name"
  probe "legacy-$RESOURCE" adopted >/dev/null

  step "retentionPolicy Delete keeps an adopted $RESOURCE"
  k patch buckety legacy --type=merge -p '{"spec":{"retentionPolicy":"Delete"}}' >/dev/null
  k delete buckety legacy --wait=false >/dev/null
  wait_gone buckety/legacy
  expect_eq "adopted $RESOURCE kept" "true" "$(admin "helper-$RESOURCE" exists "$name" | tail -1)"
}
