package integration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/access"
	"github.com/Yolean/buckety-controller/internal/testhook"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/wait"
)

// scopedBroker is a broker with SCRAM and ACLs enforced; buckety is its
// superuser.
// Its connections must re-authenticate every 3 s
// (connections.max.reauth.ms).
func scopedBroker(t *testing.T, grace time.Duration) (*kafka.Broker, string) {
	t.Helper()
	b := kafka.Start(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true, ReauthMS: 3000})
	return b, harness.ConfigYAML(superuserBackend(b, grace))
}

// superuserBackend is backend kafka on b as its superuser; grace, when not
// 0, is its credentials.rotationGrace.
func superuserBackend(b *kafka.Broker, grace time.Duration) config.Backend {
	be := harness.Kadm("kafka", kadmdriver.Config{SeedBrokers: []string{b.Bootstrap()}, RequestTimeout: harness.Duration(5 * time.Second),
		SASL: &kadmdriver.SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "s3cr3t"}})
	if grace != 0 {
		be.Credentials = harness.Grace(grace)
	}
	return be
}

// userAndACLWrites is how many user and ACL writes broker b (started with
// CountRequests) has answered.
func userAndACLWrites(t *testing.T, b *kafka.Broker) int64 {
	t.Helper()
	got, err := b.Requests()
	if err != nil {
		t.Fatal(err)
	}
	return got["AlterUserSCRAMCredentials"] + got["CreateACLs"] + got["DeleteACLs"]
}

// metadataOf asks for topic's metadata on cl's existing connections.
func metadataOf(cl *kgo.Client, topic string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return kafka.Describe(ctx, cl, topic)
}

// superAdmin is an admin client on b as its superuser, acting out of band.
func superAdmin(t *testing.T, b *kafka.Broker) *kadm.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.SASL(scram.Auth{User: "buckety", Pass: "s3cr3t"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return kadm.NewClient(cl)
}

// secretKafka connects with nothing but a Secret's keys, as a workload.
func secretKafka(t *testing.T, data map[string][]byte, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	if got := string(data["sasl.mechanism"]); got != "SCRAM-SHA-512" {
		t.Fatalf("want sasl.mechanism SCRAM-SHA-512 in the Secret, got %q", got)
	}
	cl, err := kafka.SecretClient(data, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produceWith(t *testing.T, data map[string][]byte, topic string, opts ...kgo.Opt) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return secretKafka(t, data, opts...).ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// consumeWith reads one record of topic in group, or returns the error.
func consumeWith(t *testing.T, data map[string][]byte, topic, group string) error {
	cl := secretKafka(t, data, kgo.ConsumeTopics(topic), kgo.ConsumerGroup(group), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	return kafka.ConsumeOne(ctx, cl)
}

func credentialsOf(t *testing.T, uid types.UID) []v1.BucketyCredential {
	t.Helper()
	var list v1.BucketyCredentialList
	if err := k8s.List(context.Background(), &list, client.MatchingLabels{v1.ClaimOwnerLabel: string(uid)}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// TestScopedKafkaAccesses: on a SASL cluster with ACLs, every access gets
// its own SCRAM user with its role's ACLs on its topic: a ReadOnly Secret
// consumes but cannot produce, no Secret reaches a neighbour's topic or a
// group outside its prefix, and deleting the access revokes the user.
func TestScopedKafkaAccesses(t *testing.T) {
	needInfra(t)
	b, cfg := scopedBroker(t, 0)
	startController(t, cfg, nil, time.Hour)
	ns, other := namespace(t), namespace(t)
	removeWhileRunning(t, ns)
	removeWhileRunning(t, other)
	orders := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".orders"}}
	payroll := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "payroll", Namespace: other}, Spec: v1.BucketySpec{Backend: "kafka", Name: other + ".payroll"}}
	create(t, orders)
	create(t, payroll)
	reader := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}, Spec: v1.BucketyAccessSpec{
		BucketyRef: v1.BucketyReference{Name: "orders"}, Role: v1.RoleReadOnly, CredentialsSecretName: "orders-ro"}}
	writer := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: ns}, Spec: v1.BucketyAccessSpec{
		BucketyRef: v1.BucketyReference{Name: "orders"}, Role: v1.RoleReadWrite, CredentialsSecretName: "orders-rw"}}
	create(t, reader)
	create(t, writer)
	waitCondition(t, orders, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, payroll, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, reader, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, reader, v1.ConditionScopingNotImplemented, metav1.ConditionFalse, v1.ReasonAsExpected, waitTimeout)
	waitCondition(t, writer, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	rw, ro := secret(t, ns, "orders-rw").Data, secret(t, ns, "orders-ro").Data
	for _, k := range []string{"bootstrap", "topic", "security.protocol", "sasl.mechanism", "sasl.username", "sasl.password", "group.id.prefix"} {
		if len(ro[k]) == 0 || len(rw[k]) == 0 {
			t.Errorf("want key %s in both Secrets", k)
		}
	}
	if string(rw["sasl.username"]) == string(ro["sasl.username"]) {
		t.Fatalf("want a user per access, both got %s", rw["sasl.username"])
	}
	if creds := credentialsOf(t, reader.UID); len(creds) != 1 || creds[0].Spec.Principal != string(ro["sasl.username"]) || creds[0].Spec.Phase != v1.CredentialActive {
		t.Errorf("want one Active BucketyCredential for the reader's user, got %+v", creds)
	} else if c := creds[0]; c.Generation != 1 || c.Spec.SecretDigest != access.SecretDigest(string(ro["sasl.password"])) {
		// Born Active with the digest of the password it was minted
		// with: one write, none once the Secret holds it.
		t.Errorf("want the record written once (generation 1) with the digest of the Secret's password, got generation %d, digest %q", c.Generation, c.Spec.SecretDigest)
	}

	// A Buckety of another namespace naming the same topic is in
	// NameConflict: its access gets nothing, no user, no Secret.
	grab := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "grab", Namespace: other}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".orders"}}
	create(t, grab)
	thief := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "thief", Namespace: other}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "grab"}, CredentialsSecretName: "thief"}}
	create(t, thief)
	waitCondition(t, grab, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonNameConflict, waitTimeout)
	waitCondition(t, thief, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBucketyNotReady, waitTimeout)
	if creds := credentialsOf(t, thief.UID); len(creds) != 0 {
		t.Errorf("want no credential for an access to a Buckety in NameConflict, got %d", len(creds))
	}
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: other, Name: "thief"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("want no Secret for an access to a Buckety in NameConflict, got %v", err)
	}

	topic := ns + ".orders"
	if err := produceWith(t, rw, topic); err != nil {
		t.Fatalf("ReadWrite: want produce allowed, got %v", err)
	}
	if err := produceWith(t, ro, topic, kgo.DisableIdempotentWrite()); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("ReadOnly: want produce refused with TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}
	if err := consumeWith(t, ro, topic, string(ro["group.id.prefix"])+"app"); err != nil {
		t.Errorf("ReadOnly: want consume in its group prefix allowed, got %v", err)
	}
	if err := consumeWith(t, ro, topic, "not-my-group"); err == nil {
		t.Error("ReadOnly: want a consumer group outside its prefix refused")
	}
	if err := produceWith(t, rw, other+".payroll"); err == nil {
		t.Error("want the neighbour's topic refused to this namespace's ReadWrite Secret")
	}

	// Revocation: the user and its ACLs go before the finalizer. A
	// connection opened before keeps working only until it must
	// re-authenticate (connections.max.reauth.ms, 3 s here).
	open := secretKafka(t, ro)
	if err := metadataOf(open, topic); err != nil {
		t.Fatalf("want the reader's connection open, got %v", err)
	}
	principal := string(ro["sasl.username"])
	if err := k8s.Delete(context.Background(), reader); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the reader access gone", func() (bool, string) { return gone(t, reader) })
	if err := produceWith(t, ro, topic); err == nil || errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("after the access is deleted: want authentication refused, got %v", err)
	}
	wait.For(t, waitTimeout, "the open connection refused at its re-authentication", func() (bool, string) {
		err := metadataOf(open, topic)
		return err != nil, fmt.Sprint(err)
	})
	users, err := superAdmin(t, b).DescribeUserSCRAMs(context.Background(), principal)
	if d, ok := users[principal]; err == nil && ok && d.Err == nil && len(d.CredInfos) > 0 {
		t.Errorf("want user %s deleted, it has %v", principal, d.CredInfos)
	}
	if creds := credentialsOf(t, reader.UID); len(creds) != 0 {
		t.Errorf("want the reader's BucketyCredential deleted, got %d", len(creds))
	}
}

