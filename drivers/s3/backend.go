package s3

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/Yolean/buckety-controller/drivers"
)

// LifecycleRuleID names the lifecycle rule buckety owns. Without a
// lifecycle parameter only this rule is removed; rules others added are left
// alone.
const LifecycleRuleID = "buckety"

// Backend is one S3 endpoint, reached through long-lived clients (one per
// endpoint: R2 jurisdictions have their own).
type Backend struct {
	name       string
	cfg        *Config
	apiOptions []func(*middleware.Stack) error

	mu      sync.Mutex
	clients map[string]*s3.Client
	// dropsAbortUploads records that the backend accepted but did not store
	// AbortIncompleteMultipartUpload (MinIO cleans stale uploads itself), so
	// the missing field is a shortfall, not drift to rewrite every pass.
	dropsAbortUploads bool
}

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

// Inspect implements drivers.Backend. It asks the endpoint Ensure would
// create the bucket on (an R2 jurisdiction's own). A bucket that exists but
// answers HeadBucket with 403 belongs to someone else (S3's namespace can be
// global) and counts as content. Empty means empty: besides current objects,
// noncurrent object versions, delete markers and in-progress multipart
// uploads are content, because deleting the bucket would destroy them.
func (b *Backend) Inspect(ctx context.Context, r drivers.Resource) (drivers.Inspection, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	name := r.Name
	cl, err := b.clientFor(parseParams(r.Parameters))
	if err != nil {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot tell: " + err.Error()}, err
	}
	ok, err := b.exists(ctx, cl, name)
	if err != nil {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: "cannot tell: " + err.Error()}, err
	}
	if !ok {
		return drivers.Inspection{}, nil
	}
	content := func(detail string) (drivers.Inspection, error) {
		return drivers.Inspection{Exists: true, HasContent: true, Detail: detail}, nil
	}
	cannot := func(what string, err error) (drivers.Inspection, error) {
		err = b.classify(err)
		return drivers.Inspection{Exists: true, HasContent: true, Detail: fmt.Sprintf("cannot list %s: %v", what, err)}, err
	}
	out, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(name), MaxKeys: aws.Int32(1)})
	if err != nil {
		return cannot("objects", err)
	}
	if len(out.Contents) > 0 {
		return content(fmt.Sprintf("bucket %s holds objects (first: %q)", name, aws.ToString(out.Contents[0].Key)))
	}
	// No current object, so every version listed is noncurrent, and every
	// delete marker hides one or is left over. A backend without
	// versioning (NotImplemented) has neither. A key's delete marker is
	// listed before the versions it hides: one page of a hundred names the
	// versions where there are any.
	vs, err := cl.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(name), MaxKeys: aws.Int32(100)})
	switch {
	case isNotImplemented(err):
	case err != nil:
		return cannot("object versions", err)
	case len(vs.Versions) > 0:
		v := vs.Versions[0]
		return content(fmt.Sprintf("bucket %s holds no current objects but noncurrent object versions (first: %q version %s); they are data, restorable until deleted", name, aws.ToString(v.Key), aws.ToString(v.VersionId)))
	case len(vs.DeleteMarkers) > 0:
		m := vs.DeleteMarkers[0]
		return content(fmt.Sprintf("bucket %s holds no objects but delete markers (first: %q version %s), left by someone else's versioned writes", name, aws.ToString(m.Key), aws.ToString(m.VersionId)))
	}
	ups, err := cl.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(name), MaxUploads: aws.Int32(1)})
	switch {
	case isNotImplemented(err):
	case err != nil:
		return cannot("multipart uploads", err)
	case len(ups.Uploads) > 0:
		u := ups.Uploads[0]
		return content(fmt.Sprintf("bucket %s holds no objects but in-progress multipart uploads (first: %q, initiated %s): someone is writing to it", name, aws.ToString(u.Key), aws.ToTime(u.Initiated).UTC().Format(time.RFC3339)))
	}
	return drivers.Inspection{Exists: true, Detail: fmt.Sprintf("bucket %s exists and holds no objects, object versions, delete markers or multipart uploads", name)}, nil
}

