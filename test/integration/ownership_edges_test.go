package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/kadm"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/testhook"
	"github.com/Yolean/buckety-controller/test/harness"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// rootOf is an S3 client with srv's root keys.
func rootOf(srv *s3test.Server) *s3.Client {
	return s3.New(s3.Options{Region: srv.Region, BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, "")})
}

// recordState is the state its owner record gives bucket (its
// s3driver.TagState tag), "(none)" without one, or the error reading it.
func recordState(root *s3.Client, bucket string) string {
	out, err := root.GetBucketTagging(context.Background(), &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	for _, tag := range out.TagSet {
		if aws.ToString(tag.Key) == s3driver.TagState {
			return aws.ToString(tag.Value)
		}
	}
	return "(none)"
}

// misreport makes the s3 driver's requests about one bucket answer as a
// server that cannot read it would (SeaweedFS when its filer does not
// answer): its next lies HeadBuckets "no such bucket" (404), and every
// CreateBucket an internal error. Nothing reaches the server for those.
type misreport struct {
	bucket  atomic.Pointer[string]
	lies    atomic.Int32
	creates atomic.Int32
}

func (m *misreport) arm(bucket string, lies int32) {
	m.bucket.Store(&bucket)
	m.lies.Store(lies)
	m.creates.Store(0)
}

func (m *misreport) middleware(stack *middleware.Stack) error {
	return s3Intercept("bucketyTestMisreport", func(_ context.Context, params any) (any, bool, error) {
		target := m.bucket.Load()
		if target == nil {
			return nil, false, nil
		}
		switch p := params.(type) {
		case *s3.HeadBucketInput:
			if aws.ToString(p.Bucket) == *target && m.lies.Add(-1) >= 0 {
				return nil, true, &smithy.GenericAPIError{Code: "NotFound", Message: "Not Found (injected: the filer did not answer)"}
			}
		case *s3.CreateBucketInput:
			if aws.ToString(p.Bucket) == *target {
				m.creates.Add(1)
				return nil, true, &smithy.GenericAPIError{Code: "InternalError", Message: "We encountered an internal error (injected)"}
			}
		}
		return nil, false, nil
	})(stack)
}

// s3Intercept is an Initialize middleware of the s3 driver's client,
// named name: answer returns the answer to a request it takes (ok), or
// lets the request through to the server.
func s3Intercept(name string, answer func(ctx context.Context, params any) (out any, ok bool, err error)) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc(name,
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if out, ok, err := answer(ctx, in.Parameters); ok {
					return middleware.InitializeOutput{Result: out}, middleware.Metadata{}, err
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
}

// recordAsWest writes installation west's owner record to bucket's tags,
// as west's controller would.
func recordAsWest(ctx context.Context, root *s3.Client, bucket string) error {
	_, err := root.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String(bucket), Tagging: &s3types.Tagging{TagSet: []s3types.Tag{
		{Key: aws.String(s3driver.TagInstallation), Value: aws.String("west")},
		{Key: aws.String(s3driver.TagNamespace), Value: aws.String("west-team")},
		{Key: aws.String(s3driver.TagName), Value: aws.String("orders")},
		{Key: aws.String(s3driver.TagUID), Value: aws.String("6b1f3c2e-west")},
		{Key: aws.String(s3driver.TagState), Value: aws.String(string(drivers.OwnerHeld))},
	}}})
	return err
}

