package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/test/harness"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// fastLoops runs the credential sweep and the owner and orphan checks
// every second, so a test sees what one pass of each does.
func fastLoops(o *appcontroller.Options) {
	o.RESTConfig, o.Recheck = cp.RESTConfig, time.Hour
	o.DriftSweep, o.OwnerCheck = time.Second, time.Second
}

// stripAndDelete deletes a Buckety the way a tenant with edit can, its
// finalizer patched away first, so buckety never runs its deletion.
func stripAndDelete(t *testing.T, b *v1.Buckety) {
	t.Helper()
	// Deleted first, then stripped: stripped first, the controller could
	// add its finalizer again before the delete (it does for any Buckety
	// without one), and the Buckety would wait for its accesses as usual.
	// Once it is being deleted, no finalizer can be added.
	cur := getBuckety(t, b.Namespace, b.Name)
	if err := k8s.Delete(context.Background(), cur); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	if err := k8s.Patch(context.Background(), cur, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the stripped Buckety gone", func() (bool, string) { return gone(t, b) })
}

// TestStripAndReclaimRevokes: tenant A deletes its Buckety with the
// finalizer stripped, and tenant B's Buckety claims the same topic or
// bucket; A's old Secret (its access left in place) is refused on B's
// resource, on the real broker and both real S3 servers, and B's works.
func TestStripAndReclaimRevokes(t *testing.T) {
	needInfra(t)
	type backend struct {
		name string
		cfg  func(t *testing.T) string
		// works reports whether a Secret's credential reaches resource.
		works func(t *testing.T, data map[string][]byte, resource string) error
	}
	s3Works := func(_ *testing.T, data map[string][]byte, bucket string) error { return listWith(data, bucket) }
	cases := []backend{{"kafka", func(t *testing.T) string { _, cfg := scopedBroker(t, 0); return cfg },
		// Metadata needs Describe, which every role has, and leaves the
		// topic empty (a topic with content is not claimed again).
		func(t *testing.T, data map[string][]byte, topic string) error {
			return metadataOf(secretKafka(t, data), topic)
		}}}
	for _, impl := range s3test.Implementations {
		cases = append(cases, backend{impl, func(t *testing.T) string {
			_, be := scopedS3(t, impl)
			be.Name = "kafka" // one backend name for every case
			return harness.ConfigYAML(be)
		}, s3Works})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			startControllerWith(t, c.cfg(t), nil, fastLoops)
			a, b := namespace(t), namespace(t)
			removeWhileRunning(t, a)
			removeWhileRunning(t, b)
			resource := a + "-shared"
			if c.name == "kafka" {
				resource = a + ".shared"
			}
			mine := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: a}, Spec: v1.BucketySpec{Backend: "kafka", Name: resource}}
			holder := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "holder", Namespace: a}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "shared"}, CredentialsSecretName: "holder"}}
			create(t, mine)
			create(t, holder)
			waitCondition(t, holder, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			old := secret(t, a, "holder").Data
			if err := c.works(t, old, resource); err != nil {
				t.Fatalf("A's Secret on its own resource: %v", err)
			}

			stripAndDelete(t, mine)
			waitCondition(t, holder, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBucketyNotFound, waitTimeout)
			wait.For(t, waitTimeout, "A's credential revoked", func() (bool, string) {
				n := len(credentialsOf(t, holder.UID))
				return n == 0, fmt.Sprintf("%d records", n)
			})

			theirs := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: b}, Spec: v1.BucketySpec{Backend: "kafka", Name: resource}}
			user := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: b}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "taken"}, CredentialsSecretName: "user"}}
			create(t, theirs)
			create(t, user)
			waitCondition(t, theirs, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			waitCondition(t, user, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			if err := c.works(t, secret(t, b, "user").Data, resource); err != nil {
				t.Errorf("B's Secret on the resource B now owns: %v", err)
			}
			if err := c.works(t, old, resource); err == nil {
				t.Errorf("A's old Secret on the resource B now owns: want refused, it works")
			}
			// A's Secret is left as it was (buckety never deletes it
			// while its access stands), but its credential is dead.
			if s := secret(t, a, "holder"); string(s.Data["sasl.username"])+string(s.Data["accessKeyID"]) != string(old["sasl.username"])+string(old["accessKeyID"]) {
				t.Errorf("A's Secret: want left as it was, got it rewritten")
			}
		})
	}
}

