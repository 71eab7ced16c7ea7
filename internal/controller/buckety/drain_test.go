package buckety

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
)

var t0 = time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { t := metav1.NewTime(t0.Add(d)); return &t }

func drainingBuckety(gen int64, spec *v1.DrainSpec, st *v1.DrainStatus) *v1.Buckety {
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Generation: gen, UID: "uid-b"}}
	b.Spec.Drain, b.Status.Drain = spec, st
	b.Status.Driver = "s3"
	b.Status.Provenance = v1.ProvenanceCreated
	return b
}

func TestDrainRequest(t *testing.T) {
	for _, c := range []struct {
		name       string
		gen        int64
		spec       *v1.DrainSpec
		st         *v1.DrainStatus
		wantPhase  v1.DrainPhase
		wantReq    string
		wantEvents []string
		// unprovisioned: this cluster never provisioned it (no
		// status.provenance).
		unprovisioned bool
	}{
		{name: "no drain", gen: 2},
		{name: "a new request starts a drain", gen: 2, spec: &v1.DrainSpec{Request: "r1"}, wantPhase: v1.DrainPhaseDraining, wantReq: "r1", wantEvents: []string{v1.EventDrainStarted}},
		{name: "a request set before this cluster provisioned it is refused", gen: 2, unprovisioned: true, spec: &v1.DrainSpec{Request: "r1"}, wantPhase: v1.DrainPhaseRefused, wantReq: "r1", wantEvents: []string{v1.EventDrainRefused}},
		{name: "a request present at creation is refused", gen: 1, spec: &v1.DrainSpec{Request: "r1"}, wantPhase: v1.DrainPhaseRefused, wantReq: "r1", wantEvents: []string{v1.EventDrainRefused}},
		{name: "the same request again does nothing", gen: 3, spec: &v1.DrainSpec{Request: "r1"}, st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDrained}, wantPhase: v1.DrainPhaseDrained, wantReq: "r1"},
		{name: "a refused request stays refused when other fields change", gen: 5, spec: &v1.DrainSpec{Request: "r1"}, st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseRefused}, wantPhase: v1.DrainPhaseRefused, wantReq: "r1"},
		{name: "removing spec.drain cancels", gen: 3, st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining}, wantPhase: v1.DrainPhaseCancelled, wantReq: "r1", wantEvents: []string{v1.EventDrainCancelled}},
		{name: "a status no spec asks for (restored) is cancelled", gen: 1, st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining}, wantPhase: v1.DrainPhaseCancelled, wantReq: "r1", wantEvents: []string{v1.EventDrainCancelled}},
		{name: "a changed request cancels and starts anew", gen: 4, spec: &v1.DrainSpec{Request: "r2"}, st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining}, wantPhase: v1.DrainPhaseDraining, wantReq: "r2", wantEvents: []string{v1.EventDrainCancelled, v1.EventDrainStarted}},
		{name: "removing spec.drain after completion keeps the record", gen: 4, st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDrained}, wantPhase: v1.DrainPhaseDrained, wantReq: "r1"},
		{name: "an earlier request set again (a revert in Git) is refused", gen: 6, spec: &v1.DrainSpec{Request: "r1"}, st: &v1.DrainStatus{Request: "r2", Phase: v1.DrainPhaseDraining, Earlier: []string{"r1"}},
			wantPhase: v1.DrainPhaseRefused, wantReq: "r1", wantEvents: []string{v1.EventDrainCancelled, v1.EventDrainRefused}},
		{name: "a drain restored with its status onto a new object is refused, not resumed", gen: 1, spec: &v1.DrainSpec{Request: "r1"}, st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining, UID: "uid-before"},
			wantPhase: v1.DrainPhaseRefused, wantReq: "r1", wantEvents: []string{v1.EventDrainRefused}},
		{name: "a restored drain edited since is refused, not resumed", gen: 3, spec: &v1.DrainSpec{Request: "r1"}, st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining, UID: "uid-before"},
			wantPhase: v1.DrainPhaseRefused, wantReq: "r1", wantEvents: []string{v1.EventDrainRefused}},
		{name: "a restored drain recorded without its UID, at generation 1, is refused", gen: 1, spec: &v1.DrainSpec{Request: "r1"}, st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining},
			wantPhase: v1.DrainPhaseRefused, wantReq: "r1", wantEvents: []string{v1.EventDrainRefused}},
		{name: "a drain this object started goes on", gen: 3, spec: &v1.DrainSpec{Request: "r1"}, st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining, UID: "uid-b"},
			wantPhase: v1.DrainPhaseDraining, wantReq: "r1"},
		{name: "a drain started before status.drain.uid goes on", gen: 3, spec: &v1.DrainSpec{Request: "r1"}, st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining},
			wantPhase: v1.DrainPhaseDraining, wantReq: "r1"},
		{name: "an earlier request set again after the next completed is refused", gen: 6, spec: &v1.DrainSpec{Request: "r1"}, st: &v1.DrainStatus{Request: "r2", Phase: v1.DrainPhaseDrained, Earlier: []string{"r0", "r1"}},
			wantPhase: v1.DrainPhaseRefused, wantReq: "r1", wantEvents: []string{v1.EventDrainRefused}},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := drainingBuckety(c.gen, c.spec, c.st)
			if c.unprovisioned {
				b.Status.Provenance = ""
			}
			tr := drainRequest(b, t0)
			var got []string
			for _, e := range tr.events {
				got = append(got, e.reason)
			}
			if strings.Join(got, ",") != strings.Join(c.wantEvents, ",") {
				t.Errorf("events: want %v, got %v", c.wantEvents, got)
			}
			st := b.Status.Drain
			if c.wantPhase == "" {
				if st != nil {
					t.Errorf("want no status.drain, got %+v", st)
				}
				return
			}
			if st == nil || st.Phase != c.wantPhase || st.Request != c.wantReq {
				t.Fatalf("want %s %q, got %+v", c.wantPhase, c.wantReq, st)
			}
			if c.st != nil && c.st.Request != st.Request && !slices.Contains(st.Earlier, c.st.Request) {
				t.Errorf("want the request before, %q, among status.drain.earlier, got %v", c.st.Request, st.Earlier)
			}
			if len(c.wantEvents) > 0 && c.wantEvents[len(c.wantEvents)-1] == v1.EventDrainStarted && st.UID != b.UID {
				t.Errorf("a started drain records the Buckety's UID %q: got %q", b.UID, st.UID)
			}
			if st.Phase == v1.DrainPhaseDraining && c.wantEvents != nil && (st.StartTime == nil || !st.StartTime.Time.Equal(t0) || st.LastProgressTime == nil) {
				t.Errorf("a started drain records its start: got %+v", st)
			}
		})
	}
}

