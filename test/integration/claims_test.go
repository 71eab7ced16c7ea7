package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/internal/testhook"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/wait"
)

var hungBrokers struct {
	sync.Mutex
	n int
}

// hungBroker starts a dedicated broker that a test may pause, and a config
// naming it as a backend of its own (so Bucketies other tests left behind
// never reach it) with a short request timeout.
func hungBroker(t *testing.T) (br *kafka.Broker, yaml, backend string) {
	t.Helper()
	br = kafka.Start(t, kafka.Options{})
	hungBrokers.Lock()
	hungBrokers.n++
	backend = fmt.Sprintf("hung-%d", hungBrokers.n)
	hungBrokers.Unlock()
	yaml = harness.ConfigYAML(harness.Kadm(backend, kadmdriver.Config{SeedBrokers: br.Addrs, RequestTimeout: harness.Duration(2 * time.Second)}))
	return br, yaml, backend
}

func pause(t *testing.T, br *kafka.Broker) {
	t.Helper()
	if err := br.Pause(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := br.Resume(); err != nil {
			t.Errorf("resume broker: %v", err)
		}
	})
}

func claimsOf(t *testing.T, uid string) []v1.BucketyClaim {
	t.Helper()
	var list v1.BucketyClaimList
	if err := k8s.List(context.Background(), &list, client.MatchingLabels{v1.ClaimOwnerLabel: uid}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// claimOn finds the claim made through backend on resource, whatever its
// name (claims are named by service, and backends may share one).
func claimOn(t *testing.T, backend, resource string) (*v1.BucketyClaim, bool) {
	t.Helper()
	var list v1.BucketyClaimList
	if err := k8s.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if cl := &list.Items[i]; cl.Spec.Backend == backend && cl.Spec.ResourceName == resource {
			return cl, true
		}
	}
	return nil, false
}

func topicOn(t *testing.T, addrs []string, name string) bool {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(name)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	return len(resp.Topics) == 1 && resp.Topics[0].ErrorCode == 0
}

// TestClaimReleasedWhenDeletedBeforeProvisioning is the leaked claim seen on
// a live node: while the broker hung, a Buckety claimed a topic name and was
// deleted before it was provisioned. Another Buckety, in another namespace,
// must then get the name, and no message may name the deleted one. Since
// the adoption check runs before the claim is written, a Buckety whose
// backend cannot be checked holds no claim at all.
func TestClaimReleasedWhenDeletedBeforeProvisioning(t *testing.T) {
	needInfra(t)
	br, yaml, backend := hungBroker(t)
	startController(t, yaml, nil, time.Hour)
	ctx := context.Background()
	ns1, ns2 := namespace(t), namespace(t)
	name := ns1 + ".contested"
	pause(t, br)

	first := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "first", Namespace: ns1}, Spec: v1.BucketySpec{Backend: backend, Name: name}}
	create(t, first)
	waitCondition(t, first, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBackendUnreachable, waitTimeout)
	firstUID := string(getBuckety(t, ns1, "first").UID)
	if n := len(claimsOf(t, firstUID)); n != 0 {
		t.Errorf("a Buckety whose backend could not be checked: want no claim, got %d", n)
	}
	if err := k8s.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "first Buckety deleted", func() (bool, string) { return gone(t, first) })
	if n := len(claimsOf(t, firstUID)); n != 0 {
		t.Fatalf("want the deleted Buckety's claim released, got %d claims", n)
	}

	second := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "second", Namespace: ns2}, Spec: v1.BucketySpec{Backend: backend, Name: name}}
	create(t, second)
	time.Sleep(3 * time.Second) // a few reconciles against the hung broker
	b := getBuckety(t, ns2, "second")
	if c := condString(b.Status.Conditions); strings.Contains(c, firstUID) || strings.Contains(c, ns1+"/first") || strings.Contains(c, v1.ReasonNameConflict) {
		t.Errorf("want no conflict naming the deleted Buckety, got %s", c)
	}
	if err := br.Resume(); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, second, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if cl, ok := claimOn(t, backend, name); !ok || cl.Spec.Owner.UID != string(b.UID) || cl.Spec.Phase != v1.ClaimCreated {
		t.Errorf("want the claim owned by the second Buckety in phase Created, got %+v", cl)
	}
	if !topicOn(t, br.Addrs, name) {
		t.Errorf("want topic %s on the broker", name)
	}
}

