#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh"
: "${E2E_IMAGE_NEXT_PATCH:?the environment must build the controller with the next driver patch (see README)}"
: "${E2E_IMAGE_NEXT_MAJOR:?the environment must build the controller with the next driver major (see README)}"
ctl() { "$KUBECTL" -n "$SYSTEM_NS" "$@"; }
original=$(ctl get deploy buckety-controller -o jsonpath='{.spec.template.spec.containers[0].image}')
restore() { ctl set image deploy/buckety-controller controller="$original" >/dev/null; ctl rollout status deploy/buckety-controller --timeout=120s >/dev/null; }
trap restore EXIT
wait_cond buckety/versioned Ready True
expect_eq "stamped major" "0" "$(jp buckety/versioned '{.status.driverMajor}')"
step "next patch: auto-applied"
ctl set image deploy/buckety-controller controller="$E2E_IMAGE_NEXT_PATCH" >/dev/null
ctl rollout status deploy/buckety-controller --timeout=120s >/dev/null
deadline=$((SECONDS + E2E_TIMEOUT))
until [ "$(jp buckety/versioned '{.status.driverBuildVersion}')" = "0.2.1" ]; do
  [ $SECONDS -lt $deadline ] || fail "driverBuildVersion: expected 0.2.1, seen $(jp buckety/versioned '{.status.driverBuildVersion}')"
  sleep 1
done
wait_cond buckety/versioned Ready True
step "next major: paused, nothing written"
ctl set image deploy/buckety-controller controller="$E2E_IMAGE_NEXT_MAJOR" >/dev/null
ctl rollout status deploy/buckety-controller --timeout=120s >/dev/null
k patch buckety versioned --type=merge -p '{"spec":{"parameters":{"partitions":"3"}}}' >/dev/null
wait_cond buckety/versioned DriverVersionIncompatible True DriverMajorMismatch
expect_contains "incompatibility message" "provisioned with major 0" "$(cond buckety/versioned DriverVersionIncompatible message)"
sleep 12 # more than one re-check period
expect_contains "no backend writes" "partitions=1" "$(kafka_admin versioned-topic describe "$NAMESPACE.versioned")"
expect_eq "major stays" "0" "$(jp buckety/versioned '{.status.driverMajor}')"
