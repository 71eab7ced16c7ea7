#!/usr/bin/env bash
# with-local-base.sh runs a command with BASE_IMAGE set to a stand-in for the
# distroless base, served by an in-memory registry on 127.0.0.1
# (test/registry), for machines that cannot reach the real registry. The
# registry is started and stopped by PID around the command.
#
#   hack/with-local-base.sh hack/image.sh
set -euo pipefail
cd "$(dirname "$0")/.."
dir=$(mktemp -d)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill "$pid"
    wait "$pid" 2>/dev/null || true
  fi
  rm -rf "$dir"
}
trap cleanup EXIT
go build -o "$dir/registry" ./test/registry
"$dir/registry" --addr-file "$dir/base" >"$dir/registry.log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  [ -s "$dir/base" ] && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/registry.log" >&2; exit 1; }
  sleep 0.1
done
[ -s "$dir/base" ] || { echo "with-local-base.sh: registry did not start" >&2; exit 1; }
BASE_IMAGE=$(cat "$dir/base") "$@"
