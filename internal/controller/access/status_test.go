package access

import (
	"errors"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
	"github.com/Yolean/buckety-controller/internal/controller/status"
)

func find(conds []status.Cond, t string) status.Cond {
	for _, c := range conds {
		if c.Type == t {
			return c
		}
	}
	return status.Cond{}
}

// TestReadyChain covers every Ready reason of a BucketyAccess a tenant can
// see, with Reconciling alongside and a word of the message.
func TestReadyChain(t *testing.T) {
	a := &v1.BucketyAccess{Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "orders-topic"}}
	no, yes := false, true
	for _, c := range []struct {
		name        string
		f           facts
		status      string
		reason      string
		progressing bool
		says        string
	}{
		{"written", facts{synced: true, secretName: "orders-topic", perAccess: &yes}, "True", v1.ReasonReconciled, false, "orders-topic"},
		{"deleting", facts{deleting: true}, "False", v1.ReasonDeleting, true, "revoking"},
		{"no Buckety", facts{bucketyMissing: true}, "False", v1.ReasonBucketyNotFound, false, "orders"},
		{"name too long to label the Secret", facts{nameTooLong: "metadata.name is 64 characters"}, "False", v1.ReasonInvalidAccess, false, "metadata.name"},
		{"backend gone", facts{problem: &backends.Problem{Condition: v1.ConditionBackendUnavailable, Reason: v1.ReasonBackendNotConfigured, Message: "not in the config"}}, "False", v1.ReasonBackendNotConfigured, false, "not in the config"},
		{"Buckety not provisioned", facts{bucketyWaiting: "waiting for Buckety orders"}, "False", v1.ReasonBucketyNotReady, true, "waiting"},
		{"invalid", facts{invalid: "spec.parameters[x]: not supported"}, "False", v1.ReasonInvalidAccess, false, "spec.parameters"},
		{"unreachable", facts{BackendFailure: retry.BackendFailure{Unavailable: &drivers.UnavailableError{Backend: "kafka", Err: errors.New("timeout")}}}, "False", v1.ReasonBackendUnreachable, true, "timeout"},
		{"denied", facts{BackendFailure: retry.BackendFailure{AccessDenied: &drivers.AccessDeniedError{Backend: "kafka", Err: errors.New("SASL")}}}, "False", v1.ReasonBackendAccessDenied, false, "SASL"},
		{"backend error", facts{BackendFailure: retry.BackendFailure{Other: errors.New("boom")}}, "False", v1.ReasonBackendError, true, "boom"},
		{"Secret conflict", facts{secretConflict: "Secret orders-topic already exists", perAccess: &no}, "False", v1.ReasonSecretConflict, false, "already exists"},
		{"writing", facts{perAccess: &yes}, "False", v1.ReasonProgressing, true, "writing"},
		{"scoping unavailable", facts{issuingUnavailable: "no IAM store"}, "False", v1.ReasonScopingUnavailable, false, "kept as it is"},
		{"own key kept", facts{keptOwn: "bky1-1", synced: true, secretName: "orders-topic"}, "True", v1.ReasonReconciled, false, "orders-topic"},
	} {
		conds := conditions(a, &c.f)
		ready, rec := find(conds, v1.ConditionReady), find(conds, v1.ConditionReconciling)
		if string(ready.Status) != c.status || ready.Reason != c.reason || !strings.Contains(ready.Message, c.says) {
			t.Errorf("%s: want Ready=%s (%s) saying %q, got %s (%s: %s)", c.name, c.status, c.reason, c.says, ready.Status, ready.Reason, ready.Message)
		}
		if got := rec.Status == "True"; got != c.progressing {
			t.Errorf("%s: want Reconciling=%v, got %s", c.name, c.progressing, rec.Status)
		}
	}
}

// TestScopingConditions: an access waiting for a backend that cannot issue
// says so on ScopingNotImplemented (True: nothing of its own issued); one
// that keeps its own key after the backend stopped issuing says that its
// credential is still its own (False), and why nothing repairs it.
func TestScopingConditions(t *testing.T) {
	a := &v1.BucketyAccess{Spec: v1.BucketyAccessSpec{CredentialsSecretName: "orders-topic"}}
	for _, c := range []struct {
		f      facts
		status string
		reason string
		says   string
	}{
		{facts{issuingUnavailable: "no IAM store"}, "True", v1.ReasonScopingUnavailable, "never handed out"},
		{facts{keptOwn: "bky1-1"}, "False", v1.ReasonCredentialKept, "neither rotated nor repaired"},
	} {
		got := find(conditions(a, &c.f), v1.ConditionScopingNotImplemented)
		if string(got.Status) != c.status || got.Reason != c.reason || !strings.Contains(got.Message, c.says) {
			t.Errorf("want ScopingNotImplemented=%s (%s) saying %q, got %s (%s: %s)", c.status, c.reason, c.says, got.Status, got.Reason, got.Message)
		}
	}
}

// TestConditionsAreTheDeclaredSet: every reconcile writes exactly the types
// v1.BucketyAccessConditions declares, in its order.
func TestConditionsAreTheDeclaredSet(t *testing.T) {
	a := &v1.BucketyAccess{}
	yes := true
	for _, f := range []facts{{}, {synced: true, perAccess: &yes}, {deleting: true}, {bucketyMissing: true}} {
		conds := conditions(a, &f)
		if len(conds) != len(v1.BucketyAccessConditions) {
			t.Fatalf("want %d conditions, got %d", len(v1.BucketyAccessConditions), len(conds))
		}
		for i, d := range v1.BucketyAccessConditions {
			if conds[i].Type != d.Type {
				t.Errorf("condition %d: want %s, got %s", i, d.Type, conds[i].Type)
			}
		}
	}
}

// TestScoping covers ScopingNotImplemented's three states.
func TestScoping(t *testing.T) {
	a := &v1.BucketyAccess{Spec: v1.BucketyAccessSpec{Role: v1.RoleReadOnly}}
	no, yes := false, true
	for _, c := range []struct {
		scoped *bool
		status string
	}{{nil, "Unknown"}, {&no, "True"}, {&yes, "False"}} {
		got := find(conditions(a, &facts{perAccess: c.scoped}), v1.ConditionScopingNotImplemented)
		if string(got.Status) != c.status {
			t.Errorf("scoped %v: want %s, got %s", c.scoped, c.status, got.Status)
		}
	}
	if got := find(conditions(a, &facts{perAccess: &no}), v1.ConditionScopingNotImplemented); !strings.Contains(got.Message, "ReadOnly") {
		t.Errorf("want the role named, got %q", got.Message)
	}
}
