package status

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func obj(rv string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x", ResourceVersion: rv}}
}

func TestWritten(t *testing.T) {
	cases := []struct {
		name           string
		before, after  string // resourceVersion read, and after this reconcile's writes
		cached         string // what the next reconcile reads
		wantStale      bool
		wantStaleAgain bool // a reconcile after that, reading the same
		wantKept       bool // remembered after the cache caught up, for the write's event
	}{
		{name: "no write", before: "10", after: "10", cached: "10"},
		{name: "cache behind the write", before: "10", after: "12", cached: "10", wantStale: true, wantStaleAgain: true},
		{name: "cache caught up (its event still to come)", before: "10", after: "12", cached: "12", wantKept: true},
		{name: "cache ahead (someone else wrote)", before: "10", after: "12", cached: "15"},
		{name: "longer is newer", before: "9", after: "10", cached: "9", wantStale: true, wantStaleAgain: true},
		{name: "not comparable", before: "a", after: "b", cached: "a"},
	}
	for _, c := range cases {
		w := &Written{}
		w.Record(obj(c.after), c.before)
		if got, after := w.Stale(obj(c.cached)); got != c.wantStale || after != 0 {
			t.Errorf("%s: want stale %v (waiting for the event), got %v, again after %s", c.name, c.wantStale, got, after)
		}
		if got, after := w.Stale(obj(c.cached)); got != c.wantStaleAgain || after != 0 {
			t.Errorf("%s: again: want stale %v (waiting for the event), got %v, again after %s", c.name, c.wantStaleAgain, got, after)
		}
		if !c.wantStale && (len(w.rv) != 0) != c.wantKept {
			t.Errorf("%s: want remembered %v once the cache caught up, got %v", c.name, c.wantKept, w.rv)
		}
	}
	w := &Written{}
	w.Record(obj("12"), "10")
	w.Forget(types.NamespacedName{Namespace: "a", Name: "x"})
	if stale, _ := w.Stale(obj("10")); stale {
		t.Error("want a forgotten object never stale")
	}
	var none *Written
	none.Record(obj("12"), "10")
	if stale, _ := none.Stale(obj("10")); stale || none.Echoes(obj("12")) {
		t.Error("want a nil Written to skip nothing and drop no event")
	}
}

