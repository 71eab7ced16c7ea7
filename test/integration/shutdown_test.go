package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestShutdownWithWorkQueued: a controller stopped while its work queues
// still hold objects ends within the grace period, round after round.
// controller-runtime's priority queue (v0.24.1) can deadlock there: a
// worker that left Get at shutdown still counts as waiting, the queue's
// hand-out goroutine blocks sending it an item while holding the lock
// that a worker finishing its reconcile needs, and the manager gives up
// after 30s with "failed waiting for all runnables to end within grace
// period". CI and a stress run of two tests hit it; the controller now
// uses client-go's work queue.
func TestShutdownWithWorkQueued(t *testing.T) {
	needInfra(t)
	ns := namespace(t)
	const n = 60
	for i := range n {
		create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("q%02d", i), Namespace: ns},
			Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: fmt.Sprintf("q%02d-topic", i)}}})
	}
	for round := range 25 {
		run := startControllerWith(t, configYAML("kafka", "s3"), nil, func(o *appcontroller.Options) {
			o.MaxConcurrent, o.Recheck = 4, time.Hour
		})
		// Stop at a different point of the cold start each round: the
		// first round provisions, later ones re-verify, all with the
		// queues full.
		time.Sleep(time.Duration(50+20*round) * time.Millisecond)
		start := time.Now()
		run.stop(t)
		if t.Failed() {
			t.Fatalf("round %d: the controller did not stop cleanly (%s after cancel)", round, time.Since(start).Round(time.Millisecond))
		}
	}
	// Nothing the interrupted passes wrote is lost: a controller that runs
	// to the end makes every one Ready.
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	for i := range n {
		waitCondition(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("q%02d", i), Namespace: ns}}, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
		secret(t, ns, fmt.Sprintf("q%02d-topic", i))
	}
	// Deleted again, so the controllers of later tests do not spend their
	// start re-verifying sixty leftovers.
	if err := k8s.DeleteAllOf(context.Background(), &v1.Buckety{}, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the Bucketies deleted", func() (bool, string) {
		var list v1.BucketyList
		if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		return len(list.Items) == 0, fmt.Sprintf("%d left", len(list.Items))
	})
}
