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
	wait.For(t, 10*time.Second, "second replica takes over at once", func() (bool, string) {
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
	l := &coordinationv1.Lease{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: systemNS, Name: appcontroller.LeaderElectionID}, l); err != nil {
		return ""
	}
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
	wait.For(t, 30*time.Second, "second replica takes the Lease of the frozen one", func() (bool, string) {
		h := holder(t)
		return h != "" && h != leader, h
	})
	// The Lease was renewed at most a retry period before the freeze and
	// lasts 4s: a standby that took it much sooner would not be waiting
	// for it to run out.
	// And one that took it much later would not be using the flags'
	// timings (the default lease is 15s).
	if took := time.Since(frozen); took < 2*time.Second || took > 12*time.Second {
		t.Errorf("the standby took the Lease %s after the leader froze: want about the 4s lease the flags set", took)
	}
	if err := first.p.Resume(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, 30*time.Second, "the old leader exits once it runs again", func() (bool, string) {
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