// TestBucketMisreportedMissingIsNotTaken (MinIO): a bucket of someone
// else's, holding an object, answers buckety's adoption check "no such
// bucket" (and its create an internal error), so its Buckety's claim is
// recorded Created. A later pass finds the bucket there: it carries no
// owner record of the Buckety's, which never reported it provisioned, and
// it holds content, so buckety did not create it. It is refused as any
// existing bucket with content (AdoptionRefused), nothing is written to
// it and no credential granted on it; and deleting the Buckety
// (retentionPolicy Delete) leaves it and its object in place, whether the
// deletion comes before or after the next pass. Before, that pass took the
// bucket for its own: converged it, recorded it, granted the access, and
// the deletion emptied and deleted it.
func TestBucketMisreportedMissingIsNotTaken(t *testing.T) {
	needInfra(t)
	srv, be := scopedS3(t, "minio")
	be.Name = "owned"
	m := &misreport{}
	reg := drivers.NewRegistry(kadm.New(), &s3driver.Driver{APIOptions: []func(*middleware.Stack) error{m.middleware}})
	startControllerWith(t, installationYAML("east", be), reg, fastLoops)
	root := rootOf(srv)
	ctx := context.Background()
	theirs := func(t *testing.T, bucket string) {
		t.Helper()
		if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
			t.Fatal(err)
		}
		if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("precious"), Body: strings.NewReader("theirs")}); err != nil {
			t.Fatal(err)
		}
	}
	intact := func(t *testing.T, bucket, when string) {
		t.Helper()
		if _, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("precious")}); err != nil {
			t.Errorf("%s: want %s/precious, someone else's, in place; got %v", when, bucket, err)
		}
		out, err := root.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
		if err == nil {
			for _, tag := range out.TagSet {
				if aws.ToString(tag.Key) == s3driver.TagInstallation {
					t.Errorf("%s: want no owner record written to %s, got installation %s", when, bucket, aws.ToString(tag.Value))
				}
			}
		}
	}
	created := func(t *testing.T, bucket string) {
		t.Helper()
		wait.For(t, waitTimeout, "buckety's create of "+bucket+" refused", func() (bool, string) {
			n := m.creates.Load()
			return n > 0, fmt.Sprintf("%d creates", n)
		})
	}

	t.Run("provisioned", func(t *testing.T) {
		ns := namespace(t)
		removeWhileRunning(t, ns)
		bucket := ns + "-orders"
		theirs(t, bucket)
		// The adoption check's HeadBucket and Ensure's.
		m.arm(bucket, 2)
		_, b, a := tenantManifests(ns, bucket, "")
		create(t, b)
		create(t, a)
		created(t, bucket)
		got := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
		if !strings.Contains(got.Message, "holds content") {
			t.Errorf("want the refusal to say the bucket holds content, got %q", got.Message)
		}
		intact(t, bucket, "refused")
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(a), a); err != nil {
			t.Fatal(err)
		}
		if c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady); c == nil || c.Status == metav1.ConditionTrue || a.Status.Principal != "" {
			t.Errorf("want the access not granted on someone else's bucket, got %+v, principal %q", c, a.Status.Principal)
		}
		deleteOn(t, k8s, a)
		deleteOn(t, k8s, b)
		intact(t, bucket, "the Buckety deleted")
	})

	t.Run("deleted", func(t *testing.T) {
		ns := namespace(t)
		removeWhileRunning(t, ns)
		bucket := ns + "-orders"
		theirs(t, bucket)
		m.arm(bucket, 2)
		_, b, _ := tenantManifests(ns, bucket, "")
		create(t, b)
		created(t, bucket)
		deleteOn(t, k8s, b)
		intact(t, bucket, "the Buckety deleted")
	})
}

// TestAdoptedKeptIsNotTakenBackAsCreated (MinIO, installation east): a
// bucket with content, adopted (both keys) on a backend without
// adoption.deleteAdopted, is kept when its Buckety is deleted with
// retentionPolicy Delete, and its owner record is marked retained. The same
// manifest applied again without spec.adoption is refused: the record
// no longer re-attaches the bucket to a Buckety of that name, which before
// came back Created and, deleted again, deleted the adopted bucket.
func TestAdoptedKeptIsNotTakenBackAsCreated(t *testing.T) {
	needInfra(t)
	srv, be := scopedS3(t, "minio")
	be.Name = "owned"
	be.Adoption = &config.Adoption{Allow: true}
	startControllerWith(t, installationYAML("east", be), nil, fastLoops)
	root := rootOf(srv)
	ctx := context.Background()
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bucket := ns + "-legacy"
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("precious"), Body: strings.NewReader("theirs")}); err != nil {
		t.Fatal(err)
	}
	_, b, _ := tenantManifests(ns, bucket, v1.AdoptionAndConverge)
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if b.Status.Provenance != v1.ProvenanceAdopted {
		t.Fatalf("want provenance Adopted, got %q", b.Status.Provenance)
	}
	deleteOn(t, k8s, b)
	state := func() string { return recordState(root, bucket) }
	if got := state(); got != string(drivers.OwnerRetained) {
		t.Errorf("an adopted bucket kept at its Buckety's deletion: want its record marked %s, got %s", drivers.OwnerRetained, got)
	}
	_, again, _ := tenantManifests(ns, bucket, "")
	create(t, again)
	waitCondition(t, again, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
	deleteOn(t, k8s, again)
	if _, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("precious")}); err != nil {
		t.Errorf("want the adopted bucket's object in place after the second Buckety went, got %v", err)
	}
}