// Ensure implements drivers.Backend.
func (b *Backend) Ensure(ctx context.Context, r drivers.Resource) (drivers.EnsureResult, error) {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	p := parseParams(r.Parameters)
	cl, err := b.clientFor(p)
	if err != nil {
		return drivers.EnsureResult{}, err
	}
	var res drivers.EnsureResult
	var drift error
	ok, err := b.exists(ctx, cl, r.Name)
	if err != nil {
		return res, err
	}
	if !ok && r.DryRun {
		res.Changes = append(res.Changes, "create bucket "+r.Name)
		return res, nil
	}
	if !ok {
		in := &s3.CreateBucketInput{Bucket: aws.String(r.Name)}
		if p.region != "" && p.region != "us-east-1" {
			in.CreateBucketConfiguration = &types.CreateBucketConfiguration{LocationConstraint: types.BucketLocationConstraint(p.region)}
		}
		_, err := cl.CreateBucket(ctx, in)
		switch {
		case err == nil:
			res.Created = true
			res.Changes = append(res.Changes, "created bucket "+r.Name)
		case isCode(err, "BucketAlreadyOwnedByYou"):
			// Created concurrently; converge below.
		default:
			return res, b.classify(fmt.Errorf("create bucket %s: %w", r.Name, err))
		}
	} else if p.region != "" {
		out, err := cl.GetBucketLocation(ctx, &s3.GetBucketLocationInput{Bucket: aws.String(r.Name)})
		if err != nil && !isNotImplemented(err) {
			return res, b.classify(fmt.Errorf("get location of %s: %w", r.Name, err))
		}
		if err == nil {
			cur := string(out.LocationConstraint)
			if cur == "" {
				cur = "us-east-1"
			}
			if cur != p.region {
				drift = &drivers.DriftError{Parameter: ParamRegion, Current: cur, Desired: p.region, Reason: "a bucket cannot move to another region; recreate it"}
			}
		}
	}
	if err := b.ensureVersioning(ctx, cl, r.Name, p, r.DryRun, &res); err != nil {
		return res, err
	}
	if err := b.ensureLifecycle(ctx, cl, r.Name, p, r.DryRun, &res); err != nil {
		return res, err
	}
	return res, drift
}

// ensureVersioning compares the bucket's versioning with the parameter and
// sets it, unless dryRun, where only the change is listed.
func (b *Backend) ensureVersioning(ctx context.Context, cl *s3.Client, bucket string, p params, dryRun bool, res *drivers.EnsureResult) error {
	if p.versioning == nil {
		return nil
	}
	out, err := cl.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if isNotImplemented(err) {
		res.Shortfalls = append(res.Shortfalls, drivers.Shortfall{Parameter: ParamVersioning, Message: "this backend does not implement bucket versioning (it answered NotImplemented); the bucket works without it"})
		return nil
	}
	if err != nil {
		return b.classify(fmt.Errorf("get versioning of %s: %w", bucket, err))
	}
	var want types.BucketVersioningStatus
	switch {
	case *p.versioning && out.Status != types.BucketVersioningStatusEnabled:
		want = types.BucketVersioningStatusEnabled
	case !*p.versioning && out.Status == types.BucketVersioningStatusEnabled:
		want = types.BucketVersioningStatusSuspended
	default:
		return nil
	}
	change := fmt.Sprintf("versioning %s -> %s", orNever(string(out.Status)), want)
	if dryRun {
		res.Changes = append(res.Changes, change)
		return nil
	}
	_, err = cl.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket), VersioningConfiguration: &types.VersioningConfiguration{Status: want}})
	if isNotImplemented(err) {
		res.Shortfalls = append(res.Shortfalls, drivers.Shortfall{Parameter: ParamVersioning, Message: "this backend does not implement bucket versioning (it answered NotImplemented); the bucket works without it"})
		return nil
	}
	if err != nil {
		return b.classify(fmt.Errorf("set versioning of %s to %s: %w", bucket, want, err))
	}
	res.Changes = append(res.Changes, change)
	return nil
}

