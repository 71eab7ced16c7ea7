package integration

import (
	"context"
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