// TestScopedSecretDeletedGetsANewPassword: a tenant who deletes the
// Secret gets a new password for the same user, and the old one stops
// working at once. Deleted again at once, it is issued again only after
// a wait (the second issue 10 s after the first, and doubling), so a
// Secret deleted in a loop is not a loop of SCRAM writes: the access
// says so with a ReissuePaced event.
func TestScopedSecretDeletedGetsANewPassword(t *testing.T) {
	needInfra(t)
	_, cfg := scopedBroker(t, 0)
	startController(t, cfg, nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bk := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".events",
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "events"}}}
	create(t, bk)
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}}
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	old := secret(t, ns, "events").Data
	if err := produceWith(t, old, ns+".events"); err != nil {
		t.Fatalf("want the Secret to work, got %v", err)
	}
	if err := k8s.Delete(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	recreated := func(before map[string][]byte) *corev1.Secret {
		t.Helper()
		s := &corev1.Secret{}
		wait.For(t, waitTimeout, "the Secret re-created with a new password", func() (bool, string) {
			if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "events"}, s); err != nil {
				return false, err.Error()
			}
			return string(s.Data["sasl.password"]) != string(before["sasl.password"]), "same password"
		})
		return s
	}
	first := recreated(old)
	seen := time.Now()
	if err := k8s.Delete(context.Background(), first, client.Preconditions{UID: &first.UID}); err != nil {
		t.Fatal(err)
	}
	deletedWithin := time.Since(seen)
	second := recreated(first.Data)
	if gap := second.CreationTimestamp.Sub(first.CreationTimestamp.Time); gap < 9*time.Second {
		t.Errorf("want the second issue at least 10 s after the first, got the Secrets created %s apart", gap)
	}
	if deletedWithin < 8*time.Second {
		waitEvent(t, ns, v1.EventReissuePaced, "at most every 10s")
	} else {
		t.Logf("the second delete came %s after the first issue (a slow machine): its wait is not checked", deletedWithin)
	}
	now := second.Data
	if string(now["sasl.username"]) != string(old["sasl.username"]) {
		t.Errorf("want the same user, got %s then %s", old["sasl.username"], now["sasl.username"])
	}
	if err := produceWith(t, now, ns+".events"); err != nil {
		t.Errorf("want the new password to work, got %v", err)
	}
	for _, was := range []map[string][]byte{old, first.Data} {
		if err := produceWith(t, was, ns+".events"); err == nil {
			t.Error("want an earlier password refused")
		}
	}
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
}

// readyTopicAccess creates Buckety name on backend kafka (topic
// <ns>.<name>) and access "app" to it writing Secret "app", and waits
// for the access Ready.
func readyTopicAccess(t *testing.T, ns, name string) *v1.BucketyAccess {
	t.Helper()
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + "." + name}})
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: name}, CredentialsSecretName: "app"}}
	create(t, a)
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	return a
}

// TestStrippedAccessIsRevokedAtOnce: a tenant deletes an access with its
// finalizer removed by hand while the broker hangs, so buckety's deletion
// cannot revoke its user; the access is gone at once. Its user is revoked
// as soon as the broker answers again, not at the orphan check's next
// interval (an hour here): a Secret copied before the delete stops working,
// and the record goes.
func TestStrippedAccessIsRevokedAtOnce(t *testing.T) {
	needInfra(t)
	b, cfg := scopedBroker(t, 0)
	startControllerWith(t, cfg, nil, func(o *appcontroller.Options) {
		o.RESTConfig, o.Recheck, o.OwnerCheck = cp.RESTConfig, time.Hour, time.Hour
	})
	ns := namespace(t)
	removeWhileRunning(t, ns)
	a := readyTopicAccess(t, ns, "events")
	copied := secret(t, ns, "app").Data
	if err := produceWith(t, copied, ns+".events"); err != nil {
		t.Fatalf("want the Secret to work, got %v", err)
	}
	if err := b.Pause(); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			if err := b.Resume(); err != nil {
				t.Error(err)
			}
		}
	}()
	if err := k8s.Delete(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Patch(context.Background(), a, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the stripped access gone", func() (bool, string) { return gone(t, a) })
	if creds := credentialsOf(t, a.UID); len(creds) != 1 {
		t.Fatalf("want the access's record still there while the broker hangs, got %d", len(creds))
	}
	// The deletion's own pass, hung on the broker when the access went,
	// gives up at its request timeout (5 s): only what follows the
	// access's going can revoke after that.
	time.Sleep(12 * time.Second)
	resumed = true
	if err := b.Resume(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the gone access's user revoked", func() (bool, string) {
		err := produceWith(t, copied, ns+".events")
		return err != nil, "the copied Secret still works"
	})
	wait.For(t, waitTimeout, "the gone access's record deleted", func() (bool, string) {
		n := len(credentialsOf(t, a.UID))
		return n == 0, fmt.Sprintf("%d records", n)
	})
}

