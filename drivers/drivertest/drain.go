package drivertest

import (
	"context"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
)

// DrainCase is one running service whose backend drains resources
// (drivers.Drainer), for DrainContract.
type DrainCase struct {
	// Backend is the backend under test; it implements drivers.Drainer.
	Backend drivers.Backend
	// Requests, when set, counts what Backend sends to the service: a
	// step's DrainStep.Requests must be at least one and at most what
	// the counter saw (client retries count there, not in the step).
	Requests *Requests
	// Units is the DrainLimits.Units of every step: small, so that a
	// drain takes several steps.
	Units int
	// UnitsBound says that a step deletes at most Units (an S3 bucket); a
	// driver whose steps delete whatever they find (a topic's
	// DeleteRecords) leaves it false.
	UnitsBound bool
	// Fills are the resources drained, each a subtest of its own.
	Fills []DrainFill
	// Count reads out of band what a resource holds, in the units a
	// DrainStep counts (object versions, delete markers and uploads; a
	// topic's records between low and high watermarks): a step's known
	// Remaining must equal it, and it must be 0 when the drain is done.
	Count func(t testing.TB, r drivers.Resource) int64
	// Snapshot reads a resource's configuration out of band, as a
	// comparable string: a drain must leave it unchanged.
	Snapshot func(t testing.TB, r drivers.Resource) string
	// WriteRead writes new content into a drained resource and reads it
	// back out of band, as a consumer would; it fails t when it cannot.
	WriteRead func(t testing.TB, r drivers.Resource)
	// Refusals are resources the backend must refuse to drain, with an
	// error naming why.
	Refusals []DrainRefusal
}

// DrainFill is a resource to create, fill and drain.
type DrainFill struct {
	// Name names the subtest.
	Name string
	// Resource is created with Ensure, then filled.
	Resource drivers.Resource
	// Fill writes content into the resource out of band and returns what
	// it wrote, in the units a DrainStep counts: the drain's Deleted must
	// add up to it.
	Fill func(t testing.TB, r drivers.Resource) drivers.Content
}

// DrainRefusal is a resource a drain must fail on.
type DrainRefusal struct {
	// Name names the subtest.
	Name string
	// Resource is drained; Setup, when set, makes it first.
	Resource drivers.Resource
	Setup    func(t testing.TB, r drivers.Resource)
	// Errs are substrings of the error Drain must return.
	Errs []string
}

// maxDrainSteps bounds a drain the contract runs beyond what Units allows,
// so that a driver that never reports Done fails rather than hangs.
const maxDrainSteps = 3

