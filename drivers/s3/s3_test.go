package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go/middleware"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// countRequests counts, by operation name, the S3 requests a client
// sends, through SDK middleware.
func countRequests(r *drivertest.Requests) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("bucketyTestCount",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				r.Add(middleware.GetOperationName(ctx))
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	}
}

// isWrite reports whether an S3 operation changes the server.
func isWrite(op string) bool {
	for _, p := range []string{"Create", "Put", "Delete", "Abort", "Upload", "Complete", "Copy", "Restore"} {
		if strings.HasPrefix(op, p) {
			return true
		}
	}
	return false
}

type fixture struct {
	srv     *s3test.Server
	cfg     *Config
	backend *Backend
	counter *drivertest.Requests
	// raw is an independent client acting out of band, as an operator
	// with the aws CLI would.
	raw *s3.Client
}

func newFixture(t testing.TB, impl string, opts s3test.Options, mutate func(*Config)) *fixture {
	t.Helper()
	srv := s3test.Start(t, impl, opts)
	cfg := &Config{Implementation: impl, Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: drivers.Duration{Duration: 10 * time.Second}}
	if mutate != nil {
		mutate(cfg)
	}
	be, counter := open(t, cfg)
	return &fixture{srv: srv, cfg: cfg, backend: be, counter: counter, raw: rawClient(t, cfg, cfg.Endpoint)}
}

// open validates cfg and opens a backend on it, closed when the test ends.
func open(t testing.TB, cfg *Config) (*Backend, *drivertest.Requests) {
	t.Helper()
	if errs := cfg.Validate(field.NewPath("config")); len(errs) > 0 {
		t.Fatalf("config: %v", errs)
	}
	counter := &drivertest.Requests{IsWrite: isWrite}
	be, err := (&Driver{APIOptions: []func(*middleware.Stack) error{countRequests(counter)}}).Open(context.Background(), "s3", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	return be.(*Backend), counter
}

// rawClient is an independent client for one endpoint, acting out of band.
func rawClient(t testing.TB, cfg *Config, endpoint string) *s3.Client {
	t.Helper()
	raw, err := (&Backend{cfg: cfg}).newClient(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// forEach runs f against every S3 implementation, as subtests.
func forEach(t *testing.T, opts s3test.Options, f func(t *testing.T, fx *fixture)) {
	forEachWith(t, opts, nil, f)
}

// forEachWith is forEach with the driver's config changed by mutate.
func forEachWith(t *testing.T, opts s3test.Options, mutate func(*Config), f func(t *testing.T, fx *fixture)) {
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) { f(t, newFixture(t, impl, opts, mutate)) })
	}
}

// patientRequests gives each request a minute, for tests that count a
// slow request's work (DeleteObjects of 1000 versions took VersityGW over
// the fixture's 10 s on a loaded CI machine): a request that times out
// halves the delete batch and lists again (TestDeleteObjectsTimeoutHalvesTheBatch),
// which changes the requests and passes those tests count.
func patientRequests(c *Config) { c.RequestTimeout = drivers.Duration{Duration: time.Minute} }

func (f *fixture) ensure(t *testing.T, name string, params map[string]string) drivers.EnsureResult {
	t.Helper()
	res, err := f.backend.Ensure(context.Background(), drivers.Resource{Name: name, Parameters: params})
	if err != nil {
		t.Fatalf("Ensure(%s, %v): %v", name, params, err)
	}
	return res
}

func (f *fixture) versioning(t *testing.T, bucket string) types.BucketVersioningStatus {
	t.Helper()
	out, err := f.raw.GetBucketVersioning(context.Background(), &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	return out.Status
}

func (f *fixture) put(t testing.TB, bucket, key, body string) {
	t.Helper()
	_, err := f.raw.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte(body))})
	if err != nil {
		t.Fatalf("put %s/%s: %v", bucket, key, err)
	}
}

