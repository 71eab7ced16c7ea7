package buckety

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
)

// The owner records of retained resources after a registry loss. When an
// owner registry is lost (drivers.RegistryEpochs), every Buckety on the
// backend writes its record again at the pass the drift sweep wakes it
// for (registryRecreated). A resource kept after its Buckety was deleted
// (retentionPolicy Retain, an adopted resource, a backend that hands its
// resources over) has no Buckety left to: only its retained claim stands,
// in this cluster, and on the backend the resource looks unowned to every
// other installation, which may then adopt it, and its data. So the
// sweep writes those records again itself, as they were before the loss:
// retained, or handed over to whom they were (one still held, its
// deletion unmarked, as markRetainedRecord would mark it now).
//
// It writes again only the records it read in the registry before the
// loss, this installation's for the Buckety each resource was retained
// from (keptRecords): a retained claim may stand on a resource that was
// never this installation's (deleted out of band and created again by
// another installation, which its Buckety then found owned elsewhere
// and left when it was deleted with Retain), and after a loss that took
// every installation's records, a record written for it would keep its
// owner out (OwnedElsewhere) whenever it came first. Each record is read
// first, fresh, and written only where the registry shows none: one
// written since, by a Buckety of this installation that took the
// resource over or by another installation, is left as it is.
//
// The sweep does it in its own goroutine, one resource after the other,
// and remembers the loss as handled only once every record is written:
// a resource whose record could not be written, or a backend that could
// not be reached, is tried again at the next sweep. What it read before
// the loss is kept in memory only: a process that stops before every
// record is written leaves the rest unwritten (its successor never read
// them), as it does the records of a registry lost while no controller
// ran; those resources stay held in this cluster by their claims, and a
// Buckety that takes one over writes its own record.
//
// The claims are those the sweep's Reader shows: a shard's cache holds
// the claims of its slots only (a claim is labelled with its owner's
// namespace's slot), so each shard writes the records of its own
// retained resources, as its RecordMarker marks them.

// keptRecords is what the sweeps of one backend last read of the owner
// records of its retained resources.
type keptRecords struct {
	// epoch is the backend's registry epoch they were read in.
	epoch uint64
	// recs are, by resource name, the records this installation held
	// then for the Buckety each resource was retained from.
	recs map[string]drivers.OwnerRecord
}

// keepRetainedRecords writes again, when e's owner registry was lost
// (epoch ep is not the one the records were last read in), the records
// of e's retained resources read before, then reads them again for the
// next loss. A loss is handled only once every record is written: until
// then the records read before it are kept, and the next sweep tries
// again.
func (s *Sweeper) keepRetainedRecords(ctx context.Context, e *backends.Entry, re drivers.RegistryEpochs, ep uint64, claimList []v1.BucketyClaim) {
	retained := retainedOn(claimList, e.Name)
	var last *keptRecords
	if v, ok := s.kept.Load(e.Name); ok {
		last = v.(*keptRecords)
	}
	if last != nil && last.epoch != ep && !s.restoreRetained(ctx, e, last, retained) {
		return
	}
	if k := s.readRetained(ctx, e, re, ep, last, retained); k != nil {
		s.kept.Store(e.Name, k)
	}
}