// TestEarlierDrains: status.drain.earlier keeps each request once, at its
// latest place, the most recent last, and at most v1.MaxEarlierDrains.
func TestEarlierDrains(t *testing.T) {
	if got := earlierDrains(nil); got != nil {
		t.Errorf("no status: want none, got %v", got)
	}
	if got := earlierDrains(&v1.DrainStatus{Request: "a", Earlier: []string{"a", "b"}}); strings.Join(got, ",") != "b,a" {
		t.Errorf("want a once, at its latest place: got %v", got)
	}
	st := &v1.DrainStatus{}
	for i := range 40 {
		st = &v1.DrainStatus{Request: fmt.Sprint(i), Earlier: earlierDrains(st)}
	}
	got := earlierDrains(st)
	if len(got) != v1.MaxEarlierDrains || got[len(got)-1] != "39" || got[0] != fmt.Sprint(40-v1.MaxEarlierDrains) {
		t.Errorf("want the last %d requests, the newest last, got %v", v1.MaxEarlierDrains, got)
	}
}

func TestDrainWait(t *testing.T) {
	terms := drainTerms{interval: 10 * time.Second, slowInterval: 90 * time.Second, stuckAfter: time.Minute}
	n := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name string
		st   v1.DrainStatus
		now  time.Duration
		want time.Duration
	}{
		{name: "first pass at once", st: v1.DrainStatus{StartTime: at(0), LastProgressTime: at(0)}, want: 0},
		{name: "after progress the next second", st: v1.DrainStatus{StartTime: at(0), LastPassTime: at(5 * time.Second), LastProgressTime: at(5 * time.Second), Passes: 2, Deleted: v1.DrainContent{Objects: n(10)}}, now: 5 * time.Second, want: time.Second},
		{name: "after progress late in its second, the rest of it", st: v1.DrainStatus{StartTime: at(0), LastPassTime: at(5 * time.Second), LastProgressTime: at(5 * time.Second), Passes: 2, Deleted: v1.DrainContent{Objects: n(10)}}, now: 5*time.Second + 600*time.Millisecond, want: 400 * time.Millisecond},
		{name: "after progress, a pass that comes late at once", st: v1.DrainStatus{StartTime: at(0), LastPassTime: at(5 * time.Second), LastProgressTime: at(5 * time.Second), Passes: 2, Deleted: v1.DrainContent{Objects: n(10)}}, now: 7 * time.Second, want: 0},
		{name: "after an idle pass the interval", st: v1.DrainStatus{StartTime: at(0), LastPassTime: at(5 * time.Second), LastProgressTime: at(0), Passes: 1, Deleted: v1.DrainContent{Objects: n(0)}}, now: 7 * time.Second, want: 8 * time.Second},
		{name: "an idle first pass in the start's second still waits", st: v1.DrainStatus{StartTime: at(0), LastPassTime: at(0), LastProgressTime: at(0), Passes: 1, Deleted: v1.DrainContent{Objects: n(0)}}, want: 10 * time.Second},
		{name: "in the first hour the interval", st: v1.DrainStatus{StartTime: at(0), LastPassTime: at(59 * time.Minute), LastProgressTime: at(0), Passes: 9, Deleted: v1.DrainContent{Objects: n(0)}}, now: 59 * time.Minute, want: 10 * time.Second},
		{name: "after the first hour the slow interval", st: v1.DrainStatus{StartTime: at(0), LastPassTime: at(2 * time.Hour), LastProgressTime: at(0), Passes: 9, Deleted: v1.DrainContent{Objects: n(0)}}, now: 2 * time.Hour, want: 90 * time.Second},
		{name: "overdue", st: v1.DrainStatus{StartTime: at(0), LastPassTime: at(0), LastProgressTime: at(-time.Hour), Passes: 1, Deleted: v1.DrainContent{Objects: n(0)}}, now: time.Minute, want: 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := drainWait(&c.st, terms, t0.Add(c.now)); got != c.want {
				t.Errorf("want %s, got %s", c.want, got)
			}
		})
	}
}