// TestEnsureCreateAndIdempotence creates a bucket with every parameter an
// implementation has and checks what the conformance suite's generic
// create-and-recheck cannot: versioning is Enabled, and MinIO's dropping of
// abortIncompleteMultipartUploadDays is a shortfall, not drift that the
// second Ensure would rewrite.
func TestEnsureCreateAndIdempotence(t *testing.T) {
	forEach(t, s3test.Options{}, func(t *testing.T, f *fixture) {
		params := map[string]string{"versioning": "true", "region": f.srv.Region}
		if f.srv.Implementation == "minio" {
			params["lifecycle"] = `{"expirationDays": 30, "prefix": "logs/", "abortIncompleteMultipartUploadDays": 7}`
		}
		res := f.ensure(t, "tenant1-orders", params)
		if !res.Created {
			t.Fatalf("want Created, got %+v", res)
		}
		if st := f.versioning(t, "tenant1-orders"); st != types.BucketVersioningStatusEnabled {
			t.Errorf("want versioning Enabled, got %q", st)
		}
		if f.srv.Implementation == "minio" && (len(res.Shortfalls) != 1 || !strings.Contains(res.Shortfalls[0].Message, "abortIncompleteMultipartUploadDays")) {
			t.Errorf("minio: want a shortfall for the dropped abortIncompleteMultipartUploadDays, got %+v", res.Shortfalls)
		}
		f.counter.Reset()
		res = f.ensure(t, "tenant1-orders", params)
		writes, all := f.counter.Reset()
		if len(writes) != 0 || res.Created || len(res.Changes) != 0 {
			t.Fatalf("second Ensure: want zero writes and no changes, got writes %v (of %d requests), %+v", writes, all, res)
		}
		if all == 0 {
			t.Fatal("the request counter saw nothing: the middleware is not wired")
		}
	})
}

func TestVersioningToggleAndDrift(t *testing.T) {
	forEach(t, s3test.Options{}, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		f.ensure(t, "vers", map[string]string{"versioning": "true"})
		_, err := f.raw.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String("vers"), VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusSuspended}})
		if err != nil {
			t.Fatal(err)
		}
		res := f.ensure(t, "vers", map[string]string{"versioning": "true"})
		if st := f.versioning(t, "vers"); st != types.BucketVersioningStatusEnabled {
			t.Errorf("out-of-band suspension: want Enabled again, got %q", st)
		}
		if len(res.Changes) != 1 || res.Changes[0] != "versioning Suspended -> Enabled" {
			t.Errorf("want the repair reported, got %v", res.Changes)
		}
		f.ensure(t, "vers", map[string]string{"versioning": "false"})
		if st := f.versioning(t, "vers"); st != types.BucketVersioningStatusSuspended {
			t.Errorf("versioning false: want Suspended, got %q", st)
		}
		// Omitted: never touched.
		f.counter.Reset()
		f.ensure(t, "vers", nil)
		if w, _ := f.counter.Reset(); len(w) != 0 {
			t.Errorf("omitted versioning: want no writes, got %v", w)
		}
	})
}

func TestVersioningNotImplementedFailsSafe(t *testing.T) {
	f := newFixture(t, "versitygw", s3test.Options{NoVersioning: true}, nil)
	res := f.ensure(t, "plain", map[string]string{"versioning": "true"})
	if !res.Created || len(res.Shortfalls) != 1 || res.Shortfalls[0].Parameter != "versioning" {
		t.Fatalf("want the bucket created with a versioning shortfall, got %+v", res)
	}
	if ok, err := f.backend.exists(context.Background(), f.raw, "plain"); !ok || err != nil {
		t.Fatalf("want the bucket to exist, got %v %v", ok, err)
	}
}

