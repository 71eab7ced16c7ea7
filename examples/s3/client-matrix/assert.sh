#!/usr/bin/env bash
# e2e: slow (started first, so the longest scenarios do not run last)
. "$(dirname "$0")/../../../test/e2e/lib.sh" s3
c=$(clients_dir)
neighbour=""
scoped_s3 && neighbour=$NAMESPACE-payroll

client_matrix_keys() {
  local region endpoint
  region=$(secret_keys media-app | tr , "\n" | grep -x region || true)
  expect_secret_keys media-app s3 bucket $region AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_ENDPOINT_URL_S3 AWS_REGION AWS_DEFAULT_REGION credentials config BUCKET_HOST BUCKET_PORT BUCKET_NAME BUCKET_REGION rclone.conf
  expect_eq "AWS_ACCESS_KEY_ID" "$(secret_value media-app accessKeyID)" "$(secret_value media-app AWS_ACCESS_KEY_ID)"
  expect_eq "BUCKET_NAME" "$(secret_value media-app bucket)" "$(secret_value media-app BUCKET_NAME)"
  endpoint=$(secret_value media-app endpoint)
  expect_eq "BUCKET_HOST:BUCKET_PORT" "$endpoint" "http://$(secret_value media-app BUCKET_HOST):$(secret_value media-app BUCKET_PORT)"
}

client_matrix_clients() {
  local shared
  # Each client writes and deletes objects of its own, so the writers run
  # side by side; the readers after them (the SDK's reader reads the first
  # object it lists, which a writer could be deleting).
  step "side by side, as writers: the AWS CLI (the aws-env keys, the aws-files pair), boto3 (the aws-env keys and the aws-files config), rclone (rclone.conf, its bucket: remote), aws-sdk-go-v2 in Pods (from the default keys by envFrom, from the aws-env keys alone)"
  shared=$(scoped_s3 && echo false || echo true)
  together aws client aws media-app bash "$c/s3_cli.sh" aws ReadWrite "$neighbour"
  together boto3 client boto3 media-app sh -c "AWS_CONFIG_FILE=\$SECRET_DIR/config exec python3 $c/s3_boto3.py ReadWrite $neighbour"
  # rclone 1.60 sends X-Amz-Acl: private with every upload, whatever acl says;
  # SeaweedFS then checks s3:PutObjectAcl, which buckety grants there only on a
  # bucket that blocks and ignores public ACLs (which Ensure keeps on:
  # drivers/s3/publicacls.go), so rclone writes everywhere.
  together rclone client rclone media-app bash "$c/s3_cli.sh" rclone ReadWrite "$neighbour"
  together sdk client_pod sdk media-app env "[{name: PROBE_ROLE, value: ReadWrite}, {name: PROBE_SHARED, value: \"$shared\"}, {name: PROBE_NEIGHBOUR_BUCKET, value: \"$neighbour\"}]" clients s3 aws-sdk-go-v2
  together sdk-aws-env client_pod sdk-aws-env media-app env "[{name: PROBE_ROLE, value: ReadWrite}, {name: PROBE_SHARED, value: \"$shared\"}]" clients s3 aws-env
  settle

  if scoped_s3; then
    step "side by side, as readers: the AWS CLI, boto3, rclone, and aws-sdk-go-v2 from the mounted files"
    together aws-readonly client aws-readonly media-viewer bash "$c/s3_cli.sh" aws ReadOnly
    together boto3-readonly client boto3-readonly media-viewer sh -c "AWS_CONFIG_FILE=\$SECRET_DIR/config exec python3 $c/s3_boto3.py ReadOnly"
    together rclone-readonly client rclone-readonly media-viewer bash "$c/s3_cli.sh" rclone ReadOnly
    together sdk-readonly client_pod sdk-readonly media-viewer files "[{name: PROBE_ROLE, value: ReadOnly}, {name: PROBE_SHARED, value: \"$shared\"}]" clients s3 aws-sdk-go-v2
    settle
  fi
}

# client_matrix_rotated KEY: every shape names the new key.
client_matrix_rotated() {
  local key
  for key in AWS_ACCESS_KEY_ID credentials rclone.conf; do
    expect_contains "$key after rotation" "$1" "$(secret_value media-app "$key")"
  done
  client rclone-rotated media-app bash "$c/s3_cli.sh" rclone ReadWrite
}
client_matrix media-app accessKeyID app viewer payroll
