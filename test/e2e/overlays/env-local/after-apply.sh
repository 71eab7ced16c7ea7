#!/usr/bin/env bash
# cert-manager's CA injector, stood in for: the webhook configuration gets
# the CA of the certificate prepare.sh issued.
set -euo pipefail
ca=$(base64 -w0 < certs/ca.crt)
"$KUBECTL" patch validatingwebhookconfiguration buckety-webhook --type=json \
  -p "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$ca\"},{\"op\":\"add\",\"path\":\"/webhooks/1/clientConfig/caBundle\",\"value\":\"$ca\"}]" >/dev/null
"$KUBECTL" patch mutatingwebhookconfiguration buckety-webhook --type=json \
  -p "[{\"op\":\"add\",\"path\":\"/webhooks/0/clientConfig/caBundle\",\"value\":\"$ca\"},{\"op\":\"add\",\"path\":\"/webhooks/1/clientConfig/caBundle\",\"value\":\"$ca\"}]" >/dev/null