func orNever(s string) string {
	if s == "" {
		return "never enabled"
	}
	return s
}

// ensureLifecycle makes the bucket's lifecycle exactly the one buckety rule
// when the parameter is set, and removes only buckety's rule when it is not.
// With dryRun it only lists the change.
func (b *Backend) ensureLifecycle(ctx context.Context, cl *s3.Client, bucket string, p params, dryRun bool, res *drivers.EnsureResult) error {
	out, err := cl.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bucket)})
	var rules []types.LifecycleRule
	switch {
	case isNotImplemented(err):
		if p.lifecycle != nil {
			res.Shortfalls = append(res.Shortfalls, drivers.Shortfall{Parameter: ParamLifecycle, Message: "this backend does not implement bucket lifecycle (it answered NotImplemented); objects will not expire"})
		}
		return nil
	case isCode(err, "NoSuchLifecycleConfiguration"):
	case err != nil:
		return b.classify(fmt.Errorf("get lifecycle of %s: %w", bucket, err))
	default:
		rules = out.Rules
	}
	if p.lifecycle == nil {
		var keep []types.LifecycleRule
		for _, r := range rules {
			if aws.ToString(r.ID) != LifecycleRuleID {
				keep = append(keep, r)
			}
		}
		if len(keep) == len(rules) {
			return nil
		}
		if dryRun {
			res.Changes = append(res.Changes, "lifecycle rule removed (not in spec)")
			return nil
		}
		if len(keep) == 0 {
			_, err = cl.DeleteBucketLifecycle(ctx, &s3.DeleteBucketLifecycleInput{Bucket: aws.String(bucket)})
		} else {
			_, err = cl.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket), LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: keep}})
		}
		if err != nil {
			return b.classify(fmt.Errorf("remove buckety's lifecycle rule from %s: %w", bucket, err))
		}
		res.Changes = append(res.Changes, "lifecycle rule removed (not in spec)")
		return nil
	}
	want := *p.lifecycle
	b.mu.Lock()
	dropsAbort := b.dropsAbortUploads
	b.mu.Unlock()
	abortShortfall := drivers.Shortfall{Parameter: ParamLifecycle, Message: "this backend accepts but does not store abortIncompleteMultipartUploadDays (MinIO removes stale uploads by itself); the rest of the lifecycle applies"}
	if len(rules) == 1 && ruleMatches(rules[0], want, dropsAbort) {
		if dropsAbort && want.AbortIncompleteMultipartUploadDays > 0 {
			res.Shortfalls = append(res.Shortfalls, abortShortfall)
		}
		return nil
	}
	change := "lifecycle set: " + want.String()
	if len(rules) > 0 {
		change = fmt.Sprintf("lifecycle replaced (%d rules on the bucket) with: %s", len(rules), want.String())
	}
	if dryRun {
		res.Changes = append(res.Changes, change)
		return nil
	}
	rule := types.LifecycleRule{
		ID:     aws.String(LifecycleRuleID),
		Status: types.ExpirationStatusEnabled,
		Filter: &types.LifecycleRuleFilter{Prefix: aws.String(want.Prefix)},
	}
	if want.ExpirationDays > 0 {
		rule.Expiration = &types.LifecycleExpiration{Days: aws.Int32(want.ExpirationDays)}
	}
	if want.AbortIncompleteMultipartUploadDays > 0 {
		rule.AbortIncompleteMultipartUpload = &types.AbortIncompleteMultipartUpload{DaysAfterInitiation: aws.Int32(want.AbortIncompleteMultipartUploadDays)}
	}
	_, err = cl.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String(bucket), LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: []types.LifecycleRule{rule}}})
	if isNotImplemented(err) {
		res.Shortfalls = append(res.Shortfalls, drivers.Shortfall{Parameter: ParamLifecycle, Message: "this backend does not implement bucket lifecycle (it answered NotImplemented); objects will not expire"})
		return nil
	}
	if err != nil {
		return b.classify(fmt.Errorf("set lifecycle of %s: %w", bucket, err))
	}
	if want.AbortIncompleteMultipartUploadDays > 0 {
		back, err := cl.GetBucketLifecycleConfiguration(ctx, &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bucket)})
		if err != nil {
			return b.classify(fmt.Errorf("read back lifecycle of %s: %w", bucket, err))
		}
		if len(back.Rules) == 1 && back.Rules[0].AbortIncompleteMultipartUpload == nil {
			b.mu.Lock()
			b.dropsAbortUploads = true
			b.mu.Unlock()
			res.Shortfalls = append(res.Shortfalls, abortShortfall)
		}
	}
	res.Changes = append(res.Changes, change)
	return nil
}