func TestApplyStep(t *testing.T) {
	b := drainingBuckety(2, &v1.DrainSpec{Request: "r1"}, nil)
	drainRequest(b, t0)
	st := b.Status.Drain
	// A topic: the first step tells what was there (deleted + remaining).
	applyStep("kafka", st, drivers.DrainStep{Deleted: drivers.Content{Known: true, Objects: 600}, Remaining: drivers.Content{Known: true, Objects: 400}, Requests: 2}, nil, *at(time.Second))
	if st.Initial == nil || st.Initial.Objects == nil || *st.Initial.Objects != 1000 {
		t.Errorf("initial: want 1000 from the first step, got %+v", st.Initial)
	}
	if *st.Current.Objects != 400 || *st.Deleted.Objects != 600 || st.Requests != 2 || st.Passes != 1 {
		t.Errorf("after one step: want current 400, deleted 600, 2 requests, 1 pass; got %+v", st)
	}
	if !st.LastProgressTime.Equal(at(time.Second)) {
		t.Errorf("progress time: want %s, got %s", at(time.Second), st.LastProgressTime)
	}
	// A failing step: no progress, the message says why.
	applyStep("kafka", st, drivers.DrainStep{}, errors.New("broker gone"), *at(2 * time.Second))
	if !strings.Contains(st.Message, "broker gone") || !st.LastProgressTime.Equal(at(time.Second)) || st.Phase != v1.DrainPhaseDraining {
		t.Errorf("after a failure: want the error in the message and no progress, got %+v", st)
	}
	applyStep("kafka", st, drivers.DrainStep{Deleted: drivers.Content{Known: true, Objects: 400}, Remaining: drivers.Content{Known: true}, Done: true, Requests: 2}, nil, *at(3 * time.Second))
	if st.Phase != v1.DrainPhaseDrained || st.CompletionTime == nil || *st.Current.Objects != 0 || *st.Deleted.Objects != 1000 || st.Message != "" {
		t.Errorf("done: want Drained, 1000 deleted, none left; got %+v", st)
	}
}

