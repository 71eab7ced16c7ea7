package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestBurstDoesNotStarveAnotherNamespace: a tenant's burst of Bucketies is
// queued ahead of another namespace's one Buckety (created while no
// controller runs, so a starting controller finds them all at once, the
// burst first in its list order). The other namespace's Buckety turns
// Ready while most of the burst is still waiting: the controller's queues
// take turns by namespace. A first-in, first-out queue serves the whole
// burst first.
func TestBurstDoesNotStarveAnotherNamespace(t *testing.T) {
	needInfra(t)
	ctx := context.Background()
	const burst = 120
	// Named so that the burst sorts before every other namespace and the
	// other tenant's after every other (an informer's first list, and so
	// a FIFO queue, is in key order).
	suffix := fmt.Sprint(time.Now().UnixNano() % 1e6)
	mallory, alice := "a-burst-"+suffix, "zz-patient-"+suffix
	for _, ns := range []string{mallory, alice} {
		if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
	}
	parallel(t, burst, func(i int) error {
		return k8s.Create(ctx, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: mallory, Name: fmt.Sprintf("burst-%03d", i)},
			Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}", RetentionPolicy: v1.RetentionDelete}})
	})
	ledger := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: alice, Name: "ledger"},
		Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}", RetentionPolicy: v1.RetentionDelete,
			DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "ledger-topic"}}}
	create(t, ledger)

	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	// Registered after the controller, so it runs first: the finalizers
	// are released by the running controller.
	t.Cleanup(func() {
		for _, ns := range []string{mallory, alice} {
			deleteEach(t, ns, &v1.BucketyList{})
		}
		wait.For(t, burstBackstop, "the Bucketies removed", func() (bool, string) {
			left := 0
			for _, ns := range []string{mallory, alice} {
				var list metav1.PartialObjectMetadataList
				list.SetGroupVersionKind(v1.GroupVersion.WithKind("BucketyList"))
				if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
					return false, err.Error()
				}
				left += len(list.Items)
			}
			return left == 0, fmt.Sprintf("%d left", left)
		})
	})

	readyIn := func(ns string) (int, error) {
		var list v1.BucketyList
		if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return 0, err
		}
		n := 0
		for _, b := range list.Items {
			if meta.IsStatusConditionTrue(b.Status.Conditions, v1.ConditionReady) {
				n++
			}
		}
		return n, nil
	}
	start := time.Now()
	for {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(ledger), ledger); err != nil {
			t.Fatal(err)
		}
		if meta.IsStatusConditionTrue(ledger.Status.Conditions, v1.ConditionReady) {
			break
		}
		if time.Since(start) > burstBackstop {
			t.Fatalf("the other namespace's Buckety not Ready after %s (a backstop that ends a hung test, not a speed goal): %v", burstBackstop, ledger.Status.Conditions)
		}
		time.Sleep(20 * time.Millisecond)
	}
	ready, err := readyIn(mallory)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("figure: the other namespace's Buckety (with its access) Ready after %s, with %d of the burst's %d Ready", time.Since(start).Round(time.Millisecond), ready, burst)
	if ready > burst/2 {
		t.Errorf("want the other namespace's Buckety Ready before most of a burst queued ahead of it, got it after %d of %d", ready, burst)
	}
	wait.For(t, burstBackstop, "the burst Ready (a backstop that ends a hung test, not a speed goal)", func() (bool, string) {
		n, err := readyIn(mallory)
		if err != nil {
			return false, err.Error()
		}
		return n == burst, fmt.Sprintf("%d of %d", n, burst)
	})
}

// burstBackstop ends a hung TestBurstDoesNotStarveAnotherNamespace. What
// the test asserts is counted (how much of the burst was Ready first), so
// the bound is only there to end the test, and generous: 120 Bucketies by
// two workers can take minutes on a loaded machine.
const burstBackstop = 10 * time.Minute