// keptWithoutBackend (MinIO, installation east): a Buckety orders with
// retentionPolicy Retain, holding an object, is deleted while its backend
// is missing from buckety-controller.yaml, so the owner record on the
// bucket cannot be marked retained and still holds it for that namespace
// and name; the retained claim says so (recordUnmarked). Then east starts
// again with the backend, with opts. It returns the bucket's root client,
// the namespace, the bucket, a reader of its record's state, and the
// claim's key.
func keptWithoutBackend(t *testing.T, opts func(*appcontroller.Options)) (*s3.Client, string, string, func() string, client.ObjectKey) {
	t.Helper()
	srv, be := scopedS3(t, "minio")
	be.Name = "owned"
	east := startControllerWith(t, installationYAML("east", be), nil, opts)
	root := rootOf(srv)
	ctx := context.Background()
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bucket := ns + "-kept"
	_, b, _ := tenantManifests(ns, bucket, "")
	b.Spec.RetentionPolicy = v1.RetentionRetain
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("precious"), Body: strings.NewReader("kept")}); err != nil {
		t.Fatal(err)
	}
	state := func() string { return recordState(root, bucket) }
	held := state()
	east.stop(t)
	without := startControllerWith(t, installationYAML("east", sharedKafka("kafka")), nil, opts)
	deleteOn(t, k8s, b)
	if got := state(); got != held {
		t.Fatalf("deleted while its backend is missing from the config: want the record as it was (%s), got %s", held, got)
	}
	key := client.ObjectKey{Name: claims.Name("owned", bucket)}
	cl := &v1.BucketyClaim{}
	if err := k8s.Get(ctx, key, cl); err != nil || !claims.IsRetained(cl) || !cl.Spec.Retained.RecordUnmarked {
		t.Fatalf("want the claim kept retained with recordUnmarked, got %v %+v", err, cl.Spec.Retained)
	}
	without.stop(t)
	startControllerWith(t, installationYAML("east", be), nil, opts)
	return root, ns, bucket, state, key
}

// TestKeptWithoutBackend: after keptWithoutBackend, the same manifest
// applied again with retentionPolicy Delete, before the controller's
// marker looks at the claims (an owner-check interval after its start),
// is refused: the
// bucket holds content and the Buckety no adoption key, and the refusal
// names the Buckety it was retained from; the record is marked retained
// then, and deleting that Buckety keeps the data. Before, the record
// handed the bucket back Created and the Delete deleted the retained data.
func TestKeptWithoutBackend(t *testing.T) {
	needInfra(t)
	root, ns, bucket, state, _ := keptWithoutBackend(t, func(o *appcontroller.Options) {
		// The marker's first look is an owner-check interval after the
		// start: far past this test.
		o.RESTConfig, o.Recheck, o.DriftSweep, o.OwnerCheck = cp.RESTConfig, time.Hour, time.Second, 10*time.Minute
	})
	_, again, _ := tenantManifests(ns, bucket, "")
	create(t, again)
	if got := waitCondition(t, again, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout); !strings.Contains(got.Message, "was retained when Buckety "+ns+"/orders was deleted") {
		t.Errorf("want the refusal to name the Buckety it was retained from, got %q", got.Message)
	}
	if got := state(); got != string(drivers.OwnerRetained) {
		t.Errorf("want the record marked %s by the refused Buckety, got %s", drivers.OwnerRetained, got)
	}
	deleteOn(t, k8s, again)
	if _, err := root.HeadObject(context.Background(), &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("precious")}); err != nil {
		t.Errorf("want the retained bucket's object in place after the second Buckety (retentionPolicy Delete) went, got %v", err)
	}
}

// TestKeptWithoutBackendMarked: after keptWithoutBackend, the controller
// marks the record retained and clears the claim's recordUnmarked on its
// own; the maintainer then releases the claim (kubectl delete
// bucketyclaim), and the same manifest applied again with retentionPolicy
// Delete is refused all the same, on the record alone: deleting it keeps
// the data.
func TestKeptWithoutBackendMarked(t *testing.T) {
	needInfra(t)
	root, ns, bucket, state, key := keptWithoutBackend(t, fastLoops)
	ctx := context.Background()
	cl := &v1.BucketyClaim{}
	wait.For(t, waitTimeout, "the record marked retained and the claim's recordUnmarked cleared once the backend is back", func() (bool, string) {
		if err := k8s.Get(ctx, key, cl); err != nil {
			return false, err.Error()
		}
		got := state()
		return got == string(drivers.OwnerRetained) && claims.IsRetained(cl) && !cl.Spec.Retained.RecordUnmarked, fmt.Sprintf("record %s, claim %+v", got, cl.Spec.Retained)
	})
	if err := k8s.Delete(ctx, cl); err != nil {
		t.Fatal(err)
	}
	_, again, _ := tenantManifests(ns, bucket, "")
	create(t, again)
	waitCondition(t, again, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
	deleteOn(t, k8s, again)
	if _, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("precious")}); err != nil {
		t.Errorf("want the retained bucket's object in place after the second Buckety (retentionPolicy Delete) went, got %v", err)
	}
}

