package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/testhook"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/wait"
)

// limitOutcome is what the accesses of ns named names hold: the granted
// ones (Ready with a Secret) and the held ones (LimitExceeded naming limit,
// no Secret); anything else is described in other.
func limitOutcome(t *testing.T, ns, limit string, names []string) (granted, held, other []string) {
	t.Helper()
	for _, n := range names {
		a := &v1.BucketyAccess{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: n}, a); err != nil {
			t.Fatal(err)
		}
		c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady)
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: n}, &corev1.Secret{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		hasSecret := err == nil
		switch {
		case c != nil && c.Status == metav1.ConditionTrue && hasSecret:
			granted = append(granted, n)
		case c != nil && c.Reason == v1.ReasonLimitExceeded && strings.Contains(c.Message, limit) && !hasSecret:
			held = append(held, n)
		default:
			other = append(other, fmt.Sprintf("%s (Secret %v): %s", n, hasSecret, condString(a.Status.Conditions)))
		}
	}
	return granted, held, other
}

// passAgain makes every access of names reconciled again (an annotation
// changed) and waits until the controllers are idle.
func passAgain(t *testing.T, ns string, names []string, round int) {
	t.Helper()
	for _, n := range names {
		patch(t, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n}}, fmt.Sprintf(`{"metadata":{"annotations":{"test.buckety.yolean.se/pass":"%d"}}}`, round))
	}
	waitIdle(t)
}

// TestSameSecondAccessesGetOneCredential (issue 50, item 4): under
// limits.accessesPerNamespace: 1, access "z" is created, and "a" in the
// same second while z's first grant is under way (paused after its user is
// set on the broker, before its Secret and status are written). The two
// are ordered by name within the second, so a is "older"; but z was let
// through first, and holds its place: exactly one of them gets a user and
// a Secret, the other reports the limit, and further passes change
// nothing. (Before the grant gate, a's pass, seeing z not granted yet and
// not older, granted a too.)
func TestSameSecondAccessesGetOneCredential(t *testing.T) {
	needInfra(t)
	needTestHook(t)
	b, _ := scopedBroker(t, 0)
	be := superuserBackend(b, 0)
	be.Limits = &config.Limits{AccessesPerNamespace: 1}
	pauseDir := t.TempDir()
	t.Setenv(testhook.Env, pauseDir)
	arm, reached, release := filepath.Join(pauseDir, testhook.AfterIssue+".arm"), filepath.Join(pauseDir, testhook.AfterIssue+".reached"), filepath.Join(pauseDir, testhook.AfterIssue+".release")
	startController(t, harness.ConfigYAML(be), nil, time.Hour)
	// Runs before the controller stops: nothing stays paused.
	t.Cleanup(func() {
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Error(err)
		}
	})
	const limit = "limits.accessesPerNamespace: 1"
	mk := func(ns, name string) *v1.BucketyAccess {
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: name}}
		create(t, a)
		return a
	}
	for attempt := 1; ; attempt++ {
		if attempt > 5 {
			t.Fatal("could not create z and a in the same second in 5 attempts")
		}
		for _, f := range []string{reached, release} {
			if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
		}
		ns := namespace(t)
		removeWhileRunning(t, ns)
		bk := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".orders"}}
		create(t, bk)
		waitCondition(t, bk, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
		if err := os.WriteFile(arm, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		// Just after a second starts, so z's grant has most of a second
		// to reach the pause before a is created.
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(time.Second + 20*time.Millisecond)))
		z := mk(ns, "z")
		wait.For(t, waitTimeout, "z's grant paused after its user is set", func() (bool, string) {
			_, err := os.Stat(reached)
			return err == nil, "not reached"
		})
		a := mk(ns, "a")
		same := a.CreationTimestamp.Equal(&z.CreationTimestamp)
		if same {
			// a's pass decides while z's grant is paused: it is held at
			// the limit, or (without the gate) it mints a user of its own
			// and pauses too.
			wait.For(t, waitTimeout, "a's pass decided", func() (bool, string) {
				if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(a), a); err != nil {
					return false, err.Error()
				}
				if c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady); c != nil && c.Reason == v1.ReasonLimitExceeded {
					return true, ""
				}
				return len(credentialsOf(t, a.UID)) > 0, condString(a.Status.Conditions)
			})
		}
		if err := os.Remove(arm); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(release, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		names := []string{"z", "a"}
		var granted, held, other []string
		wait.For(t, waitTimeout, "one of z and a granted, the other held at the limit", func() (bool, string) {
			granted, held, other = limitOutcome(t, ns, limit, names)
			return len(granted)+len(held) == 2, fmt.Sprintf("granted %v, held %v, other %v", granted, held, other)
		})
		if !same {
			t.Logf("attempt %d: z created at %s, a at %s: split by a second boundary; again", attempt, z.CreationTimestamp, a.CreationTimestamp)
			continue
		}
		t.Logf("attempt %d: z and a both created at %s", attempt, z.CreationTimestamp)
		first := slices.Clone(granted)
		for round := range 4 {
			if len(granted) != 1 || len(held) != 1 {
				t.Fatalf("pass %d: want exactly one of z and a granted and the other held at %s, got granted %v, held %v, other %v", round, limit, granted, held, other)
			}
			if !slices.Equal(granted, first) {
				t.Fatalf("pass %d: want %v granted still, got %v", round, first, granted)
			}
			heldAccess := &v1.BucketyAccess{}
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: held[0]}, heldAccess); err != nil {
				t.Fatal(err)
			}
			if creds := credentialsOf(t, heldAccess.UID); len(creds) != 0 {
				t.Fatalf("pass %d: want no user recorded for the held access %s, got %d", round, held[0], len(creds))
			}
			passAgain(t, ns, names, round)
			granted, held, other = limitOutcome(t, ns, limit, names)
		}
		return
	}
}