// TestDrainContentBytes: a byte count the driver did not measure is absent
// from status.drain.current, never 0. The Kafka driver measures no bytes:
// a topic whose initial bytes came from the usage report shows no current
// bytes while records remain, and 0 once it is empty.
func TestDrainContentBytes(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	show := func(p *int64) string {
		if p == nil {
			return "absent"
		}
		return strconv.FormatInt(*p, 10)
	}
	for _, c := range []struct {
		name    string
		c       drivers.Content
		initial *v1.DrainContent
		want    string
	}{
		{name: "records left, bytes not measured, initial bytes known", c: drivers.Content{Known: true, Objects: 400}, initial: &v1.DrainContent{Objects: n(1000), Bytes: n(4096)}, want: "absent"},
		{name: "records left, nothing known of bytes", c: drivers.Content{Known: true, Objects: 400}, want: "absent"},
		{name: "objects and bytes measured", c: drivers.Content{Known: true, Objects: 3, Bytes: 30}, want: "30"},
		{name: "empty, initial bytes known", c: drivers.Content{Known: true}, initial: &v1.DrainContent{Bytes: n(4096)}, want: "0"},
		{name: "empty, nothing known of bytes", c: drivers.Content{Known: true}, want: "absent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := content(c.c, c.initial)
			if got.Objects == nil || *got.Objects != c.c.Objects {
				t.Errorf("objects: want %d, got %s", c.c.Objects, show(got.Objects))
			}
			if show(got.Bytes) != c.want {
				t.Errorf("bytes: want %s, got %s", c.want, show(got.Bytes))
			}
		})
	}

	// A topic drained in two steps, its initial bytes from the usage report.
	b := drainingBuckety(2, &v1.DrainSpec{Request: "r1"}, nil)
	b.Status.Driver = "kadm"
	drainRequest(b, t0)
	st := b.Status.Drain
	st.Initial = &v1.DrainContent{Bytes: n(4096)}
	applyStep("kafka", st, drivers.DrainStep{Deleted: drivers.Content{Known: true, Objects: 600}, Remaining: drivers.Content{Known: true, Objects: 400}, Requests: 3}, nil, *at(time.Second))
	if st.Current == nil || show(st.Current.Objects) != "400" || st.Current.Bytes != nil {
		t.Errorf("after the first step: want current 400 records and no bytes, got %+v", st.Current)
	}
	if show(st.Initial.Objects) != "1000" || show(st.Initial.Bytes) != "4096" {
		t.Errorf("initial: want 1000 records and 4096 bytes, got %+v", st.Initial)
	}
	if st.Deleted.Bytes != nil {
		t.Errorf("deleted bytes: want absent (not measured), got %s", show(st.Deleted.Bytes))
	}
	applyStep("kafka", st, drivers.DrainStep{Deleted: drivers.Content{Known: true, Objects: 400}, Remaining: drivers.Content{Known: true}, Done: true, Requests: 3}, nil, *at(2 * time.Second))
	if st.Phase != v1.DrainPhaseDrained || show(st.Current.Objects) != "0" || show(st.Current.Bytes) != "0" {
		t.Errorf("done: want Drained with 0 records and 0 bytes left, got %s %+v", st.Phase, st.Current)
	}
}

func TestDrainingCondition(t *testing.T) {
	n := func(v int64) *int64 { return &v }
	running := func(progress time.Duration) *v1.DrainStatus {
		return &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining, StartTime: at(0), LastProgressTime: at(progress), Deleted: v1.DrainContent{Objects: n(5000)}, Initial: &v1.DrainContent{Objects: n(10000)}}
	}
	terms := &drainTerms{interval: 10 * time.Second, stuckAfter: time.Minute}
	for _, c := range []struct {
		name          string
		st            *v1.DrainStatus
		now           time.Duration
		status        metav1.ConditionStatus
		reason, inMsg string
	}{
		{name: "none", status: metav1.ConditionFalse, reason: v1.ReasonNoDrain},
		{name: "progressing", st: running(0), now: 30 * time.Second, status: metav1.ConditionTrue, reason: v1.ReasonDraining, inMsg: "deleted 5000 objects of 10000 at the start"},
		{name: "stuck", st: running(0), now: time.Minute, status: metav1.ConditionTrue, reason: v1.ReasonDrainStuck, inMsg: "deleted nothing for 1m0s or more"},
		{name: "drained", st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDrained, Deleted: v1.DrainContent{Objects: n(3)}}, status: metav1.ConditionFalse, reason: v1.ReasonDrained, inMsg: "deleted 3 objects"},
		{name: "cancelled", st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseCancelled, Message: "cancelled: no spec.drain asks for it"}, status: metav1.ConditionFalse, reason: v1.ReasonDrainCancelled, inMsg: "no spec.drain asks for it"},
		{name: "refused", st: &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseRefused, Message: "stopped: drain.allow"}, status: metav1.ConditionFalse, reason: v1.ReasonDrainRefused, inMsg: "drain.allow"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := drainingBuckety(2, nil, c.st)
			got := draining(b, &facts{now: t0.Add(c.now), drainTerms: terms})
			if got.Status != c.status || got.Reason != c.reason || !strings.Contains(got.Message, c.inMsg) {
				t.Errorf("want %s %s containing %q, got %s %s %q", c.status, c.reason, c.inMsg, got.Status, got.Reason, got.Message)
			}
		})
	}
}