// TestDeletedBeforeItsHandOverIsHandedOver (MinIO): east's Buckety
// (retentionPolicy Delete) owns a bucket holding its tenant's object. East
// is stopped, the Buckety deleted meanwhile, and east started again
// handing its resources over (ownership.handOverTo: west): the deletion
// comes before any pass marked the bucket handed over. Nothing handed
// over is deleted: the bucket and its object stay, its record marked
// handed over to west (which may then take it), not retained by east
// (which would keep west out). Before, the deletion deleted it.
func TestDeletedBeforeItsHandOverIsHandedOver(t *testing.T) {
	needInfra(t)
	srv, be := scopedS3(t, "minio")
	be.Name = "owned"
	east := startControllerWith(t, installationYAML("east", be), nil, fastLoops)
	root := rootOf(srv)
	ctx := context.Background()
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bucket := ns + "-orders"
	_, b, _ := tenantManifests(ns, bucket, "")
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("order-1"), Body: strings.NewReader("ours")}); err != nil {
		t.Fatal(err)
	}
	east.stop(t)
	if err := k8s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	giving := be
	giving.Ownership = &config.Ownership{HandOverTo: "west"}
	startControllerWith(t, installationYAML("east", giving), nil, fastLoops)
	wait.For(t, waitTimeout, "the Buckety gone", func() (bool, string) { return gone(t, b) })
	if _, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("order-1")}); err != nil {
		t.Fatalf("a bucket its backend hands over: want it and its object kept whatever retentionPolicy says, got %v", err)
	}
	out, err := root.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	tags := map[string]string{}
	for _, tag := range out.TagSet {
		tags[aws.ToString(tag.Key)] = aws.ToString(tag.Value)
	}
	if tags[s3driver.TagState] != string(drivers.OwnerHandedOver) || tags[s3driver.TagTo] != "west" {
		t.Errorf("want the record marked %s to west, got state %q to %q", drivers.OwnerHandedOver, tags[s3driver.TagState], tags[s3driver.TagTo])
	}
}

// TestRebuiltAdoptedStaysAdopted (MinIO, installation east): a bucket with
// content adopted (both keys) on a backend without
// adoption.deleteAdopted. The cluster is lost and rebuilt from git; the
// same manifest, without spec.adoption, re-attaches the bucket by its
// owner record, which says it was adopted: the Buckety holds it as
// adopted (provenance Adopted), and retentionPolicy Delete keeps it. The
// record said nothing of adoption before, so the rebuilt cluster held the
// bucket as Created and its Delete deleted the adopted data.
func TestRebuiltAdoptedStaysAdopted(t *testing.T) {
	needInfra(t)
	srv, be := scopedS3(t, "minio")
	be.Name = "owned"
	be.Adoption = &config.Adoption{Allow: true}
	lost := startControllerWith(t, installationYAML("east", be), nil, fastLoops)
	root := rootOf(srv)
	ctx := context.Background()
	ns := namespace(t)
	bucket := ns + "-legacy"
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("precious"), Body: strings.NewReader("theirs")}); err != nil {
		t.Fatal(err)
	}
	_, b, _ := tenantManifests(ns, bucket, v1.AdoptionAndConverge)
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if b.Status.Provenance != v1.ProvenanceAdopted {
		t.Fatalf("want provenance Adopted, got %q", b.Status.Provenance)
	}
	lost.stop(t)

	rebuiltREST, rebuilt := otherCluster(t)
	startControllerWith(t, installationYAML("east", be), nil, func(o *appcontroller.Options) {
		fastLoops(o)
		o.RESTConfig = rebuiltREST
	})
	nsObj, rb, _ := tenantManifests(ns, bucket, "")
	applyOn(t, rebuilt, nsObj, rb)
	waitConditionOn(t, rebuilt, rb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if rb.Status.Provenance != v1.ProvenanceAdopted {
		t.Errorf("want the re-attached bucket held as adopted (provenance Adopted), got %q", rb.Status.Provenance)
	}
	deleteOn(t, rebuilt, rb)
	if _, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("precious")}); err != nil {
		t.Errorf("want the adopted bucket's object in place after the rebuilt cluster's Buckety went (retentionPolicy Delete, no deleteAdopted), got %v", err)
	}
	// The lost cluster's Buckety: strip it, as its etcd is gone.
	patch(t, b, `{"metadata":{"finalizers":null}}`)
}

// creatorHeld is a case of the creator's-window tests: east created
// resource for its Buckety eb (access ea) and is held right after the
// create (testhook.AfterCreate), before its owner record; west applied
// the same manifests (wb, wa) on its own cluster. release lets east go.
type creatorHeld struct {
	ns, resource string
	eb, wb       *v1.Buckety
	ea, wa       *v1.BucketyAccess
	exists       func(string) bool
	release      func() error
}

