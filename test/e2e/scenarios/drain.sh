# drain BUCKETY SECRET NAME REQUEST N: the drain scenario of every driver,
# on buckety/BUCKETY (a backend with drain.allow) whose implicit access
# writes SECRET, on NAME. NAME is filled with N records or objects; the
# drain REQUEST empties it, keeps it, and reports it (then the assert.sh's
# hook drain_drained); the Secret still works (then the optional hook
# drain_after).
drain() {
  local buckety=$1 secret=$2 name=$3 request=$4 n=$5
  wait_cond "buckety/$buckety" Ready True Reconciled
  wait_cond "bucketyaccess/$buckety" Ready True
  step "fill the $RESOURCE with $n $CONTENT"
  fill_with "$secret" "$name" "$n" >/dev/null
  expect_eq "$CONTENT before the drain" "$n" "$(content_count "$secret" "$name")"
  step "drain it"
  k patch buckety "$buckety" --type=merge -p "{\"spec\":{\"drain\":{\"request\":\"$request\"}}}" >/dev/null
  k wait --for=jsonpath='{.status.drain.phase}'=Drained "buckety/$buckety" --timeout="${E2E_BULK_TIMEOUT}s" >/dev/null ||
    fail "drain $request: expected Drained, seen $(jp "buckety/$buckety" '{.status.drain}')"
  expect_eq "$CONTENT after the drain" 0 "$(content_count "$secret" "$name")"
  expect_eq "the $RESOURCE is kept" true "$(admin "$secret" exists "$name" | tail -1)"
  # Exact, unless an answer to a delete was lost (a server timing out
  # under the suite's load deletes what it was asked, unseen): then fewer
  # are counted, never more. TestDrainS3 and TestDrainKafka hold exactness
  # on servers that answer.
  DRAIN_DELETED=$(jp "buckety/$buckety" '{.status.drain.deleted.objects}')
  [ "${DRAIN_DELETED:-0}" -ge 1 ] && [ "$DRAIN_DELETED" -le "$n" ] ||
    fail "status.drain.deleted.objects: expected between 1 and $n, seen '$DRAIN_DELETED'"
  [ "$DRAIN_DELETED" = "$n" ] || echo "note: $((n - DRAIN_DELETED)) of $n deletions unseen (a lost answer)"
  wait_cond "buckety/$buckety" Draining False Drained
  wait_cond "buckety/$buckety" Ready True
  drain_drained
  step "the $RESOURCE still works"
  probe "$secret" after-drain
  hook drain_after
}