func lifecycleRules(t *testing.T, f *fixture, bucket string) []types.LifecycleRule {
	t.Helper()
	out, err := f.raw.GetBucketLifecycleConfiguration(context.Background(), &s3.GetBucketLifecycleConfigurationInput{Bucket: aws.String(bucket)})
	if isCode(err, "NoSuchLifecycleConfiguration") {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return out.Rules
}

func TestLifecycleOnMinIO(t *testing.T) {
	f := newFixture(t, "minio", s3test.Options{}, nil)
	ctx := context.Background()
	f.ensure(t, "lifecycle-test", map[string]string{"lifecycle": `{"expirationDays": 30}`})
	rules := lifecycleRules(t, f, "lifecycle-test")
	if len(rules) != 1 || aws.ToInt32(rules[0].Expiration.Days) != 30 {
		t.Fatalf("want one rule expiring after 30 days, got %+v", rules)
	}
	res := f.ensure(t, "lifecycle-test", map[string]string{"lifecycle": `{"expirationDays": 7, "prefix": "tmp/", "abortIncompleteMultipartUploadDays": 2}`})
	rules = lifecycleRules(t, f, "lifecycle-test")
	if len(rules) != 1 || aws.ToInt32(rules[0].Expiration.Days) != 7 || aws.ToString(rules[0].Filter.Prefix) != "tmp/" {
		t.Fatalf("want the changed rule, got %+v", rules)
	}
	if len(res.Changes) != 1 || !strings.HasPrefix(res.Changes[0], "lifecycle replaced") {
		t.Errorf("want the change reported, got %v", res.Changes)
	}
	// MinIO accepts abortIncompleteMultipartUploadDays but does not store
	// it: reported, not rewritten on every pass.
	if rules[0].AbortIncompleteMultipartUpload == nil && len(res.Shortfalls) != 1 {
		t.Errorf("want a shortfall for the dropped abort rule, got %+v", res.Shortfalls)
	}
	// Out-of-band: another rule is added; the spec's lifecycle is exactly
	// buckety's rule, so it is reverted.
	oob := append(rules, types.LifecycleRule{ID: aws.String("manual"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("x/")}, Expiration: &types.LifecycleExpiration{Days: aws.Int32(1)}})
	if _, err := f.raw.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("lifecycle-test"), LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: oob}}); err != nil {
		t.Fatal(err)
	}
	f.ensure(t, "lifecycle-test", map[string]string{"lifecycle": `{"expirationDays": 7, "prefix": "tmp/", "abortIncompleteMultipartUploadDays": 2}`})
	if rules = lifecycleRules(t, f, "lifecycle-test"); len(rules) != 1 || aws.ToString(rules[0].ID) != LifecycleRuleID {
		t.Fatalf("want the out-of-band rule reverted, got %+v", rules)
	}
	// Removed from spec: buckety's rule goes, a foreign one stays.
	foreign := types.LifecycleRule{ID: aws.String("foreign"), Status: types.ExpirationStatusEnabled, Filter: &types.LifecycleRuleFilter{Prefix: aws.String("f/")}, Expiration: &types.LifecycleExpiration{Days: aws.Int32(3)}}
	if _, err := f.raw.PutBucketLifecycleConfiguration(ctx, &s3.PutBucketLifecycleConfigurationInput{Bucket: aws.String("lifecycle-test"), LifecycleConfiguration: &types.BucketLifecycleConfiguration{Rules: append(rules, foreign)}}); err != nil {
		t.Fatal(err)
	}
	f.ensure(t, "lifecycle-test", nil)
	if rules = lifecycleRules(t, f, "lifecycle-test"); len(rules) != 1 || aws.ToString(rules[0].ID) != "foreign" {
		t.Fatalf("want only the foreign rule left, got %+v", rules)
	}
	f.ensure(t, "lifecycle-test", map[string]string{"lifecycle": `{"expirationDays": 1}`})
	f.ensure(t, "lifecycle-test", nil)
	f.counter.Reset()
	f.ensure(t, "lifecycle-test", nil)
	if w, _ := f.counter.Reset(); len(w) != 0 {
		t.Errorf("want no writes once converged, got %v", w)
	}
}

// TestLifecycleNotImplementedFailsSafeOnVersityGW covers what admission
// cannot stop: lifecycle is refused for implementation versitygw, but a
// value kept from before it was gated (ratcheting), or a backend that
// declares another implementation than it runs, still reaches Ensure.
func TestLifecycleNotImplementedFailsSafeOnVersityGW(t *testing.T) {
	f := newFixture(t, "versitygw", s3test.Options{}, nil)
	res := f.ensure(t, "lcv", map[string]string{"lifecycle": `{"expirationDays": 30}`, "versioning": "true"})
	if !res.Created || len(res.Shortfalls) != 1 || res.Shortfalls[0].Parameter != "lifecycle" || !strings.Contains(res.Shortfalls[0].Message, "NotImplemented") {
		t.Fatalf("want the bucket created with a lifecycle shortfall, got %+v", res)
	}
	if st := f.versioning(t, "lcv"); st != types.BucketVersioningStatusEnabled {
		t.Errorf("want the rest applied (versioning Enabled), got %q", st)
	}
	f.counter.Reset()
	res = f.ensure(t, "lcv", map[string]string{"lifecycle": `{"expirationDays": 30}`, "versioning": "true"})
	if w, _ := f.counter.Reset(); len(w) != 0 || len(res.Shortfalls) != 1 {
		t.Errorf("want no writes and the shortfall still reported, got %v %+v", w, res)
	}
}

