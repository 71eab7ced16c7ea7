package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/adminhttp"
	"github.com/Yolean/buckety-controller/drivers/s3/minioadmin"
)

// Backend is one S3 endpoint, reached through long-lived clients (one per
// endpoint: R2 jurisdictions have their own). Its operations are in a file
// each: inspect.go, ensure.go (and lifecycle.go), delete.go, grant.go, and
// sweep.go; this file holds the clients and the error classification they
// share.
type Backend struct {
	name string
	cfg  *Config
	// srv describes the implementation's server type (servers.go).
	srv        *server
	apiOptions []func(*middleware.Stack) error

	mu      sync.Mutex
	clients map[string]*s3.Client
	// dropsAbortUploads records that the backend accepted but did not store
	// AbortIncompleteMultipartUpload (MinIO cleans stale uploads itself), so
	// the missing field is a shortfall, not drift to rewrite every pass.
	dropsAbortUploads bool
	// scoping is the state of per-access credentials (credentials.go).
	scoping issuing
	// owners is what the backend knows of the server's bucket tags, where
	// owner records are kept (owners.go).
	owners owners
	// minio is MinIO's admin API (nil on other implementations): hard
	// quotas, the data usage report and keys per access.
	minio *minioadmin.Client
	// quotas reads and writes hard bucket quotas; nil on an
	// implementation without them (quota.go).
	quotas quotaStore
	// policyLocks serialise read-modify-write of one bucket's policy, whose
	// statements Ensure (anonymous read) and the VersityGW issuer (keys'
	// grants) both write: neither may lose the other's.
	policyLocks sync.Map // bucket → policyLock
	// usage bounds the listing of a usage measurement; zero: the defaults
	// (usage.go).
	usage usageListing
	// deleteBatch is the most entries one DeleteObjects request holds
	// now: deleteSlice, halved each time one timed out, doubled back after
	// one answered quickly (drain.go).
	deleteBatch batchSize
}

// policyLock is the lock of one bucket's policy.
func (b *Backend) policyLock(bucket string) policyLock {
	l, _ := b.policyLocks.LoadOrStore(bucket, make(policyLock, 1))
	return l.(policyLock)
}

// policyLock is held across a policy's read and write, requests that can
// take a request timeout each while the server hangs: a waiter gives up
// when its context ends, rather than waiting out every holder before it
// (a bucket shared by many accesses would otherwise keep their workers,
// which every backend shares, for minutes).
type policyLock chan struct{}

// lock takes l, or returns the context's error when it ends first.
func (l policyLock) lock(ctx context.Context, bucket string) error {
	select {
	case l <- struct{}{}:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("wait for the policy of bucket %s, which another pass is writing: %w", bucket, ctx.Err())
	}
}

// unlock releases l.
func (l policyLock) unlock() { <-l }

// openAdmin makes the clients of what a service keeps outside the S3
// API: MinIO's admin API, SeaweedFS's bucket quota extension. It does not
// contact the endpoint.
func (b *Backend) openAdmin() error {
	hc, err := b.cfg.httpClient()
	if err != nil {
		return err
	}
	if b.srv.admin != nil {
		b.srv.admin(b, adminhttp.Client(hc, b.cfg.timeout()))
	}
	return nil
}

// client returns the long-lived client for an endpoint, made on first use.
func (b *Backend) client(endpoint string) (*s3.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c, ok := b.clients[endpoint]; ok {
		return c, nil
	}
	c, err := b.newClient(endpoint)
	if err != nil {
		return nil, err
	}
	b.clients[endpoint] = c
	return c, nil
}

// clientFor returns the client for a bucket with these parameters.
func (b *Backend) clientFor(p params) (*s3.Client, error) {
	if p.jurisdiction == "" {
		return b.client(b.cfg.Endpoint)
	}
	ep, err := b.cfg.jurisdictionEndpoint(p.jurisdiction)
	if err != nil {
		return nil, err
	}
	return b.client(ep)
}

// jurisdictionEndpoint turns an R2 account endpoint
// (https://ACCOUNT.r2.cloudflarestorage.com) into the jurisdiction's
// (https://ACCOUNT.JURISDICTION.r2.cloudflarestorage.com), which is how R2
// creates and serves buckets in a jurisdiction.
func jurisdictionEndpoint(endpoint, jurisdiction string) (string, error) {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "", err
	}
	const suffix = ".r2.cloudflarestorage.com"
	host := u.Hostname()
	if !strings.HasSuffix(host, suffix) {
		return "", fmt.Errorf("jurisdiction %s needs an R2 endpoint (ACCOUNT%s), got %s", jurisdiction, suffix, host)
	}
	account := strings.TrimSuffix(host, suffix)
	if i := strings.IndexByte(account, '.'); i >= 0 {
		if account[i+1:] != jurisdiction {
			return "", fmt.Errorf("endpoint %s is already in jurisdiction %s, not %s", endpoint, account[i+1:], jurisdiction)
		}
		return endpoint, nil
	}
	u.Host = account + "." + jurisdiction + suffix
	if p := u.Port(); p != "" {
		u.Host += ":" + p
	}
	return strings.TrimSuffix(u.String(), "/"), nil
}

func (b *Backend) ctx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, b.cfg.timeout())
}

// exists reports whether the bucket exists and is reachable with our keys.
func (b *Backend) exists(ctx context.Context, cl *s3.Client, bucket string) (bool, error) {
	_, err := cl.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)})
	if err == nil {
		return true, nil
	}
	if isCode(err, "NotFound", "NoSuchBucket") || httpStatus(err) == 404 {
		return false, nil
	}
	return false, b.classify(err)
}

// Close implements drivers.Backend.
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.clients {
		if t, ok := c.Options().HTTPClient.(interface{ CloseIdleConnections() }); ok {
			t.CloseIdleConnections()
		}
	}
	return nil
}

func isCode(err error, codes ...string) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	for _, c := range codes {
		if ae.ErrorCode() == c {
			return true
		}
	}
	return false
}

func httpStatus(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func isNotImplemented(err error) bool {
	return err != nil && (isCode(err, "NotImplemented") || httpStatus(err) == 501)
}

// classify sorts errors into unreachable (*drivers.UnavailableError),
// refused credentials (*drivers.AccessDeniedError), requests the server
// refused for what they ask (*drivers.RefusedError: lastingRefusal) and
// other request errors.
func (b *Backend) classify(err error) error {
	if err == nil || drivers.IsUnavailable(err) || drivers.IsAccessDenied(err) {
		return err
	}
	if isCode(err, "AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken") || httpStatus(err) == 403 {
		return &drivers.AccessDeniedError{Backend: b.name, Err: err}
	}
	var se *smithyhttp.RequestSendError
	var ne net.Error
	var me *retry.MaxAttemptsError
	if errors.As(err, &se) || errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &me) && httpStatus(err) == 0) {
		return &drivers.UnavailableError{Backend: b.name, Err: err}
	}
	if lastingRefusal(httpStatus(err)) {
		return &drivers.RefusedError{Err: err}
	}
	return err
}

// lastingRefusal reports whether an HTTP status refuses a request for what
// it asks, so that asking again gets the same answer: a 4xx but a timeout
// (408), a conflict with a request in flight (409) or throttling (429).
// Server errors (5xx) are asked again. 403 is the caller's to sort first
// (the controller's own keys refused).
func lastingRefusal(status int) bool {
	return status >= 400 && status < 500 && status != 408 && status != 409 && status != 429
}
