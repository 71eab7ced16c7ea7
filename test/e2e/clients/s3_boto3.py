"""An S3 workload on boto3, configured by nothing but a buckety Secret:
the aws-env keys in its environment (envFrom) and the aws-files config
mounted at SECRET_DIR (AWS_CONFIG_FILE points there), as a Pod gets them.
boto3 before 1.28 does not read AWS_ENDPOINT_URL_S3 itself: it is passed as
endpoint_url, the one setting such a workload spells out.

  python3 s3_boto3.py ROLE [NEIGHBOUR_BUCKET]

The bucket is the Secret's key CLIENT_BUCKET_KEY (bucket when unset; an
access naming several Bucketies has bucket.<buckety> instead).

ReadWrite: put, get, list, a 17 MiB multipart upload read back, a
presigned GET fetched over plain HTTP; then the refusals (neighbour's
bucket). ReadOnly: list and get work, put is refused. Prints
"clients: OK" at the end; exits 1 at the first failure.
"""
import hashlib
import os
import sys
import urllib.request
import uuid

import boto3
import botocore
from boto3.s3.transfer import TransferConfig
from botocore.exceptions import ClientError

role = sys.argv[1]
neighbour = sys.argv[2] if len(sys.argv) > 2 else ""
bucket = os.environ[os.environ.get("CLIENT_BUCKET_KEY", "bucket")]
print("clients: boto3 %s, botocore %s" % (boto3.__version__, botocore.__version__))
s3 = boto3.client("s3", endpoint_url=os.environ["AWS_ENDPOINT_URL_S3"])
key = "boto3-" + uuid.uuid4().hex


def fail(msg):
    print("FAIL: boto3: " + msg)
    sys.exit(1)


def refused(what, fn):
    try:
        fn()
    except ClientError as e:
        code = e.response["Error"]["Code"]
        if code in ("AccessDenied", "AllAccessDisabled", "403"):
            print("clients: boto3 %s refused (%s)" % (what, code))
            return
        fail("%s: want AccessDenied, got %s" % (what, code))
    fail("%s: succeeded, want it refused" % what)


if role == "ReadWrite":
    s3.put_object(Bucket=bucket, Key=key, Body=b"hello boto3")
    if s3.get_object(Bucket=bucket, Key=key)["Body"].read() != b"hello boto3":
        fail("get returned other bytes")
    keys = [o["Key"] for o in s3.list_objects_v2(Bucket=bucket, Prefix="boto3-").get("Contents", [])]
    if key not in keys:
        fail("list does not show %s: %s" % (key, keys))
    print("clients: boto3 put, get, list ok")
    big = os.urandom(17 * 1024 * 1024)
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), key)
    with open(path, "wb") as f:
        f.write(big)
    cfg = TransferConfig(multipart_threshold=8 * 1024 * 1024, multipart_chunksize=8 * 1024 * 1024)
    s3.upload_file(path, bucket, key + ".big", Config=cfg)
    os.remove(path)
    head = s3.head_object(Bucket=bucket, Key=key + ".big")
    if "-" not in head["ETag"]:
        fail("the 17 MiB upload was not multipart (ETag %s)" % head["ETag"])
    got = s3.get_object(Bucket=bucket, Key=key + ".big")["Body"].read()
    if hashlib.sha256(got).digest() != hashlib.sha256(big).digest():
        fail("the multipart object reads back other bytes")
    print("clients: boto3 multipart upload of 17 MiB ok (ETag %s)" % head["ETag"])
    url = s3.generate_presigned_url("get_object", Params={"Bucket": bucket, "Key": key}, ExpiresIn=300)
    if urllib.request.urlopen(url, timeout=30).read() != b"hello boto3":
        fail("presigned GET returned other bytes")
    print("clients: boto3 presigned GET ok")
    s3.delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": key}, {"Key": key + ".big"}]})
    if neighbour:
        refused("put to the neighbour's bucket " + neighbour, lambda: s3.put_object(Bucket=neighbour, Key=key, Body=b"x"))
        refused("list of the neighbour's bucket " + neighbour, lambda: s3.list_objects_v2(Bucket=neighbour))
elif role == "ReadOnly":
    s3.list_objects_v2(Bucket=bucket)
    print("clients: boto3 list ok")
    refused("put as ReadOnly", lambda: s3.put_object(Bucket=bucket, Key=key, Body=b"x"))
else:
    fail("role %s: want ReadWrite or ReadOnly" % role)
print("clients: OK")