func TestRegionOnMinIO(t *testing.T) {
	f := newFixture(t, "minio", s3test.Options{Region: "eu-north-1"}, nil)
	f.ensure(t, "regional", map[string]string{"region": "eu-north-1"})
	out, err := f.raw.GetBucketLocation(context.Background(), &s3.GetBucketLocationInput{Bucket: aws.String("regional")})
	if err != nil || string(out.LocationConstraint) != "eu-north-1" {
		t.Fatalf("want location eu-north-1, got %q %v", out.LocationConstraint, err)
	}
	_, err = f.backend.Ensure(context.Background(), drivers.Resource{Name: "regional", Parameters: map[string]string{"region": "us-west-2"}})
	var drift *drivers.DriftError
	if !errors.As(err, &drift) || drift.Current != "eu-north-1" || drift.Desired != "us-west-2" {
		t.Fatalf("want region drift eu-north-1 vs us-west-2, got %v", err)
	}
}

// versions lists every object version and delete marker of a bucket, out
// of band.
func (f *fixture) versions(t *testing.T, bucket string) *s3.ListObjectVersionsOutput {
	t.Helper()
	out, err := f.raw.ListObjectVersions(context.Background(), &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func (f *fixture) deleteVersion(t *testing.T, bucket, key, version string) {
	t.Helper()
	if _, err := f.raw.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), VersionId: aws.String(version)}); err != nil {
		t.Fatalf("delete %s/%s version %s: %v", bucket, key, version, err)
	}
}

func (f *fixture) deleteKey(t *testing.T, bucket, key string) {
	t.Helper()
	if _, err := f.raw.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		t.Fatalf("delete %s/%s: %v", bucket, key, err)
	}
}

