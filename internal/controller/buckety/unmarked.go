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
	"github.com/Yolean/buckety-controller/internal/controller/periodic"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// RecordMarker finishes what a Buckety deleted with its resource kept
// (retentionPolicy Retain, or an adopted resource) could not do while its
// backend was missing from buckety-controller.yaml: mark the owner record
// on the backend retained. Its retained claim says so
// (spec.retained.recordUnmarked); once the backend is configured again the
// marker reads the record, marks it retained when it still holds the
// resource for that deleted Buckety (this installation, its namespace,
// name and UID), and clears the flag. Until then a Buckety applied again
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
}

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
// record is unmarked; it returns how many claims it settled.
func (m *RecordMarker) MarkOnce(ctx context.Context) (int, error) {
	r := m.Reconciler
	var list v1.BucketyClaimList
	// Read, never written: the cache's own objects, not copies of every
	// claim each interval.
	if err := r.Client.List(ctx, &list, ctrl.UnsafeDisableDeepCopy); err != nil {
		return 0, fmt.Errorf("list claims: %w", err)
	}
	n := 0
	var errs []error
	for i := range list.Items {
		cl := &list.Items[i]
		if !claims.IsRetained(cl) || !cl.Spec.Retained.RecordUnmarked || !m.Serves.Namespace(cl.Spec.Retained.Owner.Namespace) {
			continue
		}
		e, ok := r.Backends.Get(cl.Spec.Backend)
		if !ok {
			continue
		}
		if err := r.markRetainedRecord(ctx, e, cl); err != nil {
			errs = append(errs, err)
			continue
		}
		if err := r.Claims.RecordMarked(ctx, cl); err != nil {
			errs = append(errs, err)
			continue
		}
		n++
	}
	return n, errors.Join(errs...)
}

// markRetainedRecord marks retained the owner record of the resource of
// retained claim cl, when it still holds it for the Buckety the claim was
// retained from (this installation, its namespace and name, and its UID:
// a Buckety that took it over since rewrote the record with its own).
func (r *Reconciler) markRetainedRecord(ctx context.Context, e *backends.Entry, cl *v1.BucketyClaim) error {
	var f facts
	if ok, err := r.ownerRecords(ctx, e, &f); err != nil || !ok {
		return err
	}
	from := cl.Spec.Retained.Owner
	gone := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: from.Namespace, Name: from.Name, UID: types.UID(from.UID)}}
	res := backendResource(e, cl.Spec.ResourceName, nil, cl)
	rec, err := r.readOwner(ctx, gone, e, res, 0)
	if err != nil {
		return fmt.Errorf("read the owner record of %s on backend %s: %w", cl.Spec.ResourceName, e.Name, err)
	}
	if v, _ := r.judge(rec, gone, e); v != ownerMine || rec.UID != from.UID {
		return nil
	}
	want := *rec
	want.Installation, want.State = r.Backends.Installation(), drivers.OwnerRetained
	if err := e.Owners.WriteOwner(ctx, res, &want); err != nil {
		return fmt.Errorf("mark the owner record of %s on backend %s retained: %w", cl.Spec.ResourceName, e.Name, err)
	}
	r.owners.put(e, res.Name, &want, 0)
	return nil
}