// holdCreator starts east and west (OwnerSettle eastSettle and
// westSettle, 0 the default) on case c's backend, named name, and sets
// up a creatorHeld. West holds both adoption keys (its backend's
// adoption.allow, its Buckety's spec.adoption Adopt): without them it
// refuses an unrecorded resource at once, and the creator's window is
// one only an adoption can fall into. A backend name of its own: the hold stops every
// create of this process, and another test's Buckety left on "owned"
// would be created (and held) in this one's place.
func holdCreator(t *testing.T, c ownedCase, name string, westREST *rest.Config, west client.Client, eastSettle, westSettle time.Duration) *creatorHeld {
	t.Helper()
	pauseDir := t.TempDir()
	t.Setenv(testhook.Env, pauseDir)
	if err := os.WriteFile(filepath.Join(pauseDir, testhook.AfterCreate+".arm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	be, exists := c.backend(t)
	be.Name = name
	startControllerWith(t, installationYAML("east", be), nil, func(o *appcontroller.Options) {
		fastLoops(o)
		o.OwnerSettle = eastSettle
	})
	startControllerWith(t, installationYAML("west", harness.Tenancy(be, "", true)), nil, func(o *appcontroller.Options) {
		fastLoops(o)
		o.RESTConfig, o.OwnerSettle = westREST, westSettle
	})
	h := &creatorHeld{ns: namespace(t), exists: exists}
	removeWhileRunning(t, h.ns)
	h.resource = c.resource(h.ns)
	_, h.eb, h.ea = tenantManifests(h.ns, h.resource, "")
	h.eb.Spec.Backend = be.Name
	create(t, h.eb)
	create(t, h.ea)
	wait.For(t, waitTimeout, "east held right after its create", func() (bool, string) {
		_, err := os.Stat(filepath.Join(pauseDir, testhook.AfterCreate+".reached"))
		return err == nil && exists(h.resource), fmt.Sprintf("hold reached: %v; %s created: %v", err == nil, h.resource, exists(h.resource))
	})
	wnsObj, wb, wa := tenantManifests(h.ns, h.resource, "")
	wb.Spec.Backend, wb.Spec.Adoption = be.Name, v1.AdoptionAdopt
	h.wb, h.wa = wb, wa
	applyOn(t, west, wnsObj, wb, wa)
	// Gone before west's controller stops (cleanups run last first), so
	// the next case's west finds nothing of this one.
	t.Cleanup(func() {
		deleteOn(t, west, wa)
		deleteOn(t, west, wb)
	})
	// East let go first, on a failure too: its deletions wait for it.
	h.release = func() error {
		return os.WriteFile(filepath.Join(pauseDir, testhook.AfterCreate+".release"), nil, 0o644)
	}
	t.Cleanup(func() {
		if err := h.release(); err != nil {
			t.Error(err)
		}
	})
	return h
}

// TestCreatorsRecordIsAwaited on the real broker and MinIO: east creates
// a resource and is held (testhook.AfterCreate) before it writes its owner
// record; west (another installation on the same backend) applies a
// Buckety of the same name meanwhile, and finds the resource existing,
// empty and unrecorded. West waits (OwnerSettle) rather than adopt it;
// east is let go and records the resource; west then reads east's record
// and stays out: OwnedElsewhere, never adopted, no credential issued.
// Without the wait, west adopts the empty resource, grants its tenant on
// it, and learns it is east's only after east's record lands.
func TestCreatorsRecordIsAwaited(t *testing.T) {
	needInfra(t)
	needTestHook(t)
	westREST, west := otherCluster(t)
	for _, c := range ownedCases() {
		if c.name != "kafka" && c.name != "minio" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			// West's settle is one the test's own steps cannot outlast
			// on a loaded machine: east is let go as soon as west says
			// it waits.
			h := holdCreator(t, c, "creators-"+c.name, westREST, west, 0, 15*time.Second)
			ns, resource, eb, ea, wb := h.ns, h.resource, h.eb, h.ea, h.wb
			wait.For(t, waitTimeout, "west waiting for an owner record", func() (bool, string) {
				if err := west.Get(context.Background(), client.ObjectKeyFromObject(wb), wb); err != nil {
					return false, err.Error()
				}
				ready := meta.FindStatusCondition(wb.Status.Conditions, v1.ConditionReady)
				if ready != nil && ready.Status == metav1.ConditionTrue {
					t.Fatalf("west's Buckety Ready on %s while east had not recorded it yet: %s", resource, condString(wb.Status.Conditions))
				}
				return ready != nil && strings.Contains(ready.Message, "carries no owner record"), condString(wb.Status.Conditions)
			})
			if err := h.release(); err != nil {
				t.Fatal(err)
			}
			waitCondition(t, eb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			got := waitConditionOn(t, west, wb, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonOwnedElsewhere, waitTimeout)
			if !strings.Contains(got.Message, "installation east") {
				t.Errorf("want west's refusal to name east, got %q", got.Message)
			}
			if wb.Status.Provenance != "" {
				t.Errorf("want west's Buckety never to have adopted %s, got provenance %q", resource, wb.Status.Provenance)
			}
			var creds v1.BucketyCredentialList
			if err := west.List(context.Background(), &creds); err != nil {
				t.Fatal(err)
			}
			for _, cr := range creds.Items {
				if cr.Spec.Owner.Namespace == ns {
					t.Errorf("want no credential issued by west, got %s for %s/%s on %s", cr.Name, ns, cr.Spec.Owner.Name, cr.Spec.Resource)
				}
			}
			if err := west.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, &corev1.Secret{}); err == nil {
				t.Errorf("want no Secret written by west")
			}
			waitCondition(t, ea, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			if err := c.write(t, secret(t, ns, "app").Data, resource); err != nil {
				t.Errorf("east's Secret on its own resource: %v", err)
			}
		})
	}
}

// TestLateCreatorYields on the real broker and MinIO: east creates a
// resource and is held (testhook.AfterCreate) past west's settle; west
// (another installation on the same backend) finds the resource
// unrecorded all that while, adopts it, records it and grants its tenant.
// East, let go, finds its create came late, reads the record before it
// writes its own, and yields: OwnedElsewhere naming west, no Secret for
// its tenant, and its retentionPolicy Delete deletes nothing. Without the
// read, east's record overwrites west's and two tenants in two clusters
// hold the one resource.
func TestLateCreatorYields(t *testing.T) {
	needInfra(t)
	needTestHook(t)
	westREST, west := otherCluster(t)
	for _, c := range ownedCases() {
		if c.name != "kafka" && c.name != "minio" {
			continue
		}
		t.Run(c.name, func(t *testing.T) {
			h := holdCreator(t, c, "late-"+c.name, westREST, west, time.Second, time.Second)
			ns, resource, eb, ea, wb := h.ns, h.resource, h.eb, h.ea, h.wb
			waitConditionOn(t, west, h.wa, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			if err := h.release(); err != nil {
				t.Fatal(err)
			}
			got := waitCondition(t, eb, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonOwnedElsewhere, waitTimeout)
			if !strings.Contains(got.Message, "installation west") {
				t.Errorf("want east's refusal to name west, got %q", got.Message)
			}
			waitCondition(t, ea, v1.ConditionReady, metav1.ConditionFalse, "", waitTimeout)
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, &corev1.Secret{}); err == nil {
				t.Errorf("want no Secret written by east")
			}
			if err := c.write(t, secretOn(t, west, ns, "app"), resource); err != nil {
				t.Errorf("west's Secret on the resource it adopted: %v", err)
			}
			waitConditionOn(t, west, wb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			if wb.Status.Provenance != v1.ProvenanceAdopted {
				t.Errorf("want west's provenance Adopted, got %q", wb.Status.Provenance)
			}
			// East's retentionPolicy Delete deletes nothing of west's.
			deleteOn(t, k8s, ea)
			deleteOn(t, k8s, eb)
			if !h.exists(resource) {
				t.Fatalf("east's deletion deleted %s, which west holds", resource)
			}
		})
	}
}

// tagReadFault makes the s3 driver's reads of one bucket's tags (its
// owner record) fail with an internal error while armed, and counts them.
type tagReadFault struct {
	bucket atomic.Pointer[string]
	reads  atomic.Int32
}

func (m *tagReadFault) middleware(stack *middleware.Stack) error {
	return s3Intercept("bucketyTestTagReadFault", func(_ context.Context, params any) (any, bool, error) {
		p, ok := params.(*s3.GetBucketTaggingInput)
		if target := m.bucket.Load(); !ok || target == nil || aws.ToString(p.Bucket) != *target {
			return nil, false, nil
		}
		m.reads.Add(1)
		return nil, true, &smithy.GenericAPIError{Code: "InternalError", Message: "We encountered an internal error (injected)"}
	})(stack)
}

// TestRetainRetriesOnBackoff (MinIO): a Buckety deleted with
// retentionPolicy Retain while its bucket's owner record cannot be read
// (the server fails the read) is retried on the Buckety's backoff, not
// once a second: a server that hangs until the request timeout held a
// worker each second per such deletion, and sixteen of them every worker.
// Once the record can be read, the deletion ends and the bucket stays.
func TestRetainRetriesOnBackoff(t *testing.T) {
	needInfra(t)
	srv, be := scopedS3(t, "minio")
	be.Name = "owned"
	m := &tagReadFault{}
	reg := drivers.NewRegistry(kadm.New(), &s3driver.Driver{APIOptions: []func(*middleware.Stack) error{m.middleware}})
	startControllerWith(t, installationYAML("east", be), reg, fastLoops)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bucket := ns + "-kept"
	_, b, _ := tenantManifests(ns, bucket, "")
	b.Spec.RetentionPolicy = v1.RetentionRetain
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	m.bucket.Store(&bucket)
	if err := k8s.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the deletion's read of the owner record", func() (bool, string) {
		n := m.reads.Load()
		return n > 0, fmt.Sprintf("%d reads", n)
	})
	// No retry each second: in 12 s a backoff of 1 s doubling reads at
	// most a handful of times (1+2+4+8), and a slow machine fewer.
	first := m.reads.Load()
	time.Sleep(12 * time.Second)
	n := m.reads.Load() - first
	t.Logf("owner record reads in the 12 s after the deletion's first: %d", n)
	if n > 5 {
		t.Errorf("want the failed deletion retried on a backoff (at most 5 reads in 12 s), got %d", n)
	}
	// Retried on its own, however long the machine takes to.
	wait.For(t, waitTimeout, "the failed deletion retried", func() (bool, string) {
		n := m.reads.Load() - first
		return n > 0, fmt.Sprintf("%d reads since the first", n)
	})
	m.bucket.Store(nil)
	wait.For(t, waitTimeout, "the Buckety gone once its record can be read", func() (bool, string) { return gone(t, b) })
	root := s3Client(t, srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey)
	if _, err := root.HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Errorf("retentionPolicy Retain: want %s kept, got %v", bucket, err)
	}
}

