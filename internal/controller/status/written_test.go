package status

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
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
	}{
		{name: "no write", before: "10", after: "10", cached: "10"},
		{name: "cache behind the write", before: "10", after: "12", cached: "10", wantStale: true, wantStaleAgain: true},
		{name: "cache caught up", before: "10", after: "12", cached: "12"},
		{name: "cache ahead (someone else wrote)", before: "10", after: "12", cached: "15"},
		{name: "longer is newer", before: "9", after: "10", cached: "9", wantStale: true, wantStaleAgain: true},
		{name: "not comparable", before: "a", after: "b", cached: "a"},
	}
	for _, c := range cases {
		w := &Written{}
		w.Record(obj(c.after), c.before)
		if got := w.Stale(obj(c.cached)); got != c.wantStale {
			t.Errorf("%s: want stale %v, got %v", c.name, c.wantStale, got)
		}
		if got := w.Stale(obj(c.cached)); got != c.wantStaleAgain {
			t.Errorf("%s: again: want stale %v, got %v", c.name, c.wantStaleAgain, got)
		}
		if !c.wantStale && len(w.rv) != 0 {
			t.Errorf("%s: want nothing remembered once the cache caught up, got %v", c.name, w.rv)
		}
	}
	w := &Written{}
	w.Record(obj("12"), "10")
	w.Forget(types.NamespacedName{Namespace: "a", Name: "x"})
	if w.Stale(obj("10")) {
		t.Error("want a forgotten object never stale")
	}
	var none *Written
	none.Record(obj("12"), "10")
	if none.Stale(obj("10")) {
		t.Error("want a nil Written to skip nothing")
	}
}