// TestScopingSwitchedOffAndOn: the maintainer removes credentials from a
// scoped MinIO or VersityGW backend, then sets it again. While it is off
// the controller runs its sweeps and checks without failing; an access
// that has a key of its own keeps it, as it is, in its Secret
// (CredentialKept), and a new access gets the backend's keys as such a
// backend hands them out. Deleting an access revokes its kept key. Once
// credentials is set again, the access that got the backend's keys gets
// a key of its own in their place.
func TestScopingSwitchedOffAndOn(t *testing.T) {
	needInfra(t)
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			srv, be := scopedS3(t, impl)
			on := harness.ConfigYAML(be)
			off := harness.ConfigYAML(scopedS3Backend(srv, impl, func(c *s3driver.Config) { c.Credentials = nil }))
			if strings.Contains(off, "adminEndpoint") || strings.Count(off, "credentials:") != 1 {
				t.Fatalf("want the config without the driver's credentials (the backend's rotationGrace kept), got:\n%s", off)
			}
			ns := namespace(t)
			bucket := ns + "-ledger"
			ledger := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3-scoped", Name: bucket}}
			kept := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "kept"}}
			gone1 := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "leaving", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "leaving"}}

			run := startControllerWith(t, on, nil, fastLoops)
			create(t, ledger)
			create(t, kept)
			create(t, gone1)
			for _, a := range []*v1.BucketyAccess{kept, gone1} {
				waitCondition(t, a, v1.ConditionScopingNotImplemented, metav1.ConditionFalse, v1.ReasonAsExpected, waitTimeout)
			}
			own, leaving := secret(t, ns, "kept").Data, secret(t, ns, "leaving").Data
			run.stop(t)

			// Off: nothing crashes, kept keys stay, a new access gets the backend's keys.
			run = startControllerWith(t, off, nil, fastLoops)
			waitCondition(t, kept, v1.ConditionScopingNotImplemented, metav1.ConditionFalse, v1.ReasonCredentialKept, waitTimeout)
			waitCondition(t, kept, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			// The Buckety edited meanwhile: the kept access's Secret is
			// this generation's too, and the Buckety Ready for it.
			patchSpec(t, ledger, func(s *v1.BucketySpec) { s.RetentionPolicy = v1.RetentionDelete })
			wait.For(t, waitTimeout, "the edited Buckety Ready for its generation with the kept access", func() (bool, string) {
				if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(ledger), ledger); err != nil {
					return false, err.Error()
				}
				c := meta.FindStatusCondition(ledger.Status.Conditions, v1.ConditionReady)
				return ledger.Generation > 1 && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == ledger.Generation, condString(ledger.Status.Conditions)
			})
			shared := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "shared"}}
			create(t, shared)
			waitCondition(t, shared, v1.ConditionScopingNotImplemented, metav1.ConditionTrue, v1.ReasonCredentialsNotScoped, waitTimeout)
			if got := secret(t, ns, "shared").Data; string(got["accessKeyID"]) != srv.AccessKey {
				t.Errorf("a new access on a backend without credentials: want the backend's keys, got %s", got["accessKeyID"])
			}
			time.Sleep(3 * time.Second) // sweeps and checks run against the records left
			if got := secret(t, ns, "kept").Data; string(got["accessKeyID"]) != string(own["accessKeyID"]) || string(got["secretAccessKey"]) != string(own["secretAccessKey"]) {
				t.Errorf("the kept access's Secret: want its own key kept, got %s", got["accessKeyID"])
			}
			if err := listWith(own, bucket); err != nil {
				t.Errorf("the kept key: want it working, got %v", err)
			}
			if impl == "minio" {
				// MinIO's admin API is on its endpoint: a kept key is
				// revoked with its access. (A VersityGW admin endpoint
				// is named only under credentials; its revocation waits
				// for credentials to be set again, below.)
				if err := k8s.Delete(context.Background(), gone1); err != nil {
					t.Fatal(err)
				}
				wait.For(t, waitTimeout, "the leaving access gone", func() (bool, string) { return gone(t, gone1) })
				if err := listWith(leaving, bucket); !refusedKey(err) {
					t.Errorf("a kept key after its access was deleted: want refused, got %v", err)
				}
			}
			run.stop(t)

			// On again: the access with the backend's keys gets one of its own.
			startControllerWith(t, on, nil, fastLoops)
			removeWhileRunning(t, ns)
			wait.For(t, waitTimeout, "the shared access's Secret holding a key of its own", func() (bool, string) {
				s := &corev1.Secret{}
				if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "shared"}, s); err != nil {
					return false, err.Error()
				}
				return string(s.Data["accessKeyID"]) != srv.AccessKey && len(s.Data["accessKeyID"]) > 0, string(s.Data["accessKeyID"])
			})
			waitCondition(t, shared, v1.ConditionScopingNotImplemented, metav1.ConditionFalse, v1.ReasonAsExpected, waitTimeout)
			if err := listWith(secret(t, ns, "shared").Data, bucket); err != nil {
				t.Errorf("the shared access's own key: %v", err)
			}
			waitCondition(t, kept, v1.ConditionScopingNotImplemented, metav1.ConditionFalse, v1.ReasonAsExpected, waitTimeout)
			if got := secret(t, ns, "kept").Data; string(got["accessKeyID"]) != string(own["accessKeyID"]) {
				t.Errorf("the kept access: want its key unchanged, got %s", got["accessKeyID"])
			}
			if impl != "minio" {
				if err := k8s.Delete(context.Background(), gone1); err != nil {
					t.Fatal(err)
				}
				wait.For(t, waitTimeout, "the leaving access gone", func() (bool, string) { return gone(t, gone1) })
				if err := listWith(leaving, bucket); !refusedKey(err) {
					t.Errorf("a kept key after its access was deleted: want refused, got %v", err)
				}
			}
		})
	}
}