// TestInspect proves that empty means empty: a bucket holding only
// noncurrent versions, only delete markers or only an in-progress multipart
// upload is content, each named in the detail, on every implementation.
func TestInspect(t *testing.T) {
	versioned := map[string]string{"versioning": "true"}
	cases := []struct {
		name    string
		setup   func(t *testing.T, f *fixture, bucket string)
		exists  bool
		content bool
		detail  string
	}{
		{name: "empty", exists: true, setup: func(t *testing.T, f *fixture, b string) { f.ensure(t, b, nil) },
			detail: "holds no objects, object versions, delete markers or multipart uploads"},
		{name: "current object", exists: true, content: true, detail: `holds objects (first: "a/b.txt")`,
			setup: func(t *testing.T, f *fixture, b string) { f.ensure(t, b, nil); f.put(t, b, "a/b.txt", "hello") }},
		{name: "noncurrent versions only", exists: true, content: true, detail: `holds no current objects but noncurrent object versions (first: "gone.txt" version `,
			setup: func(t *testing.T, f *fixture, b string) {
				f.ensure(t, b, versioned)
				f.put(t, b, "gone.txt", "v1")
				f.put(t, b, "gone.txt", "v2")
				f.deleteKey(t, b, "gone.txt")
			}},
		{name: "delete markers only", exists: true, content: true, detail: `holds no objects but delete markers (first: "marked.txt" version `,
			setup: func(t *testing.T, f *fixture, b string) {
				f.ensure(t, b, versioned)
				f.put(t, b, "marked.txt", "v1")
				f.deleteKey(t, b, "marked.txt")
				for _, v := range f.versions(t, b).Versions {
					f.deleteVersion(t, b, aws.ToString(v.Key), aws.ToString(v.VersionId))
				}
				if vs := f.versions(t, b); len(vs.Versions) != 0 || len(vs.DeleteMarkers) != 1 {
					t.Fatalf("setup: want exactly one delete marker, got %d versions and %d markers", len(vs.Versions), len(vs.DeleteMarkers))
				}
			}},
		{name: "in-progress multipart upload only", exists: true, content: true, detail: `holds no objects but in-progress multipart uploads (first: "big/upload"`,
			setup: func(t *testing.T, f *fixture, b string) {
				f.ensure(t, b, nil)
				if _, err := f.raw.CreateMultipartUpload(context.Background(), &s3.CreateMultipartUploadInput{Bucket: aws.String(b), Key: aws.String("big/upload")}); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "versioned and emptied of every version", exists: true, detail: "holds no objects, object versions",
			setup: func(t *testing.T, f *fixture, b string) {
				f.ensure(t, b, versioned)
				f.put(t, b, "tmp.txt", "v1")
				f.deleteKey(t, b, "tmp.txt")
				vs := f.versions(t, b)
				for _, v := range vs.Versions {
					f.deleteVersion(t, b, aws.ToString(v.Key), aws.ToString(v.VersionId))
				}
				for _, m := range vs.DeleteMarkers {
					f.deleteVersion(t, b, aws.ToString(m.Key), aws.ToString(m.VersionId))
				}
			}},
	}
	forEach(t, s3test.Options{}, func(t *testing.T, f *fixture) {
		for i, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				bucket := fmt.Sprintf("inspect-%d", i)
				c.setup(t, f, bucket)
				in, err := f.backend.Inspect(context.Background(), drivers.Resource{Name: bucket})
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				if in.Exists != c.exists || in.HasContent != c.content {
					t.Fatalf("want exists=%v content=%v, got %+v", c.exists, c.content, in)
				}
				if !strings.Contains(in.Detail, c.detail) {
					t.Errorf("want detail containing %q, got %q", c.detail, in.Detail)
				}
			})
		}
	})
}

// TestInspectWithoutVersioning: on a VersityGW without --versioning-dir,
// where versioning answers NotImplemented, an empty bucket is still
// adoptable and an upload is still content.
func TestInspectWithoutVersioning(t *testing.T) {
	f := newFixture(t, "versitygw", s3test.Options{NoVersioning: true}, nil)
	ctx := context.Background()
	f.ensure(t, "plain", nil)
	if in, err := f.backend.Inspect(ctx, drivers.Resource{Name: "plain"}); err != nil || !in.Exists || in.HasContent {
		t.Fatalf("empty: want existing without content, got %+v %v", in, err)
	}
	if _, err := f.raw.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String("plain"), Key: aws.String("up")}); err != nil {
		t.Fatal(err)
	}
	if in, err := f.backend.Inspect(ctx, drivers.Resource{Name: "plain"}); err != nil || !in.HasContent || !strings.Contains(in.Detail, `in-progress multipart uploads (first: "up"`) {
		t.Fatalf("upload: want content naming it, got %+v %v", in, err)
	}
}

