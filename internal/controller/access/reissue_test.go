package access

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// TestReissuesArePaced: the first issue for a changed Secret runs at once;
// each one after it in a row waits twice as long as the one before, up to
// five minutes, and a quiet spell of ten minutes forgets the pacing. The
// wait is reported once.
func TestReissuesArePaced(t *testing.T) {
	var p reissues
	uid := types.UID("a")
	t0 := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	if at, _, _ := p.next(uid, t0); t0.Before(at) {
		t.Fatalf("want the first issue at once, got a wait until %s", at)
	}
	now := t0
	for i, want := range []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute} {
		p.done(uid, now)
		at, last, first := p.next(uid, now.Add(time.Second))
		if got := at.Sub(now); got != want || !last.Equal(now) {
			t.Fatalf("after issue %d: want the next at +%s from %s, got +%s from %s", i+1, want, now, got, last)
		}
		if !first {
			t.Errorf("after issue %d: want the wait reported the first time it is asked about", i+1)
		}
		if _, _, again := p.next(uid, now.Add(2*time.Second)); again {
			t.Errorf("after issue %d: want the wait reported once", i+1)
		}
		if at2, _, _ := p.next(uid, at); at.After(at2) || at2.After(at) {
			t.Errorf("after issue %d: want the wait over at %s", i+1, at)
		}
		now = at
	}
	// A quiet spell: the pacing starts over.
	now = now.Add(reissueQuiet)
	if at, _, _ := p.next(uid, now); now.Before(at) {
		t.Errorf("after a quiet spell: want an issue at once, got a wait until %s", at)
	}
	p.done(uid, now)
	if at, _, _ := p.next(uid, now); at.Sub(now) != reissuePace {
		t.Errorf("after a quiet spell: want the next issue %s after, got %s", reissuePace, at.Sub(now))
	}
	// Another access is not paced by this one's, and a stale entry is
	// pruned.
	if at, _, _ := p.next("b", now); now.Before(at) {
		t.Errorf("want another access unpaced, got a wait until %s", at)
	}
	p.done("b", now.Add(reissueQuiet+time.Minute))
	if _, ok := p.m[uid]; ok {
		t.Errorf("want the stale entry of %s pruned", uid)
	}
}