// TestBurstOfAccessesGrantsExactlyTheLimit (issue 50, item 4): a tenant
// creates many accesses at once, as a burst the webhook would admit while
// its cache lags; under limits.accessesPerNamespace: k the controller
// grants exactly k, holds the others at LimitExceeded naming the limit,
// and keeps it so over further passes.
func TestBurstOfAccessesGrantsExactlyTheLimit(t *testing.T) {
	needInfra(t)
	const n, k = 12, 3
	bs := sharedBackends("kafka", "s3")
	bs[0].Limits = &config.Limits{AccessesPerNamespace: k}
	startController(t, harness.ConfigYAML(bs...), nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bk := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".orders"}}
	create(t, bk)
	waitCondition(t, bk, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	names := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		// Names in no order the creation follows.
		names[i] = fmt.Sprintf("app-%02d", (i*5)%n)
		wg.Go(func() {
			a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: names[i]}}
			if err := k8s.Create(context.Background(), a); err != nil {
				t.Errorf("create %s: %v", names[i], err)
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	limit := fmt.Sprintf("limits.accessesPerNamespace: %d", k)
	var granted, held, other []string
	wait.For(t, waitTimeout, "every access granted or held", func() (bool, string) {
		granted, held, other = limitOutcome(t, ns, limit, names)
		return len(other) == 0, fmt.Sprintf("granted %v, held %d, other %v", granted, len(held), other)
	})
	first := slices.Clone(granted)
	for round := range 3 {
		if len(granted) != k || len(held) != n-k {
			t.Fatalf("pass %d: want %d granted and %d held at %s, got granted %v, held %v, other %v", round, k, n-k, limit, granted, held, other)
		}
		if !slices.Equal(granted, first) {
			t.Fatalf("pass %d: want %v granted still, got %v", round, first, granted)
		}
		passAgain(t, ns, names, round)
		granted, held, other = limitOutcome(t, ns, limit, names)
	}
}

// TestRelabelWakesAccessesWaitingForTheirLimit: a namespace that a label
// moves under a higher access limit (limits.namespaces[].selector) has the
// accesses waiting for its old limit granted then, woken by the label
// change: the controller's own retry of a waiting access is an hour here,
// so nothing else could grant them within the test.
func TestRelabelWakesAccessesWaitingForTheirLimit(t *testing.T) {
	needInfra(t)
	three := 3
	k := sharedKafka("kafka")
	k.Limits = &config.Limits{AccessesPerNamespace: 1, Namespaces: []config.NamespaceLimits{
		{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}, AccessesPerNamespace: &three},
	}}
	startControllerWith(t, harness.ConfigYAML(k), nil, func(o *appcontroller.Options) {
		wakeOnly(o)
		o.LimitRetry = time.Hour
	})
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bk := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".orders"}}
	create(t, bk)
	waitCondition(t, bk, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	names := []string{"app-a", "app-b", "app-c"}
	for _, n := range names {
		create(t, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: n}})
	}
	limit := "limits.accessesPerNamespace: 1"
	var granted, held, other []string
	wait.For(t, waitTimeout, "one access granted, two held", func() (bool, string) {
		granted, held, other = limitOutcome(t, ns, limit, names)
		return len(granted) == 1 && len(held) == 2, fmt.Sprintf("granted %v, held %v, other %v", granted, held, other)
	})
	relabel(t, ns, "gold")
	wait.For(t, waitTimeout, "every access granted after the label", func() (bool, string) {
		granted, held, other = limitOutcome(t, ns, limit, names)
		return len(granted) == 3, fmt.Sprintf("granted %v, held %v, other %v", granted, held, other)
	})
}