// TestJurisdictionEndpoints points the eu jurisdiction of an r2 backend at
// a second real S3 server, with the same keys as the account endpoint (as
// R2's are), and proves that Inspect, Ensure and Delete of an eu bucket all
// go there and never to the account endpoint: a bucket of the same name on
// the account endpoint, holding an object, is never looked at or touched.
func TestJurisdictionEndpoints(t *testing.T) {
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			ctx := context.Background()
			account := newFixture(t, impl, s3test.Options{}, nil)
			euSrv := s3test.Start(t, impl, s3test.Options{AccessKey: account.srv.AccessKey, SecretKey: account.srv.SecretKey})
			cfg := *account.cfg
			cfg.Implementation = ImplR2
			cfg.JurisdictionEndpoints = map[string]string{"eu": euSrv.Endpoint}
			r2, _ := open(t, &cfg)
			f := &fixture{backend: r2}
			eu := rawClient(t, &cfg, euSrv.Endpoint)
			euFx := &fixture{raw: eu}
			inEU := func(name string) drivers.Resource {
				return drivers.Resource{Name: name, Parameters: map[string]string{"jurisdiction": "eu"}}
			}

			// The same name on both endpoints: populated in the EU, empty
			// on the account endpoint.
			for _, fx := range []*fixture{account, euFx} {
				if _, err := fx.raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("eu-data")}); err != nil && !isCode(err, "BucketAlreadyOwnedByYou", "BucketAlreadyExists") {
					t.Fatal(err)
				}
			}
			euFx.put(t, "eu-data", "resident.txt", "EU data")
			in, err := f.backend.Inspect(ctx, inEU("eu-data"))
			if err != nil || !in.HasContent || !strings.Contains(in.Detail, `"resident.txt"`) {
				t.Fatalf("Inspect of a populated EU bucket: want HasContent naming resident.txt, got %+v %v", in, err)
			}
			if in, err := f.backend.Inspect(ctx, drivers.Resource{Name: "eu-data"}); err != nil || in.HasContent {
				t.Fatalf("Inspect without jurisdiction: want the account endpoint's empty bucket, got %+v %v", in, err)
			}

			// Ensure creates in the EU only.
			account.put(t, "eu-data", "account-only.txt", "account data")
			res, err := f.backend.Ensure(ctx, inEU("eu-new"))
			if err != nil || !res.Created {
				t.Fatalf("Ensure in the EU: want Created, got %+v %v", res, err)
			}
			if ok, err := f.backend.exists(ctx, eu, "eu-new"); !ok || err != nil {
				t.Fatalf("want eu-new on the EU server, got %v %v", ok, err)
			}
			if ok, err := f.backend.exists(ctx, account.raw, "eu-new"); ok || err != nil {
				t.Fatalf("want no eu-new on the account endpoint, got %v %v", ok, err)
			}
			if in, err := f.backend.Inspect(ctx, inEU("eu-new")); err != nil || !in.Exists || in.HasContent {
				t.Fatalf("Inspect of the new EU bucket: want existing and empty, got %+v %v", in, err)
			}

			// Delete empties and removes the EU bucket; the account
			// endpoint's bucket of the same name keeps its object.
			for i := 0; ; i++ {
				err := f.backend.Delete(ctx, inEU("eu-data"))
				var ip *drivers.InProgressError
				if errors.As(err, &ip) && i < 5 {
					continue
				}
				if err != nil {
					t.Fatalf("Delete in the EU: %v", err)
				}
				break
			}
			// MinIO may answer HeadBucket for a moment after DeleteBucket.
			for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
				ok, err := f.backend.exists(ctx, eu, "eu-data")
				if !ok && err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("want eu-data gone from the EU server, got exists=%v %v", ok, err)
				}
			}
			out, err := account.raw.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("eu-data")})
			if err != nil || len(out.Contents) != 1 || aws.ToString(out.Contents[0].Key) != "account-only.txt" {
				t.Fatalf("want the account endpoint's eu-data untouched, got %v %v", out, err)
			}

			// Access Secrets name the EU endpoint.
			g, err := f.backend.Grant(ctx, drivers.Access{Resource: "eu-new", ResourceParameters: map[string]string{"jurisdiction": "eu"}})
			if err != nil || string(g.Data["endpoint"]) != euSrv.Endpoint {
				t.Errorf("Grant: want endpoint %s, got %q %v", euSrv.Endpoint, g.Data["endpoint"], err)
			}
		})
	}
}