// TestReplacedBucketyRevokesAtOnce: while no controller runs, a tenant
// deletes a Buckety with its finalizer stripped and applies another under
// its name, which cannot be provisioned (its backend is not in the
// config). No pass of the access sees the Buckety missing; the user
// granted on the old Buckety is revoked as soon as the controller is back
// all the same (by the access's first pass, reconcile's bucketyReplaced,
// or the start's orphan check, whichever comes first: the pass's own
// judgement is TestReplacedBucketyIsTakenForMissing's), not at the next
// orphan check (an hour here) or once the new Buckety provisions.
func TestReplacedBucketyRevokesAtOnce(t *testing.T) {
	needInfra(t)
	_, cfg := scopedBroker(t, 0)
	opts := func(o *appcontroller.Options) {
		o.RESTConfig, o.Recheck, o.OwnerCheck = cp.RESTConfig, time.Hour, time.Hour
	}
	first := startControllerWith(t, cfg, nil, opts)
	ns := namespace(t)
	a := readyTopicAccess(t, ns, "events")
	copied := secret(t, ns, "app").Data
	if err := produceWith(t, copied, ns+".events"); err != nil {
		t.Fatalf("want the Secret to work, got %v", err)
	}
	first.stop(t)
	ctx := context.Background()
	old := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}}
	if err := k8s.Patch(ctx, old, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, old); client.IgnoreNotFound(err) != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the stripped Buckety gone", func() (bool, string) { return gone(t, old) })
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}, Spec: v1.BucketySpec{Backend: "retired", Name: ns + ".events"}})
	startControllerWith(t, cfg, nil, opts)
	removeWhileRunning(t, ns)
	t.Cleanup(func() {
		// Its backend is not in the config, so its deletion would wait.
		err := k8s.Patch(context.Background(), &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}}, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
		if client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	wait.For(t, waitTimeout, "the old Buckety's user revoked", func() (bool, string) {
		err := produceWith(t, copied, ns+".events")
		return err != nil, "the copied Secret still works"
	})
	wait.For(t, waitTimeout, "its record deleted", func() (bool, string) {
		n := len(credentialsOf(t, a.UID))
		return n == 0, fmt.Sprintf("%d records", n)
	})
}

