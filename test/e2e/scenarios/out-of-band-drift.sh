# out_of_band_drift BUCKETY: the out-of-band-drift scenario of every
# driver. Once buckety/BUCKETY is Ready, the assert.sh's hook drift_change
# changes its resource on the server out of band; the controller puts it
# back (until the hook drift_reverted succeeds; it leaves what it saw in
# DRIFT_SEEN) with a DriftRepaired event; then the optional hook
# drift_after.
out_of_band_drift() {
  local buckety=$1 deadline
  wait_cond "buckety/$buckety" Ready True
  step "change the $RESOURCE on the $SERVER"
  drift_change
  DRIFT_SEEN=
  deadline=$((SECONDS + E2E_TIMEOUT))
  until drift_reverted; do
    [ $SECONDS -lt $deadline ] || fail "out-of-band changes not reverted after ${E2E_TIMEOUT}s: $DRIFT_SEEN"
    sleep 2
  done
  # The pass that put the resource back records its event after it has
  # finished the pass (its owner record, its status): look until then.
  until grep -q . <<<"$(k get events --field-selector reason=DriftRepaired -o name)"; do
    [ $SECONDS -lt $deadline ] || fail "expected a DriftRepaired event"
    sleep 1
  done
  hook drift_after
}
