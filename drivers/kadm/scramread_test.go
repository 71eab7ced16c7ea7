package kadm

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/Yolean/buckety-controller/drivers"
)

// inProcessBackend opens a backend of driver d on franz-go's kfake cluster
// in this process, made with opts: only there can a test answer a request
// as another broker would (Cluster.ControlKey). Both close at the test's
// end.
func inProcessBackend(t *testing.T, d *Driver, opts ...kfake.Opt) (*kfake.Cluster, *Backend) {
	t.Helper()
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	be, err := d.Open(context.Background(), "kafka", &Config{SeedBrokers: c.ListenAddrs(), RequestTimeout: drivers.Duration{Duration: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Error(err)
		}
	})
	return c, be.(*Backend)
}

// TestSCRAMReadOfSeveralUsersWithAWholeRequestError: Kafka answers a
// missing user of a DescribeUserSCRAMCredentials request with an error of
// that user's; a broker that answers the whole request with
// RESOURCE_NOT_FOUND instead says nothing of the other users. Two users
// asked for together (one existing, one missing), each is then asked
// alone: the existing user is not taken for a free name (which would let
// buckety record and grant a principal it did not create), nor left in
// place by a revoke that read it as absent.
//
// The broker is franz-go's kfake cluster in this process: only there can
// a request be answered as such a broker would (Cluster.ControlKey).
func TestSCRAMReadOfSeveralUsersWithAWholeRequestError(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs a real Kafka-protocol broker")
	}
	// A long linger: both calls below meet in one request however slow
	// the machine is to start them.
	c, b := inProcessBackend(t, &Driver{Linger: 300 * time.Millisecond}, kfake.NumBrokers(1))
	ctx := context.Background()
	const existing, missing = "bky.t.exists.1", "bky.t.missing.1"
	if err := b.alterUser(ctx, existing, scramOp{upsert: &kadm.UpsertSCRAM{User: existing, Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "pw"}}); err != nil {
		t.Fatal(err)
	}

	var several atomic.Int32
	c.ControlKey(kmsg.DescribeUserSCRAMCredentials.Int16(), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		req := kreq.(*kmsg.DescribeUserSCRAMCredentialsRequest)
		if len(req.Users) < 2 {
			return nil, nil, false // answered by kfake, per user
		}
		several.Add(1)
		resp := req.ResponseKind().(*kmsg.DescribeUserSCRAMCredentialsResponse)
		resp.Version = req.Version
		resp.ErrorCode = kerr.ResourceNotFound.Code
		return resp, nil, true
	})

	var wg sync.WaitGroup
	var gotExisting, gotMissing bool
	var errExisting, errMissing error
	wg.Go(func() { gotExisting, errExisting = b.InspectPrincipal(ctx, existing) })
	wg.Go(func() { gotMissing, errMissing = b.InspectPrincipal(ctx, missing) })
	wg.Wait()
	if errExisting != nil || errMissing != nil {
		t.Fatalf("want both read, got %v, %v", errExisting, errMissing)
	}
	if several.Load() == 0 {
		t.Fatal("want the two reads sent in one request (the case under test), got none naming both")
	}
	if !gotExisting {
		t.Errorf("user %s exists: want it found, though the request naming it and a missing one failed as a whole", existing)
	}
	if gotMissing {
		t.Errorf("user %s does not exist: want it found missing", missing)
	}
}