// recreateAnswersOK makes the s3 driver's CreateBucket of one bucket
// answer as AWS S3 in us-east-1 answers a re-create by the bucket's owner
// (200), after another installation using the same keys (west) created
// the bucket and recorded it: the race of two installations on one
// account, between the one's check and its create.
type recreateAnswersOK struct {
	bucket atomic.Pointer[string]
	root   *s3.Client
	err    atomic.Pointer[error]
}

func (m *recreateAnswersOK) middleware(stack *middleware.Stack) error {
	return s3Intercept("bucketyTestRecreateAnswersOK", func(ctx context.Context, params any) (any, bool, error) {
		p, ok := params.(*s3.CreateBucketInput)
		target := m.bucket.Load()
		if !ok || target == nil || aws.ToString(p.Bucket) != *target {
			return nil, false, nil
		}
		m.bucket.Store(nil)
		_, err := m.root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: p.Bucket})
		if err == nil {
			err = recordAsWest(ctx, m.root, aws.ToString(p.Bucket))
		}
		if err != nil {
			m.err.Store(&err)
		}
		return &s3.CreateBucketOutput{}, true, nil
	})(stack)
}

// TestRecreateAnsweredOKIsNotProof: on a server that answers a re-create
// 200 (AWS S3 in us-east-1; here MinIO behind the driver answering so, on
// a backend of implementation aws), a create that succeeds does not prove
// the bucket new: another installation with the same keys may have
// created it and recorded it a moment before. The record is read before
// buckety writes its own, and the Buckety is refused (OwnedElsewhere,
// naming west); west's record stays. Before, the create's success let
// the pass write its record over west's, and both installations held the
// bucket. Nor is anything else written to west's bucket before the record
// is read (before, the create's pass converged the Buckety's parameters
// into it first: here versioning; a lifecycle's expiration would have
// deleted west's objects). A bucket the server answers so that is
// buckety's own is converged once its record is read: versioning on, Ready.
func TestRecreateAnsweredOKIsNotProof(t *testing.T) {
	needInfra(t)
	srv := s3test.Start(t, "minio", s3test.Options{})
	root := s3Client(t, srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey)
	// Implementation aws (here MinIO, which keeps versioning as S3
	// does), so that a parameter is there to converge.
	be := harness.S3("owned", s3driver.Config{Implementation: s3driver.ImplAWS, Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: harness.Duration(10 * time.Second)})
	m := &recreateAnswersOK{root: root}
	reg := drivers.NewRegistry(kadm.New(), &s3driver.Driver{APIOptions: []func(*middleware.Stack) error{m.middleware}})
	startControllerWith(t, installationYAML("east", be), reg, fastLoops)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bucket := ns + "-orders"
	m.bucket.Store(&bucket)
	_, b, _ := tenantManifests(ns, bucket, "")
	b.Spec.Parameters = map[string]string{"versioning": "true"}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonOwnedElsewhere, waitTimeout)
	if p := m.err.Load(); p != nil {
		t.Fatalf("west's create and record: %v", *p)
	}
	if c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady); c == nil || !strings.Contains(c.Message, "west") {
		t.Errorf("want the refusal to name installation west, got %+v", c)
	}
	out, err := root.GetBucketTagging(context.Background(), &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range out.TagSet {
		if aws.ToString(tag.Key) == s3driver.TagInstallation && aws.ToString(tag.Value) != "west" {
			t.Errorf("want west's owner record kept, got installation %s", aws.ToString(tag.Value))
		}
	}
	ver, err := root.GetBucketVersioning(context.Background(), &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if ver.Status == s3types.BucketVersioningStatusEnabled {
		t.Errorf("east turned versioning on in west's bucket before reading its record")
	}

	// Its own bucket, on the same server, is converged after the record.
	own := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "own", Namespace: ns}, Spec: v1.BucketySpec{Backend: "owned", Name: ns + "-own",
		RetentionPolicy: v1.RetentionDelete, Parameters: map[string]string{"versioning": "true"}}}
	create(t, own)
	waitCondition(t, own, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if ver, err = root.GetBucketVersioning(context.Background(), &s3.GetBucketVersioningInput{Bucket: aws.String(ns + "-own")}); err != nil {
		t.Fatal(err)
	}
	if ver.Status != s3types.BucketVersioningStatusEnabled {
		t.Errorf("want versioning Enabled on the Buckety's own bucket, got %q", ver.Status)
	}
}

