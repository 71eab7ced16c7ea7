package integration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/harness"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/seaweedfs"
	"github.com/Yolean/buckety-controller/test/wait"
)

// sharedBuckety is Buckety owner/name on backend, sharing role with
// namespace consumer.
func sharedBuckety(owner, name, backend, resource, consumer string, role v1.Role) *v1.Buckety {
	return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: owner}, Spec: v1.BucketySpec{Backend: backend, Name: resource,
		Sharing: []v1.SharingRule{{Namespace: consumer, Roles: []v1.Role{role}}}}}
}

// foreignAccess is access ns/name to Buckety owner/buckety, writing
// Secret name.
func foreignAccess(ns, name, owner, buckety string, role v1.Role) *v1.BucketyAccess {
	return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketyAccessSpec{
		BucketyRef: v1.BucketyReference{Namespace: owner, Name: buckety}, Role: role, CredentialsSecretName: name}}
}

// noSecret fails unless namespace ns has no Secret name.
func noSecret(t *testing.T, ns, name, why string) {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("%s: want no Secret %s/%s, got %v", why, ns, name, err)
	}
}

// waitWithdrawn waits until access a reports NotShared with nothing left
// (its credentials and Secret gone), and returns how long it took.
func waitWithdrawn(t *testing.T, a *v1.BucketyAccess, since time.Time, want string) time.Duration {
	t.Helper()
	// The message is waited for too: an access withdrawn for one reason
	// (its owner's namespace going) says the next (its Buckety gone) at
	// its next pass.
	wait.For(t, waitTimeout, "access "+a.Namespace+"/"+a.Name+" withdrawn, saying "+want, func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(a), a); err != nil {
			return false, err.Error()
		}
		c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady)
		if c == nil || c.Reason != v1.ReasonNotShared || !strings.Contains(c.Message, want) {
			return false, "Ready: " + condString(a.Status.Conditions)
		}
		return a.Withdrawn(), fmt.Sprintf("principal %q, bucketyGeneration %d", a.Status.Principal, a.Status.BucketyGeneration)
	})
	took := time.Since(since)
	if creds := credentialsOf(t, a.UID); len(creds) != 0 {
		t.Errorf("%s/%s withdrawn: want no BucketyCredential, got %d", a.Namespace, a.Name, len(creds))
	}
	noSecret(t, a.Namespace, a.Spec.CredentialsSecretName, "withdrawn")
	return took
}

// holders is the owner's status.sharedWith as "namespace/name role
// granted" lines.
func holders(t *testing.T, b *v1.Buckety) string {
	t.Helper()
	got := getBuckety(t, b.Namespace, b.Name).Status.SharedWith
	if got == nil {
		return ""
	}
	var lines []string
	for _, h := range got.Holders {
		lines = append(lines, fmt.Sprintf("%s/%s %s %v", h.Namespace, h.Name, h.Role, h.Granted))
	}
	return fmt.Sprintf("%d: %s", got.Accesses, strings.Join(lines, ", "))
}

// ordersReadBy creates topic owner.orders, Buckety owner/orders with its
// defaultAccess (Secret orders), shared ReadOnly with namespace consumer,
// and consumer's access reader to it (Secret reader); it waits for
// neither.
func ordersReadBy(t *testing.T, owner, consumer string) (string, *v1.Buckety, *v1.BucketyAccess) {
	t.Helper()
	topic := owner + ".orders"
	orders := sharedBuckety(owner, "orders", "kafka", topic, consumer, v1.RoleReadOnly)
	orders.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: "orders"}
	create(t, orders)
	reader := foreignAccess(consumer, "reader", owner, "orders", v1.RoleReadOnly)
	create(t, reader)
	return topic, orders, reader
}

