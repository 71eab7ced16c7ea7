# scaled_to_zero BUCKETY SECRET: the scaled-to-zero scenario of every
# driver. With the controller scaled to zero, the Secret SECRET of
# buckety/BUCKETY keeps working: nothing in the data path goes through
# buckety. The controller is scaled back when the script exits.
scaled_to_zero() {
  local buckety=$1 secret=$2
  wait_cond "buckety/$buckety" Ready True
  probe "$secret" before
  trap 'scale_controller 1' EXIT
  step "scale the controller to zero"
  scale_controller 0
  probe "$secret" while-down
}
