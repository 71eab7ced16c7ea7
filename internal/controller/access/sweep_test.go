package access

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// hungSweeper stands for a backend that does not answer a credential
// sweep: it blocks until its caller gives up, and says when it was
// called.
type hungSweeper struct{ called chan<- struct{} }

func (h hungSweeper) SweepCredentials(ctx context.Context, _ []drivers.Access) ([]int, error) {
	select {
	case h.called <- struct{}{}:
	default:
	}
	<-ctx.Done()
	return nil, ctx.Err()
}

// countedSweeper passes every sweep to the backend's, counting them.
type countedSweeper struct {
	drivers.CredentialSweeper
	n atomic.Int32
}

func (c *countedSweeper) SweepCredentials(ctx context.Context, as []drivers.Access) ([]int, error) {
	c.n.Add(1)
	return c.CredentialSweeper.SweepCredentials(ctx, as)
}

// TestCredentialSweepHungBackendDelaysNoOther: each backend's credentials
// are swept on a loop of their own. Backend hung never answers its sweep;
// meanwhile backend kafka, on a real broker, is swept again and again, and
// its access whose SCRAM user is missing is found drifted. With one loop
// waiting for every backend's sweep, kafka was swept once and never again
// while hung hung.
func TestCredentialSweepHungBackendDelaysNoOther(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Kafka-protocol broker")
	}
	set, _, _ := kafkaPair(t, "test-inst", time.Minute, 5*time.Second)
	called := make(chan struct{}, 1)
	hung, _ := set.Get("hung")
	hung.CredentialSweeper = hungSweeper{called: called}
	kb, _ := set.Get("kafka")
	swept := &countedSweeper{CredentialSweeper: kb.CredentialSweeper}
	kb.CredentialSweeper = swept

	// An Active credential on each backend, of an access on several
	// Bucketies (its record names what it was granted on). kafka's
	// principal was never made: drifted.
	var objs []client.Object
	for _, backend := range []string{"hung", "kafka"} {
		p := "bky.t." + backend + ".1"
		uid := types.UID("uid-" + backend)
		objs = append(objs,
			&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: backend, UID: uid},
				Spec:   v1.BucketyAccessSpec{BucketyRefs: []v1.BucketyReference{{Name: "orders"}}},
				Status: v1.BucketyAccessStatus{Principal: p}},
			&v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: CredentialName(backend, p)},
				Spec: v1.BucketyCredentialSpec{Backend: backend, Service: backend, Principal: p, Serial: 1, Phase: v1.CredentialActive,
					Owner:     v1.ClaimOwner{Namespace: "t", Name: backend, UID: string(uid)},
					Resources: []v1.CredentialResource{{Buckety: "t/orders", BucketyUID: "uid-orders", Claim: "claim-orders", Resource: "t.orders"}}}})
	}
	cache := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(objs...).Build()
	r := &Reconciler{Client: cache, APIReader: cache, Backends: set}
	s := &CredentialSweep{Reconciler: r, Interval: 20 * time.Millisecond, Log: logr.Discard()}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := s.Start(ctx); err != nil {
			t.Error(err)
		}
	}()
	defer func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("Start did not return a minute after its context ended")
		}
	}()
	select {
	case <-called:
	case <-time.After(time.Minute):
		t.Fatal("backend hung's sweep was not asked for within a minute")
	}
	// A backstop that ends a broken test, not a speed goal: three sweeps
	// of a 20 ms interval take well under a second.
	deadline := time.Now().Add(time.Minute)
	for swept.n.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("want kafka swept again and again while hung's first sweep hangs, got %d sweeps in a minute", swept.n.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !r.reassert.take("uid-kafka") {
		t.Error("want kafka's access, whose principal is missing, found drifted")
	}
}