// TestSharingKafka (#51), on a broker with SCRAM and ACLs: a topic shared
// ReadOnly with one namespace gives that namespace's access a user of its
// own that consumes and cannot produce; a namespace the owner did not name
// gets nothing; the owner sees both by name in status.sharedWith; removing
// the rule takes the user and Secret back at the access's next pass (the
// time is printed); the owner's Buckety deletion waits for the consumer's
// access, and its namespace's deletion takes the consumer's rights back
// and goes on.
func TestSharingKafka(t *testing.T) {
	needInfra(t)
	_, cfg := scopedBroker(t, 0)
	startController(t, cfg, nil, time.Hour)
	owner, consumer, third := namespace(t), namespace(t), namespace(t)
	removeWhileRunning(t, owner)
	removeWhileRunning(t, consumer)
	removeWhileRunning(t, third)
	topic, orders, reader := ordersReadBy(t, owner, consumer)
	stranger := foreignAccess(third, "stranger", owner, "orders", v1.RoleReadOnly)
	create(t, stranger)
	greedy := foreignAccess(consumer, "greedy", owner, "orders", v1.RoleReadWrite)
	create(t, greedy)

	waitCondition(t, orders, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, reader, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	ro := secret(t, consumer, "reader").Data
	if got := string(ro["topic"]); got != topic {
		t.Errorf("the consumer's Secret: want topic %s, got %q", topic, got)
	}
	if err := produceWith(t, secret(t, owner, "orders").Data, topic); err != nil {
		t.Fatalf("the owner's ReadWrite: want produce allowed, got %v", err)
	}
	if err := consumeWith(t, ro, topic, string(ro["group.id.prefix"])+"app"); err != nil {
		t.Errorf("the consumer's ReadOnly: want consume allowed, got %v", err)
	}
	if err := produceWith(t, ro, topic, kgo.DisableIdempotentWrite()); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("the consumer's ReadOnly: want produce refused with TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}
	for _, a := range []*v1.BucketyAccess{stranger, greedy} {
		waitWithdrawn(t, a, time.Now(), "does not share role")
	}
	want := fmt.Sprintf("3: %s/greedy ReadWrite false, %s/reader ReadOnly true, %s/stranger ReadOnly false", consumer, consumer, third)
	wait.For(t, waitTimeout, "the owner's status.sharedWith: "+want, func() (bool, string) {
		got := holders(t, orders)
		return got == want, got
	})

	// Withdrawn: the rule removed, the reader's user and Secret go at its
	// next pass (the Buckety's update wakes it).
	patch(t, orders, `{"spec":{"sharing":null}}`)
	took := waitWithdrawn(t, reader, time.Now(), fmt.Sprintf("Buckety %s/orders does not exist or does not share role ReadOnly with namespace %s", owner, consumer))
	t.Logf("figure: sharing withdrawn, the consumer's user revoked and its Secret deleted %s after the rule was removed", took.Round(time.Millisecond))
	if err := consumeWith(t, ro, topic, string(ro["group.id.prefix"])+"app"); err == nil || errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("withdrawn: want the old Secret's user refused at authentication, got %v", err)
	}

	// Shared again: a new user; the owner's deletion waits for it.
	patch(t, orders, fmt.Sprintf(`{"spec":{"sharing":[{"namespace":%q,"roles":["ReadOnly"]}]}}`, consumer))
	waitCondition(t, reader, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if err := k8s.Delete(context.Background(), orders); err != nil {
		t.Fatal(err)
	}
	c := waitCondition(t, orders, v1.ConditionBlockedByAccesses, metav1.ConditionTrue, "", waitTimeout)
	if !strings.Contains(c.Message, consumer+"/reader") {
		t.Errorf("the owner's deletion: want it blocked by %s/reader, got %q", consumer, c.Message)
	}
	if c := waitCondition(t, reader, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBucketyNotReady, waitTimeout); !strings.Contains(c.Message, "is being deleted") {
		t.Errorf("the reader while its Buckety is deleted: want it waiting, got %q", c.Message)
	}
	// The owner's namespace deleted: the reader gives its rights up, and
	// the Buckety (retained) goes.
	if err := k8s.Delete(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: owner}}); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the owner's Buckety gone", func() (bool, string) { return gone(t, orders) })
	// Once the Buckety is gone, it is said as of one that does not share.
	waitWithdrawn(t, reader, time.Now(), fmt.Sprintf("Buckety %s/orders does not exist or does not share role ReadOnly with namespace %s", owner, consumer))

	// A Buckety that never existed reads the same: a tenant cannot tell
	// another namespace's Bucketies from names it makes up.
	ghost := foreignAccess(consumer, "ghost", third, "ghost", v1.RoleReadOnly)
	create(t, ghost)
	waitWithdrawn(t, ghost, time.Now(), fmt.Sprintf("Buckety %s/ghost does not exist or does not share role ReadOnly with namespace %s", third, consumer))
}