// TestRotationWhoseSecretIsRefusedIssuesNoThird: a rotation whose Secret
// write the API server refuses (here a ValidatingAdmissionPolicy, as a
// cluster's policy requiring a label on Secrets would) issues its new
// credential once, however often the pass is retried: before, the status
// named the new principal though the Secret did not hold it, the next pass
// took the rotation for done and asked again, and every retry issued one
// more user. Once the Secret may be written, the rotation finishes with
// the same new user, and there are two credentials, never three.
func TestRotationWhoseSecretIsRefusedIssuesNoThird(t *testing.T) {
	needInfra(t)
	_, cfg := scopedBroker(t, time.Hour)
	startController(t, cfg, nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	a := readyTopicAccess(t, ns, "ticks")
	first := secret(t, ns, "app")

	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: ns + "-refuse-secrets"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"secrets"}}}}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false", Message: "Secrets of this namespace are frozen (test)"}}}}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: ns + "-refuse-secrets"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
	for _, o := range []client.Object{policy, binding} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	unbound := false
	unbind := func() {
		if !unbound {
			unbound = true
			if err := k8s.Delete(ctx, binding); client.IgnoreNotFound(err) != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(func() {
		unbind()
		if err := k8s.Delete(ctx, policy); client.IgnoreNotFound(err) != nil {
			t.Error(err)
		}
	})
	wait.For(t, waitTimeout, "the policy refusing Secret updates in force", func() (bool, string) {
		probe := first.DeepCopy()
		err := k8s.Update(ctx, probe, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "frozen"), fmt.Sprint(err)
	})

	patch(t, a, `{"spec":{"rotation":"1"}}`)
	wait.For(t, waitTimeout, "the rotation's credential recorded", func() (bool, string) {
		n := len(credentialsOf(t, a.UID))
		return n >= 2, fmt.Sprintf("%d records", n)
	})
	// Passes retried on the backoff while the Secret is refused.
	time.Sleep(15 * time.Second)
	if n := len(credentialsOf(t, a.UID)); n != 2 {
		t.Errorf("while the Secret is refused: want the rotation's one new credential beside the old, got %d records", n)
	}
	if got := secret(t, ns, "app").Data; string(got["sasl.password"]) != string(first.Data["sasl.password"]) {
		t.Fatal("the Secret changed while the policy refused every update")
	}
	// A rotation asked for meanwhile is not done by this one's
	// credential, issued for "1": the status says "1" once it is handed
	// over, and "2" waits for the old credential's grace (one rotation at
	// a time). It was marked done with no credential issued for it.
	patch(t, a, `{"spec":{"rotation":"2"}}`)

	unbind()
	var now map[string][]byte
	wait.For(t, waitTimeout, "the rotation finished", func() (bool, string) {
		now = secret(t, ns, "app").Data
		return string(now["sasl.username"]) != string(first.Data["sasl.username"]), "same user"
	})
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	creds := credentialsOf(t, a.UID)
	if len(creds) != 2 {
		t.Errorf("after the rotation: want two credentials (the old retiring, the new), got %d", len(creds))
	}
	for _, c := range creds {
		if c.Spec.Serial > 2 {
			t.Errorf("want no third credential, got %s (serial %d)", c.Spec.Principal, c.Spec.Serial)
		}
	}
	if err := produceWith(t, now, ns+".ticks"); err != nil {
		t.Errorf("want the rotated Secret to work, got %v", err)
	}
	got := &v1.BucketyAccess{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(a), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Rotation != "1" {
		t.Errorf("want status.rotation \"1\", the rotation the handed-over credential was issued for (\"2\" waits for the next), got %q", got.Status.Rotation)
	}
}

// TestScopedCrashBetweenMintAndSecret: a record left Minting with its user
// created (the controller died before writing the Secret) is finished by
// the next pass with a new password, and so is one born Active with the
// digest of a password minted for it (how a record is written where
// buckety mints the secret); one whose access is gone is revoked.
// A user that exists without a record is not buckety's: the access gets
// PrincipalConflict and the user keeps its password.
func TestScopedCrashBetweenMintAndSecret(t *testing.T) {
	needInfra(t)
	b, cfg := scopedBroker(t, 0)
	adm := superAdmin(t, b)
	ctx := context.Background()
	ns := namespace(t)
	mkUser := func(user, pass string) {
		t.Helper()
		res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: user, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: pass}})
		if err == nil {
			err = res.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	recordAs := func(a *v1.BucketyAccess, uid types.UID, principal string, phase v1.CredentialPhase, digest string) {
		t.Helper()
		c := &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: access.CredentialName("kafka", principal), Labels: map[string]string{v1.ClaimOwnerLabel: string(uid)}},
			Spec: v1.BucketyCredentialSpec{Backend: "kafka", Service: "kafka", Principal: principal, Serial: 1, Phase: phase, SecretDigest: digest,
				Owner: v1.ClaimOwner{Namespace: a.Namespace, Name: a.Name, UID: string(uid)}}}
		create(t, c)
	}
	record := func(a *v1.BucketyAccess, uid types.UID, principal string) {
		t.Helper()
		recordAs(a, uid, principal, v1.CredentialMinting, "")
	}
	// The Buckety waits (no controller yet); its accesses exist, so their
	// UIDs and principals are known.
	bk := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".ledger"}}
	create(t, bk)
	mid := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "mid", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "mid"}}
	foreign := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "foreign", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "foreign"}}
	born := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "born", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "born"}}
	create(t, mid)
	create(t, foreign)
	create(t, born)
	principalOf := func(a *v1.BucketyAccess) string {
		return kadmdriver.PrincipalFor(drivers.Access{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID), Installation: defaultInstallation(t)}, 1)
	}
	midUser, foreignUser, bornUser := principalOf(mid), principalOf(foreign), principalOf(born)
	record(mid, mid.UID, midUser)
	mkUser(midUser, "lost-with-the-crash")
	recordAs(born, born.UID, bornUser, v1.CredentialActive, access.SecretDigest("lost-at-birth"))
	mkUser(bornUser, "lost-at-birth")
	mkUser(foreignUser, "someone-elses")
	gone := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: ns}}
	goneUser := kadmdriver.PrincipalFor(drivers.Access{Namespace: ns, Name: "gone", UID: "0b5e55ed-0000-4000-8000-000000000000"}, 1)
	record(gone, "0b5e55ed-0000-4000-8000-000000000000", goneUser)
	mkUser(goneUser, "orphaned")

	startControllerWith(t, cfg, nil, func(o *appcontroller.Options) { o.Recheck, o.OwnerCheck = time.Hour, 200*time.Millisecond })
	removeWhileRunning(t, ns)
	waitCondition(t, mid, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	data := secret(t, ns, "mid").Data
	if string(data["sasl.username"]) != midUser {
		t.Errorf("want the recorded user %s finished, got %s", midUser, data["sasl.username"])
	}
	if err := produceWith(t, data, ns+".ledger"); err != nil {
		t.Errorf("want the finished credential to work, got %v", err)
	}
	waitCondition(t, born, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	data = secret(t, ns, "born").Data
	if got, pass := string(data["sasl.username"]), string(data["sasl.password"]); got != bornUser || pass == "" || pass == "lost-at-birth" {
		t.Errorf("want the recorded user %s finished with a new password, got %s with %q", bornUser, got, pass)
	}
	if err := produceWith(t, data, ns+".ledger"); err != nil {
		t.Errorf("want the finished credential born Active to work, got %v", err)
	}
	if creds := credentialsOf(t, born.UID); len(creds) != 1 || creds[0].Spec.Phase != v1.CredentialActive || creds[0].Spec.SecretDigest != access.SecretDigest(string(data["sasl.password"])) {
		t.Errorf("want the record Active with the digest of the password its Secret holds, got %+v", creds)
	}
	c := waitCondition(t, foreign, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonPrincipalConflict, waitTimeout)
	if !strings.Contains(c.Message, foreignUser) || !strings.Contains(c.Message, "buckety did not create it") {
		t.Errorf("want the foreign user named and refused, got %q", c.Message)
	}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "foreign"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("want no Secret for the refused access, got %v", err)
	}
	if err := produceWith(t, map[string][]byte{"bootstrap": []byte(b.Bootstrap()), "sasl.mechanism": []byte("SCRAM-SHA-512"), "sasl.username": []byte(foreignUser), "sasl.password": []byte("someone-elses")}, "__probe", kgo.DisableIdempotentWrite()); err != nil && !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("want the foreign user's password untouched (it authenticates), got %v", err)
	}
	wait.For(t, waitTimeout, "the orphaned user revoked and its record deleted", func() (bool, string) {
		users, err := adm.DescribeUserSCRAMs(ctx, goneUser)
		if err != nil && !errors.Is(err, kerr.ResourceNotFound) {
			return false, err.Error()
		}
		if d, ok := users[goneUser]; ok && d.Err == nil && len(d.CredInfos) > 0 {
			return false, "user still there"
		}
		err = k8s.Get(ctx, types.NamespacedName{Name: access.CredentialName("kafka", goneUser)}, &v1.BucketyCredential{})
		return apierrors.IsNotFound(err), fmt.Sprintf("record: %v", err)
	})
}

// scopedTicks is a controller on a SASL broker with ACLs whose backend's
// rotationGrace is grace, and a namespace with Buckety "ticks" (its topic)
// and access "app" (Secret "app"), Ready.
func scopedTicks(t *testing.T, grace time.Duration) (ns, topic string, a *v1.BucketyAccess) {
	t.Helper()
	needInfra(t)
	_, cfg := scopedBroker(t, grace)
	startController(t, cfg, nil, time.Hour)
	ns = namespace(t)
	removeWhileRunning(t, ns)
	topic = ns + ".ticks"
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ticks", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: topic}})
	a = &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ticks"}, CredentialsSecretName: "app"}}
	create(t, a)
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	return ns, topic, a
}

