package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/access"
	"github.com/Yolean/buckety-controller/internal/testhook"
	"github.com/Yolean/buckety-controller/test/harness"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// severalAccess is access ns/name over refs, writing Secret name.
func severalAccess(ns, name string, role v1.Role, refs ...v1.BucketyReference) *v1.BucketyAccess {
	return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketyAccessSpec{
		BucketyRefs: refs, Role: role, CredentialsSecretName: name}}
}

// severalShape checks the Secret of an access over several: the list key
// names want in order, one per-resource key each, and no single key.
func severalShape(t *testing.T, data map[string][]byte, list, base string, want map[string]string, order []string) {
	t.Helper()
	var names []string
	for _, k := range order {
		names = append(names, want[k])
		if got := string(data[base+"."+k]); got != want[k] {
			t.Errorf("Secret key %s.%s: want %q, got %q", base, k, want[k], got)
		}
	}
	if got := string(data[list]); got != strings.Join(names, ",") {
		t.Errorf("Secret key %s: want %q, got %q", list, strings.Join(names, ","), got)
	}
	if _, ok := data[base]; ok {
		t.Errorf("Secret of an access over several: want no %s key, got %q", base, data[base])
	}
	for k := range data {
		if rest, ok := strings.CutPrefix(k, base+"."); ok {
			if _, named := want[rest]; !named {
				t.Errorf("Secret key %s names no Buckety of the access", k)
			}
		}
	}
}

// severalNamespaces makes the access's namespace and an owner's, removed
// while the controller runs, and the empty expectations a test fills: the
// resource of each Buckety key, the keys in order, and the references.
func severalNamespaces(t *testing.T) (ns, owner string, want map[string]string, order []string, refs []v1.BucketyReference) {
	t.Helper()
	ns, owner = namespace(t), namespace(t)
	removeWhileRunning(t, ns)
	removeWhileRunning(t, owner)
	return ns, owner, map[string]string{}, nil, nil
}

