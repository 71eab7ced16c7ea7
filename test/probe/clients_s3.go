package main

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
)

const (
	// multipartSize is the object the multipart check uploads: more than
	// three parts, the last one short, as a workload's large upload is.
	multipartSize = 17 << 20
	// partSize is S3's minimum part size (every part but the last).
	partSize = 5 << 20
)

// s3ClientChecks builds lib's S3 client and runs s3Checks with it:
//
//   - aws-sdk-go-v2: from the Secret's keys (endpoint, region or
//     us-east-1, accessKeyID, secretAccessKey), as the probe's round trip;
//   - aws-env: from nothing but the standard AWS environment
//     (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_ENDPOINT_URL_S3,
//     AWS_REGION: the Secret format aws-env, or AWS_SHARED_CREDENTIALS_FILE
//     and AWS_CONFIG_FILE of aws-files) through config.LoadDefaultConfig,
//     with every SDK default as it is; the bucket from the Secret's bucket
//     key, or BUCKET_NAME. LoadDefaultConfig reads the process environment,
//     never PROBE_SECRET_DIR.
//
// Both address buckets path-style unless PROBE_PATH_STYLE=false.
func s3ClientChecks(ctx context.Context, lib string, getenv func(string) string, out func(string)) (string, error) {
	pathStyle := true
	switch v := getenv("PROBE_PATH_STYLE"); v {
	case "", "true":
	case "false":
		pathStyle = false
	default:
		return "", fmt.Errorf("PROBE_PATH_STYLE %q: want true or false", v)
	}
	var cl *s3.Client
	var bucket, at string
	switch lib {
	case "aws-sdk-go-v2":
		bucketKey := cmp.Or(getenv("PROBE_BUCKET_KEY"), s3driver.SecretBucket)
		env, err := needFrom(getenv, bucketKey)
		if err != nil {
			return "", err
		}
		base, err := s3ClientFrom(getenv)
		if err != nil {
			return "", err
		}
		cl = s3.New(base.Options(), func(o *s3.Options) { o.UsePathStyle = pathStyle })
		bucket, at = env[bucketKey], getenv(s3driver.SecretEndpoint)
	case "aws-env":
		// Without credentials in the environment the SDK's chain would go
		// on to the instance metadata service: refuse instead.
		if os.Getenv(s3driver.SecretAWSAccessKeyID) == "" && os.Getenv("AWS_SHARED_CREDENTIALS_FILE") == "" {
			return "", fmt.Errorf("aws-env: neither %s nor AWS_SHARED_CREDENTIALS_FILE is in the environment (envFrom a Secret with secretFormats aws-env or aws-files)", s3driver.SecretAWSAccessKeyID)
		}
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return "", fmt.Errorf("aws-env: config.LoadDefaultConfig: %w", err)
		}
		cl = s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = pathStyle })
		if bucket = getenv(s3driver.SecretBucket); bucket == "" {
			bucket = getenv(s3driver.SecretBucketName)
		}
		if bucket == "" {
			return "", fmt.Errorf("aws-env: neither %s nor %s is in the Secret", s3driver.SecretBucket, s3driver.SecretBucketName)
		}
		at = os.Getenv(s3driver.SecretAWSEndpointURLS3)
		if at == "" {
			at = "the SDK's default endpoint"
		}
	default:
		return "", fmt.Errorf("unknown s3 client %q\n%s", lib, clientsUsage)
	}
	role, err := roleOf(getenv)
	if err != nil {
		return "", err
	}
	own := getenv("PROBE_SHARED") != "true"
	c := s3Checks{cl: cl, bucket: bucket, lib: lib, out: out}
	if err := c.run(ctx, role, own, getenv("PROBE_NEIGHBOUR_BUCKET")); err != nil {
		return "", fmt.Errorf("%s on bucket %s at %s: %w", role, bucket, at, err)
	}
	keys := "own key"
	if !own {
		keys = "shared keys"
	}
	return fmt.Sprintf("%s (%s) on bucket %s at %s", role, keys, bucket, at), nil
}

// s3Checks are the S3 checks of one client on one bucket.
type s3Checks struct {
	cl          *s3.Client
	bucket, lib string
	out         func(string)
}

