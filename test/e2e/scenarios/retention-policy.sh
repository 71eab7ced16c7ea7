# retention_policy KEPT KEPT-NAME DELETED DELETED-NAME: the
# retention-policy scenario of every driver. buckety/KEPT (retentionPolicy
# Retain, resource KEPT-NAME, Secret KEPT-<RESOURCE>) and buckety/DELETED
# (Delete, DELETED-NAME) are Ready; the optional hook retention_fill puts
# content in them (through the Secret admin, which outlives both). Both are
# deleted (the optional hook retention_deleting watches); Retain keeps its
# resource, Delete removes its; then the optional hook retention_after.
retention_policy() {
  local kept=$1 kept_name=$2 deleted=$3 deleted_name=$4
  wait_cond "buckety/$kept" Ready True
  wait_cond "buckety/$deleted" Ready True
  # An admin Secret that outlives both Bucketies.
  operator_secret "$kept-$RESOURCE" admin
  hook retention_fill
  step "delete both"
  k delete buckety "$kept" "$deleted" --wait=false >/dev/null
  hook retention_deleting
  wait_gone "buckety/$kept"
  wait_gone "buckety/$deleted"
  expect_eq "Retain keeps the $RESOURCE" "true" "$(admin admin exists "$kept_name" | tail -1)"
  expect_eq "Delete removes the $RESOURCE" "false" "$(admin admin exists "$deleted_name" | tail -1)"
  hook retention_after
}
