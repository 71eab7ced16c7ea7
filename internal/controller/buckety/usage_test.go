package buckety

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestUsageOnly: the refresher's write of status.usage alone wakes no
// reconcile; any other change does.
func TestUsageOnly(t *testing.T) {
	old := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "n", ResourceVersion: "1", Generation: 1},
		Spec: v1.BucketySpec{Backend: "kafka"}}
	withUsage := func(b *v1.Buckety, bytes int64) *v1.Buckety {
		c := b.DeepCopy()
		c.ResourceVersion = "2"
		c.Status.Usage = &v1.Usage{Bytes: bytes, MeasuredAt: metav1.Now()}
		return c
	}
	p := UsageOnly()
	if p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: withUsage(old, 10)}) {
		t.Error("a write of status.usage alone: want no reconcile")
	}
	spec := withUsage(old, 10)
	spec.Spec.Parameters = map[string]string{"partitions": "3"}
	spec.Generation = 2
	if !p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: spec}) {
		t.Error("a spec change with a usage change: want a reconcile")
	}
	cond := withUsage(old, 10)
	cond.Status.Conditions = []metav1.Condition{{Type: v1.ConditionReady, Status: metav1.ConditionFalse}}
	if !p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: cond}) {
		t.Error("a status change besides usage: want a reconcile")
	}
	same := old.DeepCopy()
	same.ResourceVersion = "2"
	same.Labels = map[string]string{"x": "y"}
	if !p.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: same}) {
		t.Error("a change without usage: want a reconcile")
	}
}

// TestQuotaWarning: QuotaWarning from status.usage and the quotas, with
// messages that do not move with the figure.
func TestQuotaWarning(t *testing.T) {
	used := func(n int64) *v1.Buckety {
		b := &v1.Buckety{}
		if n >= 0 {
			b.Status.Usage = &v1.Usage{Bytes: n, MeasuredAt: metav1.NewTime(time.Now())}
		}
		return b
	}
	quota := &drivers.Footprint{QuotaBytes: 1000, SoftQuotaBytes: 900}
	for _, c := range []struct {
		name   string
		b      *v1.Buckety
		fp     *drivers.Footprint
		status metav1.ConditionStatus
		reason string
	}{
		{"unresolved backend", used(5), nil, metav1.ConditionUnknown, v1.ReasonNotDetermined},
		{"no quota", used(1 << 40), &drivers.Footprint{QuotaBytes: -1}, metav1.ConditionFalse, v1.ReasonBelowQuota},
		{"not measured yet", used(-1), quota, metav1.ConditionFalse, v1.ReasonUsageUnknown},
		{"below", used(899), quota, metav1.ConditionFalse, v1.ReasonBelowQuota},
		{"at the soft quota", used(900), quota, metav1.ConditionTrue, v1.ReasonSoftQuotaReached},
		{"at the hard quota", used(1000), quota, metav1.ConditionTrue, v1.ReasonQuotaReached},
		{"soft quota only", used(50), &drivers.Footprint{QuotaBytes: -1, SoftQuotaBytes: 40}, metav1.ConditionTrue, v1.ReasonSoftQuotaReached},
	} {
		got := quotaWarning(c.b, c.fp)
		if got.Status != c.status || got.Reason != c.reason {
			t.Errorf("%s: want %s %s, got %s %s (%s)", c.name, c.status, c.reason, got.Status, got.Reason, got.Message)
		}
	}
	if a, b := quotaWarning(used(901), quota), quotaWarning(used(950), quota); a.Message != b.Message {
		t.Errorf("want a message that does not move with the usage, got %q and %q", a.Message, b.Message)
	}
}