// TestClaimFollowsTemplateChange: a Buckety not yet provisioned whose
// template resolves to another name (a label changed) is provisioned under
// the new name, and another Buckety can then take the old one. While the
// backend hangs neither name is claimed (the adoption check comes first).
func TestClaimFollowsTemplateChange(t *testing.T) {
	needInfra(t)
	br, yaml, backend := hungBroker(t)
	startController(t, yaml, nil, time.Hour)
	ns := namespace(t)
	pause(t, br)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "templated", Namespace: ns, Labels: map[string]string{"gen": "001"}},
		Spec: v1.BucketySpec{Backend: backend, Name: "${namespace}.t${label['gen']}"}}
	create(t, b)
	old, renamed := ns+".t001", ns+".t002"
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBackendUnreachable, waitTimeout)
	patch(t, b, `{"metadata":{"labels":{"gen":"002"}}}`)
	time.Sleep(2 * time.Second) // reconciles of the new name against the hung broker
	for _, n := range []string{old, renamed} {
		if _, held := claimOn(t, backend, n); held {
			t.Errorf("claim on %s while the backend could not be checked: want none", n)
		}
	}
	other := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}, Spec: v1.BucketySpec{Backend: backend, Name: old}}
	create(t, other)
	if err := br.Resume(); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, other, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if got := getBuckety(t, ns, "templated").Status.BackendResourceName; got != renamed {
		t.Errorf("want %s, got %s", renamed, got)
	}
}

// TestClaimsHoldAcrossControllers runs two controllers at once with no
// leader election, the worst case of a hand-over (each with its own cold
// cache), and races pairs of Bucketies for the same topic: exactly one of
// each pair may own it.
func TestClaimsHoldAcrossControllers(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns1, ns2 := namespace(t), namespace(t)
	const pairs = 6
	var wg sync.WaitGroup
	for i := range pairs {
		for _, ns := range []string{ns1, ns2} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := k8s.Create(context.Background(), &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("race-%d", i), Namespace: ns},
					Spec: v1.BucketySpec{Backend: "kafka", Name: fmt.Sprintf("%s.race-%d", ns1, i)}}); err != nil {
					t.Error(err)
				}
			}()
		}
	}
	wg.Wait()
	for i := range pairs {
		name := fmt.Sprintf("race-%d", i)
		var owners []string
		wait.For(t, waitTimeout, "both settled", func() (bool, string) {
			owners = owners[:0]
			settled := 0
			var desc []string
			for _, ns := range []string{ns1, ns2} {
				b := getBuckety(t, ns, name)
				for _, c := range b.Status.Conditions {
					if c.Type != v1.ConditionReady {
						continue
					}
					switch {
					case c.Status == metav1.ConditionTrue:
						settled++
						owners = append(owners, ns)
					case c.Reason == v1.ReasonNameConflict:
						settled++
						// The owner is in the other namespace: not named.
						if strings.Contains(c.Message, "/"+name) || !strings.Contains(c.Message, "owned by another Buckety") {
							t.Errorf("want the conflict to say another Buckety owns it without naming it, got %q", c.Message)
						}
					}
					desc = append(desc, ns+": "+c.Reason)
				}
			}
			return settled == 2, strings.Join(desc, ", ")
		})
		if len(owners) != 1 {
			t.Errorf("%s: want exactly one owner of the topic, got %v", name, owners)
		}
	}
}