// TestScopingUnavailableKeepsSecrets: a VersityGW backend with credentials
// whose admin API answers 501 (a gateway without an IAM store) never hands
// out the gateway's keys: an access with a key of its own keeps its
// Secret as it is, its key still works and is not revoked; a new access
// waits with no Secret; both say ScopingUnavailable.
func TestScopingUnavailableKeepsSecrets(t *testing.T) {
	needInfra(t)
	srv, be := scopedS3(t, "versitygw")
	cfg := harness.ConfigYAML(be)
	noIAM := s3test.Start(t, "versitygw", s3test.Options{AccessKey: srv.AccessKey, SecretKey: srv.SecretKey})
	ns := namespace(t)
	bucket := ns + "-ledger"
	ledger := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3-scoped", Name: bucket}}
	first := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "first"}}
	run := startControllerWith(t, cfg, nil, fastLoops)
	create(t, ledger)
	create(t, first)
	waitCondition(t, first, v1.ConditionScopingNotImplemented, metav1.ConditionFalse, v1.ReasonAsExpected, waitTimeout)
	own := secret(t, ns, "first")
	run.stop(t)

	broken := harness.ConfigYAML(scopedS3Backend(srv, "versitygw", func(c *s3driver.Config) { c.Credentials.AdminEndpoint = noIAM.AdminEndpoint }))
	run = startControllerWith(t, broken, nil, fastLoops)
	c := waitCondition(t, first, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonScopingUnavailable, waitTimeout)
	if !strings.Contains(c.Message, "--iam-dir") {
		t.Errorf("want the reason named, got %q", c.Message)
	}
	second := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "second"}}
	create(t, second)
	waitCondition(t, second, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonScopingUnavailable, waitTimeout)
	waitCondition(t, second, v1.ConditionScopingNotImplemented, metav1.ConditionTrue, v1.ReasonScopingUnavailable, waitTimeout)
	time.Sleep(3 * time.Second) // sweeps and checks run
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "second"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("a new access on a backend that cannot issue: want no Secret, got %v", err)
	}
	got := secret(t, ns, "first")
	if got.ResourceVersion != own.ResourceVersion || strings.Contains(string(got.Data["accessKeyID"]), srv.AccessKey) {
		t.Errorf("the first access's Secret: want it untouched, got %s (rv %s, was %s)", got.Data["accessKeyID"], got.ResourceVersion, own.ResourceVersion)
	}
	if err := listWith(own.Data, bucket); err != nil {
		t.Errorf("the first access's key: want it still working (not revoked), got %v", err)
	}
	if creds := credentialsOf(t, first.UID); len(creds) != 1 {
		t.Errorf("want the first access's credential kept, got %d records", len(creds))
	}

	// The gateway's IAM back: the waiting access gets a key of its own.
	run.stop(t)
	startControllerWith(t, cfg, nil, fastLoops)
	removeWhileRunning(t, ns)
	waitCondition(t, second, v1.ConditionScopingNotImplemented, metav1.ConditionFalse, v1.ReasonAsExpected, waitTimeout)
	if err := listWith(secret(t, ns, "second").Data, bucket); err != nil {
		t.Errorf("the second access's own key: %v", err)
	}
}
