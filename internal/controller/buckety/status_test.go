package buckety

import (
	"errors"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
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

var (
	errUnreachable = &drivers.UnavailableError{Backend: "kafka", Err: errors.New("i/o timeout")}
	errDenied      = &drivers.AccessDeniedError{Backend: "kafka", Err: errors.New("SASL failed")}
	drift          = &drivers.DriftError{Parameter: "partitions", Current: "5", Desired: "2", Reason: "cannot shrink"}
)

// TestReadyChain covers every Ready reason a tenant can see, each with the
// link that decides it, what Provisioned and Reconciling say alongside, and
// a word of the message.
func TestReadyChain(t *testing.T) {
	b := &v1.Buckety{Spec: v1.BucketySpec{Backend: "kafka"}, Status: v1.BucketyStatus{BackendResourceName: "t", Backend: "kafka"}}
	problem := &backends.Problem{Condition: v1.ConditionBackendUnavailable, Reason: v1.ReasonBackendNotConfigured, Message: "backend kafka is not in the controller config"}
	major := &backends.Problem{Condition: v1.ConditionDriverVersionIncompatible, Reason: v1.ReasonDriverMajorMismatch, Message: "major 1"}
	for _, c := range []struct {
		name        string
		f           facts
		reason      string
		provisioned bool
		progressing bool
		says        string
	}{
		{"in sync", facts{provisioned: true, accessesChecked: true}, v1.ReasonReconciled, true, false, "in sync"},
		{"deleting, blocked", facts{deleting: true, blockedBy: []string{"reader"}}, v1.ReasonDeleting, false, true, "reader"},
		{"deleting, implicit access going", facts{deleting: true, waitingImplicit: true}, v1.ReasonDeleting, false, true, "implicit access"},
		{"deleting, in progress", facts{deleting: true, deleteProgress: "300 removed"}, v1.ReasonDeleting, false, true, "300 removed"},
		{"deleting, failing", facts{deleting: true, BackendFailure: retry.BackendFailure{Unavailable: errUnreachable}}, v1.ReasonDeleting, false, true, "retrying"},
		{"backend not configured", facts{problem: problem}, v1.ReasonBackendNotConfigured, false, false, "not in the controller config"},
		{"driver major", facts{problem: major}, v1.ReasonDriverMajorMismatch, false, false, "major 1"},
		{"template", facts{templateErr: errors.New(`label "gen" is missing`)}, v1.ReasonTemplateUnresolvable, false, false, "spec.name"},
		{"invalid name", facts{invalidName: "spec.name resolves to \"a b\""}, v1.ReasonInvalidName, false, false, "a b"},
		{"invalid parameters", facts{invalidParams: "spec.parameters[partitions]: Invalid value"}, v1.ReasonInvalidParameters, false, false, "partitions"},
		{"name conflict, another namespace's owner is not named", facts{conflict: &claims.Conflict{Owner: "other/orders"}, resourceName: "orders"}, v1.ReasonNameConflict, false, false, "is owned by another Buckety;"},
		{"name conflict, the same namespace's owner is named", facts{conflict: &claims.Conflict{Owner: "team/first", SameNamespace: true}, resourceName: "orders"}, v1.ReasonNameConflict, false, false, "is owned by Buckety team/first;"},
		{"namespace at its limit", facts{limitExceeded: "namespace team has 3 Bucketies on backend kafka"}, v1.ReasonLimitExceeded, false, false, "has 3 Bucketies"},
		{"location parameter changed", facts{locationChanged: `spec.parameters[jurisdiction] is "fedramp", but b was claimed with "eu"`}, v1.ReasonInvalidParameters, false, false, "cannot change"},
		{"adoption refused", facts{adoptionRefused: "topic t holds 3 records"}, v1.ReasonAdoptionRefused, false, false, "3 records"},
		{"adoption refused, with the hint", facts{adoptionRefused: "topic t holds 3 records", adoptionHint: "set spec.adoption: Adopt"}, v1.ReasonAdoptionRefused, false, false, "set spec.adoption: Adopt"},
		{"adoption drift waits for the tenant, before unrepairable drift", facts{adoptionDrift: []string{"partitions 2 -> 3", drift.Error()}, drift: drift}, v1.ReasonAdoptionDrift, false, false, "partitions 2 -> 3; parameter partitions"},
		{"unreachable", facts{BackendFailure: retry.BackendFailure{Unavailable: errUnreachable}}, v1.ReasonBackendUnreachable, false, true, "timeout"},
		{"access denied", facts{BackendFailure: retry.BackendFailure{AccessDenied: errDenied}}, v1.ReasonBackendAccessDenied, false, false, "SASL"},
		{"backend error", facts{BackendFailure: retry.BackendFailure{Other: errors.New("INVALID_CONFIG")}}, v1.ReasonBackendError, false, true, "INVALID_CONFIG"},
		{"claim write failed", facts{claimErr: errors.New("conflict")}, v1.ReasonProgressing, false, true, "claim"},
		{"provisioning", facts{}, v1.ReasonProgressing, false, true, "provisioning"},
		{"drift", facts{drift: drift}, v1.ReasonDriftUnrepairable, true, false, "cannot shrink"},
		{"parameter not applied", facts{provisioned: true, shortfalls: []drivers.Shortfall{{Parameter: "lifecycle", Message: "NotImplemented"}}}, v1.ReasonParameterNotApplied, true, false, "lifecycle"},
		{"implicit access blocked", facts{provisioned: true, implicitErr: "a BucketyAccess named t already exists"}, v1.ReasonAccessesNotReady, true, false, "already exists"},
		{"accesses pending", facts{provisioned: true, accessesPending: []string{"reader"}}, v1.ReasonAccessesNotReady, true, true, "reader"},
	} {
		conds := conditions(b, &c.f)
		ready, prov, rec := find(conds, v1.ConditionReady), find(conds, v1.ConditionProvisioned), find(conds, v1.ConditionReconciling)
		wantReady := "False"
		if c.reason == v1.ReasonReconciled {
			wantReady = "True"
		}
		if string(ready.Status) != wantReady || ready.Reason != c.reason || !strings.Contains(ready.Message, c.says) {
			t.Errorf("%s: want Ready=%s (%s) saying %q, got %s (%s: %s)", c.name, wantReady, c.reason, c.says, ready.Status, ready.Reason, ready.Message)
		}
		if got := prov.Status == "True"; got != c.provisioned {
			t.Errorf("%s: want Provisioned=%v, got %s (%s)", c.name, c.provisioned, prov.Status, prov.Reason)
		}
		if !c.provisioned && prov.Reason != c.reason {
			t.Errorf("%s: want Provisioned to carry Ready's reason %s, got %s", c.name, c.reason, prov.Reason)
		}
		if got := rec.Status == "True"; got != c.progressing {
			t.Errorf("%s: want Reconciling=%v, got %s", c.name, c.progressing, rec.Status)
		}
	}
}

// TestConditionsAreTheDeclaredSet: every reconcile writes exactly the
// condition types v1.BucketyConditions declares, in its order.
func TestConditionsAreTheDeclaredSet(t *testing.T) {
	b := &v1.Buckety{}
	for _, f := range []facts{{}, {provisioned: true}, {deleting: true}, {drift: drift}, {BackendFailure: retry.BackendFailure{Unavailable: errUnreachable}}} {
		conds := conditions(b, &f)
		if len(conds) != len(v1.BucketyConditions) {
			t.Fatalf("want %d conditions, got %d", len(v1.BucketyConditions), len(conds))
		}
		for i, d := range v1.BucketyConditions {
			if conds[i].Type != d.Type {
				t.Errorf("condition %d: want %s, got %s", i, d.Type, conds[i].Type)
			}
		}
	}
}

// TestScopingMessageNamesNoAccess: the Buckety's ScopingNotImplemented
// condition reads the same whatever accesses hold shared credentials, so
// an access granted over 128 Bucketies writes none of their statuses for
// it (issue 54's sharing row); only the first such access and the last
// one gone change it.
func TestScopingMessageNamesNoAccess(t *testing.T) {
	b := &v1.Buckety{}
	one := find(conditions(b, &facts{shared: 1, accessesChecked: true}), v1.ConditionScopingNotImplemented)
	many := find(conditions(b, &facts{shared: 128, accessesChecked: true}), v1.ConditionScopingNotImplemented)
	if one != many {
		t.Errorf("ScopingNotImplemented differs between 1 and 128 unscoped accesses:\n%+v\n%+v", one, many)
	}
	none := find(conditions(b, &facts{accessesChecked: true}), v1.ConditionScopingNotImplemented)
	if none.Status == one.Status || none.Message == one.Message {
		t.Errorf("ScopingNotImplemented does not change from no unscoped access to one: %+v, %+v", none, one)
	}
}

// TestOtherConditions covers each non-Ready condition's reasons.
func TestOtherConditions(t *testing.T) {
	b := &v1.Buckety{}
	for _, c := range []struct {
		name, typ string
		f         facts
		status    string
		reason    string
	}{
		{"unreachable", v1.ConditionBackendUnavailable, facts{BackendFailure: retry.BackendFailure{Unavailable: errUnreachable}}, "True", v1.ReasonBackendUnreachable},
		{"configured", v1.ConditionBackendUnavailable, facts{provisioned: true}, "False", v1.ReasonAsExpected},
		{"paused by major", v1.ConditionBackendUnavailable, facts{problem: &backends.Problem{Condition: v1.ConditionDriverVersionIncompatible, Reason: v1.ReasonDriverMajorMismatch}}, "Unknown", v1.ReasonPaused},
		{"major mismatch", v1.ConditionDriverVersionIncompatible, facts{problem: &backends.Problem{Condition: v1.ConditionDriverVersionIncompatible, Reason: v1.ReasonDriverMajorMismatch}}, "True", v1.ReasonDriverMajorMismatch},
		{"drift", v1.ConditionParameterDrift, facts{drift: drift}, "True", v1.ReasonDriftUnrepairable},
		{"not compared", v1.ConditionParameterDrift, facts{}, "Unknown", v1.ReasonNotDetermined},
		{"shortfall", v1.ConditionDegraded, facts{provisioned: true, shortfalls: []drivers.Shortfall{{Parameter: "p"}}}, "True", v1.ReasonParameterNotApplied},
		{"blocked", v1.ConditionBlockedByAccesses, facts{blockedBy: []string{"a"}}, "True", v1.ReasonAccessesExist},
		{"unscoped", v1.ConditionScopingNotImplemented, facts{shared: 1}, "True", v1.ReasonCredentialsNotScoped},
		{"scoped", v1.ConditionScopingNotImplemented, facts{accessesChecked: true}, "False", v1.ReasonAsExpected},
		{"accesses not checked", v1.ConditionScopingNotImplemented, facts{}, "Unknown", v1.ReasonNotDetermined},
	} {
		got := find(conditions(b, &c.f), c.typ)
		if string(got.Status) != c.status || got.Reason != c.reason {
			t.Errorf("%s: want %s=%s (%s), got %s (%s)", c.name, c.typ, c.status, c.reason, got.Status, got.Reason)
		}
	}
}