// TestScopedRotation: changing spec.rotation issues a new user, writes it
// to the Secret, and revokes the old one after the backend's
// rotationGrace. A consumer that reloads its Secret never fails to
// authenticate; the old user is refused once the grace is over.
func TestScopedRotation(t *testing.T) {
	ns, topic, a := scopedTicks(t, 4*time.Second)
	first := secret(t, ns, "app").Data

	// The consumer: reloads the Secret every 100 ms, reconnects when it
	// changed, and asks for its topic on every round.
	stop, done := make(chan struct{}), make(chan struct{})
	var failures []string
	users := map[string]bool{}
	go func() {
		defer close(done)
		var cl *kgo.Client
		defer func() {
			if cl != nil {
				cl.Close()
			}
		}()
		var user string
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			s := &corev1.Secret{}
			if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "app"}, s); err != nil {
				failures = append(failures, "read Secret: "+err.Error())
				continue
			}
			if u := string(s.Data["sasl.username"]); u != user {
				if cl != nil {
					cl.Close()
				}
				user, users[u] = u, true
				var err error
				if cl, err = kafka.SecretClient(s.Data); err != nil {
					failures = append(failures, err.Error())
					continue
				}
			}
			if err := metadataOf(cl, topic); err != nil {
				failures = append(failures, fmt.Sprintf("%s as %s: %v", time.Now().Format("15:04:05.000"), user, err))
			}
		}
	}()
	time.Sleep(time.Second)
	patch(t, a, `{"spec":{"rotation":"2026-11-23"}}`)
	var second map[string][]byte
	wait.For(t, waitTimeout, "a new user in the Secret", func() (bool, string) {
		second = secret(t, ns, "app").Data
		return string(second["sasl.username"]) != string(first["sasl.username"]), string(second["sasl.username"])
	})
	waitEvent(t, ns, v1.EventCredentialRotated, string(second["sasl.username"]))
	if err := produceWith(t, first, topic); err != nil {
		t.Errorf("within the grace: want the old user to keep working, got %v", err)
	}
	if err := produceWith(t, second, topic); err != nil {
		t.Errorf("want the new user to work, got %v", err)
	}
	wait.For(t, waitTimeout, "the old user's record revoked after the grace", func() (bool, string) {
		creds := credentialsOf(t, a.UID)
		return len(creds) == 1 && creds[0].Spec.Principal == string(second["sasl.username"]), fmt.Sprintf("%d records", len(creds))
	})
	if err := produceWith(t, first, topic); err == nil {
		t.Error("after the grace: want the old user refused")
	}
	cur := &v1.BucketyAccess{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(a), cur); err != nil || cur.Status.Rotation != "2026-11-23" {
		t.Errorf("want status.rotation 2026-11-23, got %q (%v)", cur.Status.Rotation, err)
	}
	time.Sleep(time.Second)
	close(stop)
	<-done
	if len(failures) > 0 || len(users) != 2 {
		t.Errorf("want the reloading consumer to switch users (saw %d) without a failure, got %q", len(users), failures)
	}

	// One rotation at a time: asked again while the previous user is still
	// Retiring, the next rotation waits for its revocation, so an access
	// never has more than two users.
	patch(t, a, `{"spec":{"rotation":"again"}}`)
	var third map[string][]byte
	wait.For(t, waitTimeout, "a third user in the Secret", func() (bool, string) {
		third = secret(t, ns, "app").Data
		return string(third["sasl.username"]) != string(second["sasl.username"]), string(third["sasl.username"])
	})
	patch(t, a, `{"spec":{"rotation":"and-again"}}`)
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		if n := len(credentialsOf(t, a.UID)); n > 2 {
			t.Fatalf("want at most two users per access, got %d records", n)
		}
		if u := string(secret(t, ns, "app").Data["sasl.username"]); u != string(third["sasl.username"]) {
			t.Fatalf("want the next rotation to wait for the previous user's revocation, the Secret moved to %s", u)
		}
		time.Sleep(200 * time.Millisecond)
	}
	wait.For(t, waitTimeout, "the waiting rotation done after the grace", func() (bool, string) {
		u := string(secret(t, ns, "app").Data["sasl.username"])
		return u != string(third["sasl.username"]), u
	})
}

// TestNarrowedRoleRevokesRetiringUser: a user retired by a rotation keeps
// working for the backend's rotationGrace (an hour here), unless its
// tenant narrows the access's role meanwhile: the retired user, which
// still held ReadWrite, is revoked at once, not an hour later, and the
// current one is narrowed. A rotation and a narrowing in one edit revoke
// the replaced user at once too. (Before, a retired user kept the role
// its tenant took away for the whole grace: a leaked key, the reason to
// rotate, went on writing.) Widening keeps the grace.
func TestNarrowedRoleRevokesRetiringUser(t *testing.T) {
	ns, topic, a := scopedTicks(t, time.Hour)
	user := func(d map[string][]byte) string { return string(d["sasl.username"]) }
	rotate := func(mergePatch string, from map[string][]byte) map[string][]byte {
		t.Helper()
		patch(t, a, mergePatch)
		var next map[string][]byte
		wait.For(t, waitTimeout, "a new user in the Secret", func() (bool, string) {
			next = secret(t, ns, "app").Data
			return user(next) != user(from), user(next)
		})
		return next
	}
	records := func() string {
		var out []string
		for _, c := range credentialsOf(t, a.UID) {
			out = append(out, fmt.Sprintf("%s %s %s", c.Spec.Principal, c.Spec.Phase, c.Spec.Role))
		}
		slices.Sort(out)
		return strings.Join(out, ", ")
	}
	onlyRecord := func(what string, d map[string][]byte, role v1.Role) {
		t.Helper()
		want := fmt.Sprintf("%s %s %s", user(d), v1.CredentialActive, role)
		wait.For(t, waitTimeout, what, func() (bool, string) {
			got := records()
			return got == want, got
		})
	}

	first := secret(t, ns, "app").Data
	second := rotate(`{"spec":{"rotation":"one"}}`, first)
	wait.For(t, waitTimeout, "the first user retiring", func() (bool, string) {
		got := records()
		return strings.Contains(got, user(first)+" "+string(v1.CredentialRetiring)+" ReadWrite"), got
	})
	if err := produceWith(t, first, topic); err != nil {
		t.Fatalf("within the grace: want the retired user to keep working, got %v", err)
	}
	patch(t, a, `{"spec":{"role":"ReadOnly"}}`)
	onlyRecord("the retired user revoked once the role is narrowed, the current one ReadOnly", second, v1.RoleReadOnly)
	if err := produceWith(t, first, topic); err == nil {
		t.Error("the retired user, role narrowed: want it refused, it produced")
	}
	wait.For(t, waitTimeout, "the current user narrowed to ReadOnly", func() (bool, string) {
		err := produceWith(t, second, topic)
		return err != nil, fmt.Sprintf("produce: %v", err)
	})

	// Widened: the grace holds (a retired user keeps no more than its
	// access has).
	patch(t, a, `{"spec":{"role":"ReadWrite"}}`)
	onlyRecord("the current user widened to ReadWrite", second, v1.RoleReadWrite)
	third := rotate(`{"spec":{"rotation":"two"}}`, second)
	patch(t, a, `{"spec":{"role":"WriteOnly"}}`)
	wait.For(t, waitTimeout, "the role WriteOnly recorded", func() (bool, string) {
		got := records()
		return strings.Contains(got, user(third)+" Active WriteOnly"), got
	})
	// WriteOnly is narrower than the retired user's ReadWrite: revoked.
	onlyRecord("the user retired before WriteOnly revoked", third, v1.RoleWriteOnly)

	// Rotated and narrowed in one edit: the replaced user (WriteOnly)
	// holds a role the access's ReadOnly lacks, and is revoked at once.
	fourth := rotate(`{"spec":{"rotation":"three","role":"ReadOnly"}}`, third)
	onlyRecord("the user replaced by a rotation that narrowed the role revoked at once", fourth, v1.RoleReadOnly)
	if err := produceWith(t, third, topic); err == nil {
		t.Error("the replaced WriteOnly user: want it refused, it produced")
	}

	// Widened with a rotation: the replaced ReadOnly user keeps its grace.
	fifth := rotate(`{"spec":{"rotation":"four","role":"ReadWrite"}}`, fourth)
	wait.For(t, waitTimeout, "the ReadOnly user retiring, kept for the grace", func() (bool, string) {
		got := records()
		return strings.Contains(got, user(fourth)+" "+string(v1.CredentialRetiring)+" ReadOnly") && strings.Contains(got, user(fifth)+" Active ReadWrite"), got
	})
}