// TestWithdrawnAccessesHoldNoPlace: under limits.accessesPerBuckety: 1,
// the owner shares "orders" with namespaces x and y; x's access takes the
// one place. The owner withdraws x: x's access stays (only its tenant can
// delete it) but holds no place, so y's access is granted. While x still
// had the place, the owner's own access to "orders" was held at the limit
// too: a shared Buckety's accesses of every namespace count. (Before,
// x's withdrawn access, older than y's, took the place at every pass, and
// the owner's own accesses counted only its namespace's.)
func TestWithdrawnAccessesHoldNoPlace(t *testing.T) {
	needInfra(t)
	b, _ := scopedBroker(t, 0)
	be := superuserBackend(b, 0)
	be.Limits = &config.Limits{AccessesPerBuckety: 1}
	startController(t, harness.ConfigYAML(be), nil, time.Hour)
	owner, x, y := namespace(t), namespace(t), namespace(t)
	for _, ns := range []string{owner, x, y} {
		removeWhileRunning(t, ns)
	}
	orders := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: owner}, Spec: v1.BucketySpec{Backend: "kafka", Name: owner + ".orders",
		Sharing: []v1.SharingRule{{Namespace: x, Roles: []v1.Role{v1.RoleReadWrite}}, {Namespace: y, Roles: []v1.Role{v1.RoleReadWrite}}}}}
	create(t, orders)
	waitCondition(t, orders, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	ax := foreignAccess(x, "ax", owner, "orders", v1.RoleReadWrite)
	create(t, ax)
	waitCondition(t, ax, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)

	own := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "own", Namespace: owner}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, Role: v1.RoleReadWrite, CredentialsSecretName: "own"}}
	create(t, own)
	c := waitCondition(t, own, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonLimitExceeded, waitTimeout)
	if !strings.Contains(c.Message, "accessesPerBuckety") {
		t.Errorf("the owner's own access: want the limit named, got %q", c.Message)
	}
	if err := k8s.Delete(context.Background(), own); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the owner's own access gone", func() (bool, string) { return gone(t, own) })

	patch(t, orders, fmt.Sprintf(`{"spec":{"sharing":[{"namespace":%q,"roles":["ReadWrite"]}]}}`, y))
	waitCondition(t, ax, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonNotShared, waitTimeout)
	ay := foreignAccess(y, "ay", owner, "orders", v1.RoleReadWrite)
	create(t, ay)
	waitCondition(t, ay, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if err := produceWith(t, secret(t, y, "ay").Data, owner+".orders"); err != nil {
		t.Errorf("y's access: want produce to the shared topic allowed, got %v", err)
	}
}

