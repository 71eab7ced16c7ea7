#!/usr/bin/env bash
# e2e: slow (fills 10,000 objects, started first)
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3

# drain_drained: kubectl describe and the DrainCompleted event tell of it.
# 10,000 objects take ten DeleteObjects batches, and paginated listings.
drain_drained() {
  local describe_out
  describe_out=$(k describe buckety scratch)
  expect_contains "kubectl describe" "e2e-1" "$describe_out"
  expect_contains "kubectl describe" "Drained" "$describe_out"
  expect_contains "the DrainCompleted event" "deleted 10000 objects" "$(k get events.events.k8s.io -o jsonpath='{.items[?(@.reason=="DrainCompleted")].note}')"
}
drain scratch scratch-bucket "$NAMESPACE-scratch" e2e-1 10000