// TestPinnedAccessLosesItsCredential (a hostile tenant): a namespace a
// topic is shared with takes buckety's finalizer off its access, holds
// the access with a finalizer of its own and deletes it, here while the
// controller is down (a running one can be raced to the same state). The
// access is never gone; its passes used to stop at the missing finalizer,
// so its user kept its rights on the owner's topic past any withdrawal of
// the sharing, and outside the access limits (an access being deleted
// counts against none). Once the controller runs, the user is revoked
// (the Secret no longer authenticates), and the Secret and the
// BucketyCredential are gone, while the tenant's finalizer holds the
// access.
func TestPinnedAccessLosesItsCredential(t *testing.T) {
	needInfra(t)
	_, cfg := scopedBroker(t, 0)
	ctl := startController(t, cfg, nil, time.Hour)
	owner, consumer := namespace(t), namespace(t)
	removeWhileRunning(t, owner)
	removeWhileRunning(t, consumer)
	topic, orders, reader := ordersReadBy(t, owner, consumer)
	waitCondition(t, orders, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, reader, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if err := produceWith(t, secret(t, owner, "orders").Data, topic); err != nil {
		t.Fatalf("the owner's ReadWrite: want produce allowed, got %v", err)
	}
	ro := secret(t, consumer, "reader").Data
	group := string(ro["group.id.prefix"]) + "app"
	if err := consumeWith(t, ro, topic, group); err != nil {
		t.Fatalf("the reader before the attack: want consume allowed, got %v", err)
	}

	ctl.stop(t)
	patch(t, reader, `{"metadata":{"finalizers":["tenant.example/pin"]}}`)
	if err := k8s.Delete(context.Background(), reader); err != nil {
		t.Fatal(err)
	}
	// The finalizer is the tenant's to take off: free the namespace's
	// deletion whatever the test found (once the controller below has
	// stopped, after the Bucketies' removal).
	t.Cleanup(func() {
		if err := k8s.Patch(context.Background(), reader, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); client.IgnoreNotFound(err) != nil {
			t.Errorf("free the pinned access: %v", err)
		}
	})
	startController(t, cfg, nil, time.Hour)
	// Again, so that they run while this controller does (cleanups run
	// last-in first-out).
	removeWhileRunning(t, owner)
	removeWhileRunning(t, consumer)
	wait.For(t, waitTimeout, "the pinned access's credential revoked, its record and Secret gone", func() (bool, string) {
		creds := len(credentialsOf(t, reader.UID))
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: consumer, Name: "reader"}, &corev1.Secret{})
		return creds == 0 && apierrors.IsNotFound(err), fmt.Sprintf("%d BucketyCredential, Secret: %v", creds, err)
	})
	if err := consumeWith(t, ro, topic, group); err == nil || errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("pinned and deleted: want the old Secret's user refused at authentication, got %v", err)
	}
	a := &v1.BucketyAccess{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(reader), a); err != nil || a.DeletionTimestamp.IsZero() {
		t.Errorf("want the access still there, being deleted, held by its tenant's finalizer; got %v (deletionTimestamp %v)", err, a.DeletionTimestamp)
	}
}