// TestRecursiveDelete empties a bucket of 2,500 object versions and delete
// markers plus an incomplete multipart upload, in bounded slices, then
// deletes it; a second Delete is a no-op. Its requests have a minute
// (patientRequests): a timed-out DeleteObjects makes a pass list again,
// and what the server went on deleting after the lost answer no longer
// lists, so that pass can empty more than it counts, and the pass count
// below would prove nothing.
func TestRecursiveDelete(t *testing.T) {
	forEachWith(t, s3test.Options{}, patientRequests, func(t *testing.T, f *fixture) {
		ctx := context.Background()
		const bucket = "doomed"
		f.ensure(t, bucket, map[string]string{"versioning": "true"})
		// 2,000 keys; 400 overwritten (noncurrent versions); 100 deleted
		// (delete markers): 2,500 versions and markers.
		var wg sync.WaitGroup
		work := make(chan int)
		errs := make(chan error, 16)
		for w := 0; w < 16; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range work {
					key := fmt.Sprintf("obj/%04d", i)
					n := 1
					if i < 400 {
						n = 2
					}
					for j := 0; j < n; j++ {
						if _, err := f.raw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader(fmt.Sprint(i, j))}); err != nil {
							errs <- err
							return
						}
					}
					if i >= 1900 {
						if _, err := f.raw.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
							errs <- err
							return
						}
					}
				}
			}()
		}
		for i := 0; i < 2000; i++ {
			work <- i
		}
		close(work)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if _, err := f.raw.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: aws.String(bucket), Key: aws.String("big/upload")}); err != nil {
			t.Fatal(err)
		}

		versions, markers := 0, 0
		for p := s3.NewListObjectVersionsPaginator(f.raw, &s3.ListObjectVersionsInput{Bucket: aws.String(bucket)}); p.HasMorePages(); {
			page, err := p.NextPage(ctx)
			if err != nil {
				t.Fatal(err)
			}
			versions += len(page.Versions)
			markers += len(page.DeleteMarkers)
		}
		entries := int64(versions + markers + 1) // and the multipart upload
		if entries < 2500 {
			t.Fatalf("want 2,500 versions and delete markers listed before the delete, got %d versions and %d markers", versions, markers)
		}

		passes, timeouts := 0, 0
		var total int64
		for {
			passes++
			if passes > 20+timeouts {
				t.Fatalf("not deleted after 20 passes (%d removed)", total)
			}
			err := f.backend.Delete(ctx, drivers.Resource{Name: bucket})
			var ip *drivers.InProgressError
			if errors.As(err, &ip) {
				if ip.Done <= 0 || ip.Done > 1001 {
					t.Fatalf("pass %d: want a bounded slice of work, got %d (%s)", passes, ip.Done, ip.Message)
				}
				total += ip.Done
				continue
			}
			if err != nil && errors.Is(err, context.DeadlineExceeded) && timeouts < 3 {
				// A loaded machine's VersityGW took over the 10 s
				// requestTimeout for 1000 and then 500 versions: the
				// next pass goes on with a smaller batch, as the
				// controller's retry would.
				timeouts++
				continue
			}
			if err != nil {
				t.Fatalf("pass %d: %v", passes, err)
			}
			break
		}
		slice := int64(f.cfg.deleteSlice())
		f.backend.deleteBatch.mu.Lock()
		shrunk := f.backend.deleteBatch.n != 0
		f.backend.deleteBatch.mu.Unlock()
		switch {
		case shrunk:
			// A DeleteObjects outran even a minute: the server may have
			// deleted a batch it never answered for (see above).
			t.Logf("a DeleteObjects timed out: %d passes reported %d of %d entries", passes, total, entries)
		default:
			if want := int((entries + slice - 1) / slice); passes < want {
				t.Errorf("want at least %d bounded passes for %d entries in slices of %d, got %d", want, entries, slice, passes)
			}
			if total < entries-slice {
				t.Errorf("want at least %d of %d entries reported removed before the last pass, got %d", entries-slice, entries, total)
			}
		}
		if ok, err := f.backend.exists(ctx, f.raw, bucket); ok || err != nil {
			t.Fatalf("want the bucket gone, got exists=%v err=%v", ok, err)
		}
		if err := f.backend.Delete(ctx, drivers.Resource{Name: bucket}); err != nil {
			t.Fatalf("second delete: want nil, got %v", err)
		}
		t.Logf("%s: deleted in %d passes", f.srv.Implementation, passes)
	})
}

func TestWrongKeysAreAccessDenied(t *testing.T) {
	forEach(t, s3test.Options{}, func(t *testing.T, f *fixture) {
		bad := *f.cfg
		bad.SecretAccessKey = "wrong-secret-key-0000000000"
		be, err := New().Open(context.Background(), "s3", &bad)
		if err != nil {
			t.Fatal(err)
		}
		defer be.Close()
		_, err = be.Ensure(context.Background(), drivers.Resource{Name: "denied"})
		if !drivers.IsAccessDenied(err) {
			t.Fatalf("want *drivers.AccessDeniedError, got %T %v", err, err)
		}
	})
}
