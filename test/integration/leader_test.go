package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestLeaderElection runs two replicas, as during a rollout: only one holds
// the Lease and reconciles; when it stops (releasing the Lease on SIGTERM),
// the other takes over at once.
func TestLeaderElection(t *testing.T) {
	needInfra(t)
	kubeconfig, dir := asServiceAccount(t)
	bin := buildController(t, "0.1.0")
	first := runBinary(t, bin, kubeconfig, dir)
	var leader string
	wait.For(t, waitTimeout, "first replica leads", func() (bool, string) {
		leader = holder(t)
		return leader != "", "no holder"
	})
	second := runBinary(t, bin, kubeconfig, dir)
	time.Sleep(3 * time.Second)
	if h := holder(t); h != leader {
		t.Fatalf("the Lease moved to %s while %s was running", h, leader)
	}
	if done, err := second.p.Exited(); done {
		t.Fatalf("the waiting replica exited: %v", err)
	}
	first.stop(t)
	// Released, not left to run out: stop returns once the process has
	// exited, and the manager releases the Lease before it exits, so it
	// is free (or already the other replica's) from here on. Whatever the
	// machine's speed, a Lease left to expire would still name the leader.
	if h := holder(t); h == leader {
		t.Fatalf("the stopped leader %s still holds the Lease: want it released on SIGTERM", h)
	}
	wait.For(t, waitTimeout, "second replica takes over the released Lease", func() (bool, string) {
		h := holder(t)
		return h != "" && h != leader, h
	})
	ns := namespace(t)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "led", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.led"}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
}

func holder(t *testing.T) string {
	t.Helper()
	return holderOf(lease(t))
}

// lease is the controller's Lease; empty when it cannot be read.
func lease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: systemNS, Name: appcontroller.LeaderElectionID}, l); err != nil {
		return &coordinationv1.Lease{}
	}
	return l
}

func holderOf(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// TestFrozenLeaderIsReplaced: a leader that stops renewing without
// stopping (frozen here with SIGSTOP, as a node that loses the network or a
// stop-the-world pause would) is replaced once its Lease runs out, with the
// timings the leader-elect flags set; when it runs again it has lost the
// Lease and exits instead of reconciling beside the new leader.
func TestFrozenLeaderIsReplaced(t *testing.T) {
	needInfra(t)
	kubeconfig, dir := asServiceAccount(t)
	bin := buildController(t, "0.1.0")
	timings := []string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=1s"}
	first := runBinaryArgs(t, bin, kubeconfig, dir, nil, timings)
	var leader string
	wait.For(t, waitTimeout, "first replica leads", func() (bool, string) {
		leader = holder(t)
		return leader != "", "no holder"
	})
	second := runBinaryArgs(t, bin, kubeconfig, dir, nil, timings)
	if err := first.p.Pause(); err != nil {
		t.Fatal(err)
	}
	// Should the test stop while the leader is frozen, its teardown's
	// SIGTERM must reach a running process (cleanups run last first).
	t.Cleanup(func() {
		if first.p == nil {
			return
		}
		if err := first.p.Resume(); err != nil {
			t.Logf("resume the frozen leader: %v", err)
		}
	})
	frozen := time.Now()
	// The frozen leader's last renewal: the latest this loop saw is no
	// later than the real last one, so the check below errs only towards
	// passing.
	var renewed *metav1.MicroTime
	var held *int32
	var took *coordinationv1.Lease
	wait.For(t, waitTimeout, "second replica takes the Lease of the frozen one", func() (bool, string) {
		l := lease(t)
		switch h := holderOf(l); {
		case h == leader:
			renewed, held = l.Spec.RenewTime, l.Spec.LeaseDurationSeconds
			return false, h
		case h == "":
			return false, "no holder"
		default:
			took = l
			return true, h
		}
	})
	t.Logf("figure: the standby took the Lease %s after the leader froze (lease 4s)", time.Since(frozen).Round(10*time.Millisecond))
	// Waited for the Lease to run out, with the flags' timings: the Lease
	// records the duration each holder used, and the standby acquired it
	// no sooner than that duration after the frozen leader's last renewal
	// (both stamped by this machine's clock; a slow machine only makes
	// the gap longer). How much later it took it is a figure: a loaded
	// machine delays the standby's polls.
	for who, d := range map[string]*int32{"frozen leader": held, "new holder": took.Spec.LeaseDurationSeconds} {
		if d == nil {
			t.Errorf("the %s's Lease: want leaseDurationSeconds 4 from --leader-elect-lease-duration=4s, got none", who)
		} else if *d != 4 {
			t.Errorf("the %s's Lease: want leaseDurationSeconds 4 from --leader-elect-lease-duration=4s, got %d", who, *d)
		}
	}
	if renewed == nil || took.Spec.AcquireTime == nil {
		t.Errorf("want the frozen leader's renewTime and the new holder's acquireTime on the Lease, got %v and %v", renewed, took.Spec.AcquireTime)
	} else if gap := took.Spec.AcquireTime.Sub(renewed.Time); gap < 4*time.Second {
		t.Errorf("the standby acquired the Lease %s after the frozen leader last renewed it: want no sooner than the 4s lease", gap)
	}
	if err := first.p.Resume(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the old leader exits once it runs again", func() (bool, string) {
		done, err := first.p.Exited()
		return done, fmt.Sprint(err)
	})
	if _, err := first.p.Exited(); err == nil {
		t.Errorf("the old leader exited with status 0 after losing the Lease: want a failure a Pod restart makes visible")
	}
	first.p = nil // not the clean SIGTERM exit its cleanup checks for
	if done, err := second.p.Exited(); done {
		t.Fatalf("the new leader exited: %v\n%s", err, second.p.Tail(20))
	}
	ns := namespace(t)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "failover", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.failover"}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
}
