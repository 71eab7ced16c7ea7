#!/usr/bin/env bash
. "$(dirname "$0")/../../../../test/e2e/lib.sh"
wait_cond buckety/uploads Ready True
bucket="$NAMESPACE-uploads"

step "kubectl get shows it public, and -o wide its quota"
expect_contains "PUBLIC column" PUBLIC "$(k get buckety uploads)"
expect_eq "anonymousRead" true "$(jp buckety/uploads '{.spec.parameters.anonymousRead}')"
expect_contains "QUOTA column" 1Mi "$(k get buckety uploads -o wide)"

step "600 KiB fits under the 1 MiB hard quota"
upload() {
  with_secret uploads-bucket sh -c 'head -c 614400 /dev/urandom > part && timeout 120 aws --endpoint-url "$AWS_ENDPOINT_URL_S3" s3 cp part "s3://$(cat "$SECRET_DIR/bucket")/$1" --only-show-errors 2>&1' upload "$1"
}
out=$(upload first) || fail "the first upload failed: $out"

step "status.usage shows what MinIO reports within a refresh; QuotaWarning is True with an event"
measured() { [ "$(jp buckety/uploads '{.status.usage.bytes}')" = 614400 ]; }
eventually "status.usage.bytes = 614400" measured
expect_eq "one object" 1 "$(jp buckety/uploads '{.status.usage.objects}')"
expect_eq "source" "minio data usage" "$(jp buckety/uploads '{.status.usage.source}')"
wait_cond buckety/uploads QuotaWarning True SoftQuotaReached
expect_contains "the event" SoftQuotaReached "$(k get events --field-selector involvedObject.name=uploads -o jsonpath='{.items[*].reason}')"
expect_contains "kubectl get shows USED" 614400 "$(k get buckety uploads)"

step "MinIO refuses another 600 KiB: it would pass the 1 MiB hard quota"
# MinIO checks an upload against its own count of the bucket, which it
# caches for up to 10 s after the scanner's report: the same object is
# tried again until the count has caught up.
deadline=$((SECONDS + E2E_TIMEOUT))
until ! out=$(upload second); do
  [ $SECONDS -lt $deadline ] || fail "MinIO still accepted 600 KiB more into a bucket holding 600 KiB under a 1 MiB hard quota after ${E2E_TIMEOUT}s"
  sleep 3
done
expect_contains "MinIO's refusal" "XMinioAdminBucketQuotaExceeded" "$out"

step "an object is readable anonymously; the bucket cannot be listed anonymously"
endpoint=$(secret_value uploads-bucket endpoint)
code() { py -c 'import sys, urllib.request, urllib.error
try: print(urllib.request.urlopen(sys.argv[1], timeout=30).status)
except urllib.error.HTTPError as e: print(e.code)' "$1"; }
expect_eq "anonymous GET of the object" 200 "$(code "$endpoint/$bucket/first")"
expect_eq "anonymous LIST" 403 "$(code "$endpoint/$bucket/")"