// staleCreatedClaim creates, on backend kafka, a claim Created on name by
// Buckety ns/ghost, which no longer exists (force-deleted, finalizer and
// all).
func staleCreatedClaim(t *testing.T, ns, name string) {
	t.Helper()
	create(t, &v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: claims.Name("kafka", name), Labels: map[string]string{v1.ClaimOwnerLabel: "gone-uid"}},
		Spec: v1.BucketyClaimSpec{Backend: "kafka", ResourceName: name, Phase: v1.ClaimCreated, Owner: v1.ClaimOwner{Namespace: ns, Name: "ghost", UID: "gone-uid"}}})
}

// TestStaleClaimIsTakenOver: a claim whose owner no longer exists (it was
// force-deleted, finalizer and all) does not block the name, and no message
// names the missing owner.
func TestStaleClaimIsTakenOver(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	name := ns + ".stale"
	staleCreatedClaim(t, ns, name)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "heir", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: name}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if strings.Contains(condString(b.Status.Conditions), "ghost") {
		t.Errorf("want no mention of the missing owner, got %s", condString(b.Status.Conditions))
	}
	if cl, ok := claimOn(t, "kafka", name); !ok || cl.Spec.Owner.UID != string(b.UID) {
		t.Errorf("want the claim taken over by %s, got %+v", b.UID, cl)
	}
}

// TestStaleCreatedClaimVouchesForNothing: a claim whose Buckety recorded
// the intent to create (Created) and went without creating (its create
// refused, its finalizer removed by hand) is taken over, but does not make
// an empty topic someone else created since buckety's: the broker keeps
// owner records, and that topic carries none. The heir is refused, as for
// any resource made outside buckety, and no Secret is written.
func TestStaleCreatedClaimVouchesForNothing(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	name := ns + ".squatted"
	staleCreatedClaim(t, ns, name)
	adm, _ := kafkaAdmin(t)
	if _, err := adm.CreateTopic(context.Background(), 1, -1, nil, name); err != nil {
		t.Fatal(err)
	}
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "heir", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: name,
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "heir"}}}
	create(t, b)
	c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
	if !strings.Contains(c.Message, "made outside buckety") || b.Status.Provenance != "" {
		t.Errorf("want the topic refused as made outside buckety, nothing stamped; got %q, provenance %q", c.Message, b.Status.Provenance)
	}
	time.Sleep(2 * time.Second)
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "heir"}, &corev1.Secret{}); err == nil {
		t.Error("want no Secret for a topic made outside buckety")
	}
	if got := getBuckety(t, ns, "heir"); got.Status.Provenance != "" {
		t.Errorf("want it never adopted, got provenance %q", got.Status.Provenance)
	}
}

// needTestHook fails a test that pauses the in-process controller at a
// testhook point when this test binary was built without the hook, which
// would otherwise only show as a pause point never reached. (A test that
// builds the controller binary builds it with the tag itself.)
func needTestHook(t *testing.T) {
	t.Helper()
	if !testhook.Enabled {
		t.Fatal(testhook.NotEnabled)
	}
}

