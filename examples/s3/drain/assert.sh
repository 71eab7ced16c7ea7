#!/usr/bin/env bash
# e2e: slow (fills thousands of objects, started first)
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3

# drain_drained: kubectl describe and the DrainCompleted event tell of it.
# make test fills 3,000 objects (several DeleteObjects batches, paginated
# listings); E2E_DRAIN_OBJECTS=10000 is the full size, which a SeaweedFS
# loaded by the whole suite takes minutes to fill.
drain_drained() {
  local describe_out
  describe_out=$(k describe buckety scratch)
  expect_contains "kubectl describe" "e2e-1" "$describe_out"
  expect_contains "kubectl describe" "Drained" "$describe_out"
  expect_contains "the DrainCompleted event" "deleted $DRAIN_DELETED objects" "$(k get events.events.k8s.io -o jsonpath='{.items[?(@.reason=="DrainCompleted")].note}')"
}
drain scratch scratch-bucket "$NAMESPACE-scratch" e2e-1 "${E2E_DRAIN_OBJECTS:-3000}"
