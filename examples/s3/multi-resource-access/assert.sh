#!/usr/bin/env bash
# e2e: slow (every client on each of three buckets: started first, so it does not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3
c=$(clients_dir)
neighbour=""
scoped_s3 && neighbour=$NAMESPACE-payroll

multi_resource_keys() {
  local region
  region=$(secret_keys app | tr , "\n" | grep -x region || true)
  expect_secret_keys app s3 $region buckets bucket.media bucket.invoices bucket.backups AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_ENDPOINT_URL_S3 AWS_REGION AWS_DEFAULT_REGION credentials config rclone.conf
}

# multi_resource_clients KEY: the AWS CLI (the aws-env keys, the aws-files
# pair), boto3, rclone (the bucket's alias remote in rclone.conf) and
# aws-sdk-go-v2 in a Pod, side by side (objects of their own), on the
# bucket in the Secret's key KEY; refused the neighbour's bucket where the
# access has a key of its own.
multi_resource_clients() {
  local shared
  shared=$(scoped_s3 && echo false || echo true)
  together aws client "aws-$1" app env CLIENT_BUCKET_KEY="$1" bash "$c/s3_cli.sh" aws ReadWrite "$neighbour"
  # bash, not sh: dash drops from the environment the keys that are not
  # shell names (bucket.media), which boto3 reads.
  together boto3 client "boto3-$1" app bash -c "CLIENT_BUCKET_KEY=$1 AWS_CONFIG_FILE=\$SECRET_DIR/config exec python3 $c/s3_boto3.py ReadWrite $neighbour"
  together rclone client "rclone-$1" app env CLIENT_BUCKET_KEY="$1" bash "$c/s3_cli.sh" rclone ReadWrite "$neighbour"
  together sdk client_pod "sdk-${1//./-}" app env "[{name: PROBE_ROLE, value: ReadWrite}, {name: PROBE_SHARED, value: \"$shared\"}, {name: PROBE_BUCKET_KEY, value: \"$1\"}, {name: PROBE_NEIGHBOUR_BUCKET, value: \"$neighbour\"}]" clients s3 aws-sdk-go-v2
  settle
}
multi_resource_access app media invoices backups
