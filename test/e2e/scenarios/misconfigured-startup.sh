# misconfigured_startup CASES: the misconfigured-startup scenario of every
# driver. The controller, started with each case's ConfigMap (the
# scenario's configs/), crash-loops with a log naming the file and the
# field's problem: the cases every driver has (strict-decode,
# undefined-variable, unknown-driver) and the driver's own, which CASES
# names (an associative array of case → expected log text).
misconfigured_startup() {
  local -n _own=$1
  local c
  local -A _cases=(
    [strict-decode]='backends[0].drvier: unknown field "drvier"'
    [undefined-variable]='backends[0].config.accessKeyID: Invalid value: environment variable E2E_UNSET_ACCESS_KEY is not set'
    [unknown-driver]='backends[0].driver: Invalid value: "mysql": unknown driver; this build has: kadm, s3'
  )
  for c in "${!_own[@]}"; do _cases[$c]=${_own[$c]}; done
  expect_startup_failures _cases
}
