package access

import (
	"fmt"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/shared"
)

// conditions derives every condition of a BucketyAccess from the facts of
// one reconcile; it is the only place they are decided.
func conditions(a *v1.BucketyAccess, f *facts) []shared.Cond {
	var out []shared.Cond
	add := func(c shared.Cond) { out = append(out, c) }

	switch {
	case f.problem != nil && f.problem.Condition == v1.ConditionBackendUnavailable:
		add(shared.True(v1.ConditionBackendUnavailable, f.problem.Reason, f.problem.Message))
	case f.unavailable != nil:
		add(shared.True(v1.ConditionBackendUnavailable, v1.ReasonBackendUnreachable, f.unavailable.Error()))
	case f.problem != nil || f.bucketyMissing || f.bucketyWaiting != "":
		add(shared.Unknown(v1.ConditionBackendUnavailable, v1.ReasonPaused, "not checked: the Buckety's backend resource is not usable yet"))
	default:
		add(shared.False(v1.ConditionBackendUnavailable, v1.ReasonAsExpected, "the backend is configured"))
	}
	switch {
	case f.problem != nil && f.problem.Condition == v1.ConditionDriverVersionIncompatible:
		add(shared.True(v1.ConditionDriverVersionIncompatible, f.problem.Reason, f.problem.Message))
	case f.problem != nil || f.bucketyMissing || f.bucketyWaiting != "":
		add(shared.Unknown(v1.ConditionDriverVersionIncompatible, v1.ReasonPaused, "not checked"))
	default:
		add(shared.False(v1.ConditionDriverVersionIncompatible, v1.ReasonAsExpected, "the driver is compatible"))
	}
	add(shared.False(v1.ConditionParameterDrift, v1.ReasonNotApplicable, "an access has no backend parameters to drift"))
	add(shared.False(v1.ConditionBlockedByAccesses, v1.ReasonNotApplicable, "an access is never blocked by accesses"))
	switch {
	case f.scoped == nil:
		add(shared.Unknown(v1.ConditionScopingNotImplemented, v1.ReasonNotDetermined, "credentials were not issued in this reconcile"))
	case !*f.scoped:
		add(shared.True(v1.ConditionScopingNotImplemented, v1.ReasonCredentialsNotScoped, fmt.Sprintf("role %s and the access parameters are not enforced: v1alpha1 issues the backend's shared credentials", roleOf(a))))
	default:
		add(shared.False(v1.ConditionScopingNotImplemented, v1.ReasonAsExpected, "the credentials match the role"))
	}

	var ready shared.Cond
	progressing := false
	switch {
	case f.deleting:
		progressing = true
		ready = shared.False(v1.ConditionReady, v1.ReasonDeleting, "revoking and deleting Secret "+a.Spec.CredentialsSecretName)
	case f.bucketyMissing:
		ready = shared.False(v1.ConditionReady, v1.ReasonBucketyNotFound, fmt.Sprintf("Buckety %s does not exist in namespace %s", a.Spec.BucketyRef.Name, a.Namespace))
	case f.problem != nil:
		ready = shared.False(v1.ConditionReady, f.problem.Reason, f.problem.Message)
	case f.bucketyWaiting != "":
		progressing = true
		ready = shared.False(v1.ConditionReady, v1.ReasonBucketyNotReady, f.bucketyWaiting)
	case f.invalid != "":
		ready = shared.False(v1.ConditionReady, v1.ReasonInvalidAccess, f.invalid)
	case f.unavailable != nil:
		progressing = true
		ready = shared.False(v1.ConditionReady, v1.ReasonBackendUnreachable, f.unavailable.Error())
	case f.accessDenied != nil:
		ready = shared.False(v1.ConditionReady, v1.ReasonBackendAccessDenied, f.accessDenied.Error())
	case f.backendErr != nil:
		progressing = true
		ready = shared.False(v1.ConditionReady, v1.ReasonBackendError, f.backendErr.Error())
	case f.secretConflict != "":
		ready = shared.False(v1.ConditionReady, v1.ReasonSecretConflict, f.secretConflict)
	case f.synced:
		ready = shared.True(v1.ConditionReady, v1.ReasonReconciled, fmt.Sprintf("Secret %s holds the credentials for Buckety %s", f.secretName, a.Spec.BucketyRef.Name))
	default:
		progressing = true
		ready = shared.False(v1.ConditionReady, v1.ReasonProgressing, "writing Secret "+a.Spec.CredentialsSecretName)
	}
	add(ready)
	if progressing {
		add(shared.True(v1.ConditionReconciling, v1.ReasonProgressing, ready.Message))
	} else {
		add(shared.False(v1.ConditionReconciling, v1.ReasonAsExpected, "no work in progress"))
	}
	return out
}

func roleOf(a *v1.BucketyAccess) string {
	if a.Spec.Role == "" {
		return string(v1.RoleReadWrite)
	}
	return string(a.Spec.Role)
}