// TestWrittenEchoes follows the watch events of a reconcile's own writes
// (10 read, the finalizer patched to 11, the status to 12): which are
// dropped, which pass, and what a reconcile that reads the cache meanwhile
// is told.
func TestWrittenEchoes(t *testing.T) {
	t.Run("someone else's write between passes", func(t *testing.T) {
		w := &Written{}
		w.Record(obj("12"), "10")
		if w.Echoes(obj("11")) {
			t.Fatal("want the event of a version this controller did not write passed, older or not")
		}
	})
	t.Run("own writes dropped", func(t *testing.T) {
		w := &Written{}
		w.Record(obj("11"), "10")
		w.Record(obj("12"), "11")
		if !w.Echoes(obj("11")) || !w.Echoes(obj("12")) {
			t.Fatal("want the finalizer's and the status's events dropped")
		}
		// The status's event came: the cache holds 12. A reconcile that
		// read 11 just before is told to run again soon, not to wait.
		if stale, after := w.Stale(obj("11")); !stale || after != RaceRetry {
			t.Fatalf("want a read of 11 after the dropped event stale, again after %s; got %v, %s", RaceRetry, stale, after)
		}
		if stale, _ := w.Stale(obj("12")); stale || len(w.rv) != 0 {
			t.Fatalf("want 12 fresh and nothing remembered, got %v, %v", stale, w.rv)
		}
	})
	t.Run("cache read before the event dropped", func(t *testing.T) {
		w := &Written{}
		w.Record(obj("12"), "10")
		// The informer updates its cache, then hands the event on: a
		// reconcile can read 12 before the event comes.
		if stale, _ := w.Stale(obj("12")); stale {
			t.Fatal("want 12 fresh")
		}
		if !w.Echoes(obj("12")) {
			t.Fatal("want the write's event dropped after a reconcile read it from the cache")
		}
	})
	t.Run("a waiting reconcile gets its event", func(t *testing.T) {
		w := &Written{}
		w.Record(obj("12"), "10")
		if stale, after := w.Stale(obj("10")); !stale || after != 0 {
			t.Fatalf("want 10 stale, waiting for the event; got %v, %s", stale, after)
		}
		if w.Echoes(obj("11")) || w.Echoes(obj("12")) {
			t.Fatal("want the events passed to the reconcile that waits")
		}
		if len(w.rv) != 0 {
			t.Fatalf("want nothing remembered once the write's event passed, got %v", w.rv)
		}
	})
	t.Run("someone else's newer write passes", func(t *testing.T) {
		w := &Written{}
		w.Record(obj("12"), "10")
		if w.Echoes(obj("13")) {
			t.Fatal("want a newer version's event passed")
		}
		if w.Echoes(obj("12")) {
			t.Fatal("want nothing dropped once a newer version came")
		}
	})
	t.Run("not comparable passes", func(t *testing.T) {
		w := &Written{}
		w.Record(obj("b"), "a")
		if w.Echoes(obj("b")) {
			t.Fatal("want an event whose version cannot be compared passed")
		}
	})
	t.Run("seen entries swept", func(t *testing.T) {
		now := time.Unix(1000, 0)
		w := &Written{now: func() time.Time { return now }}
		w.Record(obj("12"), "10")
		w.Echoes(obj("12"))
		other := obj("5")
		other.Name = "y"
		w.Record(other, "4") // never seen: kept until the cache shows it
		now = now.Add(echoKeep + sweepEvery)
		third := obj("7")
		third.Name = "z"
		w.Record(third, "6")
		if _, ok := w.rv[types.NamespacedName{Namespace: "a", Name: "x"}]; ok {
			t.Error("want an entry seen longer than echoKeep ago swept")
		}
		if len(w.rv) != 2 {
			t.Errorf("want the unseen and the new entries kept, got %v", w.rv)
		}
	})
}

// TestDropEchoes: the predicate drops only updates that change nothing
// but status and this controller's finalizer, and only of its own
// recorded writes.
func TestDropEchoes(t *testing.T) {
	const fin = "buckety.yolean.se/finalizer"
	base := func(rv string) *corev1.Secret {
		o := obj(rv)
		o.UID, o.Generation, o.Labels = "u1", 1, map[string]string{"l": "1"}
		return o
	}
	cases := []struct {
		name string
		edit func(n *corev1.Secret)
		rv   string // the new version's; the recorded write is 12
		pass bool
	}{
		{name: "own status write", edit: func(*corev1.Secret) {}, rv: "13"},
		{name: "own finalizer added", edit: func(n *corev1.Secret) { n.Finalizers = []string{fin} }, rv: "11"},
		{name: "own finalizer and slot label added", edit: func(n *corev1.Secret) { n.Finalizers, n.Labels["slot"] = []string{fin}, "7" }, rv: "11"},
		{name: "own finalizer added, another label removed", edit: func(n *corev1.Secret) { n.Finalizers, n.Labels = []string{fin}, map[string]string{"slot": "7"} }, rv: "13", pass: true},
		{name: "someone else's status write between the two", edit: func(*corev1.Secret) {}, rv: "12", pass: true},
		{name: "a newer status write", edit: func(*corev1.Secret) {}, rv: "14", pass: true},
		{name: "spec changed (generation)", edit: func(n *corev1.Secret) { n.Generation = 2 }, rv: "13", pass: true},
		{name: "label changed", edit: func(n *corev1.Secret) { n.Labels = map[string]string{"l": "2"} }, rv: "13", pass: true},
		{name: "annotation added", edit: func(n *corev1.Secret) { n.Annotations = map[string]string{"a": "1"} }, rv: "13", pass: true},
		{name: "another finalizer", edit: func(n *corev1.Secret) { n.Finalizers = []string{"other"} }, rv: "13", pass: true},
		{name: "deletion began", edit: func(n *corev1.Secret) { n.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }, rv: "13", pass: true},
		{name: "recreated (another UID)", edit: func(n *corev1.Secret) { n.UID = "u2" }, rv: "13", pass: true},
	}
	for _, c := range cases {
		w := &Written{}
		w.Record(base("11"), "10") // the finalizer
		w.Record(base("13"), "11") // the status
		n := base(c.rv)
		c.edit(n)
		if got := w.DropEchoes(fin, "slot").Update(event.UpdateEvent{ObjectOld: base("10"), ObjectNew: n}); got != c.pass {
			t.Errorf("%s: want passed %v, got %v", c.name, c.pass, got)
		}
	}
	w := &Written{}
	if !w.DropEchoes(fin, "slot").Update(event.UpdateEvent{ObjectOld: base("10"), ObjectNew: base("12")}) {
		t.Error("want a status write this controller did not record passed")
	}
}