// sharedWithReader starts a controller on a broker with SCRAM and ACLs,
// and makes Buckety owner/orders shared ReadOnly with namespace consumer,
// and consumer's access reader to it; it returns consumer, orders and
// reader, not waiting for either.
func sharedWithReader(t *testing.T) (string, *v1.Buckety, *v1.BucketyAccess) {
	t.Helper()
	_, cfg := scopedBroker(t, 0)
	startController(t, cfg, nil, time.Hour)
	owner, consumer := namespace(t), namespace(t)
	removeWhileRunning(t, owner)
	removeWhileRunning(t, consumer)
	orders := sharedBuckety(owner, "orders", "kafka", owner+".orders", consumer, v1.RoleReadOnly)
	create(t, orders)
	reader := foreignAccess(consumer, "reader", owner, "orders", v1.RoleReadOnly)
	create(t, reader)
	return consumer, orders, reader
}

// TestForgedImplicitAccessHoldsNoDeletion: a consumer namespace shared
// with gives its access to the owner's Buckety the implicit label, an
// owner reference controlled by that Buckety (its UID learnt elsewhere)
// and a finalizer of its own. The owner withdraws the sharing and deletes
// its Buckety: the forged access is not taken for the Buckety's implicit
// one (which the deletion would wait for, kept by the consumer's finalizer,
// for ever: only a cluster admin could free it); the Buckety goes.
func TestForgedImplicitAccessHoldsNoDeletion(t *testing.T) {
	needInfra(t)
	_, orders, reader := sharedWithReader(t)
	waitCondition(t, orders, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, reader, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	forged := fmt.Sprintf(`{"metadata":{"labels":{%q:"true"},"finalizers":["example.com/keep",%q],"ownerReferences":[{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","name":"orders","uid":%q,"controller":true}]}}`,
		v1.ImplicitLabel, v1.Finalizer, orders.UID)
	patch(t, reader, forged)
	t.Cleanup(func() {
		p := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
		if err := k8s.Patch(context.Background(), reader, p); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	// (An owner reference to another namespace's object is dangling to
	// Kubernetes' garbage collector, which deletes the forged access; its
	// own finalizer keeps it.)
	patch(t, orders, `{"spec":{"sharing":null}}`)
	if err := k8s.Delete(context.Background(), orders); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the owner's Buckety gone", func() (bool, string) { return gone(t, orders) })
	if ok, _ := gone(t, reader); ok {
		t.Error("want the consumer's access left in place (buckety deletes no other namespace's access)")
	}
}

// TestRotatingWithdrawnHoldsNoDeletion: the owner stops sharing, the
// consumer's access is withdrawn (its user and Secret gone), and the
// consumer keeps changing its spec.rotation, as fast as the API server
// takes it, while the owner deletes its Buckety: the deletion goes on.
// Before, an access counted as withdrawn only for the generation its
// condition was written for, and each change held the deletion back until
// the next pass caught up.
func TestRotatingWithdrawnHoldsNoDeletion(t *testing.T) {
	needInfra(t)
	consumer, orders, reader := sharedWithReader(t)
	waitCondition(t, reader, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	patch(t, orders, `{"spec":{"sharing":null}}`)
	waitWithdrawn(t, reader, time.Now(), "does not share")

	ctx, stop := context.WithCancel(context.Background())
	var bumps atomic.Int64
	const writers = 4
	done := make(chan error, writers)
	for range writers {
		go func() {
			for ctx.Err() == nil {
				p := client.RawPatch(types.MergePatchType, fmt.Appendf(nil, `{"spec":{"rotation":"r%d"}}`, bumps.Add(1)))
				if err := k8s.Patch(ctx, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: consumer, Name: "reader"}}, p); err != nil && ctx.Err() == nil {
					done <- err
					return
				}
			}
			done <- nil
		}()
	}
	if err := k8s.Delete(context.Background(), orders); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the owner's Buckety gone while the consumer keeps changing spec.rotation", func() (bool, string) { return gone(t, orders) })
	stop()
	for range writers {
		if err := <-done; err != nil {
			t.Fatalf("changing the withdrawn access's spec.rotation: %v", err)
		}
	}
	t.Logf("the consumer changed spec.rotation %d times during the deletion", bumps.Load())
	if bumps.Load() < 2 {
		t.Fatalf("want the consumer's changes to have run during the deletion, got %d", bumps.Load())
	}
	if creds := credentialsOf(t, reader.UID); len(creds) != 0 {
		t.Errorf("want no credential issued to the withdrawn access, got %d", len(creds))
	}
	noSecret(t, consumer, "reader", "withdrawn, its Buckety deleted")
}

// perAccessS3 is backend s3-scoped issuing a key per access on impl: one
// of s3test.Implementations, or seaweedfs (its IAM).
func perAccessS3(t *testing.T, impl string) config.Backend {
	t.Helper()
	if impl != "seaweedfs" {
		_, be := scopedS3(t, impl)
		return be
	}
	srv := seaweedfs.Start(t, seaweedfs.Options{})
	be := harness.S3("s3-scoped", s3driver.Config{Implementation: s3driver.ImplSeaweedFS, Endpoint: srv.Endpoint, Region: "us-east-1", ForcePathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: harness.Duration(10 * time.Second), Credentials: &s3driver.Credentials{}})
	be.Credentials = harness.Grace(3 * time.Second)
	return be
}

// TestSharingS3 (#51), on VersityGW, MinIO and SeaweedFS (IAM), each
// issuing a key per access: a bucket shared ReadOnly with one namespace
// gives that namespace's access a key of its own that lists the bucket and
// cannot write it; a namespace the owner did not name gets nothing; the
// rule removed, the key is revoked and the Secret deleted at the access's
// next pass (the time is printed).
func TestSharingS3(t *testing.T) {
	needInfra(t)
	for _, impl := range append(slices.Clone(s3test.Implementations), "seaweedfs") {
		t.Run(impl, func(t *testing.T) {
			startController(t, harness.ConfigYAML(perAccessS3(t, impl)), nil, time.Hour)
			owner, consumer, third := namespace(t), namespace(t), namespace(t)
			removeWhileRunning(t, owner)
			removeWhileRunning(t, consumer)
			removeWhileRunning(t, third)
			bucket := owner + "-ledger"
			ledger := sharedBuckety(owner, "ledger", "s3-scoped", bucket, consumer, v1.RoleReadOnly)
			ledger.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: "ledger"}
			create(t, ledger)
			reader := foreignAccess(consumer, "reader", owner, "ledger", v1.RoleReadOnly)
			create(t, reader)
			stranger := foreignAccess(third, "stranger", owner, "ledger", v1.RoleReadOnly)
			create(t, stranger)
			waitCondition(t, ledger, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			waitCondition(t, reader, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			waitCondition(t, reader, v1.ConditionScopingNotImplemented, metav1.ConditionFalse, v1.ReasonAsExpected, waitTimeout)
			ro := secret(t, consumer, "reader").Data
			if got := string(ro["bucket"]); got != bucket {
				t.Errorf("the consumer's Secret: want bucket %s, got %q", bucket, got)
			}
			if err := putWith(secret(t, owner, "ledger").Data, bucket, "a"); err != nil {
				t.Fatalf("the owner's ReadWrite put: %v", err)
			}
			if err := listWith(ro, bucket); err != nil {
				t.Errorf("the consumer's ReadOnly list: %v", err)
			}
			if err := putWith(ro, bucket, "b"); err == nil {
				t.Error("the consumer's ReadOnly: want put refused")
			}
			waitWithdrawn(t, stranger, time.Now(), "does not share role ReadOnly with namespace "+third)

			patch(t, ledger, `{"spec":{"sharing":null}}`)
			took := waitWithdrawn(t, reader, time.Now(), "does not share role ReadOnly with namespace "+consumer)
			t.Logf("figure: %s: sharing withdrawn, the consumer's key revoked and its Secret deleted %s after the rule was removed", impl, took.Round(time.Millisecond))
			if err := listWith(ro, bucket); err == nil {
				t.Error("withdrawn: want the old Secret's key refused")
			}
		})
	}
}