// failedCreateRaced makes the s3 driver's CreateBucket of one bucket fail
// after another installation (west) created it, unrecorded; west records
// it recordAfter later, as a creator whose record write was slow. It
// counts the driver's own tag writes to the bucket.
type failedCreateRaced struct {
	bucket      atomic.Pointer[string]
	root        *s3.Client
	recordAfter time.Duration
	tagWrites   atomic.Int32
	recorded    atomic.Bool
	err         atomic.Pointer[error]
}

func (m *failedCreateRaced) fail(err error) { m.err.Store(&err) }

func (m *failedCreateRaced) middleware(stack *middleware.Stack) error {
	return s3Intercept("bucketyTestFailedCreateRaced", func(ctx context.Context, params any) (any, bool, error) {
		target := m.bucket.Load()
		if target == nil {
			return nil, false, nil
		}
		switch p := params.(type) {
		case *s3.PutBucketTaggingInput:
			if aws.ToString(p.Bucket) == *target {
				m.tagWrites.Add(1)
			}
		case *s3.CreateBucketInput:
			if aws.ToString(p.Bucket) != *target {
				break
			}
			if _, err := m.root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: p.Bucket}); err != nil {
				m.fail(err)
			}
			bucket := aws.ToString(p.Bucket)
			time.AfterFunc(m.recordAfter, func() {
				if err := recordAsWest(context.Background(), m.root, bucket); err != nil {
					m.fail(err)
				}
				m.recorded.Store(true)
			})
			return nil, true, &smithy.GenericAPIError{Code: "SlowDown", Message: "Please reduce your request rate (injected)"}
		}
		return nil, false, nil
	})(stack)
}