// run does what role allows and checks the refusals. Its plan:
//
//   - ReadWrite: put, get (same bytes), list (lists it), a multipart
//     upload of 17 MiB in 5 MiB parts read back (same size and sha256), a
//     presigned GET fetched with net/http (same bytes), delete both;
//   - ReadOnly: list, and get (and a presigned GET of) the first object
//     when there is one; with a key of its own, put is refused;
//   - WriteOnly: put, the multipart upload (left there: the role may not
//     delete); with a key of its own, get is refused.
//
// With neighbour (another tenant's bucket) and a key of its own, list,
// get and put there are all refused (shared keys reach every bucket: the
// neighbour is not checked).
func (c s3Checks) run(ctx context.Context, role string, own bool, neighbour string) error {
	small := "clients/" + c.lib + "/" + token() + ".txt"
	body := []byte("clients " + c.lib + " " + token())
	switch role {
	case "ReadWrite":
		if err := c.check("put "+small, c.put(ctx, c.bucket, small, body)); err != nil {
			return err
		}
		if err := c.check("get", c.getSame(ctx, small, body)); err != nil {
			return err
		}
		if err := c.check("list", c.listed(ctx, small)); err != nil {
			return err
		}
		big, err := c.multipart(ctx)
		if err != nil {
			return err
		}
		if err := c.check("presigned GET", c.presignedSame(ctx, small, body)); err != nil {
			return err
		}
		for _, k := range []string{small, big} {
			if _, err := c.cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(k)}); err != nil {
				return fmt.Errorf("delete %s: %w", k, err)
			}
		}
		c.out("delete ok")
	case "ReadOnly":
		l, err := c.cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(c.bucket), MaxKeys: aws.Int32(10)})
		if err := c.check("list", err); err != nil {
			return err
		}
		if len(l.Contents) > 0 {
			k := aws.ToString(l.Contents[0].Key)
			got, err := c.get(ctx, c.bucket, k)
			if err := c.check("get "+k, err); err != nil {
				return err
			}
			if err := c.check("presigned GET", c.presignedSame(ctx, k, got)); err != nil {
				return err
			}
		}
		if own {
			if err := c.refusal("put refused", c.put(ctx, c.bucket, small, body)); err != nil {
				return err
			}
		}
	case "WriteOnly":
		if err := c.check("put "+small, c.put(ctx, c.bucket, small, body)); err != nil {
			return err
		}
		if _, err := c.upload(ctx); err != nil {
			return err
		}
		if own {
			_, err := c.get(ctx, c.bucket, small)
			if err := c.refusal("get refused", err); err != nil {
				return err
			}
		}
	}
	if neighbour != "" && !own {
		c.out("neighbour bucket " + neighbour + " not checked: shared keys")
	}
	if neighbour != "" && own {
		_, err := c.cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(neighbour)})
		if err := c.refusal("list neighbour bucket "+neighbour+" refused", err); err != nil {
			return err
		}
		_, err = c.get(ctx, neighbour, small)
		if err := c.refusal("get from neighbour bucket refused", err); err != nil {
			return err
		}
		if err := c.refusal("put in neighbour bucket refused", c.put(ctx, neighbour, small, body)); err != nil {
			return err
		}
	}
	return nil
}

func (c s3Checks) check(what string, err error) error {
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	c.out(what + " ok")
	return nil
}

func (c s3Checks) refusal(what string, err error) error {
	if err := s3Refused(err); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	c.out(what + " ok")
	return nil
}

func (c s3Checks) put(ctx context.Context, bucket, key string, body []byte) error {
	_, err := c.cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader(body)})
	return err
}

func (c s3Checks) get(ctx context.Context, bucket, key string) ([]byte, error) {
	out, err := c.cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return nil, err
	}
	defer func() { _ = out.Body.Close() }()
	return io.ReadAll(out.Body)
}

func (c s3Checks) getSame(ctx context.Context, key string, want []byte) error {
	got, err := c.get(ctx, c.bucket, key)
	if err == nil && !bytes.Equal(got, want) {
		err = fmt.Errorf("want %q, got %q", want, got)
	}
	return err
}

func (c s3Checks) listed(ctx context.Context, key string) error {
	l, err := c.cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(c.bucket), Prefix: aws.String(key)})
	if err != nil {
		return err
	}
	for _, o := range l.Contents {
		if aws.ToString(o.Key) == key {
			return nil
		}
	}
	return fmt.Errorf("%s not listed", key)
}

// multipart uploads the large object and reads it back, comparing size
// and sha256; it returns the object's key.
func (c s3Checks) multipart(ctx context.Context) (string, error) {
	up, err := c.upload(ctx)
	if err != nil {
		return "", err
	}
	out, err := c.cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(up.key)})
	if err != nil {
		return "", fmt.Errorf("get %s: %w", up.key, err)
	}
	h := sha256.New()
	n, err := io.Copy(h, out.Body)
	if cerr := out.Body.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("get %s: %w", up.key, err)
	}
	if got := h.Sum(nil); n != multipartSize || !bytes.Equal(got, up.sum) {
		return "", fmt.Errorf("get %s: want %d bytes of sha256 %x, got %d bytes of sha256 %x", up.key, multipartSize, up.sum, n, got)
	}
	c.out(fmt.Sprintf("multipart read back ok (%d bytes, sha256 %x)", n, up.sum[:8]))
	return up.key, nil
}