// TestProvenanceSurvivesCrashAfterCreate kills the real controller process
// right after the driver created the topic, before anything else was
// written. The restarted controller must still know buckety created it
// (Created, so retentionPolicy Delete deletes it), not take it for adopted.
// The binary is built with the test hook (testhook.Tag).
func TestProvenanceSurvivesCrashAfterCreate(t *testing.T) {
	needInfra(t)
	kubeconfig, dir := asServiceAccount(t)
	pauseDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(pauseDir, testhook.AfterCreate+".arm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bin := buildController(t, "0.1.0", testhook.Tag)
	c := runBinaryEnv(t, bin, kubeconfig, dir, []string{testhook.Env + "=" + pauseDir})
	ns := namespace(t)
	name := ns + ".crash"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "crash", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: name, RetentionPolicy: v1.RetentionDelete}}
	create(t, b)
	wait.For(t, waitTimeout, "controller paused right after creating the topic", func() (bool, string) {
		_, err := os.Stat(filepath.Join(pauseDir, testhook.AfterCreate+".reached"))
		return err == nil, "not reached"
	})
	if err := c.p.Kill(); err != nil {
		t.Fatal(err)
	}
	c.p = nil
	if !topic(t, name).exists {
		t.Fatal("want the topic created before the crash")
	}
	if got := getBuckety(t, ns, "crash").Status.Provenance; got != "" {
		t.Fatalf("the crash point is before any status write, but provenance is %q", got)
	}
	// The crash came between the create and the owner record (issue 49).
	if rec := ownerOf(t, name); rec != nil {
		t.Fatalf("the crash point is before the owner record, but the topic has one: %+v", rec)
	}
	if err := os.Remove(filepath.Join(pauseDir, testhook.AfterCreate+".arm")); err != nil {
		t.Fatal(err)
	}
	runBinaryEnv(t, bin, kubeconfig, dir, []string{testhook.Env + "=" + pauseDir})
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if b.Status.Provenance != v1.ProvenanceCreated {
		t.Fatalf("want provenance Created after the crash, got %q", b.Status.Provenance)
	}
	// The next pass finished it: the record names this cluster's
	// installation (the default: no installation in the config).
	want := drivers.OwnerRecord{Installation: defaultInstallation(t), Namespace: ns, Name: "crash", UID: string(b.UID), State: drivers.OwnerHeld}
	// The record also carries the topic's ID, which the driver fills in.
	if rec := ownerOf(t, name); rec == nil || rec.ResourceID == "" || !rec.Same(&want) {
		t.Fatalf("after the restart: want the owner record %+v with the topic's ID, got %+v", want, rec)
	}
	if err := k8s.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "Buckety deleted", func() (bool, string) { return gone(t, b) })
	if topic(t, name).exists {
		t.Error("retentionPolicy Delete: want the topic buckety created deleted")
	}
}

