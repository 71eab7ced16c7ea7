#!/usr/bin/env bash
# An S3 workload on the AWS CLI and on rclone, configured by nothing but a
# buckety Secret: the aws-env keys in the environment (envFrom), and the
# aws-files pair and rclone.conf mounted at SECRET_DIR.
#
#   s3_cli.sh aws|rclone ROLE [NEIGHBOUR_BUCKET]
#
# The bucket is the Secret's key CLIENT_BUCKET_KEY (bucket when unset; an
# access naming several Bucketies has bucket.<buckety> instead, and
# rclone.conf an alias remote <buckety>: per bucket).
#
# ReadWrite: put, get, list, a 17 MiB multipart upload read back, a
# presigned GET fetched over plain HTTP, the neighbour's bucket refused.
# ReadOnly: list works, put refused. Prints "clients: OK" at the end.
set -uo pipefail
tool=$1 role=$2 neighbour=${3:-}
bucket_key=${CLIENT_BUCKET_KEY:-bucket}
bucket=$(cat "$SECRET_DIR/$bucket_key")
key=$tool-$RANDOM$RANDOM
fail() { echo "FAIL: $tool: $*"; exit 1; }
refused() {
  [ "$3" != 0 ] || fail "$1: succeeded, want it refused: $2"
  grep -Eq 'AccessDenied|Access Denied|Forbidden|403' <<<"$2" || fail "$1: want AccessDenied, got: $2"
  echo "clients: $tool $1 refused"
}
fetch() { python3 -c 'import sys, urllib.request; sys.stdout.buffer.write(urllib.request.urlopen(sys.argv[1], timeout=30).read())' "$1"; }
echo hello > small
head -c $((17 * 1024 * 1024)) /dev/urandom > big
case $tool in
aws)
  # The shared files from the Secret: path-style addressing where the
  # backend needs it. AWS CLI before 2.13 ignores AWS_ENDPOINT_URL_S3:
  # the Secret's endpoint is passed as --endpoint-url.
  export AWS_CONFIG_FILE=$SECRET_DIR/config AWS_SHARED_CREDENTIALS_FILE=$SECRET_DIR/credentials
  s3() { timeout 120 aws --endpoint-url "$AWS_ENDPOINT_URL_S3" s3 "$@"; }
  # The version from the clients' VERSIONS list: aws --version is a
  # Python start of its own (about a second of CPU) for a log line.
  echo "clients: aws-cli $(awk '$1 == "awscli" {print $2}' "$(dirname "$(command -v aws)")/VERSIONS")"
  put() { s3 cp "$1" "s3://$2/$3" --only-show-errors; }
  get() { s3 cp "s3://$1/$2" "$3" --only-show-errors; }
  list() { s3 ls "s3://$1/"; }
  presign() { s3 presign "s3://$1/$2" --expires-in 300; }
  remove() { s3 rm "s3://$1/$2" --only-show-errors; }
  ;;
rclone)
  r() { timeout 120 rclone --config "$SECRET_DIR/rclone.conf" --s3-upload-cutoff 8M --s3-chunk-size 8M "$@"; }
  echo "clients: $(rclone version 2>&1 | head -1)"
  # bucket: is the Secret's bucket (an alias remote; <buckety>: for key
  # bucket.<buckety>); another bucket is reached through the s3: remote.
  alias=bucket
  [ "$bucket_key" = bucket ] || alias=${bucket_key#bucket.}
  remote() { if [ "$1" = "$bucket" ]; then echo "$alias:$2"; else echo "s3:$1/$2"; fi; }
  put() { r copyto "$1" "$(remote "$2" "$3")"; }
  get() { r copyto "$(remote "$1" "$2")" "$3"; }
  list() { r lsf "$(remote "$1" "")"; }
  presign() { r link --expire 5m "$(remote "$1" "$2")"; }
  remove() { r deletefile "$(remote "$1" "$2")"; }
  ;;
*) fail "tool $tool: want aws or rclone" ;;
esac
case $role in
ReadWrite)
  out=$(put small "$bucket" "$key" 2>&1) || fail "put: $out"
  out=$(get "$bucket" "$key" small.back 2>&1) || fail "get: $out"
  cmp -s small small.back || fail "get returned other bytes"
  out=$(list "$bucket" 2>&1) || fail "list: $out"
  grep -q "$key" <<<"$out" || fail "list does not show $key: $out"
  echo "clients: $tool put, get, list ok"
  out=$(put big "$bucket" "$key.big" 2>&1) || fail "multipart put: $out"
  out=$(get "$bucket" "$key.big" big.back 2>&1) || fail "get of the multipart object: $out"
  cmp -s big big.back || fail "the 17 MiB object reads back other bytes"
  echo "clients: $tool multipart upload of 17 MiB ok"
  url=$(presign "$bucket" "$key" 2>&1) || fail "presign: $url"
  got=$(fetch "$url" 2>&1) || fail "presigned GET $url: $got"
  [ "$got" = hello ] || fail "presigned GET returned $got"
  echo "clients: $tool presigned GET ok"
  remove "$bucket" "$key" >/dev/null 2>&1 || fail "delete $key"
  remove "$bucket" "$key.big" >/dev/null 2>&1 || fail "delete $key.big"
  if [ -n "$neighbour" ]; then
    out=$(put small "$neighbour" "$key" 2>&1); refused "put to the neighbour's bucket $neighbour" "$out" $?
    out=$(list "$neighbour" 2>&1); refused "list of the neighbour's bucket $neighbour" "$out" $?
  fi
  ;;
ReadOnly)
  out=$(list "$bucket" 2>&1) || fail "list as ReadOnly: $out"
  echo "clients: $tool list ok"
  out=$(put small "$bucket" "$key" 2>&1); refused "put as ReadOnly" "$out" $?
  ;;
*) fail "role $role: want ReadWrite or ReadOnly" ;;
esac
echo "clients: OK"
