package kadm

import (
	"context"
	"sync"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
)

var _ drivers.ServiceIdentifier = (*Backend)(nil)

// ServiceID implements drivers.ServiceIdentifier: the Kafka cluster's ID,
// as a Metadata response (v2 and later) reports it; "" for brokers that
// report none. A backend whose seedBrokers point at another cluster (a
// migration, a typo that reaches staging) reaches topics of the same names
// that are someone else's, and an owner registry that knows nothing of
// this installation's: the ID is what tells the two apart. It is read once
// per backend and process (seedBrokers change only with a restart), by one
// request that concurrent callers share; a failed read is not kept.
func (b *Backend) ServiceID(ctx context.Context) (string, error) {
	c := &b.cluster
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.read || !c.empty.IsZero() && time.Since(c.empty) < emptyIDKept {
		return c.id, nil
	}
	ctx, cancel := b.ctx(ctx)
	defer cancel()
	m, err := b.adm.BrokerMetadata(ctx)
	if err != nil {
		return "", b.classify(err)
	}
	// An answer without an ID (a proxy, an old Metadata version) is kept
	// only emptyIDKept: a broker that reports one later is not taken for
	// a service without an identity for the life of the process.
	c.id, c.read = m.Cluster, m.Cluster != ""
	if !c.read {
		// Kept a while, so brokers that never report one are not asked
		// on every pass.
		c.empty = time.Now()
	}
	return m.Cluster, nil
}

// clusterID is what a backend read of its cluster's ID.
type clusterID struct {
	mu   sync.Mutex
	read bool
	id   string
	// empty is when an answer without an ID came (zero: none).
	empty time.Time
}

// emptyIDKept is how long an answer without a cluster ID stands before
// the cluster is asked again.
const emptyIDKept = time.Minute