// TestResourceAppearingAfterInspectIsNotTaken: a topic someone else
// creates between the adoption check and the create is never stamped
// Created, nor, made outside buckety, adopted without both adoption keys:
// the Buckety is refused, and its retentionPolicy Delete leaves the topic
// alone.
func TestResourceAppearingAfterInspectIsNotTaken(t *testing.T) {
	needInfra(t)
	needTestHook(t)
	pauseDir := t.TempDir()
	t.Setenv(testhook.Env, pauseDir)
	if err := os.WriteFile(filepath.Join(pauseDir, testhook.AfterInspect+".arm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	name := ns + ".sneaky"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "sneaky", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: name, RetentionPolicy: v1.RetentionDelete}}
	create(t, b)
	wait.For(t, waitTimeout, "controller paused between the adoption check and the create", func() (bool, string) {
		_, err := os.Stat(filepath.Join(pauseDir, testhook.AfterInspect+".reached"))
		return err == nil, "not reached"
	})
	adm, _ := kafkaAdmin(t)
	if _, err := adm.CreateTopic(context.Background(), 1, -1, nil, name); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(pauseDir, testhook.AfterInspect+".arm")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(pauseDir, testhook.AfterInspect+".release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
	if !strings.Contains(c.Message, "made outside buckety") || b.Status.Provenance != "" {
		t.Fatalf("want the topic someone else created refused as made outside buckety, nothing stamped; got %q, provenance %q", c.Message, b.Status.Provenance)
	}
	if err := k8s.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "Buckety deleted", func() (bool, string) { return gone(t, b) })
	if !topic(t, name).exists {
		t.Error("want the refused topic kept despite retentionPolicy Delete")
	}
}

// claimedAgain waits for the claim on resource through backend to be
// Claimed: its create was refused, and nothing was made.
func claimedAgain(t *testing.T, backend, resource string) {
	t.Helper()
	wait.For(t, waitTimeout, "the claim on "+resource+" Claimed after the refused create", func() (bool, string) {
		cl, ok := claimOn(t, backend, resource)
		if !ok {
			return false, "no claim"
		}
		return cl.Spec.Phase == v1.ClaimClaimed, "phase " + string(cl.Spec.Phase)
	})
}

// TestRefusedCreateHoldsNoResource: a Buckety whose create the broker
// refuses outright (a replication factor above its one broker) holds its
// name Claimed, not Created: nothing was made. A topic someone else makes
// under the name later, empty and without an owner record, is then
// refused as made outside buckety, and its retentionPolicy Delete leaves
// it alone. Before, the claim stayed Created, and a later pass took that
// topic for the one its own create had made (an empty, unrecorded topic
// is what a crash between the create and the owner record leaves): a
// tenant could hold any name with a create that always fails, and take
// over the next topic of that name anyone made.
func TestRefusedCreateHoldsNoResource(t *testing.T) {
	needInfra(t)
	const backend = "kafka-refused-create"
	startController(t, configYAML(backend, "s3"), nil, time.Hour)
	ns := namespace(t)
	name := ns + ".squat"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "squat", Namespace: ns}, Spec: v1.BucketySpec{Backend: backend, Name: name, RetentionPolicy: v1.RetentionDelete,
		Parameters: map[string]string{"replicationFactor": "3"}}}
	create(t, b)
	c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBackendError, waitTimeout)
	if !strings.Contains(c.Message, "INVALID_REPLICATION_FACTOR") {
		t.Fatalf("want the create refused for its replication factor, got %q", c.Message)
	}
	claimedAgain(t, backend, name)
	if topic(t, name).exists {
		t.Fatal("want no topic after a refused create")
	}
	// Asked again, the broker refuses again: retried on the slower
	// backoff (5 s doubling: a check 5 s after the refusal, the next at
	// 15 s, where the fast one's 1 s doubling checks at 1, 3 and 7 s),
	// since each retry writes the claim twice. A slow machine checks
	// fewer, never more.
	before := inspections(t, backend)
	time.Sleep(12 * time.Second)
	n := inspections(t, backend) - before
	t.Logf("adoption checks in 12 s of a refused create: %d", n)
	if n > 2 {
		t.Errorf("want a refused create retried on the slower backoff (at most 2 checks in 12 s), got %d", n)
	}
	adm, _ := kafkaAdmin(t)
	if _, err := adm.CreateTopic(context.Background(), 1, 1, nil, name); err != nil {
		t.Fatal(err)
	}
	c = waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
	if !strings.Contains(c.Message, "made outside buckety") || b.Status.Provenance != "" {
		t.Fatalf("want the topic someone else made refused as made outside buckety, nothing stamped; got %q, provenance %q", c.Message, b.Status.Provenance)
	}
	if rec := ownerOf(t, name); rec != nil {
		t.Errorf("want no owner record written to the topic someone else made, got %+v", rec)
	}
	if err := k8s.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "Buckety deleted", func() (bool, string) { return gone(t, b) })
	if !topic(t, name).exists {
		t.Error("want the topic someone else made kept despite retentionPolicy Delete")
	}

	// A tenant may write its Buckety's status: one that says provenance
	// Created changes nothing. A pass after the forged status (a spec
	// change: a new generation) is refused its create and leaves the
	// claim Claimed; the topic made next is refused, not taken.
	ctx := context.Background()
	forged := ns + ".forged"
	f := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "forged", Namespace: ns}, Spec: v1.BucketySpec{Backend: backend, Name: forged, RetentionPolicy: v1.RetentionDelete,
		Parameters: map[string]string{"replicationFactor": "3"}}}
	create(t, f)
	waitCondition(t, f, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBackendError, waitTimeout)
	prev := f.DeepCopy()
	f.Status.Provenance = v1.ProvenanceCreated
	if err := k8s.Status().Patch(ctx, f, client.MergeFrom(prev)); err != nil {
		t.Fatal(err)
	}
	prev = f.DeepCopy()
	f.Spec.Parameters["config.retention.ms"] = "3600000"
	if err := k8s.Patch(ctx, f, client.MergeFrom(prev)); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "a pass of the new generation, with the forged status", func() (bool, string) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(f), f); err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(f.Status.Conditions, v1.ConditionReady)
		return c != nil && c.ObservedGeneration == f.Generation && c.Reason == v1.ReasonBackendError && f.Status.Provenance == v1.ProvenanceCreated, fmt.Sprintf("Ready %+v of generation %d, provenance %q", c, f.Generation, f.Status.Provenance)
	})
	claimedAgain(t, backend, forged)
	if _, err := adm.CreateTopic(ctx, 1, 1, nil, forged); err != nil {
		t.Fatal(err)
	}
	c = waitCondition(t, f, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
	if !strings.Contains(c.Message, "made outside buckety") {
		t.Fatalf("forged status: want the topic someone else made refused as made outside buckety, got %q", c.Message)
	}
	if rec := ownerOf(t, forged); rec != nil {
		t.Errorf("forged status: want no owner record written to the topic someone else made, got %+v", rec)
	}
}