// ruleMatches reports whether r is exactly buckety's rule for want. With
// dropsAbort, a missing AbortIncompleteMultipartUpload matches.
func ruleMatches(r types.LifecycleRule, want Lifecycle, dropsAbort bool) bool {
	if aws.ToString(r.ID) != LifecycleRuleID || r.Status != types.ExpirationStatusEnabled {
		return false
	}
	//lint:ignore SA1019 servers may still answer with the deprecated top-level Prefix
	prefix := aws.ToString(r.Prefix)
	if r.Filter != nil {
		if r.Filter.And != nil || r.Filter.Tag != nil || r.Filter.ObjectSizeGreaterThan != nil || r.Filter.ObjectSizeLessThan != nil {
			return false
		}
		prefix = aws.ToString(r.Filter.Prefix)
	}
	if prefix != want.Prefix {
		return false
	}
	var exp int32
	if r.Expiration != nil {
		if r.Expiration.Date != nil || aws.ToBool(r.Expiration.ExpiredObjectDeleteMarker) {
			return false
		}
		exp = aws.ToInt32(r.Expiration.Days)
	}
	var abort int32
	if r.AbortIncompleteMultipartUpload != nil {
		abort = aws.ToInt32(r.AbortIncompleteMultipartUpload.DaysAfterInitiation)
	} else if dropsAbort {
		abort = want.AbortIncompleteMultipartUploadDays
	}
	return exp == want.ExpirationDays && abort == want.AbortIncompleteMultipartUploadDays &&
		r.NoncurrentVersionExpiration == nil && len(r.NoncurrentVersionTransitions) == 0 && len(r.Transitions) == 0
}

// Delete implements drivers.Backend: one bounded slice of emptying per call
// (an *drivers.InProgressError while more remains), then DeleteBucket, on
// the endpoint Ensure created the bucket on (an R2 jurisdiction's own).
func (b *Backend) Delete(ctx context.Context, r drivers.Resource) error {
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	name := r.Name
	cl, err := b.clientFor(parseParams(r.Parameters))
	if err != nil {
		return err
	}
	ok, err := b.exists(ctx, cl, name)
	if err != nil || !ok {
		return err
	}
	slice := b.cfg.deleteSlice()
	aborted, moreUploads, err := b.abortUploads(ctx, cl, name, slice)
	if err != nil {
		return err
	}
	deleted, moreObjects, err := b.deleteVersions(ctx, cl, name, slice)
	if err != nil {
		return err
	}
	if moreUploads || moreObjects {
		return &drivers.InProgressError{Done: int64(deleted + aborted), Remaining: -1,
			Message: fmt.Sprintf("emptying bucket %s: removed %d object versions and delete markers and aborted %d multipart uploads in this pass; more remain", name, deleted, aborted)}
	}
	_, err = cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(name)})
	switch {
	case err == nil, isCode(err, "NoSuchBucket", "NotFound"):
		return nil
	case isCode(err, "BucketNotEmpty"):
		return &drivers.InProgressError{Done: int64(deleted + aborted), Remaining: -1, Message: fmt.Sprintf("bucket %s received new objects while it was emptied; continuing", name)}
	}
	return b.classify(fmt.Errorf("delete bucket %s: %w", name, err))
}