type uploaded struct {
	key string
	sum []byte
}

// upload is a multipart upload of random bytes, part by part with the
// requests themselves (feature/s3/manager's Uploader does the same); a
// failed upload is aborted, so that no parts are left behind.
func (c s3Checks) upload(ctx context.Context) (up uploaded, err error) {
	data := make([]byte, multipartSize)
	if _, err := rand.Read(data); err != nil {
		return up, err
	}
	sum := sha256.Sum256(data)
	up = uploaded{key: "clients/" + c.lib + "/" + token() + ".bin", sum: sum[:]}
	b, k := aws.String(c.bucket), aws.String(up.key)
	// A client that checksums what it sends (the SDK's default since
	// 2025, RequestChecksumCalculation WhenSupported) declares the
	// algorithm on the upload and on every part, and completes with the
	// parts' checksums, as feature/s3/manager does: VersityGW (v1.8.0)
	// refuses part checksums in the completion of an upload created
	// without one (InvalidPart), where MinIO takes them.
	var algo types.ChecksumAlgorithm
	if c.cl.Options().RequestChecksumCalculation == aws.RequestChecksumCalculationWhenSupported {
		algo = types.ChecksumAlgorithmCrc32
	}
	created, err := c.cl.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: b, Key: k, ChecksumAlgorithm: algo})
	if err != nil {
		return up, fmt.Errorf("multipart upload %s: create: %w", up.key, err)
	}
	defer func() {
		if err != nil {
			actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if _, aerr := c.cl.AbortMultipartUpload(actx, &s3.AbortMultipartUploadInput{Bucket: b, Key: k, UploadId: created.UploadId}); aerr != nil {
				err = errors.Join(err, fmt.Errorf("abort: %w", aerr))
			}
		}
	}()
	var parts []types.CompletedPart
	for i := int32(1); len(data) > 0; i++ {
		part := data[:min(partSize, len(data))]
		data = data[len(part):]
		p, err := c.cl.UploadPart(ctx, &s3.UploadPartInput{Bucket: b, Key: k, UploadId: created.UploadId, PartNumber: aws.Int32(i),
			ChecksumAlgorithm: algo, Body: bytes.NewReader(part), ContentLength: aws.Int64(int64(len(part)))})
		if err != nil {
			return up, fmt.Errorf("multipart upload %s: part %d: %w", up.key, i, err)
		}
		parts = append(parts, types.CompletedPart{ETag: p.ETag, PartNumber: aws.Int32(i), ChecksumCRC32: p.ChecksumCRC32,
			ChecksumCRC32C: p.ChecksumCRC32C, ChecksumCRC64NVME: p.ChecksumCRC64NVME, ChecksumSHA1: p.ChecksumSHA1, ChecksumSHA256: p.ChecksumSHA256})
	}
	if _, err := c.cl.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: b, Key: k, UploadId: created.UploadId,
		MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		return up, fmt.Errorf("multipart upload %s: complete: %w", up.key, err)
	}
	c.out(fmt.Sprintf("multipart upload %s ok (%d MiB in %d parts)", up.key, multipartSize>>20, len(parts)))
	return up, nil
}

// presignedSame fetches key with a presigned GET over plain net/http, as
// a browser or a service handed the URL would, and compares the bytes.
func (c s3Checks) presignedSame(ctx context.Context, key string, want []byte) error {
	req, err := s3.NewPresignClient(c.cl).PresignGetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(c.bucket), Key: aws.String(key)},
		s3.WithPresignExpires(5*time.Minute))
	if err != nil {
		return fmt.Errorf("presign: %w", err)
	}
	hr, err := http.NewRequestWithContext(ctx, req.Method, req.URL, nil)
	if err != nil {
		return err
	}
	for h, vs := range req.SignedHeader {
		if !strings.EqualFold(h, "Host") {
			hr.Header[h] = vs
		}
	}
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %.300s", strings.SplitN(req.URL, "?", 2)[0], resp.Status, got)
	}
	if !bytes.Equal(got, want) {
		return fmt.Errorf("want %d bytes %.40q, got %d bytes %.40q", len(want), want, len(got), got)
	}
	return nil
}
