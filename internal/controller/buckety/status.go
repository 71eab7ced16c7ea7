package buckety

import (
	"fmt"
	"strings"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/shared"
)

// conditions derives every condition of a Buckety from the facts of one
// reconcile. It is the only place Buckety conditions are decided, so the
// status a user sees can be read off this one function.
func conditions(b *v1.Buckety, f *facts) []shared.Cond {
	var out []shared.Cond
	add := func(c shared.Cond) { out = append(out, c) }

	// BackendUnavailable and DriverVersionIncompatible.
	switch {
	case f.problem != nil && f.problem.Condition == v1.ConditionBackendUnavailable:
		add(shared.True(v1.ConditionBackendUnavailable, f.problem.Reason, f.problem.Message))
	case f.unavailable != nil:
		add(shared.True(v1.ConditionBackendUnavailable, v1.ReasonBackendUnreachable, f.unavailable.Error()))
	case f.problem != nil:
		add(shared.Unknown(v1.ConditionBackendUnavailable, v1.ReasonPaused, "not checked: "+f.problem.Message))
	default:
		add(shared.False(v1.ConditionBackendUnavailable, v1.ReasonAsExpected, "the backend is configured"+reached(f)))
	}
	if f.problem != nil && f.problem.Condition == v1.ConditionDriverVersionIncompatible {
		add(shared.True(v1.ConditionDriverVersionIncompatible, f.problem.Reason, f.problem.Message))
	} else if f.problem != nil {
		add(shared.Unknown(v1.ConditionDriverVersionIncompatible, v1.ReasonPaused, "not checked: the backend is unavailable"))
	} else {
		add(shared.False(v1.ConditionDriverVersionIncompatible, v1.ReasonAsExpected, fmt.Sprintf("driver %s %s is compatible", b.Status.Driver, b.Status.DriverBuildVersion)))
	}

	// ParameterDrift and Degraded.
	switch {
	case f.drift != nil:
		add(shared.True(v1.ConditionParameterDrift, v1.ReasonDriftUnrepairable, f.drift.Error()))
	case f.provisioned:
		add(shared.False(v1.ConditionParameterDrift, v1.ReasonAsExpected, "the backend resource matches spec.parameters"))
	default:
		add(shared.Unknown(v1.ConditionParameterDrift, v1.ReasonNotDetermined, "the backend resource was not compared in this reconcile"))
	}
	if len(f.shortfalls) > 0 {
		add(shared.True(v1.ConditionDegraded, v1.ReasonParameterNotApplied, shortfallMessage(f)))
	} else if f.provisioned {
		add(shared.False(v1.ConditionDegraded, v1.ReasonAsExpected, "every parameter is applied"))
	} else {
		add(shared.Unknown(v1.ConditionDegraded, v1.ReasonNotDetermined, "the backend resource was not compared in this reconcile"))
	}

	// BlockedByAccesses.
	if len(f.blockedBy) > 0 {
		add(shared.True(v1.ConditionBlockedByAccesses, v1.ReasonAccessesExist, "deletion waits for these BucketyAccess objects to be deleted (they are not deleted for you): "+strings.Join(f.blockedBy, ", ")))
	} else {
		add(shared.False(v1.ConditionBlockedByAccesses, v1.ReasonAsExpected, "no access blocks deletion"))
	}

	// ScopingNotImplemented.
	switch {
	case len(f.unscoped) > 0:
		add(shared.True(v1.ConditionScopingNotImplemented, v1.ReasonCredentialsNotScoped, "these accesses hold credentials broader than their role or parameters: "+strings.Join(f.unscoped, ", ")))
	case f.accessesChecked:
		add(shared.False(v1.ConditionScopingNotImplemented, v1.ReasonAsExpected, "every access's credentials match its role"))
	default:
		add(shared.Unknown(v1.ConditionScopingNotImplemented, v1.ReasonNotDetermined, "accesses were not checked in this reconcile"))
	}

	// Provisioned, Ready and Reconciling.
	notProvisioned := func(reason, msg string) {
		add(shared.False(v1.ConditionProvisioned, reason, msg))
	}
	var ready shared.Cond
	progressing := false
	switch {
	case f.deleting:
		progressing = true
		msg := "deleting"
		switch {
		case len(f.blockedBy) > 0:
			msg = "deletion waits for accesses: " + strings.Join(f.blockedBy, ", ")
		case f.waitingImplicit:
			msg = "deletion waits for the implicit access and its Secret to be removed"
		case f.deleteProgress != "":
			msg = f.deleteProgress
		case f.problem != nil:
			msg = "deletion paused: " + f.problem.Message
		case f.backendFailure() != nil:
			msg = "deletion failed, retrying: " + f.backendFailure().Error()
		}
		ready = shared.False(v1.ConditionReady, v1.ReasonDeleting, msg)
		notProvisioned(v1.ReasonDeleting, msg)
	case f.problem != nil:
		ready = shared.False(v1.ConditionReady, f.problem.Reason, f.problem.Message)
		notProvisioned(f.problem.Reason, f.problem.Message)
	case f.templateErr != nil:
		ready = shared.False(v1.ConditionReady, v1.ReasonTemplateUnresolvable, "spec.name: "+f.templateErr.Error())
		notProvisioned(v1.ReasonTemplateUnresolvable, ready.Message)
	case f.invalidName != "":
		ready = shared.False(v1.ConditionReady, v1.ReasonInvalidName, f.invalidName)
		notProvisioned(v1.ReasonInvalidName, f.invalidName)
	case f.invalidParams != "":
		ready = shared.False(v1.ConditionReady, v1.ReasonInvalidParameters, f.invalidParams)
		notProvisioned(v1.ReasonInvalidParameters, f.invalidParams)
	case f.conflictOwner != "":
		msg := fmt.Sprintf("backend resource %s on backend %s is owned by Buckety %s; this Buckety will not touch it (deleting this Buckety never deletes it)", resourceOf(b, f), b.Spec.Backend, f.conflictOwner)
		ready = shared.False(v1.ConditionReady, v1.ReasonNameConflict, msg)
		notProvisioned(v1.ReasonNameConflict, msg)
	case f.adoptionRefused != "":
		msg := f.adoptionRefused + "; buckety does not claim a resource that already holds content: empty it, or choose another spec.name"
		ready = shared.False(v1.ConditionReady, v1.ReasonAdoptionRefused, msg)
		notProvisioned(v1.ReasonAdoptionRefused, msg)
	case f.unavailable != nil:
		progressing = true
		ready = shared.False(v1.ConditionReady, v1.ReasonBackendUnreachable, f.unavailable.Error())
		notProvisioned(v1.ReasonBackendUnreachable, f.unavailable.Error())
	case f.accessDenied != nil:
		ready = shared.False(v1.ConditionReady, v1.ReasonBackendAccessDenied, f.accessDenied.Error())
		notProvisioned(v1.ReasonBackendAccessDenied, f.accessDenied.Error())
	case f.backendErr != nil:
		progressing = true
		ready = shared.False(v1.ConditionReady, v1.ReasonBackendError, f.backendErr.Error())
		notProvisioned(v1.ReasonBackendError, f.backendErr.Error())
	case f.claimErr != nil:
		progressing = true
		msg := "recording this Buckety's claim on the backend resource failed, retrying: " + f.claimErr.Error()
		ready = shared.False(v1.ConditionReady, v1.ReasonProgressing, msg)
		notProvisioned(v1.ReasonProgressing, msg)
	case f.drift != nil:
		add(shared.True(v1.ConditionProvisioned, v1.ReasonDriftUnrepairable, "the backend resource exists, with drift the driver will not repair: "+f.drift.Error()))
		ready = shared.False(v1.ConditionReady, v1.ReasonDriftUnrepairable, f.drift.Error())
	case !f.provisioned:
		progressing = true
		ready = shared.False(v1.ConditionReady, v1.ReasonProgressing, "provisioning")
		notProvisioned(v1.ReasonProgressing, "provisioning")
	default:
		add(shared.True(v1.ConditionProvisioned, v1.ReasonReconciled, fmt.Sprintf("%s %s on backend %s", provenanceWord(b), b.Status.BackendResourceName, b.Status.Backend)))
		switch {
		case len(f.shortfalls) > 0:
			ready = shared.False(v1.ConditionReady, v1.ReasonParameterNotApplied, "the backend did not apply every requested parameter: "+shortfallMessage(f))
		case f.implicitErr != "":
			ready = shared.False(v1.ConditionReady, v1.ReasonAccessesNotReady, f.implicitErr)
		case len(f.accessesPending) > 0:
			progressing = true
			ready = shared.False(v1.ConditionReady, v1.ReasonAccessesNotReady, "waiting for access Secrets: "+strings.Join(f.accessesPending, ", "))
		default:
			ready = shared.True(v1.ConditionReady, v1.ReasonReconciled, readyMessage(b, f))
		}
	}
	add(ready)
	if progressing {
		add(shared.True(v1.ConditionReconciling, v1.ReasonProgressing, ready.Message))
	} else {
		add(shared.False(v1.ConditionReconciling, v1.ReasonAsExpected, "no work in progress"))
	}
	return out
}

func reached(f *facts) string {
	if f.provisioned || f.drift != nil || f.accessDenied != nil || f.backendErr != nil {
		return " and reachable"
	}
	return ""
}

func resourceOf(b *v1.Buckety, f *facts) string {
	if f.resourceName != "" {
		return f.resourceName
	}
	return b.Status.BackendResourceName
}

func provenanceWord(b *v1.Buckety) string {
	if b.Status.Provenance == v1.ProvenanceAdopted {
		return "adopted"
	}
	return "created"
}

func readyMessage(b *v1.Buckety, f *facts) string {
	msg := fmt.Sprintf("%s on backend %s is in sync", b.Status.BackendResourceName, b.Status.Backend)
	if n := len(f.unscoped); n > 0 || f.accessesChecked {
		msg += "; every access Secret is in sync"
	}
	return msg
}

func shortfallMessage(f *facts) string {
	msgs := make([]string, len(f.shortfalls))
	for i, s := range f.shortfalls {
		msgs[i] = s.Parameter + ": " + s.Message
	}
	return strings.Join(msgs, "; ")
}
