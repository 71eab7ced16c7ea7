package s3

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestPolicyLockWaitEndsWithItsContext: a pass waiting for a bucket's
// policy while another holds it (its requests hanging on the server)
// gives up when its own context ends; the lock is one per bucket, and
// taken again once released.
func TestPolicyLockWaitEndsWithItsContext(t *testing.T) {
	b := &Backend{}
	held := b.policyLock("shared")
	if err := held.lock(context.Background(), "shared"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := b.policyLock("shared").lock(ctx, "shared"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a waiter whose context ended: want context.DeadlineExceeded, got %v", err)
	}
	other := b.policyLock("other")
	if err := other.lock(context.Background(), "other"); err != nil {
		t.Errorf("another bucket's lock: want taken, got %v", err)
	}
	other.unlock()
	held.unlock()
	if err := b.policyLock("shared").lock(context.Background(), "shared"); err != nil {
		t.Fatalf("released: want taken, got %v", err)
	}
}