// TestWrittenWrite: watch events that come while a write is under way
// (before its answer) are dropped; one that was not the write's own, nor
// older than it, asks for a rerun.
func TestWrittenWrite(t *testing.T) {
	errRefused := errors.New("refused")
	cases := []struct {
		name      string
		recorded  string   // a write recorded before, "" none
		read      string   // the object's version when the write starts
		during    []string // versions whose events come during the write
		result    string   // the version after the write ("" = the write failed)
		wantRerun bool
	}{
		{name: "its own event before the answer", read: "10", during: []string{"12"}, result: "12"},
		{name: "an older version's event", read: "10", during: []string{"10"}, result: "12"},
		{name: "the finalizer's, then its own", recorded: "11", read: "11", during: []string{"11", "12"}, result: "12"},
		{name: "someone else's after it", read: "10", during: []string{"12", "13"}, result: "12", wantRerun: true},
		{name: "someone else's between its start and its answer", read: "10", during: []string{"11", "12"}, result: "12", wantRerun: true},
		{name: "failed, with someone else's", recorded: "11", read: "11", during: []string{"13"}, wantRerun: true},
		{name: "failed, with the last write's own", recorded: "11", read: "11", during: []string{"11"}},
		{name: "nothing came", read: "10", result: "12"},
	}
	for _, c := range cases {
		w := &Written{}
		if c.recorded != "" {
			w.Record(obj(c.recorded), "1")
		}
		o := obj(c.read)
		err := w.Write(o, func() error {
			for _, rv := range c.during {
				if !w.Echoes(obj(rv)) {
					t.Errorf("%s: want the event of %s dropped during the write", c.name, rv)
				}
			}
			if c.result == "" {
				return errRefused
			}
			o.ResourceVersion = c.result
			return nil
		})
		if (err != nil) != (c.result == "") {
			t.Errorf("%s: want the write's error returned, got %v", c.name, err)
		}
		if got := w.Rerun(o); got != c.wantRerun {
			t.Errorf("%s: want rerun %v, got %v", c.name, c.wantRerun, got)
		}
		if w.Rerun(o) {
			t.Errorf("%s: want rerun reported once", c.name)
		}
		if c.result != "" {
			// The write is recorded: its event, if it did not come
			// during the write, is still dropped after it.
			if !w.Echoes(obj(c.result)) {
				t.Errorf("%s: want the write's event dropped after its answer", c.name)
			}
			if w.Echoes(obj("99")) {
				t.Errorf("%s: want a newer version passed after the write", c.name)
			}
		}
	}
	// A write with nothing to write leaves nothing behind.
	w := &Written{}
	o := obj("10")
	if err := w.Write(o, func() error { return nil }); err != nil || len(w.rv) != 0 || w.Rerun(o) {
		t.Errorf("want no entry and no rerun after a write that wrote nothing, got %v, %v", err, w.rv)
	}
}