// TestScopedRotationCutShort: a rotation cut short after its new user was
// recorded (born Active, with the digest of a password minted for it) and
// created on the broker, but before the Secret held it, is finished by the
// next controller with that user: no third user is issued, the old one is
// retired, and status.rotation follows.
func TestScopedRotationCutShort(t *testing.T) {
	needInfra(t)
	b, cfg := scopedBroker(t, time.Hour)
	run := startController(t, cfg, nil, time.Hour)
	ns := namespace(t)
	ctx := context.Background()
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".ledger"}})
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "app"}}
	create(t, a)
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	first := credentialsOf(t, a.UID)
	if len(first) != 1 {
		t.Fatalf("want one credential, got %+v", first)
	}
	run.stop(t)

	// What the cut-short pass left: spec.rotation changed, serial 2
	// recorded Active with its minted password's digest, the user created
	// with that password, the Secret still holding serial 1.
	patch(t, a, `{"spec":{"rotation":"cut-short"}}`)
	second := kadmdriver.PrincipalFor(drivers.Access{Namespace: ns, Name: "app", UID: string(a.UID)}, 2)
	spec := first[0].Spec
	spec.Principal, spec.Serial, spec.Phase, spec.SecretDigest, spec.RetireAfter = second, 2, v1.CredentialActive, access.SecretDigest("minted-then-lost"), nil
	// Recorded, as a pass records it, at the access's generation and
	// rotation of the time.
	patched := &v1.BucketyAccess{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(a), patched); err != nil {
		t.Fatal(err)
	}
	spec.AccessGeneration, spec.Rotation = patched.Generation, patched.Spec.Rotation
	create(t, &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: access.CredentialName("kafka", second), Labels: map[string]string{v1.ClaimOwnerLabel: string(a.UID)}}, Spec: spec})
	res, err := superAdmin(t, b).AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: second, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "minted-then-lost"}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}

	startController(t, cfg, nil, time.Hour)
	removeWhileRunning(t, ns)
	wait.For(t, waitTimeout, "the rotation finished with the recorded user", func() (bool, string) {
		if n := len(credentialsOf(t, a.UID)); n > 2 {
			t.Fatalf("want no third user for a rotation cut short, got %d records", n)
		}
		cur := &v1.BucketyAccess{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(a), cur); err != nil {
			return false, err.Error()
		}
		u := string(secret(t, ns, "app").Data["sasl.username"])
		return u == second && cur.Status.Rotation == "cut-short", fmt.Sprintf("Secret user %s, status.rotation %q", u, cur.Status.Rotation)
	})
	data := secret(t, ns, "app").Data
	if string(data["sasl.password"]) == "minted-then-lost" {
		t.Error("want a new password: the minted one was lost with the pass")
	}
	if err := produceWith(t, data, ns+".ledger"); err != nil {
		t.Errorf("want the finished user to work, got %v", err)
	}
	phases := map[string]v1.CredentialPhase{}
	for _, c := range credentialsOf(t, a.UID) {
		phases[c.Spec.Principal] = c.Spec.Phase
	}
	if len(phases) != 2 || phases[first[0].Spec.Principal] != v1.CredentialRetiring || phases[second] != v1.CredentialActive {
		t.Errorf("want serial 1 Retiring and serial 2 Active, nothing else, got %v", phases)
	}
}

// TestScopedCredentialDriftIsRepaired: ACLs removed or added out of band
// for a buckety user, and a deleted user, are found by the drift sweep and
// put back to exactly the role's, from the Secret.
func TestScopedCredentialDriftIsRepaired(t *testing.T) {
	needInfra(t)
	b, cfg := scopedBroker(t, 0)
	startControllerWith(t, cfg, nil, func(o *appcontroller.Options) { o.Recheck, o.DriftSweep = time.Hour, time.Second })
	ns := namespace(t)
	removeWhileRunning(t, ns)
	topic := ns + ".audit"
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "audit", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: topic}})
	writer := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "audit"}, CredentialsSecretName: "writer"}}
	reader := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "audit"}, Role: v1.RoleReadOnly, CredentialsSecretName: "reader"}}
	create(t, writer)
	create(t, reader)
	waitCondition(t, writer, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, reader, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	w, r := secret(t, ns, "writer").Data, secret(t, ns, "reader").Data
	adm := superAdmin(t, b)
	ctx := context.Background()
	plain := kgo.DisableIdempotentWrite()

	// The writer's Write removed, the reader given Write, out of band.
	if _, err := adm.DeleteACLs(ctx, kadm.NewACLs().Allow("User:"+string(w["sasl.username"])).AllowHosts().Topics(topic).Operations(kadm.OpWrite).ResourcePatternType(kadm.ACLPatternLiteral)); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.CreateACLs(ctx, kadm.NewACLs().Allow("User:"+string(r["sasl.username"])).Topics(topic).Operations(kadm.OpWrite)); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the writer's Write restored and the reader's removed", func() (bool, string) {
		werr, rerr := produceWith(t, w, topic, plain), produceWith(t, r, topic, plain)
		return werr == nil && errors.Is(rerr, kerr.TopicAuthorizationFailed), fmt.Sprintf("writer: %v, reader: %v", werr, rerr)
	})

	// The writer's user deleted out of band: re-created with the Secret's
	// password.
	if _, err := adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: string(w["sasl.username"]), Mechanism: kadm.ScramSha512}}, nil); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the writer's user re-created", func() (bool, string) {
		err := produceWith(t, w, topic, plain)
		return err == nil, fmt.Sprint(err)
	})
	if now := secret(t, ns, "writer").Data; string(now["sasl.password"]) != string(w["sasl.password"]) {
		t.Error("want the Secret's password kept: the Secret is the source of truth")
	}
}

