package retry

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func TestWaitersWakeOnlyWhoWaits(t *testing.T) {
	var w Waiters
	a := types.NamespacedName{Namespace: "t1", Name: "a"}
	b := types.NamespacedName{Namespace: "t2", Name: "b"}
	w.Wait(a, "claim/x")
	w.Wait(b, "claim/y", "limit/kafka/t2")
	if got := w.Waiting("claim/x"); !slices.Equal(got, []types.NamespacedName{a}) {
		t.Errorf("claim/x: want [a], got %v", got)
	}
	if got := w.Waiting("claim/z"); len(got) != 0 {
		t.Errorf("claim/z: want nobody, got %v", got)
	}
	// Waiting for something else replaces what b waited for.
	w.Wait(b, "claim/x")
	if got := w.Waiting("claim/y"); len(got) != 0 {
		t.Errorf("claim/y after b moved on: want nobody, got %v", got)
	}
	if got := len(w.Waiting("claim/x")); got != 2 {
		t.Errorf("claim/x: want a and b, got %d", got)
	}
	w.Done(a)
	w.Done(b)
	if w.Len() != 0 || len(w.byKey) != 0 {
		t.Errorf("want nothing remembered after Done, got %d objects, %d keys", w.Len(), len(w.byKey))
	}
}