// TestDrainTerms: the interval, the slow interval and the stuck threshold
// come from the Buckety, then the backend, then the defaults (the slow
// interval's: six times the interval); a slow interval is never shorter
// than the interval it slows from.
func TestDrainTerms(t *testing.T) {
	allow := true
	be := &config.Backend{Name: "kafka", Drain: &config.Drain{Allow: &allow, Interval: drivers.Duration{Duration: 5 * time.Second}, StuckAfter: drivers.Duration{Duration: 10 * time.Minute}}}
	// StorageGrid's pair: 3 min, then 15 min after the first hour.
	sg := &config.Backend{Name: "s3", Drain: &config.Drain{Interval: drivers.Duration{Duration: 3 * time.Minute}, SlowInterval: drivers.Duration{Duration: 15 * time.Minute}}}
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	for _, c := range []struct {
		name            string
		spec            *v1.DrainSpec
		be              *config.Backend
		iv, slow, stuck time.Duration
	}{
		{name: "defaults", spec: &v1.DrainSpec{Request: "r"}, be: &config.Backend{}, iv: config.DefaultDrainInterval, slow: 6 * config.DefaultDrainInterval, stuck: config.DefaultDrainStuckAfter},
		{name: "no backend", spec: &v1.DrainSpec{Request: "r"}, iv: config.DefaultDrainInterval, slow: 6 * config.DefaultDrainInterval, stuck: config.DefaultDrainStuckAfter},
		{name: "the backend's; its slow interval six times its interval", spec: &v1.DrainSpec{Request: "r"}, be: be, iv: 5 * time.Second, slow: 30 * time.Second, stuck: 10 * time.Minute},
		{name: "the backend's slow interval", spec: &v1.DrainSpec{Request: "r"}, be: sg, iv: 3 * time.Minute, slow: 15 * time.Minute, stuck: config.DefaultDrainStuckAfter},
		{name: "the Buckety's", spec: &v1.DrainSpec{Request: "r", Interval: d(2 * time.Second), SlowInterval: d(7 * time.Second), StuckAfter: d(time.Minute)}, be: sg, iv: 2 * time.Second, slow: 7 * time.Second, stuck: time.Minute},
		{name: "the Buckety's interval, six times it slow", spec: &v1.DrainSpec{Request: "r", Interval: d(2 * time.Second)}, be: be, iv: 2 * time.Second, slow: 12 * time.Second, stuck: 10 * time.Minute},
		{name: "the Buckety's interval, the backend's slow interval", spec: &v1.DrainSpec{Request: "r", Interval: d(time.Minute)}, be: sg, iv: time.Minute, slow: 15 * time.Minute, stuck: config.DefaultDrainStuckAfter},
		{name: "a slow interval from elsewhere shorter than the interval is the interval", spec: &v1.DrainSpec{Request: "r", Interval: d(time.Hour)}, be: sg, iv: time.Hour, slow: time.Hour, stuck: config.DefaultDrainStuckAfter},
		{name: "the Buckety's slow interval below the backend's interval is the interval", spec: &v1.DrainSpec{Request: "r", SlowInterval: d(time.Minute)}, be: sg, iv: 3 * time.Minute, slow: 3 * time.Minute, stuck: config.DefaultDrainStuckAfter},
		{name: "an interval below the minimum is not used", spec: &v1.DrainSpec{Request: "r", Interval: d(time.Millisecond)}, be: be, iv: 5 * time.Second, slow: 30 * time.Second, stuck: 10 * time.Minute},
		{name: "a slow interval not positive is not used", spec: &v1.DrainSpec{Request: "r", SlowInterval: d(0)}, be: sg, iv: 3 * time.Minute, slow: 15 * time.Minute, stuck: config.DefaultDrainStuckAfter},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := termsOf(drainingBuckety(2, c.spec, nil), c.be)
			if got.interval != c.iv || got.slowInterval != c.slow || got.stuckAfter != c.stuck {
				t.Errorf("want interval %s, slowInterval %s, stuckAfter %s; got %s, %s, %s", c.iv, c.slow, c.stuck, got.interval, got.slowInterval, got.stuckAfter)
			}
		})
	}
}