// TestScopedRestartAssertsNothing: a restarted controller reads every
// Secret afresh, and finds in each credential's record the digest of the
// password it asserted: it sends the broker no user or ACL write. A
// password its tenant edited in the Secret is a different one: it is
// made the broker's, and the record's digest follows.
func TestScopedRestartAssertsNothing(t *testing.T) {
	needInfra(t)
	b := kafka.Start(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true, CountRequests: true})
	cfg := harness.ConfigYAML(superuserBackend(b, 0))
	run := startController(t, cfg, nil, time.Hour)
	ns := namespace(t)
	bk := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".events",
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "events"}}}
	create(t, bk)
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}}
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	creds := credentialsOf(t, a.UID)
	if len(creds) != 1 || creds[0].Spec.Phase != v1.CredentialActive || creds[0].Spec.SecretDigest == "" {
		t.Fatalf("want one Active credential with the digest of its secret, got %+v", creds)
	}
	run.stop(t)
	writes := func() int64 { return userAndACLWrites(t, b) }
	before := writes()
	reads := startCountingSecretReads(t, cfg, ns)
	removeWhileRunning(t, ns)
	// The access's pass after the restart stamps its status; give it time
	// to have sent anything it would.
	wait.For(t, waitTimeout, "the restarted controller verified the access", func() (bool, string) {
		cur := &v1.BucketyAccess{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(a), cur); err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(cur.Status.Conditions, v1.ConditionReady), "not Ready"
	})
	time.Sleep(2 * time.Second)
	if got := writes() - before; got != 0 {
		t.Errorf("after a restart: want no user or ACL writes, got %d", got)
	}
	reads.mu.Lock()
	gets, full := maps.Clone(reads.gets), reads.full
	reads.mu.Unlock()
	if full < 1 || len(gets) != 0 {
		t.Errorf("after a restart: want the Secret read in the list of every buckety Secret, not on its own; got %d lists, GETs %v", full, gets)
	}
	data := secret(t, ns, "events").Data
	if err := produceWith(t, data, ns+".events"); err != nil {
		t.Fatalf("after a restart: want the Secret to work, got %v", err)
	}

	// The tenant sets a password of their own in the Secret.
	s := secret(t, ns, "events")
	s.Data["sasl.password"] = []byte("tenant-chosen-password-0123456789")
	if err := k8s.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	waitPasswordMadeTheBrokers(t, s.Data, ns+".events", a.UID, "tenant-chosen-password-0123456789")
}

// waitPasswordMadeTheBrokers waits until the Secret data's password works
// on topic and the access's one credential record holds its digest.
func waitPasswordMadeTheBrokers(t *testing.T, data map[string][]byte, topic string, uid types.UID, password string) {
	t.Helper()
	wait.For(t, waitTimeout, "the edited password works", func() (bool, string) {
		if err := produceWith(t, data, topic); err != nil {
			return false, err.Error()
		}
		return true, ""
	})
	wait.For(t, waitTimeout, "the record's digest follows the Secret", func() (bool, string) {
		c := credentialsOf(t, uid)
		return len(c) == 1 && c[0].Spec.SecretDigest == access.SecretDigest(password), fmt.Sprintf("%+v", c)
	})
}

// TestScopedPasswordEditedWhileStopped: a password its tenant put in the
// Secret while no controller ran is found in the list a starting
// controller reads every buckety Secret with (no GET of its own), and is
// still made the broker's, as a fresh read of the Secret would have it.
func TestScopedPasswordEditedWhileStopped(t *testing.T) {
	needInfra(t)
	b := kafka.Start(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true})
	cfg := harness.ConfigYAML(superuserBackend(b, 0))
	run := startController(t, cfg, nil, time.Hour)
	ns := namespace(t)
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".ledger",
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "ledger"}}})
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}}
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	run.stop(t)

	const mine = "tenant-chosen-while-stopped-0123456789"
	s := secret(t, ns, "ledger")
	s.Data["sasl.password"] = []byte(mine)
	if err := k8s.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if err := produceWith(t, s.Data, ns+".ledger"); err == nil {
		t.Fatal("the edited password works before any controller ran: the test proves nothing")
	}
	reads := startCountingSecretReads(t, cfg, ns)
	removeWhileRunning(t, ns)
	waitPasswordMadeTheBrokers(t, s.Data, ns+".ledger", a.UID, mine)
	if got := string(secret(t, ns, "ledger").Data["sasl.password"]); got != mine {
		t.Errorf("want the tenant's password kept in the Secret, got %q", got)
	}
	reads.mu.Lock()
	defer reads.mu.Unlock()
	if reads.full < 1 || len(reads.gets) != 0 {
		t.Errorf("want the Secret read in the start's list, not on its own; got %d lists, GETs %v", reads.full, reads.gets)
	}
}

