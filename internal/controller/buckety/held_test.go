package buckety

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/status"
)

// TestHeldRecordedDropsWhatTheCacheShows: a held status stays while the
// cache shows the Buckety without it, and leaves when the cache shows it
// recorded for the generation, a newer generation, or another object of
// the same name, without a pass of the Buckety.
func TestHeldRecordedDropsWhatTheCacheShows(t *testing.T) {
	bk := func(uid string, gen int64) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "orders", UID: types.UID("uid-" + uid), Generation: gen}}
	}
	provisioned := func(b *v1.Buckety) *v1.Buckety {
		b = b.DeepCopy()
		b.Status.BackendResourceName = "orders"
		status.Apply(&b.Status.Conditions, b.Generation, []status.Cond{{Type: v1.ConditionProvisioned, Status: metav1.ConditionTrue, Reason: v1.ReasonReconciled}})
		return b
	}
	for _, tt := range []struct {
		name   string
		cached *v1.Buckety
		kept   bool
	}{
		{"the cache without the status", bk("1", 2), true},
		{"an older generation recorded", provisioned(bk("1", 1)), false},
		{"the status recorded", provisioned(bk("1", 2)), false},
		{"a newer generation", bk("1", 3), false},
		{"another object of that name", bk("2", 2), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &Held{}
			held := bk("1", 2)
			h.Put(held, &provisioned(held).Status)
			h.Recorded(tt.cached)
			if got := h.Len() == 1; got != tt.kept {
				t.Errorf("want kept %v, got %d held", tt.kept, h.Len())
			}
		})
	}
	var none *Held
	none.Recorded(bk("1", 1)) // a controller without Held
}

// TestHeldSupersededByAPassNotProvisioned: a provisioning pass held its
// status (Provisioned=True) for the accesses; the Buckety's next pass of
// the same generation found the resource not this installation's
// (OwnedElsewhere) and wrote Provisioned=False, which the cache then
// shows. The accesses must read that, not the held status: they revoke
// their credentials on it. A pass that holds, finds the resource
// provisioned or meets a backend failure keeps the held status.
func TestHeldSupersededByAPassNotProvisioned(t *testing.T) {
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "orders", UID: "uid-1", Generation: 2}}
	key := types.NamespacedName{Namespace: "a", Name: "orders"}
	held := b.DeepCopy()
	held.Status.BackendResourceName = "orders"
	status.Apply(&held.Status.Conditions, 2, []status.Cond{{Type: v1.ConditionProvisioned, Status: metav1.ConditionTrue, Reason: v1.ReasonReconciled}})
	elsewhere := []status.Cond{{Type: v1.ConditionProvisioned, Status: metav1.ConditionFalse, Reason: v1.ReasonOwnedElsewhere}}
	provisioned := []status.Cond{{Type: v1.ConditionProvisioned, Status: metav1.ConditionTrue, Reason: v1.ReasonReconciled}}
	for _, tt := range []struct {
		name    string
		hold    bool
		derived []status.Cond
		kept    bool
	}{
		{"a pass that found it owned elsewhere", false, elsewhere, false},
		{"a pass that found the backend unreachable", false, []status.Cond{{Type: v1.ConditionProvisioned, Status: metav1.ConditionFalse, Reason: v1.ReasonBackendUnreachable}}, true},
		{"a pass that holds again", true, provisioned, true},
		{"a pass that found it provisioned", false, provisioned, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &Held{}
			h.Put(b, &held.Status)
			h.Supersede(key, tt.hold, tt.derived)
			cached := b.DeepCopy()
			status.Apply(&cached.Status.Conditions, 2, tt.derived)
			_, ok := h.Overlay(cached)
			if ok != tt.kept {
				t.Errorf("want the held status read by the accesses %v, got %v", tt.kept, ok)
			}
			if got := meta.IsStatusConditionTrue(cached.Status.Conditions, v1.ConditionProvisioned); !tt.kept && got {
				t.Error("want the accesses to read Provisioned=False, as written, got True")
			}
		})
	}
}