// TestSharedAgainCountsTheLimit: under limits.accessesPerBuckety: 1, x's
// access names its own "logs" and the owner's "orders". The owner stops
// sharing: x's rights on orders go, and the owner's own access takes
// orders' one place. The owner shares again: x's access, still granted on
// logs, does not take orders back (before, its grant on logs let it past
// the limit: one more credential on orders for every share given again).
// It stays Ready on logs, naming orders' limit, and its Secret cannot
// write to orders. Once the owner's access is deleted, x's takes orders
// back.
func TestSharedAgainCountsTheLimit(t *testing.T) {
	needInfra(t)
	b, _ := scopedBroker(t, 0)
	be := superuserBackend(b, 0)
	be.Limits = &config.Limits{AccessesPerBuckety: 1}
	startControllerWith(t, harness.ConfigYAML(be), nil, func(o *appcontroller.Options) {
		o.Recheck, o.LimitRetry = time.Hour, 5*time.Second
	})
	owner, x := namespace(t), namespace(t)
	for _, ns := range []string{owner, x} {
		removeWhileRunning(t, ns)
	}
	orders := sharedBuckety(owner, "orders", "kafka", owner+".orders", x, v1.RoleReadWrite)
	create(t, orders)
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "logs", Namespace: x}, Spec: v1.BucketySpec{Backend: "kafka", Name: x + ".logs"}})
	multi := severalAccess(x, "multi", v1.RoleReadWrite, v1.BucketyReference{Name: "logs"}, v1.BucketyReference{Namespace: owner, Name: "orders"})
	create(t, multi)
	waitCondition(t, multi, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)

	patch(t, orders, `{"spec":{"sharing":null}}`)
	wait.For(t, waitTimeout, "x's access withdrawn from orders", func() (bool, string) {
		a := getAccess(t, x, "multi")
		return strings.Join(a.Status.Withdrawn, ",") == owner+"/orders", "status.withdrawn: " + strings.Join(a.Status.Withdrawn, ",")
	})
	own := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "own", Namespace: owner}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, Role: v1.RoleReadWrite, CredentialsSecretName: "own"}}
	create(t, own)
	waitCondition(t, own, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)

	patch(t, orders, fmt.Sprintf(`{"spec":{"sharing":[{"namespace":%q,"roles":["ReadWrite"]}]}}`, x))
	wait.For(t, waitTimeout, "x's access naming orders' limit", func() (bool, string) {
		c := meta.FindStatusCondition(getAccess(t, x, "multi").Status.Conditions, v1.ConditionReady)
		return c != nil && strings.Contains(c.Message, "shares with it again but already has 1 BucketyAccesses"), fmt.Sprint(c)
	})
	a := getAccess(t, x, "multi")
	if got := strings.Join(a.Status.Withdrawn, ","); got != owner+"/orders" {
		t.Errorf("shared again at its limit: want orders still withdrawn, got status.withdrawn %q", got)
	}
	data := secret(t, x, "multi").Data
	if err := produceWith(t, data, owner+".orders", kgo.DisableIdempotentWrite()); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Errorf("orders at its limit: want x's produce refused with TOPIC_AUTHORIZATION_FAILED, got %v", err)
	}
	if err := produceWith(t, data, x+".logs"); err != nil {
		t.Errorf("logs: want x's produce allowed, got %v", err)
	}

	if err := k8s.Delete(context.Background(), own); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "x's access granted on orders again", func() (bool, string) {
		a := getAccess(t, x, "multi")
		return len(a.Status.Withdrawn) == 0, "status.withdrawn: " + strings.Join(a.Status.Withdrawn, ",")
	})
	wait.For(t, waitTimeout, "x's Secret writing to orders", func() (bool, string) {
		err := produceWith(t, secret(t, x, "multi").Data, owner+".orders")
		return err == nil, fmt.Sprint(err)
	})
}
