#!/usr/bin/env bash
# local.sh: the e2e suite on this machine. Like the GitHub workflow's job
# body, it only prepares an environment and calls run.sh: start the local
# node with the backends (broker, VersityGW, MinIO) and the images, run the
# harness, and tear everything down (unless KEEP_FAILED=true and a scenario
# failed, so its namespace can be inspected; `make stop-e2e` then).
set -uo pipefail
cd "$(dirname "$0")/../.."
state=.run/e2e
go run ./test/localstack/cmd/buckety-local up --no-deploy --dir "$state" || exit 1
rc=0
KUBECONFIG=$PWD/$state/cluster/controlplane/kubeconfig OCI_DIR=$PWD/$state/oci E2E_BACKENDS_ENV=$PWD/$state/backends.env \
  E2E_ENV=local IMPLEMENTATIONS=${IMPLEMENTATIONS:-kfake} test/e2e/run.sh || rc=$?
if [ $rc -ne 0 ] && [ "${KEEP_FAILED:-false}" = true ]; then
  echo "e2e: failed; environment kept (KUBECONFIG=$PWD/$state/cluster/controlplane/kubeconfig); make stop-e2e removes it"
  exit $rc
fi
go run ./test/localstack/cmd/buckety-local down --dir "$state" || rc=1
exit $rc