// TestValidateDrainSpec: the controller refuses spec.drain durations out
// of range, naming the field (admission refuses them first).
func TestValidateDrainSpec(t *testing.T) {
	d := func(v time.Duration) *metav1.Duration { return &metav1.Duration{Duration: v} }
	for _, c := range []struct {
		name string
		spec *v1.DrainSpec
		want string
	}{
		{name: "none"},
		{name: "in range", spec: &v1.DrainSpec{Request: "r", Interval: d(time.Minute), SlowInterval: d(time.Minute), StuckAfter: d(time.Hour)}},
		{name: "slow interval alone", spec: &v1.DrainSpec{Request: "r", SlowInterval: d(time.Second)}},
		{name: "interval below 1s", spec: &v1.DrainSpec{Request: "r", Interval: d(time.Millisecond)}, want: "spec.drain.interval 1ms: must be at least 1s"},
		{name: "slow interval zero", spec: &v1.DrainSpec{Request: "r", SlowInterval: d(0)}, want: "spec.drain.slowInterval 0s: must be positive (absent: 6 times the interval)"},
		{name: "slow interval below the interval", spec: &v1.DrainSpec{Request: "r", Interval: d(time.Minute), SlowInterval: d(30 * time.Second)}, want: "spec.drain.slowInterval 30s: must not be shorter than the interval it slows from (1m0s: spec.drain.interval)"},
		{name: "stuckAfter negative", spec: &v1.DrainSpec{Request: "r", StuckAfter: d(-time.Second)}, want: "spec.drain.stuckAfter -1s: must be positive"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ValidateDrainSpec(c.spec); got != c.want {
				t.Errorf("want %q, got %q", c.want, got)
			}
		})
	}
}

// TestDrainTermsUnresolved: the stuck threshold (and the intervals) come
// from the backend's drain block wherever the config knows the backend,
// also in a pass that does not reach the drain: a backend Resolve refuses
// (its driver changed). Only a backend the config does not know gives the
// defaults.
func TestDrainTermsUnresolved(t *testing.T) {
	set := testSetOf(t, "backends:\n- {name: s3, driver: s3, drain: {stuckAfter: 5m, interval: 3m, slowInterval: 15m}, config: {endpoint: 'http://127.0.0.1:1', accessKeyID: a, secretAccessKey: b}}\n")
	r := &Reconciler{Backends: set}
	n := func(v int64) *int64 { return &v }
	for _, c := range []struct {
		name, spec, status, driver string
		refused, stuck             bool
		inMsg                      string
	}{
		{name: "driver changed: the backend's stuckAfter", spec: "s3", status: "s3", driver: "kadm", refused: true, stuck: true, inMsg: "deleted nothing for 5m0s or more"},
		{name: "resolved: the backend's stuckAfter", spec: "s3", stuck: true, inMsg: "deleted nothing for 5m0s or more"},
		{name: "not in the config: the default", spec: "gone", status: "gone", driver: "s3", refused: true, inMsg: "deleted 7 objects"},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := drainingBuckety(3, &v1.DrainSpec{Request: "r1"}, &v1.DrainStatus{Request: "r1", Phase: v1.DrainPhaseDraining, StartTime: at(0), LastProgressTime: at(0), Deleted: v1.DrainContent{Objects: n(7)}})
			b.Spec.Backend, b.Status.Backend, b.Status.Driver = c.spec, c.status, c.driver
			e, problem := r.resolve(b)
			if (problem != nil) != c.refused {
				t.Fatalf("want Resolve to refuse: %t, got %+v", c.refused, problem)
			}
			terms := termsOf(b, r.configured(b, e))
			got := draining(b, &facts{now: t0.Add(6 * time.Minute), drainTerms: &terms})
			wantReason := v1.ReasonDraining
			if c.stuck {
				wantReason = v1.ReasonDrainStuck
			}
			if got.Reason != wantReason || !strings.Contains(got.Message, c.inMsg) {
				t.Errorf("want %s containing %q, got %s %q", wantReason, c.inMsg, got.Reason, got.Message)
			}
			if c.stuck && (terms.interval != 3*time.Minute || terms.slowInterval != 15*time.Minute) {
				t.Errorf("want the backend's intervals 3m0s and 15m0s, got %s and %s", terms.interval, terms.slowInterval)
			}
		})
	}
}