// outage is how long TestRecoveryAfterBrokerOutage hangs the broker:
// BUCKETY_OUTAGE_SECONDS (60 for the figure in the README), 12 by default.
func outage(t *testing.T) time.Duration {
	if s := os.Getenv("BUCKETY_OUTAGE_SECONDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("BUCKETY_OUTAGE_SECONDS: %v", err)
		}
		return time.Duration(n) * time.Second
	}
	return 12 * time.Second
}

// TestRecoveryAfterBrokerOutage hangs the broker while a Buckety with a
// default access is being created. With a drift re-check interval of an
// hour, only the failure backoff can bring it to Ready soon after the broker
// answers again; the figure is logged.
func TestRecoveryAfterBrokerOutage(t *testing.T) {
	needInfra(t)
	br, yaml, backend := hungBroker(t)
	startController(t, yaml, nil, time.Hour)
	ns := namespace(t)
	pause(t, br)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "patient", Namespace: ns},
		Spec: v1.BucketySpec{Backend: backend, Name: ns + ".patient", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "patient-topic"}}}
	start := time.Now()
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBackendUnreachable, waitTimeout)
	time.Sleep(time.Until(start.Add(outage(t))))
	if err := br.Resume(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	// The re-check is an hour away, so the backstop (minutes) still tells
	// the failure backoff (at most 20 s) from it; the time is a figure.
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	t.Logf("figure: %s outage during creation: Ready %.1fs after the broker answered again", outage(t), time.Since(back).Seconds())
	secret(t, ns, "patient-topic")
}