// TestSeveralKafka (#51 item 3), on a broker with SCRAM and ACLs: one
// access over four topics of its namespace and one another namespace
// shares gets one user that produces and consumes on all five and nothing
// else; the Secret names each; the foreign one's consent withdrawn takes
// that topic's rights away at the next pass (the time is printed), keeps
// the others, and no longer holds that Buckety's deletion; a rotation
// rewrites every shape; a Buckety it names waits for it to be deleted;
// deleting the access revokes the user.
func TestSeveralKafka(t *testing.T) {
	needInfra(t)
	_, cfg := scopedBroker(t, 0)
	startController(t, cfg, nil, time.Hour)
	ns, owner, want, order, refs := severalNamespaces(t)
	for i := range 4 {
		name := fmt.Sprintf("t%d", i)
		create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + "." + name}})
		want[name], order = ns+"."+name, append(order, name)
		refs = append(refs, v1.BucketyReference{Name: name})
	}
	shared := sharedBuckety(owner, "orders", "kafka", owner+".orders", ns, v1.RoleReadWrite)
	create(t, shared)
	foreignKey := owner + "_orders"
	want[foreignKey], order = owner+".orders", append(order, foreignKey)
	refs = append(refs, v1.BucketyReference{Namespace: owner, Name: "orders"})
	// A topic the access does not name.
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".other"}})

	multi := severalAccess(ns, "multi", v1.RoleReadWrite, refs...)
	multi.Spec.SecretFormats = []string{"java", "librdkafka"}
	create(t, multi)
	waitCondition(t, multi, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	data := secret(t, ns, "multi").Data
	severalShape(t, data, "topics", "topic", want, order)
	for _, k := range order {
		if err := produceWith(t, data, want[k]); err != nil {
			t.Errorf("produce to %s: %v", want[k], err)
		}
		if err := consumeWith(t, data, want[k], string(data[kadmdriver.SecretGroupPrefix])+"app-"+k); err != nil {
			t.Errorf("consume %s: %v", want[k], err)
		}
	}
	if err := produceWith(t, data, ns+".other", kgo.DisableIdempotentWrite()); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("a topic the access does not name: want produce refused with TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}
	if got := string(data[kadmdriver.SecretClientProperties]); !strings.Contains(got, "# topics: "+string(data["topics"])) {
		t.Errorf("java client.properties: want a comment naming the topics, got %q", got)
	}
	if creds := credentialsOf(t, multi.UID); len(creds) != 1 || len(creds[0].Spec.Resources) != 5 {
		t.Errorf("want one credential recording five resources, got %+v", creds)
	}
	wait.For(t, waitTimeout, "the owner's status.sharedWith naming the access", func() (bool, string) {
		got := holders(t, shared)
		return got == fmt.Sprintf("1: %s/multi ReadWrite true", ns), got
	})

	// The owner withdraws its consent: that topic's rights go, the
	// others stay, and the owner's Buckety no longer waits for the access.
	patch(t, shared, `{"spec":{"sharing":null}}`)
	since := time.Now()
	wait.For(t, waitTimeout, "the access withdrawn from "+owner+"/orders alone", func() (bool, string) {
		a := getAccess(t, ns, "multi")
		got := strings.Join(a.Status.Withdrawn, ",")
		return got == owner+"/orders" && a.Status.ObservedGeneration == a.Generation, "status.withdrawn: " + got + "; " + condString(a.Status.Conditions)
	})
	t.Logf("figure: one of several Bucketies stopped sharing, its rights revoked and the Secret rewritten %s after the rule was removed", time.Since(since).Round(time.Millisecond))
	after := secret(t, ns, "multi").Data
	delete(want, foreignKey)
	severalShape(t, after, "topics", "topic", want, order[:4])
	if string(after[kadmdriver.SecretSASLPassword]) != string(data[kadmdriver.SecretSASLPassword]) {
		t.Error("one Buckety withdrawn: want the same credential for the others")
	}
	if err := produceWith(t, after, owner+".orders", kgo.DisableIdempotentWrite()); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("the withdrawn topic: want produce refused with TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}
	if err := produceWith(t, after, want["t1"]); err != nil {
		t.Errorf("a topic still named: want produce allowed, got %v", err)
	}
	c := waitCondition(t, multi, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if !strings.Contains(c.Message, owner+"/orders") {
		t.Errorf("Ready: want the message to name the Buckety that stopped sharing, got %q", c.Message)
	}
	if err := k8s.Delete(context.Background(), shared); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the owner's Buckety deleted, not waiting for the withdrawn access", func() (bool, string) { return gone(t, shared) })

	// A rotation rewrites every shape with the new credential.
	patch(t, multi, `{"spec":{"rotation":"1"}}`)
	wait.For(t, waitTimeout, "rotation 1 honoured", func() (bool, string) {
		a := getAccess(t, ns, "multi")
		return a.Status.Rotation == "1" && a.Status.ObservedGeneration == a.Generation, condString(a.Status.Conditions)
	})
	rotated := secret(t, ns, "multi").Data
	if string(rotated[kadmdriver.SecretSASLUsername]) == string(after[kadmdriver.SecretSASLUsername]) {
		t.Errorf("rotation: want a new user, got %s again", rotated[kadmdriver.SecretSASLUsername])
	}
	for _, k := range []string{kadmdriver.SecretClientProperties, kadmdriver.SecretLibrdkafkaConfig} {
		if !strings.Contains(string(rotated[k]), string(rotated[kadmdriver.SecretSASLPassword])) || !strings.Contains(string(rotated[k]), "# topics: "+string(rotated["topics"])) {
			t.Errorf("rotation: want %s rewritten with the new password and the topics", k)
		}
	}
	severalShape(t, rotated, "topics", "topic", want, order[:4])
	if err := produceWith(t, rotated, want["t2"]); err != nil {
		t.Errorf("the rotated credential: want produce allowed, got %v", err)
	}

	// A Buckety the access names waits for it.
	t0 := getBuckety(t, ns, "t0")
	if err := k8s.Delete(context.Background(), t0); err != nil {
		t.Fatal(err)
	}
	if c := waitCondition(t, t0, v1.ConditionBlockedByAccesses, metav1.ConditionTrue, "", waitTimeout); !strings.Contains(c.Message, "multi") {
		t.Errorf("deleting a Buckety the access names: want it blocked by multi, got %q", c.Message)
	}

	// Deleted: the user goes, and the Buckety it held back with it.
	if err := k8s.Delete(context.Background(), multi); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "t0 deleted once the access is gone", func() (bool, string) { return gone(t, t0) })
	if err := produceWith(t, rotated, want["t1"]); err == nil {
		t.Error("the access deleted: want its user refused")
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(multi), &v1.BucketyAccess{}); err == nil {
		t.Error("want the access gone")
	}
}

// TestSeveralWithdrawnWhileStuck: an access over a topic of its own and
// one another namespace shares, whose Secret its tenant took over (the
// managed-by label removed: SecretConflict, so no pass writes the Secret
// again), loses its rights on the shared topic as soon as the owner
// withdraws its consent: the access gives up its credential (the old
// password stops working), status.withdrawn frees the owner's Buckety to be
// deleted, and the tenant's Secret is left as it is. Once the tenant hands
// the Secret name back, the access is granted on its own topic alone.
func TestSeveralWithdrawnWhileStuck(t *testing.T) {
	needInfra(t)
	_, cfg := scopedBroker(t, 0)
	startController(t, cfg, nil, time.Hour)
	ns, owner, _, _, _ := severalNamespaces(t)
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".mine"}})
	shared := sharedBuckety(owner, "orders", "kafka", owner+".orders", ns, v1.RoleReadWrite)
	create(t, shared)
	multi := severalAccess(ns, "multi", v1.RoleReadWrite, v1.BucketyReference{Name: "mine"}, v1.BucketyReference{Namespace: owner, Name: "orders"})
	create(t, multi)
	waitCondition(t, multi, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	taken := secret(t, ns, "multi")
	if err := produceWith(t, taken.Data, owner+".orders"); err != nil {
		t.Fatalf("produce to the shared topic before: %v", err)
	}

	// The tenant takes the Secret over; the access reports the conflict.
	patch(t, taken, fmt.Sprintf(`{"metadata":{"labels":{%q:null}}}`, v1.ManagedByLabel))
	waitCondition(t, multi, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonSecretConflict, waitTimeout)

	// The owner withdraws its consent.
	patch(t, shared, `{"spec":{"sharing":null}}`)
	wait.For(t, waitTimeout, "the stuck access giving up its credential", func() (bool, string) {
		a := getAccess(t, ns, "multi")
		c := apimeta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady)
		ok := slices.Contains(a.Status.Withdrawn, owner+"/orders") && a.Status.Principal == "" && c != nil && c.Reason == v1.ReasonNotShared && c.ObservedGeneration == a.Generation
		return ok, fmt.Sprintf("status.withdrawn %v, principal %q; %s", a.Status.Withdrawn, a.Status.Principal, condString(a.Status.Conditions))
	})
	c := waitCondition(t, multi, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonNotShared, waitTimeout)
	for _, want := range []string{owner + "/orders", "multi"} {
		if !strings.Contains(c.Message, want) {
			t.Errorf("Ready: want the message to name %s, got %q", want, c.Message)
		}
	}
	if err := produceWith(t, taken.Data, owner+".orders", kgo.DisableIdempotentWrite()); err == nil {
		t.Error("the owner withdrew its consent: want the taken-over Secret's credential refused on its topic")
	}
	// While the Secret stays taken, no pass issues a credential again (each
	// retry, every ConflictRetry, once issued one, failed to write the
	// Secret and revoked it: a user made and deleted every 3 s, and one
	// cut short left behind). Watched over more than two retries.
	for end := time.Now().Add(3*access.ConflictRetry + time.Second); time.Now().Before(end); time.Sleep(200 * time.Millisecond) {
		if creds := credentialsOf(t, multi.UID); len(creds) != 0 {
			t.Fatalf("the access gave up, its Secret still taken: want no credential record, got %s", creds[0].Spec.Principal)
		}
	}
	if kept := secret(t, ns, "multi"); string(kept.Data[kadmdriver.SecretSASLPassword]) != string(taken.Data[kadmdriver.SecretSASLPassword]) {
		t.Error("a Secret buckety no longer owns: want it left as the tenant has it")
	}

	// The tenant hands the name back: granted on its own topic alone.
	if err := k8s.Delete(context.Background(), taken); err != nil {
		t.Fatal(err)
	}
	c = waitCondition(t, multi, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if !strings.Contains(c.Message, owner+"/orders") {
		t.Errorf("Ready: want the message to name the Buckety that stopped sharing, got %q", c.Message)
	}
	again := secret(t, ns, "multi").Data
	if err := produceWith(t, again, ns+".mine"); err != nil {
		t.Errorf("granted again: want produce to its own topic allowed, got %v", err)
	}
	if err := produceWith(t, again, owner+".orders", kgo.DisableIdempotentWrite()); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("granted again: want the withdrawn topic refused with TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}
	if err := k8s.Delete(context.Background(), shared); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the owner's Buckety deleted, not waiting for the access", func() (bool, string) { return gone(t, shared) })
}

// TestSeveralWithdrawnFromARetiringCredential: a rotation leaves the
// previous credential working for the backend's rotationGrace (an hour
// here). The owner withdrawing its consent then takes the foreign topic's
// rights from both: the retiring credential is revoked at once, not after
// the grace, while the current one keeps its own topic. A tenant rotating
// once per grace kept a credential on a withdrawn topic for ever.
func TestSeveralWithdrawnFromARetiringCredential(t *testing.T) {
	needInfra(t)
	_, cfg := scopedBroker(t, time.Hour)
	startController(t, cfg, nil, time.Hour)
	ns, owner, _, _, _ := severalNamespaces(t)
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".mine"}})
	shared := sharedBuckety(owner, "orders", "kafka", owner+".orders", ns, v1.RoleReadWrite)
	create(t, shared)
	multi := severalAccess(ns, "multi", v1.RoleReadWrite, v1.BucketyReference{Name: "mine"}, v1.BucketyReference{Namespace: owner, Name: "orders"})
	create(t, multi)
	waitCondition(t, multi, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	first := secret(t, ns, "multi").Data

	patch(t, multi, `{"spec":{"rotation":"1"}}`)
	wait.For(t, waitTimeout, "rotation 1 honoured", func() (bool, string) {
		a := getAccess(t, ns, "multi")
		return a.Status.Rotation == "1" && a.Status.ObservedGeneration == a.Generation, condString(a.Status.Conditions)
	})
	rotated := secret(t, ns, "multi").Data
	if string(rotated[kadmdriver.SecretSASLUsername]) == string(first[kadmdriver.SecretSASLUsername]) {
		t.Fatal("rotation: want a new principal")
	}
	if err := produceWith(t, first, owner+".orders"); err != nil {
		t.Fatalf("within the grace: want the retiring credential still allowed on the shared topic, got %v", err)
	}

	patch(t, shared, `{"spec":{"sharing":null}}`)
	wait.For(t, waitTimeout, "the access withdrawn from "+owner+"/orders", func() (bool, string) {
		a := getAccess(t, ns, "multi")
		return slices.Contains(a.Status.Withdrawn, owner+"/orders") && a.Status.ObservedGeneration == a.Generation, condString(a.Status.Conditions)
	})
	wait.For(t, waitTimeout, "the retiring credential refused on the withdrawn topic", func() (bool, string) {
		err := produceWith(t, first, owner+".orders", kgo.DisableIdempotentWrite())
		return err != nil, fmt.Sprintf("produce with the retiring credential: %v", err)
	})
	for _, c := range credentialsOf(t, multi.UID) {
		if c.Spec.Principal == string(first[kadmdriver.SecretSASLUsername]) {
			t.Errorf("want the retiring credential %s revoked and its record gone, got it %s", c.Spec.Principal, c.Spec.Phase)
		}
	}
	if err := produceWith(t, rotated, ns+".mine"); err != nil {
		t.Errorf("the current credential: want its own topic allowed, got %v", err)
	}
	if err := produceWith(t, rotated, owner+".orders", kgo.DisableIdempotentWrite()); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("the current credential: want the withdrawn topic refused with TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}
}

// TestSeveralS3 (#51 item 3), on VersityGW, MinIO and SeaweedFS (IAM),
// each issuing a key per access: one access over two buckets of its
// namespace and one another namespace shares gets one key that writes and
// lists all three and nothing else; the Secret names each, its rclone
// config has a remote per bucket; the foreign one's consent withdrawn
// takes that bucket's rights away at the next pass (the time is printed)
// and keeps the others; a rotation rewrites every shape; deleting the
// access revokes the key.
func TestSeveralS3(t *testing.T) {
	needInfra(t)
	for _, impl := range append(slices.Clone(s3test.Implementations), "seaweedfs") {
		t.Run(impl, func(t *testing.T) {
			startController(t, harness.ConfigYAML(perAccessS3(t, impl)), nil, time.Hour)
			ns, owner, want, order, refs := severalNamespaces(t)
			for _, name := range []string{"raw", "thumbs", "other"} {
				create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3-scoped", Name: ns + "-" + name}})
				if name != "other" {
					want[name], order = ns+"-"+name, append(order, name)
					refs = append(refs, v1.BucketyReference{Name: name})
				}
			}
			create(t, sharedBuckety(owner, "ledger", "s3-scoped", owner+"-ledger", ns, v1.RoleReadWrite))
			foreignKey := owner + "_ledger"
			want[foreignKey], order = owner+"-ledger", append(order, foreignKey)
			refs = append(refs, v1.BucketyReference{Namespace: owner, Name: "ledger"})
			multi := severalAccess(ns, "multi", v1.RoleReadWrite, refs...)
			multi.Spec.SecretFormats = []string{"aws-env", "rclone"}
			create(t, multi)
			waitCondition(t, multi, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			waitCondition(t, multi, v1.ConditionScopingNotImplemented, metav1.ConditionFalse, v1.ReasonAsExpected, waitTimeout)
			data := secret(t, ns, "multi").Data
			severalShape(t, data, "buckets", "bucket", want, order)
			for _, k := range order {
				if err := putWith(data, want[k], "a"); err != nil {
					t.Errorf("put into %s: %v", want[k], err)
				}
				if err := listWith(data, want[k]); err != nil {
					t.Errorf("list %s: %v", want[k], err)
				}
				if !strings.Contains(string(data["rclone.conf"]), "remote = s3:"+want[k]) {
					t.Errorf("rclone.conf: want a remote for bucket %s, got %q", want[k], data["rclone.conf"])
				}
			}
			if err := putWith(data, ns+"-other", "a"); err == nil {
				t.Error("a bucket the access does not name: want put refused")
			}

			patch(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: owner}}, `{"spec":{"sharing":null}}`)
			since := time.Now()
			wait.For(t, waitTimeout, "the access withdrawn from "+owner+"/ledger alone", func() (bool, string) {
				a := getAccess(t, ns, "multi")
				got := strings.Join(a.Status.Withdrawn, ",")
				return got == owner+"/ledger" && a.Status.ObservedGeneration == a.Generation, "status.withdrawn: " + got + "; " + condString(a.Status.Conditions)
			})
			t.Logf("figure: %s: one of several buckets stopped sharing, its rights revoked and the Secret rewritten %s after the rule was removed", impl, time.Since(since).Round(time.Millisecond))
			after := secret(t, ns, "multi").Data
			delete(want, foreignKey)
			severalShape(t, after, "buckets", "bucket", want, order[:2])
			wait.For(t, waitTimeout, "the withdrawn bucket refusing the key", func() (bool, string) {
				err := putWith(after, owner+"-ledger", "b")
				return err != nil, fmt.Sprintf("put: %v", err)
			})
			if err := putWith(after, want["raw"], "b"); err != nil {
				t.Errorf("a bucket still named: want put allowed, got %v", err)
			}

			patch(t, multi, `{"spec":{"rotation":"1"}}`)
			wait.For(t, waitTimeout, "rotation 1 honoured", func() (bool, string) {
				a := getAccess(t, ns, "multi")
				return a.Status.Rotation == "1" && a.Status.ObservedGeneration == a.Generation, condString(a.Status.Conditions)
			})
			rotated := secret(t, ns, "multi").Data
			key := string(rotated["accessKeyID"])
			if key == string(after["accessKeyID"]) {
				t.Errorf("rotation: want a new key, got %s again", key)
			}
			for _, k := range []string{"AWS_ACCESS_KEY_ID", "rclone.conf"} {
				if !strings.Contains(string(rotated[k]), key) {
					t.Errorf("rotation: want %s rewritten with the new key", k)
				}
			}
			if err := putWith(rotated, want["thumbs"], "c"); err != nil {
				t.Errorf("the rotated key: want put allowed, got %v", err)
			}
			if err := k8s.Delete(context.Background(), multi); err != nil {
				t.Fatal(err)
			}
			wait.For(t, waitTimeout, "the access gone", func() (bool, string) { return gone(t, multi) })
			if err := listWith(rotated, want["raw"]); err == nil {
				t.Error("the access deleted: want its key refused")
			}
		})
	}
}

