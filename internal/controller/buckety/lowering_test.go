package buckety

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestLoweredQuotaWaitsForAMeasurementTakenAfterIt: a quota lowered from
// 6 MiB to 1 MiB counts what its bucket holds only by a measurement taken
// after this process first found the lowering (and the pass had it
// applied on the server). One taken a minute before, on the empty bucket
// and still fresh, says nothing of what was written since: counted, it
// let a tenant fill the bucket, lower its quota and fill another under the
// same budget. The pass is looked at again when the next measurement is
// due. A measurement taken after counts; a lowering to another figure
// waits anew; a quota not lowered reads the fresh usage as before.
func TestLoweredQuotaWaitsForAMeasurementTakenAfterIt(t *testing.T) {
	const mi = 1 << 20
	r := &Reconciler{UsageMaxAge: 15 * time.Minute}
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{UID: "uid-filled"}}
	measured := func(at time.Time) {
		b.Status.Usage = &v1.Usage{Bytes: 0, MeasuredAt: metav1.NewTime(at)}
	}
	had := v1.Budgeted{QuotaBytes: 6 * mi}
	lowered := v1.Budgeted{QuotaBytes: 1 * mi}

	measured(time.Now().Add(-time.Minute))
	f := &facts{}
	if u := r.usageAfterLowering(b, lowered, had, f); u != nil {
		t.Errorf("a measurement taken before the lowering was found: want it not to count, got %+v", u)
	}
	if f.usageIn <= 0 || f.usageIn > r.UsageMaxAge/3+2*loweringSettle {
		t.Errorf("want the Buckety looked at again when the next measurement is due, got in %s", f.usageIn)
	}
	measured(time.Now().Add(loweringSettle + time.Second))
	if u := r.usageAfterLowering(b, lowered, had, &facts{}); u == nil {
		t.Error("a measurement taken after the lowering (and its settling): want it to count, got none")
	}
	measured(time.Now())
	if u := r.usageAfterLowering(b, v1.Budgeted{QuotaBytes: 2 * mi}, had, &facts{}); u != nil {
		t.Errorf("lowered to another figure since: want it to wait for a measurement anew, got %+v", u)
	}
	measured(time.Now().Add(-time.Minute))
	if u := r.usageAfterLowering(b, had, had, &facts{}); u == nil {
		t.Error("a quota not lowered: want the fresh usage as before, got none")
	}
	if len(r.lowered) != 0 {
		t.Errorf("want the lowering forgotten once the quota is not lowered, got %v", r.lowered)
	}
}