// retainedOn lists the claims of claimList that hold a resource of
// backend retained from a deleted Buckety, by name.
func retainedOn(claimList []v1.BucketyClaim, backend string) []*v1.BucketyClaim {
	var out []*v1.BucketyClaim
	for i := range claimList {
		if cl := &claimList[i]; cl.Spec.Backend == backend && claims.IsRetained(cl) {
			out = append(out, cl)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// keptFor reports whether rec is this installation's record (under its
// name now or a former one) of the Buckety retained claim cl was retained
// from, by namespace and name as judgeOwner re-attaches: retained, handed
// over, or still held (its backend was missing from the config when the
// Buckety was deleted: recordUnmarked).
func (s *Sweeper) keptFor(rec *drivers.OwnerRecord, cl *v1.BucketyClaim) bool {
	from := cl.Spec.Retained.Owner
	own := rec.Installation == s.Backends.Installation() || slices.Contains(s.Backends.FormerInstallations(), rec.Installation)
	return own && rec.Namespace == from.Namespace && rec.Name == from.Name
}

// registryAge is how old the registry the sweep reads may be: it was
// caught up within it (registryRecreated), so a read costs no request.
func (s *Sweeper) registryAge() time.Duration {
	return registryCheckSweeps * s.Interval
}

// readRetained reads, in the registry as the sweep caught it up, the
// records this installation holds for the retained resources of e;
// nil when the epoch is no longer ep once they are read (the registry
// lost again meanwhile: what was read may be the new one's, part
// loaded). A record that cannot be read keeps what last showed for it.
func (s *Sweeper) readRetained(ctx context.Context, e *backends.Entry, re drivers.RegistryEpochs, ep uint64, last *keptRecords, retained []*v1.BucketyClaim) *keptRecords {
	k := &keptRecords{epoch: ep, recs: map[string]drivers.OwnerRecord{}}
	for _, cl := range retained {
		res := backendResource(e, cl.Spec.ResourceName, nil, cl)
		res.MaxAge = s.registryAge()
		rec, err := e.Owners.ReadOwner(ctx, res)
		switch {
		case err != nil && last != nil:
			if was, ok := last.recs[res.Name]; ok {
				k.recs[res.Name] = was
			}
		case err == nil && rec != nil && s.keptFor(rec, cl):
			k.recs[res.Name] = *rec
		}
	}
	if ctx.Err() != nil || re.RegistryEpoch() != ep {
		return nil
	}
	return k
}

// restoreRetained writes again, after a registry loss, the records last
// read for the retained resources of e whose claims still hold them for
// the same Buckety; true once none is left to write. A failure leaves
// the other resources to go on, except where the backend cannot be
// reached: every other would wait for its timeout, and the next sweep
// tries them all again.
func (s *Sweeper) restoreRetained(ctx context.Context, e *backends.Entry, last *keptRecords, retained []*v1.BucketyClaim) bool {
	var written, left, gone int
	var errs []error
	for _, cl := range retained {
		was, ok := last.recs[cl.Spec.ResourceName]
		if !ok || !s.keptFor(&was, cl) {
			continue
		}
		if ctx.Err() != nil {
			return false
		}
		out, err := s.restoreRecord(ctx, e, cl, was)
		switch out {
		case restoreWritten:
			written++
		case restoreLeft:
			left++
		case restoreGone:
			gone++
		}
		if err != nil {
			errs = append(errs, err)
			if drivers.IsUnavailable(err) {
				break
			}
		}
	}
	if written+left+gone > 0 || len(errs) > 0 {
		s.Log.Info("the owner registry was lost: the records of the resources retained from deleted Bucketies written again", "backend", e.Name, "written", written, "heldOtherwise", left, "handedOverAndGone", gone, "failed", len(errs))
	}
	if len(errs) > 0 {
		s.Log.Error(errors.Join(errs[:min(len(errs), 5)]...), "could not write again the owner records of resources retained from deleted Bucketies after the registry was lost; the next sweep tries again", "backend", e.Name, "failed", len(errs))
		return false
	}
	return true
}

// restoreOutcome is what restoreRecord did.
type restoreOutcome int

const (
	// restoreNone: nothing, the record there already (or a failure).
	restoreNone restoreOutcome = iota
	// restoreWritten: the record was written.
	restoreWritten
	// restoreLeft: the registry shows another record, left as it is.
	restoreLeft
	// restoreGone: a resource to be marked handed over does not exist.
	restoreGone
)

// restoreRecord writes again the record was of the resource of retained
// claim cl, as it was before the loss (under this installation's name
// now): retained, or handed over to whom it was, whatever e's config asks
// now (a handOverTo added since hands over only what is deleted since). A
// record still held (its deletion left it unmarked) is written as its
// deletion would have: retained, or handed over where e now hands its
// resources over (markRetainedRecord). It is written where the registry
// shows none, read fresh before the write. A resource handed over is
// marked only while it exists: a mark outlives its resource, and would
// hold its name for the receiver for good (as handOver has it).
func (s *Sweeper) restoreRecord(ctx context.Context, e *backends.Entry, cl *v1.BucketyClaim, was drivers.OwnerRecord) (restoreOutcome, error) {
	want := was
	want.Installation = s.Backends.Installation()
	if was.State != drivers.OwnerRetained && was.State != drivers.OwnerHandedOver {
		want.State, want.To = drivers.OwnerRetained, ""
		if to := e.Config.HandOverTo(); to != "" {
			want.State, want.To = drivers.OwnerHandedOver, to
		}
	}
	res := backendResource(e, cl.Spec.ResourceName, nil, cl)
	// What the sweep's catch-up shows first: after a retry, most are
	// written already, and cost no request.
	res.MaxAge = s.registryAge()
	rec, err := e.Owners.ReadOwner(ctx, res)
	if err == nil && rec == nil {
		res.MaxAge = 0
		rec, err = e.Owners.ReadOwner(ctx, res)
	}
	switch {
	case err != nil:
		return restoreNone, fmt.Errorf("read the owner record of %s: %w", res.Name, err)
	case rec.Same(&want):
		return restoreNone, nil
	case rec != nil:
		if !s.keptFor(rec, cl) {
			s.Log.Info("the owner registry was lost, and now holds another record of a resource retained from a deleted Buckety; left as it is", "backend", e.Name, "resource", res.Name, "claim", cl.Name, "record", rec.String())
		}
		return restoreLeft, nil
	}
	res.MaxAge = 0
	if want.State == drivers.OwnerHandedOver {
		in, err := e.Backend.Inspect(ctx, res)
		if err != nil {
			return restoreNone, fmt.Errorf("inspect %s before it is marked handed over again: %w", res.Name, err)
		}
		if !in.Exists {
			return restoreGone, nil
		}
	}
	if err := e.Owners.WriteOwner(ctx, res, &want); err != nil {
		return restoreNone, fmt.Errorf("write the owner record of %s again: %w", res.Name, err)
	}
	return restoreWritten, nil
}