// TestSeveralGrantCutShortThenWithdrawn (VersityGW, which writes a grant
// per bucket): an access over its own bucket and another namespace's,
// which does not share yet. With the controller stopped, the owner shares;
// the next controller's pass grants the key on the shared bucket, and that
// controller dies before the Secret and the credential's record are
// written. The owner withdraws, and a third controller starts: the record
// named the shared bucket before the grant, so its pass drops the key's
// grant there. (Recorded only after the Secret, the record never named it,
// nothing dropped it, and the key kept writing into a bucket that no
// longer shared with it.)
func TestSeveralGrantCutShortThenWithdrawn(t *testing.T) {
	needInfra(t)
	needTestHook(t)
	pauseDir := t.TempDir()
	t.Setenv(testhook.Env, pauseDir)
	arm, reached, release := filepath.Join(pauseDir, testhook.AfterIssue+".arm"), filepath.Join(pauseDir, testhook.AfterIssue+".reached"), filepath.Join(pauseDir, testhook.AfterIssue+".release")
	yaml := harness.ConfigYAML(perAccessS3(t, "versitygw"))
	run := startController(t, yaml, nil, time.Hour)
	ns, owner, _, _, _ := severalNamespaces(t)
	// Runs before the namespaces' removal: nothing stays paused.
	t.Cleanup(func() {
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Error(err)
		}
	})
	mine := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3-scoped", Name: ns + "-mine"}}
	create(t, mine)
	ledger := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: owner}, Spec: v1.BucketySpec{Backend: "s3-scoped", Name: owner + "-ledger"}}
	create(t, ledger)
	waitCondition(t, ledger, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	multi := severalAccess(ns, "multi", v1.RoleReadWrite, v1.BucketyReference{Name: "mine"}, v1.BucketyReference{Namespace: owner, Name: "ledger"})
	create(t, multi)
	wait.For(t, waitTimeout, "multi granted on its own bucket", func() (bool, string) {
		a := getAccess(t, ns, "multi")
		return a.Status.Principal != "" && slices.Contains(a.Status.Withdrawn, owner+"/ledger"), condString(a.Status.Conditions)
	})
	data := secret(t, ns, "multi").Data
	if err := putWith(data, ns+"-mine", "a"); err != nil {
		t.Fatalf("its own bucket: want put allowed, got %v", err)
	}
	if err := putWith(data, owner+"-ledger", "a"); err == nil {
		t.Fatal("the bucket not shared yet: want put refused")
	}

	run.stop(t)
	patch(t, ledger, fmt.Sprintf(`{"spec":{"sharing":[{"namespace":%q,"roles":["ReadWrite"]}]}}`, ns))
	if err := os.WriteFile(arm, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	run = startController(t, yaml, nil, time.Hour)
	wait.For(t, waitTimeout, "the pass that grants on the shared bucket paused after its grant", func() (bool, string) {
		_, err := os.Stat(reached)
		return err == nil, "not reached"
	})
	wait.For(t, 30*time.Second, "the key granted on the shared bucket", func() (bool, string) {
		err := putWith(data, owner+"-ledger", "b")
		return err == nil, fmt.Sprint(err)
	})
	run.stop(t) // the pass ends with its context: no Secret, no record written
	if err := os.Remove(arm); err != nil {
		t.Fatal(err)
	}

	patch(t, ledger, `{"spec":{"sharing":null}}`)
	startController(t, yaml, nil, time.Hour)
	wait.For(t, waitTimeout, "the key's grant on the withdrawn bucket dropped", func() (bool, string) {
		err := putWith(data, owner+"-ledger", "c")
		return err != nil, fmt.Sprintf("put into %s-ledger: %v", owner, err)
	})
	if err := putWith(data, ns+"-mine", "c"); err != nil {
		t.Errorf("its own bucket: want put still allowed, got %v", err)
	}
	// Removed while this controller runs: the namespaces' cleanups run
	// after it stops.
	for _, o := range []client.Object{multi, mine, ledger} {
		deleteOn(t, k8s, o)
	}
}
