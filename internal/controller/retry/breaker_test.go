package retry

import "testing"

// TestBreakerStates: down after Threshold unavailable passes in a row,
// none answered between; while down, passes that found it so run as at
// most Probes probes at a time, others run freely; up at the first
// answer; a pass that did not ask the backend changes nothing.
func TestBreakerStates(t *testing.T) {
	br := &Breaker{Threshold: 2, Probes: 2}
	pass := func(found bool, o Outcome) (down, up bool) {
		t.Helper()
		probe, ok := br.Admit("k", found)
		if !ok {
			t.Fatalf("want the pass admitted (found %v)", found)
		}
		return br.Done("k", probe, o)
	}
	pass(true, OutcomeUnavailable)
	pass(false, OutcomeAnswered) // an answer between: not in a row
	if down, _ := pass(true, OutcomeUnavailable); down || br.Down("k") {
		t.Fatal("want the backend up: one pass since the last answer")
	}
	pass(false, OutcomeNone) // asked nothing: no change
	if down, _ := pass(true, OutcomeUnavailable); !down || !br.Down("k") {
		t.Fatal("want the backend down after two passes in a row")
	}
	if down, _ := pass(true, OutcomeUnavailable); down {
		t.Error("want the backend's going down reported once")
	}
	p1, ok1 := br.Admit("k", true)
	p2, ok2 := br.Admit("k", true)
	if !p1 || !ok1 || !p2 || !ok2 {
		t.Fatalf("want two probes admitted, got %v %v %v %v", p1, ok1, p2, ok2)
	}
	if _, ok := br.Admit("k", true); ok {
		t.Error("want a third pass that found the backend unavailable held back")
	}
	if probe, ok := br.Admit("k", false); probe || !ok {
		t.Error("want a pass that did not find it so admitted, not as a probe")
	} else {
		br.Done("k", false, OutcomeUnavailable)
	}
	if _, ok := br.Admit("other", true); !ok {
		t.Error("want another backend's passes admitted")
	}
	br.Done("k", true, OutcomeUnavailable)
	if probe, ok := br.Admit("k", true); !probe || !ok {
		t.Error("want a probe slot freed by a probe's end")
	}
	if _, up := br.Done("k", true, OutcomeAnswered); !up || br.Down("k") {
		t.Error("want the backend up at the first answer, reported")
	}
	if _, up := br.Done("k", true, OutcomeAnswered); up {
		t.Error("want the backend's coming up reported once")
	}
	var none *Breaker
	if probe, ok := none.Admit("k", true); probe || !ok {
		t.Error("a nil Breaker: want every pass admitted")
	}
}
