package drivertest

import (
	"maps"
	"sort"
	"sync"
)

// Requests counts the requests a backend sends to its service, by
// operation name, and tells writes from reads. A driver's test wires it into
// its client library's instrumentation (a kgo hook, an SDK middleware), so
// what is counted is what went out, not what the driver meant to send. It
// is safe for concurrent use.
type Requests struct {
	// IsWrite reports whether an operation changes the service.
	IsWrite func(op string) bool

	mu  sync.Mutex
	ops map[string]int
}

// Add counts one request of op.
func (r *Requests) Add(op string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.ops == nil {
		r.ops = map[string]int{}
	}
	r.ops[op]++
}

// Ops returns the requests counted since the last Reset, by operation.
func (r *Requests) Ops() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.ops)
}

// Reset returns the writes counted since the last Reset, one entry per
// request, sorted, and the number of all requests; then it counts from
// zero again.
func (r *Requests) Reset() (writes []string, all int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for op, n := range r.ops {
		all += n
		if r.IsWrite != nil && r.IsWrite(op) {
			for i := 0; i < n; i++ {
				writes = append(writes, op)
			}
		}
	}
	sort.Strings(writes)
	r.ops = nil
	return writes, all
}