func (b *Backend) abortUploads(ctx context.Context, cl *s3.Client, bucket string, limit int32) (int, bool, error) {
	out, err := cl.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(bucket), MaxUploads: aws.Int32(limit)})
	if isNotImplemented(err) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, b.classify(fmt.Errorf("list multipart uploads of %s: %w", bucket, err))
	}
	for _, u := range out.Uploads {
		_, err := cl.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(bucket), Key: u.Key, UploadId: u.UploadId})
		if err != nil && !isCode(err, "NoSuchUpload") {
			return 0, false, b.classify(fmt.Errorf("abort multipart upload %s of %s: %w", aws.ToString(u.Key), bucket, err))
		}
	}
	return len(out.Uploads), aws.ToBool(out.IsTruncated), nil
}

// deleteVersions deletes one page of object versions and delete markers
// (falling back to current objects where versions are not implemented).
func (b *Backend) deleteVersions(ctx context.Context, cl *s3.Client, bucket string, limit int32) (int, bool, error) {
	var ids []types.ObjectIdentifier
	var more bool
	out, err := cl.ListObjectVersions(ctx, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket), MaxKeys: aws.Int32(limit)})
	switch {
	case isNotImplemented(err):
		lo, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), MaxKeys: aws.Int32(limit)})
		if err != nil {
			return 0, false, b.classify(fmt.Errorf("list objects of %s: %w", bucket, err))
		}
		for _, o := range lo.Contents {
			ids = append(ids, types.ObjectIdentifier{Key: o.Key})
		}
		more = aws.ToBool(lo.IsTruncated)
	case err != nil:
		return 0, false, b.classify(fmt.Errorf("list object versions of %s: %w", bucket, err))
	default:
		for _, v := range out.Versions {
			ids = append(ids, types.ObjectIdentifier{Key: v.Key, VersionId: v.VersionId})
		}
		for _, m := range out.DeleteMarkers {
			ids = append(ids, types.ObjectIdentifier{Key: m.Key, VersionId: m.VersionId})
		}
		more = aws.ToBool(out.IsTruncated)
	}
	if len(ids) == 0 {
		return 0, more, nil
	}
	if int32(len(ids)) > limit {
		ids, more = ids[:limit], true
	}
	res, err := cl.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String(bucket), Delete: &types.Delete{Objects: ids, Quiet: aws.Bool(true)}})
	if err != nil {
		return 0, false, b.classify(fmt.Errorf("delete objects of %s: %w", bucket, err))
	}
	if len(res.Errors) > 0 {
		e := res.Errors[0]
		return len(ids) - len(res.Errors), true, fmt.Errorf("delete objects of %s: %d failed, first %s: %s %s", bucket, len(res.Errors), aws.ToString(e.Key), aws.ToString(e.Code), aws.ToString(e.Message))
	}
	return len(ids), more, nil
}

// Grant implements drivers.Backend: the backend's own keys in v1alpha1.
func (b *Backend) Grant(_ context.Context, a drivers.Access) (drivers.Grant, error) {
	p := parseParams(a.ResourceParameters)
	endpoint := b.cfg.consumerEndpoint()
	if p.jurisdiction != "" {
		ep, err := b.cfg.consumerJurisdictionEndpoint(p.jurisdiction)
		if err != nil {
			return drivers.Grant{}, err
		}
		endpoint = ep
	}
	data := map[string][]byte{
		SecretEndpoint:        []byte(endpoint),
		SecretBucket:          []byte(a.Resource),
		SecretAccessKeyID:     []byte(b.cfg.AccessKeyID),
		SecretSecretAccessKey: []byte(b.cfg.SecretAccessKey),
	}
	switch {
	case p.region != "":
		data[SecretRegion] = []byte(p.region)
	case b.cfg.Region != "":
		data[SecretRegion] = []byte(b.cfg.Region)
	}
	return drivers.Grant{Data: data, Scoped: false}, nil
}

// Revoke implements drivers.Backend; no per-access keys exist in v1alpha1.
func (b *Backend) Revoke(context.Context, drivers.Access) error { return nil }

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
// refused credentials (*drivers.AccessDeniedError) and request errors.
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
	return err
}
