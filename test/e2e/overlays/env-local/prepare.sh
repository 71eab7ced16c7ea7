#!/usr/bin/env bash
# Fills the overlay's loopback ports and stands in for cert-manager: issues
# a CA and the webhook certificate it signs into the Secrets the release's
# two Certificates name (after-apply.sh injects the CA as caBundle). Runs in a
# copy of this directory (run.sh stages it). ROOT is the repository.
set -euo pipefail
root=${ROOT:?run from test/e2e/run.sh, which sets ROOT}
tool=(go run "$root/test/e2e/e2etool")
mapfile -t p < <(cd "$root" && "${tool[@]}" freeports 5)
api_port=$("$KUBECTL" config view --minify -o jsonpath='{.clusters[0].cluster.server}' | sed 's/.*://')
sed -i -e "s/@P0@/${p[0]}/g" -e "s/@P1@/${p[1]}/g" -e "s/@P2@/${p[2]}/g" -e "s/@P3@/${p[3]}/g" -e "s/@P4@/${p[4]}/g" -e "s/@API_PORT@/$api_port/g" kustomization.yaml
mkdir -p certs
(cd "$root" && "${tool[@]}" cert "$OLDPWD/certs")
# cert-manager's CRDs, so the release's Issuer and Certificate apply.
crds=$(cd "$root" && "${tool[@]}" module-dir github.com/cert-manager/cert-manager)/deploy/crds || exit 1
"$KUBECTL" apply --server-side -f "$crds" >/dev/null
"$KUBECTL" create namespace buckety-system --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
# The release's chain has two Secrets: the CA (Certificate
# buckety-webhook-ca) and the serving leaf it signs (buckety-webhook).
"$KUBECTL" -n buckety-system create secret generic buckety-webhook-ca \
  --from-file=tls.crt=certs/ca.crt --from-file=tls.key=certs/ca.key --from-file=ca.crt=certs/ca.crt \
  --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
"$KUBECTL" -n buckety-system create secret generic buckety-webhook-tls \
  --from-file=tls.crt=certs/tls.crt --from-file=tls.key=certs/tls.key --from-file=ca.crt=certs/ca.crt \
  --dry-run=client -o yaml | "$KUBECTL" apply -f - >/dev/null
