package kadm

import (
	"fmt"
	"testing"
	"time"
)

// TestReadAndWriteOrderInObservations drives the observations through
// each order in which a read of a topic and a write to it can overlap,
// with the observations' clock moving one second per step. The write
// alters retention.ms from "old" to "new"; a read sent before the write
// completed may have been answered before the broker applied it, and shows
// "old". A read that was sent while the write was in flight and recorded
// before or after the write's result used to stand over it (until the
// next sweep, Ensure took the topic for unaltered, or altered where it was
// not); so did an outage in the write's flight, which dropped the write's
// result.
func TestReadAndWriteOrderInObservations(t *testing.T) {
	old := topicState{exists: true, partitions: 1, dynamic: map[string]string{"retention.ms": "old"}}
	written := topicState{exists: true, partitions: 1, dynamic: map[string]string{"retention.ms": "new"}}
	other := topicState{exists: true, partitions: 1, dynamic: map[string]string{"retention.ms": "other"}}
	// Each step of a case runs at its own second. sent and readAt keep
	// when the write and the read were sent, as the callers take them.
	type order struct {
		o               *observations
		sent, readAt    time.Time
		sent2           time.Time
		send, sendRead  func()
		complete, fails func()
		answerRead      func(topicState)
	}
	for _, c := range []struct {
		name string
		// steps run in order, one second apart.
		steps func(w *order) []func()
		// want is the observation get returns at the end; none: nothing.
		want string
	}{
		{name: "a read sent and recorded before the write was sent", want: "new",
			steps: func(w *order) []func() {
				return []func(){w.sendRead, func() { w.answerRead(old) }, w.send, w.complete}
			}},
		{name: "a read sent before the write, recorded after its result", want: "new",
			steps: func(w *order) []func() {
				return []func(){w.sendRead, w.send, w.complete, func() { w.answerRead(old) }}
			}},
		{name: "a read sent while the write was in flight, recorded before its result", want: "new",
			steps: func(w *order) []func() {
				return []func(){w.send, w.sendRead, func() { w.answerRead(old) }, w.complete}
			}},
		{name: "a read sent while the write was in flight, recorded after its result", want: "new",
			steps: func(w *order) []func() {
				return []func(){w.send, w.sendRead, w.complete, func() { w.answerRead(old) }}
			}},
		{name: "a read sent after the write completed (changed out of band since)", want: "other",
			steps: func(w *order) []func() {
				return []func(){w.send, w.complete, w.sendRead, func() { w.answerRead(other) }}
			}},
		{name: "an outage while the write was in flight, then a read sent before it completed", want: "new",
			steps: func(w *order) []func() {
				return []func(){w.send, w.o.clear, w.sendRead, func() { w.answerRead(old) }, w.complete}
			}},
		{name: "a write that got no answer, then a read sent while it was in flight", want: "none",
			steps: func(w *order) []func() {
				return []func(){w.send, w.sendRead, w.fails, func() { w.answerRead(old) }}
			}},
		{name: "a write that got no answer, then a read sent after", want: "old",
			steps: func(w *order) []func() {
				return []func(){w.send, w.fails, w.sendRead, func() { w.answerRead(old) }}
			}},
		{name: "a write sent while another write to the topic was in flight", want: "none",
			steps: func(w *order) []func() {
				// The second write (sent2) sets "other" and completes
				// first: in which order the broker applied the two is
				// unknown.
				return []func(){w.send, func() { w.sent2 = w.o.now() }, func() { w.o.wrote("a", other, w.sent2) }, w.complete}
			}},
		{name: "a write sent after another write to the topic completed", want: "new",
			steps: func(w *order) []func() {
				return []func(){func() { w.sent2 = w.o.now() }, func() { w.o.wrote("a", other, w.sent2) }, w.send, w.complete}
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := time.Unix(1000, 0)
			w := &order{o: newObservations()}
			w.o.now = func() time.Time { return clock }
			w.send = func() { w.sent = w.o.now() }
			w.complete = func() { w.o.wrote("a", written, w.sent) }
			w.fails = func() { w.o.forget("a") }
			w.sendRead = func() { w.readAt = w.o.now() }
			w.answerRead = func(st topicState) { w.o.put("a", st, w.readAt) }
			for _, step := range c.steps(w) {
				clock = clock.Add(time.Second)
				step()
			}
			got := "none"
			if st, ok := w.o.get("a", time.Minute); ok {
				got = st.dynamic["retention.ms"]
			}
			if got != c.want {
				t.Errorf("want retention.ms %s, got %s", c.want, got)
			}
		})
	}
}

// TestPruneKeepsRefusingLateReads: an entry pruned for its age still
// refuses a read sent before it (here a write's result, then a doubt)
// whose answer comes later, when a caller then asks with a larger MaxAge.
func TestPruneKeepsRefusingLateReads(t *testing.T) {
	for _, settle := range []struct {
		name string
		do   func(o *observations, sent time.Time)
	}{
		{name: "a write's result", do: func(o *observations, sent time.Time) {
			o.wrote("a", topicState{exists: true, dynamic: map[string]string{"retention.ms": "new"}}, sent)
		}},
		{name: "a write that got no answer", do: func(o *observations, _ time.Time) { o.forget("a") }},
	} {
		t.Run(settle.name, func(t *testing.T) {
			o := newObservations()
			clock := time.Unix(1000, 0)
			o.now = func() time.Time { return clock }
			o.get("a", time.Minute) // a caller asks: entries older than a minute are pruned
			readAt := clock
			clock = clock.Add(time.Second)
			settle.do(o, clock)
			clock = clock.Add(2 * time.Minute)
			for i := range pruneEvery {
				o.put(fmt.Sprintf("p%04d", i), topicState{exists: true}, clock)
			}
			if _, ok := o.m["a"]; ok {
				t.Fatal("the entry older than the largest MaxAge asked for was not pruned")
			}
			o.put("a", topicState{exists: true, dynamic: map[string]string{"retention.ms": "old"}}, readAt)
			if st, ok := o.get("a", time.Hour); ok {
				t.Errorf("after %s and a prune, a read sent before it: want no observation, got %+v", settle.name, st)
			}
		})
	}
}