// TestFailedCreateWaitsForTheCreatorsRecord (MinIO): a Buckety's create
// fails (SlowDown) while another installation's create of the same name
// succeeds; that installation writes its record two seconds later. The
// claim says Created, and the next pass finds the bucket there, empty and
// unrecorded: it may be this Buckety's own (a create whose answer was
// lost) or the other's, whose record is on its way. It waits the settle
// (OwnerSettle) before it takes it; by then the other's record is there,
// and the Buckety is refused (OwnedElsewhere) with nothing written to
// the bucket. Before, the pass took the bucket at once: converged it and
// wrote its own record, and both installations held it.
func TestFailedCreateWaitsForTheCreatorsRecord(t *testing.T) {
	needInfra(t)
	srv := s3test.Start(t, "minio", s3test.Options{})
	root := s3Client(t, srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey)
	be := harness.S3("owned", s3driver.Config{Implementation: s3driver.ImplMinIO, Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: harness.Duration(10 * time.Second)})
	m := &failedCreateRaced{root: root, recordAfter: 2 * time.Second}
	reg := drivers.NewRegistry(kadm.New(), &s3driver.Driver{APIOptions: []func(*middleware.Stack) error{m.middleware}})
	startControllerWith(t, installationYAML("east", be), reg, fastLoops)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bucket := ns + "-orders"
	m.bucket.Store(&bucket)
	_, b, _ := tenantManifests(ns, bucket, "")
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonOwnedElsewhere, waitTimeout)
	if p := m.err.Load(); p != nil {
		t.Fatalf("west's create and record: %v", *p)
	}
	if !m.recorded.Load() {
		t.Fatalf("refused before west's record was written: %+v", meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady))
	}
	if n := m.tagWrites.Load(); n != 0 {
		t.Errorf("want nothing written to the bucket west created, got %d owner record writes by east", n)
	}
	out, err := root.GetBucketTagging(context.Background(), &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tag := range out.TagSet {
		if aws.ToString(tag.Key) == s3driver.TagInstallation && aws.ToString(tag.Value) != "west" {
			t.Errorf("want west's owner record kept, got installation %s", aws.ToString(tag.Value))
		}
	}
}