// TestScopedSIGKILLBetweenMintAndSecret kills the real controller process
// right after it set two accesses' users and ACLs on the broker, before it
// wrote their Secrets. While it is down, one access is deleted. The
// restarted controller must finish the other with its recorded user (a
// working Secret) and revoke the deleted one's: afterwards the broker has
// exactly one buckety user in the namespace, with ACLs of its own only.
// The binary is built with the test hook (testhook.Tag).
func TestScopedSIGKILLBetweenMintAndSecret(t *testing.T) {
	needInfra(t)
	b, _ := scopedBroker(t, 0)
	// A backend name of its own: the binary watches every namespace, and
	// what earlier tests left on backend kafka must not take its workers
	// into the armed pause before this test's accesses get there.
	be := superuserBackend(b, 0)
	be.Name = "kafka-sigkill"
	m := startMintCrash(t, buildController(t, "0.3.0", testhook.Tag), harness.ConfigYAML(be))
	ns := namespace(t)
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka-sigkill", Name: ns + ".ledger"}})
	kept := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "kept"}}
	dropped := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "dropped", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "dropped", Role: v1.RoleReadOnly}}
	create(t, kept)
	create(t, dropped)
	principalOf := func(a *v1.BucketyAccess) string {
		return kadmdriver.PrincipalFor(drivers.Access{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID), Installation: defaultInstallation(t)}, 1)
	}
	keptUser, droppedUser := principalOf(kept), principalOf(dropped)
	adm := superAdmin(t, b)
	ctx := context.Background()
	// This namespace's users, with or without an installation's marker
	// (bky.<ns>. or bky-<marker>.<ns>.).
	ofNS := func(u string) bool {
		return strings.HasPrefix(u, "bky") && strings.Contains(u, "."+ns+".")
	}
	users := func() (map[string]bool, map[string]int, error) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(b.Addrs...), kgo.SASL(scram.Auth{User: "buckety", Pass: "s3cr3t"}.AsSha512Mechanism()))
		if err != nil {
			return nil, nil, err
		}
		defer cl.Close()
		us, acls, err := kafka.BucketyCredentials(ctx, cl)
		if err != nil {
			return nil, nil, err
		}
		mine, grants := map[string]bool{}, map[string]int{}
		for u := range us {
			if ofNS(u) {
				mine[u] = true
			}
		}
		for u, as := range acls {
			if ofNS(u) {
				grants[u] = len(as)
			}
		}
		return mine, grants, nil
	}
	wait.For(t, waitTimeout, "both users and their ACLs set, the controller paused before their Secrets", func() (bool, string) {
		mine, grants, err := users()
		if err != nil {
			return false, err.Error()
		}
		return m.paused() && mine[keptUser] && mine[droppedUser] && grants[keptUser] > 0 && grants[droppedUser] > 0, fmt.Sprintf("users %v, ACLs %v, paused: %v", mine, grants, m.paused())
	})
	m.killAndRestart(ns, dropped, "kept", "dropped")
	waitCondition(t, kept, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	data := secret(t, ns, "kept").Data
	if got := string(data["sasl.username"]); got != keptUser {
		t.Errorf("want the recorded user %s finished, got %q", keptUser, got)
	}
	if err := produceWith(t, data, ns+".ledger"); err != nil {
		t.Errorf("want the finished credential to work, got %v", err)
	}
	wait.For(t, waitTimeout, "the deleted access gone, its user and ACLs revoked", func() (bool, string) {
		err := k8s.Get(ctx, client.ObjectKeyFromObject(dropped), &v1.BucketyAccess{})
		mine, grants, uerr := users()
		if uerr != nil {
			return false, uerr.Error()
		}
		return apierrors.IsNotFound(err) && len(mine) == 1 && mine[keptUser] && len(grants) == 1 && grants[keptUser] > 0,
			fmt.Sprintf("access: %v; users %v; ACLs %v", err, mine, grants)
	})
	if d, err := adm.DescribeUserSCRAMs(ctx, droppedUser); err == nil && len(d[droppedUser].CredInfos) > 0 {
		t.Errorf("want %s deleted from the broker, still described: %+v", droppedUser, d[droppedUser])
	}
}

// mintCrash is the controller binary (built with the test hook) running
// on a config of its own with the after-issue pause armed: the SIGKILL
// tests' shared part.
type mintCrash struct {
	t                                   *testing.T
	bin, kubeconfig, dir, pauseDir, arm string
	c                                   *controllerProcess
}

// noLease runs the binary without leader election: a killed process's
// Lease would only add its 15 s expiry to the restart.
var noLease = []string{"--leader-elect=false"}

func startMintCrash(t *testing.T, bin, cfg string) *mintCrash {
	t.Helper()
	m := &mintCrash{t: t, bin: bin, pauseDir: t.TempDir()}
	m.kubeconfig, m.dir = asServiceAccount(t)
	if err := os.WriteFile(filepath.Join(m.dir, config.Filename), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	m.arm = filepath.Join(m.pauseDir, testhook.AfterIssue+".arm")
	if err := os.WriteFile(m.arm, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m.c = runBinaryArgs(t, bin, m.kubeconfig, m.dir, []string{testhook.Env + "=" + m.pauseDir}, noLease)
	return m
}

// paused reports whether a grant reached the pause.
func (m *mintCrash) paused() bool {
	_, err := os.Stat(filepath.Join(m.pauseDir, testhook.AfterIssue+".reached"))
	return err == nil
}

// killAndRestart SIGKILLs the paused process, checks that none of the
// Secrets was written, deletes dropped while nothing runs, and starts the
// binary again unarmed (removing ns's objects while it runs, at cleanup).
func (m *mintCrash) killAndRestart(ns string, dropped client.Object, secrets ...string) {
	t := m.t
	t.Helper()
	if err := m.c.p.Kill(); err != nil {
		t.Fatal(err)
	}
	m.c.p = nil
	for _, name := range secrets {
		if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Fatalf("the crash point is before the Secret write, but Secret %s: %v", name, err)
		}
	}
	if err := k8s.Delete(context.Background(), dropped); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(m.arm); err != nil {
		t.Fatal(err)
	}
	runBinaryArgs(t, m.bin, m.kubeconfig, m.dir, []string{testhook.Env + "=" + m.pauseDir}, noLease)
	removeWhileRunning(t, ns)
}

// TestScopedSecretConflictWritesNothing: an access whose Secret name is
// held by a Secret buckety did not create is retried every few seconds,
// and each retry must not mint and grant its credential again (a new
// SCRAM password per retry, which a tenant could multiply by pointing
// many accesses at one Secret). Once the foreign Secret is gone, the
// access gets its Secret, and it works.
func TestScopedSecretConflictWritesNothing(t *testing.T) {
	needInfra(t)
	b := kafka.Start(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true, CountRequests: true})
	startController(t, harness.ConfigYAML(superuserBackend(b, 0)), nil, time.Hour)
	ns := namespace(t)
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}, StringData: map[string]string{"password": "keep-me"}}
	create(t, foreign)
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".events",
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "events"}}})
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}}
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonSecretConflict, waitTimeout)
	writes := func() int64 { return userAndACLWrites(t, b) }
	before := writes()
	time.Sleep(3*access.ConflictRetry + time.Second) // three retries
	if got := writes() - before; got != 0 {
		t.Errorf("while the Secret conflict lasts: want no user or ACL writes, got %d", got)
	}
	c := waitCondition(t, a, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonSecretConflict, waitTimeout)
	if want := "Secret events already exists and was not created by buckety"; !strings.Contains(c.Message, want) {
		t.Errorf("want message containing %q, got %q", want, c.Message)
	}
	if s := secret(t, ns, "events"); string(s.Data["password"]) != "keep-me" || len(s.Data) != 1 {
		t.Fatalf("the foreign Secret was touched: %q", s.Data)
	}
	if err := k8s.Delete(context.Background(), foreign); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if err := produceWith(t, secret(t, ns, "events").Data, ns+".events"); err != nil {
		t.Fatalf("after the conflict: want the Secret to work, got %v", err)
	}
}
