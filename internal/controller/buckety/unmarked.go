package buckety

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/controller/periodic"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// RecordMarker finishes what a Buckety deleted with its resource kept
// (retentionPolicy Retain, or an adopted resource) could not do while its
// backend was missing from buckety-controller.yaml: mark the owner record
// on the backend retained. Its retained claim says so
// (spec.retained.recordUnmarked); once the backend is configured again the
// marker reads the record, marks it retained (handed over, on a backend
// that hands its resources over) when it still holds the resource for a
// Buckety of that namespace and name of this installation, and clears
// the flag. Until then a Buckety applied again
// under the name takes the resource as retained all the same
// (keptUnmarked); after it, the record itself says so, so a maintainer's
// release of the claim, or a lost claim, hands the resource back to no
// Buckety as Created. Runs on the leader only, over its shard's claims,
// once per Interval.
type RecordMarker struct {
	periodic.LeaderOnly
	// Reconciler reads and writes the records (its Client lists the
	// claims from the cache; its Claims store reads them fresh).
	Reconciler *Reconciler
	// Serves is the shard whose claims are handled; nil: all.
	Serves *shard.Serves
	// Interval is how often the claims are looked at.
	Interval time.Duration
	// Log is the logger.
	Log logr.Logger

	// waits paces, per claim, the looks at a record the backend does not
	// show (unsettled): one more Interval each time, up to
	// maxMarkerWait. In memory: a restart (a config change) looks at
	// once, which is when a backend comes back.
	waits map[string]markerWait
}

// markerWait is when a claim's record is looked at next, and the wait
// before that look.
type markerWait struct {
	next time.Time
	wait time.Duration
}

// maxMarkerWait is the longest a claim whose record is not found waits
// for its next look.
const maxMarkerWait = time.Hour

// Start implements manager.Runnable: the first look one Interval after
// the start (the passes of a Buckety applied again meanwhile take such a
// resource as retained themselves), then one per Interval.
func (m *RecordMarker) Start(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(m.Interval):
	}
	periodic.Every(ctx, m.Interval, func(ctx context.Context) {
		n, err := m.MarkOnce(ctx)
		if err != nil && ctx.Err() == nil {
			m.Log.Error(err, "marking the owner records of resources retained while their backend was missing from the config")
		}
		if n > 0 {
			m.Log.Info("marked retained the owner records of resources kept while their backend was missing from the config", "records", n)
		}
	})
	return nil
}

// MarkOnce handles every retained claim of a configured backend whose
// record is unmarked; it returns how many claims it settled. A claim is
// settled (its flag cleared) only once the record says what the deletion
// would have written, or that it is not this installation's to mark: a
// record the backend does not show (a backend configured again on
// another endpoint, say) is looked at again at the next interval.
func (m *RecordMarker) MarkOnce(ctx context.Context) (int, error) {
	r := m.Reconciler
	var list v1.BucketyClaimList
	// Only the flagged claims (an index), read, never written: the
	// cache's own objects, not copies.
	if err := r.Client.List(ctx, &list, ctrl.MatchingFields{objects.IndexClaimRecordUnmarked: "true"}, ctrl.UnsafeDisableDeepCopy); err != nil {
		return 0, fmt.Errorf("list the claims whose owner record is not marked: %w", err)
	}
	n := 0
	var errs []error
	now := time.Now()
	flagged := map[string]bool{}
	// down holds the backends that did not answer in this round: their
	// other claims wait for the next one. One loop serves every backend,
	// and each read of a backend that accepts connections and never
	// answers costs its whole request timeout: a hundred such claims
	// would hold the marking of every other backend's for over an hour.
	down := map[string]bool{}
	for i := range list.Items {
		cl := &list.Items[i]
		if !claims.IsRetained(cl) || !cl.Spec.Retained.RecordUnmarked || !m.Serves.Namespace(cl.Spec.Retained.Owner.Namespace) {
			continue
		}
		e, ok := r.Backends.Get(cl.Spec.Backend)
		if !ok {
			continue
		}
		flagged[cl.Name] = true
		if w, ok := m.waits[cl.Name]; (ok && now.Before(w.next)) || down[cl.Spec.Backend] {
			continue
		}
		// Read fresh: a Buckety of the name may have taken the claim
		// over since the cache showed it, and writes its own record.
		cur, err := r.Claims.Fresh(ctx, cl.Name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if cur == nil || !claims.IsRetained(cur) || !cur.Spec.Retained.RecordUnmarked {
			continue
		}
		settled, err := r.markRetainedRecord(ctx, e, cur)
		if err != nil {
			if drivers.IsUnavailable(err) {
				down[cl.Spec.Backend] = true
			}
			errs = append(errs, err)
			continue
		}
		if !settled {
			m.wait(cl.Name, now)
			continue
		}
		if err := r.Claims.RecordMarked(ctx, cur); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(m.waits, cl.Name)
		n++
	}
	for name := range m.waits {
		if !flagged[name] {
			delete(m.waits, name)
		}
	}
	return n, errors.Join(errs...)
}

// wait paces the next look at claim name, whose record was not found.
func (m *RecordMarker) wait(name string, now time.Time) {
	if m.waits == nil {
		m.waits = map[string]markerWait{}
	}
	w := min(m.waits[name].wait+m.Interval, maxMarkerWait)
	m.waits[name] = markerWait{next: now.Add(w), wait: w}
}

// markRetainedRecord writes on the owner record of the resource of
// retained claim cl what the deletion of the Buckety it was retained from
// would have: retained, or handed over where the backend now hands its
// resources over (ownership.handOverTo), when the record still holds the
// resource for a Buckety of that namespace and name (re-attached by the
// record, as judge has it). settled is true once the record needs nothing
// more: written, or holding it otherwise (retained already, another
// Buckety's, another installation's), or a backend that keeps no records;
// false when the backend shows no record of the resource.
func (r *Reconciler) markRetainedRecord(ctx context.Context, e *backends.Entry, cl *v1.BucketyClaim) (bool, error) {
	from := cl.Spec.Retained.Owner
	gone := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: from.Namespace, Name: from.Name, UID: types.UID(from.UID)}}
	res := backendResource(e, cl.Spec.ResourceName, nil, cl)
	if to := e.Config.HandOverTo(); to != "" {
		return r.markOwner(ctx, gone, e, res, drivers.OwnerHandedOver, to, 0)
	}
	return r.markOwner(ctx, gone, e, res, drivers.OwnerRetained, "", 0)
}
