package buckety

import (
	"errors"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/shared"
)

func ready(conds []shared.Cond) shared.Cond {
	for _, c := range conds {
		if c.Type == v1.ConditionReady {
			return c
		}
	}
	return shared.Cond{}
}

// TestReadyReasons covers the Ready reasons the changes for data safety
// introduced or moved.
func TestReadyReasons(t *testing.T) {
	b := &v1.Buckety{Status: v1.BucketyStatus{BackendResourceName: "t", Backend: "kafka"}}
	for _, c := range []struct {
		name   string
		f      facts
		status string
		reason string
	}{
		{"in sync", facts{provisioned: true, accessesChecked: true}, "True", v1.ReasonReconciled},
		{"a parameter not applied is not Ready", facts{provisioned: true, accessesChecked: true, shortfalls: []drivers.Shortfall{{Parameter: "lifecycle", Message: "NotImplemented"}}}, "False", v1.ReasonParameterNotApplied},
		{"claim write failed", facts{claimErr: errors.New("conflict")}, "False", v1.ReasonProgressing},
		{"conflict", facts{conflictOwner: "ns/other"}, "False", v1.ReasonNameConflict},
		{"unreachable", facts{unavailable: &drivers.UnavailableError{Backend: "kafka", Err: errors.New("timeout")}}, "False", v1.ReasonBackendUnreachable},
	} {
		got := ready(conditions(b, &c.f))
		if string(got.Status) != c.status || got.Reason != c.reason {
			t.Errorf("%s: want Ready=%s (%s), got %s (%s: %s)", c.name, c.status, c.reason, got.Status, got.Reason, got.Message)
		}
	}
}