// DrainContract checks a drivers.Drainer against a running service: each
// Fill's resource is drained step by step, every step making progress
// (within Units where UnitsBound) and counting its requests, its known
// Remaining matching what the service holds, until a step reports Done
// (the first step, with a CountAhead that covers what it leaves, must
// know its Remaining);
// the steps' Deleted add up to what was written; a step after Done is Done
// at once and deletes nothing; the resource still exists, with no content
// and the configuration it had, Ensure finds nothing to change, and
// content written after the drain is readable. A missing resource is an
// error that names it, and every Refusal fails with its error.
func DrainContract(t *testing.T, dc DrainCase) {
	t.Helper()
	ctx := context.Background()
	dr, ok := dc.Backend.(drivers.Drainer)
	if !ok {
		t.Fatalf("want %T to implement drivers.Drainer", dc.Backend)
	}
	limits := drivers.DrainLimits{Units: dc.Units}
	for _, f := range dc.Fills {
		t.Run(f.Name, func(t *testing.T) {
			r := f.Resource
			if _, err := dc.Backend.Ensure(ctx, r); err != nil {
				t.Fatalf("Ensure(%s): want no error, got %v", r.Name, err)
			}
			wrote := f.Fill(t, r)
			if wrote.Objects == 0 {
				t.Fatalf("Fill of %s: want content written, got none", r.Name)
			}
			if n := dc.Count(t, r); n != wrote.Objects {
				t.Fatalf("after Fill: want the service to hold the %d units written, got %d", wrote.Objects, n)
			}
			before := dc.Snapshot(t, r)
			if in, err := dc.Backend.Inspect(ctx, r); err != nil || !in.HasContent {
				t.Fatalf("Inspect after Fill: want content, got %+v, %v", in, err)
			}
			steps := maxDrainSteps
			if dc.UnitsBound {
				steps += int(wrote.Objects) / dc.Units
			}
			deleted := drivers.Content{Known: true}
			done := false
			for i := 1; i <= steps && !done; i++ {
				if dc.Requests != nil {
					dc.Requests.Reset()
				}
				// The first step may count what it leaves (CountAhead),
				// as the controller asks: enough here to count it all.
				first := limits
				if i == 1 {
					first.CountAhead = int(wrote.Objects)
				}
				step, err := dr.Drain(ctx, r, first)
				if err != nil {
					t.Fatalf("step %d: want no error, got %v", i, err)
				}
				checkStep(t, dc, i, step)
				if i == 1 && !step.Remaining.Known {
					t.Errorf("step 1 with CountAhead %d (all it could leave): want Remaining known, got %+v", first.CountAhead, step)
				}
				deleted.Objects += step.Deleted.Objects
				deleted.Bytes += step.Deleted.Bytes
				if step.Remaining.Known {
					if n := dc.Count(t, r); n != step.Remaining.Objects {
						t.Errorf("step %d: want the known Remaining to be what the service holds, %d, got %d", i, n, step.Remaining.Objects)
					}
				}
				done = step.Done
				if done && (!step.Remaining.Known || step.Remaining.Objects != 0) {
					t.Errorf("step %d: want a done step to know nothing remains, got Remaining %+v", i, step.Remaining)
				}
				if !done && step.Deleted.Objects == 0 {
					t.Fatalf("step %d: want progress from a step that is not done, got %+v", i, step)
				}
				if dc.UnitsBound && !done && int64(i*dc.Units) < wrote.Objects && step.Deleted.Objects != int64(dc.Units) {
					t.Errorf("step %d of %d units written: want a step to use all its %d units while more remain, got %d", i, wrote.Objects, dc.Units, step.Deleted.Objects)
				}
			}
			if !done {
				t.Fatalf("want Done within %d steps, not done after them (deleted %+v of %+v)", steps, deleted, wrote)
			}
			if deleted.Objects != wrote.Objects || deleted.Bytes != wrote.Bytes {
				t.Errorf("want the steps' Deleted to add up to what was written, %+v, got %+v", wrote, deleted)
			}
			if n := dc.Count(t, r); n != 0 {
				t.Errorf("after Done: want the service to hold nothing, got %d", n)
			}
			again, err := dr.Drain(ctx, r, limits)
			if err != nil || !again.Done || again.Deleted.Objects != 0 {
				t.Errorf("a step after Done: want Done at once, deleting nothing, got %+v, %v", again, err)
			}
			in, err := dc.Backend.Inspect(ctx, r)
			if err != nil || !in.Exists || in.HasContent {
				t.Errorf("Inspect after the drain: want the resource existing without content, got %+v, %v", in, err)
			}
			if after := dc.Snapshot(t, r); after != before {
				t.Errorf("want the drain to keep the configuration, was %s, now %s", before, after)
			}
			if res, err := dc.Backend.Ensure(ctx, r); err != nil || res.Created || len(res.Changes) != 0 {
				t.Errorf("Ensure after the drain: want nothing to change, got %+v, %v", res, err)
			}
			dc.WriteRead(t, r)
		})
	}
	t.Run("missing resource", func(t *testing.T) {
		r := drivers.Resource{Name: "drain-never-created"}
		if len(dc.Fills) > 0 {
			r.Parameters = dc.Fills[0].Resource.Parameters
		}
		step, err := dr.Drain(ctx, r, limits)
		if err == nil || !strings.Contains(err.Error(), r.Name) {
			t.Errorf("Drain of a missing resource: want an error naming %s, got %+v, %v", r.Name, step, err)
		}
		if step.Done {
			t.Errorf("Drain of a missing resource: want it not done, got %+v", step)
		}
	})
	for _, rf := range dc.Refusals {
		t.Run(rf.Name, func(t *testing.T) {
			if rf.Setup != nil {
				rf.Setup(t, rf.Resource)
			}
			step, err := dr.Drain(ctx, rf.Resource, limits)
			if err == nil {
				t.Fatalf("Drain(%s): want an error, got %+v", rf.Resource.Name, step)
			}
			for _, want := range rf.Errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Drain(%s): want an error containing %q, got %v", rf.Resource.Name, want, err)
				}
			}
		})
	}
}

// checkStep checks what one step says of itself: Deleted known, within
// Units where they bound it, and the requests it made counted.
func checkStep(t *testing.T, dc DrainCase, i int, step drivers.DrainStep) {
	t.Helper()
	if !step.Deleted.Known {
		t.Errorf("step %d: want Deleted known, got %+v", i, step)
	}
	if dc.UnitsBound && step.Deleted.Objects > int64(dc.Units) {
		t.Errorf("step %d: want at most %d units deleted, got %d", i, dc.Units, step.Deleted.Objects)
	}
	if step.Requests < 1 {
		t.Errorf("step %d: want the step's requests counted, got %d", i, step.Requests)
	}
	if dc.Requests != nil {
		if _, all := dc.Requests.Reset(); step.Requests > all {
			t.Errorf("step %d: want at most the %d requests the service received, got %d", i, all, step.Requests)
		}
	}
}
