#!/usr/bin/env bash
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3

# naming_templates_resolved NAME: a template resolving to a name the driver
# refuses is rejected at admission.
naming_templates_resolved() {
  rejected "invalid resolved name" 'which driver s3 rejects' <<'Y'
apiVersion: buckety.yolean.se/v1alpha1
kind: Buckety
metadata: {name: bad-name}
spec: {backend: s3, name: "${namespace}_${name}"}
Y
}
naming_templates reports "$NAMESPACE-reports-v007-local" team "\${label['team']}-x"
