#!/usr/bin/env bash
# k3d-load.sh OCI_DIR: the IMAGE_LOAD of the k3d environment.
set -euo pipefail
(cd "$1" && tar -cf "../$(basename "$1").tar" .)
k3d image import -c "${K3D_CLUSTER:-buckety}" "$(dirname "$1")/$(basename "$1").tar"