// TestDeleteIgnoresForgedStatus: a tenant allowed to write bucketies/status
// points its own Buckety's status at another tenant's topic, claims buckety
// created it, and deletes its Buckety with retentionPolicy Delete. Only the
// tenant's own topic may go.
func TestDeleteIgnoresForgedStatus(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ctx := context.Background()
	victimNS, attackerNS := namespace(t), namespace(t)
	victim := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "precious", Namespace: victimNS}, Spec: v1.BucketySpec{Backend: "kafka", Name: victimNS + ".precious"}}
	attacker := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: attackerNS}, Spec: v1.BucketySpec{Backend: "kafka", Name: attackerNS + ".mine", RetentionPolicy: v1.RetentionDelete}}
	create(t, victim)
	create(t, attacker)
	waitCondition(t, victim, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, attacker, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	// A foreign topic with data that no Buckety owns.
	adm, cl := kafkaAdmin(t)
	foreign := attackerNS + ".foreign"
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, foreign); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: foreign, Value: []byte("not yours")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{victimNS + ".precious", foreign} {
		a := getBuckety(t, attackerNS, "mine")
		before := a.DeepCopy()
		a.Status.BackendResourceName = target
		a.Status.Provenance = v1.ProvenanceCreated
		if err := k8s.Status().Patch(ctx, a, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err := k8s.Delete(ctx, attacker); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "attacker's Buckety deleted", func() (bool, string) { return gone(t, attacker) })
	for _, name := range []string{victimNS + ".precious", foreign} {
		if !topic(t, name).exists {
			t.Errorf("topic %s was deleted through a forged status", name)
		}
	}
	if topic(t, attackerNS+".mine").exists {
		t.Error("want the attacker's own topic (buckety created it, retentionPolicy Delete) deleted")
	}
	waitCondition(t, victim, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
}

// inspections counts the adoption checks the controller made on a backend.
func inspections(t *testing.T, backend string) uint64 {
	t.Helper()
	var m dto.Metric
	if err := metrics.BackendRequestDuration.WithLabelValues(backend, "kadm", "inspect").(prometheus.Histogram).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// TestRefusalRetriesOnBackoff: a refused adoption is neither retried in a
// hot loop nor left until the drift re-check (an hour here): once the topic
// no longer holds data, the Buckety is Ready on its backoff.
func TestRefusalRetriesOnBackoff(t *testing.T) {
	needInfra(t)
	const backend = "kafka-refusals"
	startController(t, configYAML(backend, "s3"), nil, time.Hour)
	ctx := context.Background()
	ns := namespace(t)
	name := ns + ".occupied"
	adm, cl := kafkaAdmin(t)
	if _, err := adm.CreateTopic(ctx, 1, -1, nil, name); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: name, Value: []byte("someone's")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	before := inspections(t, backend)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "occupied", Namespace: ns}, Spec: v1.BucketySpec{Backend: backend, Name: name}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
	// No hot loop: in 12 s a backoff of 5 s doubling checks at most a
	// handful of times, and a slow machine checks fewer, never more.
	time.Sleep(12 * time.Second)
	n := inspections(t, backend) - before
	t.Logf("adoption checks in the first ~12s of a refusal: %d", n)
	if n > 6 {
		t.Errorf("want a refusal retried on a backoff (at most 6 checks in 12s), got %d checks", n)
	}
	// Retried on its own, not left to the hourly re-check: a second check
	// comes, however long the machine takes to make it.
	wait.For(t, waitTimeout, "the refusal checked again on its backoff", func() (bool, string) {
		n := inspections(t, backend) - before
		return n >= 2, fmt.Sprintf("%d checks", n)
	})
	if _, err := adm.DeleteTopic(ctx, name); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if b.Status.Provenance != v1.ProvenanceCreated {
		t.Errorf("want the recreated topic Created, got %q", b.Status.Provenance)
	}
}

// ownerOf reads the owner record of a topic on the shared broker, as the
// kadm driver keeps it, fresh.
func ownerOf(t *testing.T, topic string) *drivers.OwnerRecord {
	t.Helper()
	return ownerWith(t, kadmdriver.Config{SeedBrokers: broker.Addrs, RequestTimeout: harness.Duration(5 * time.Second)}, topic)
}

// ownerWith is ownerOf on the broker cfg reaches.
func ownerWith(t *testing.T, cfg kadmdriver.Config, topic string) *drivers.OwnerRecord {
	t.Helper()
	be, err := (&kadmdriver.Driver{}).Open(context.Background(), "kafka", &cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	}()
	o, ok := be.(drivers.OwnerRecorder)
	if !ok {
		t.Fatalf("the kadm driver keeps no owner records (drivers.OwnerRecorder)")
	}
	rec, err := o.ReadOwner(context.Background(), drivers.Resource{Name: topic})
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// defaultInstallation is the installation name of a controller on the
// shared control plane whose config sets none.
func defaultInstallation(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: "kube-system"}, ns); err != nil {
		t.Fatal(err)
	}
	return appcontroller.InstallationFromUID(string(ns.UID))
}
