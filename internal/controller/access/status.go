package access

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/status"
)

// statusFields tells status.Finish where a BucketyAccess keeps its status.
var statusFields = status.StatusFields[*v1.BucketyAccess, v1.BucketyAccessStatus]{
	Status:             func(a *v1.BucketyAccess) *v1.BucketyAccessStatus { return &a.Status },
	Conditions:         func(s *v1.BucketyAccessStatus) *[]metav1.Condition { return &s.Conditions },
	ObservedGeneration: func(s *v1.BucketyAccessStatus) *int64 { return &s.ObservedGeneration },
}

// conditions derives every condition of a BucketyAccess from the facts of
// one reconcile, one small function per type (v1.BucketyAccessConditions
// declares the set); it is the only place they are decided.
func conditions(a *v1.BucketyAccess, f *facts) []status.Cond {
	r := readiness(a, f)
	return []status.Cond{
		backendUnavailable(f),
		driverVersionIncompatible(f),
		status.False(v1.ConditionParameterDrift, v1.ReasonNotApplicable, "an access has no backend parameters to drift"),
		status.False(v1.ConditionBlockedByAccesses, v1.ReasonNotApplicable, "an access is never blocked by accesses"),
		scopingNotImplemented(a, f),
		r.ready,
		reconciling(r),
	}
}

// waiting: the Buckety's backend resource is not usable, so the backend
// was not consulted.
func (f *facts) waiting() bool {
	return f.problem != nil || f.bucketyMissing || f.notShared != "" || f.bucketyWaiting != "" || f.limitExceeded != ""
}

func backendUnavailable(f *facts) status.Cond {
	const t = v1.ConditionBackendUnavailable
	switch {
	case f.problem != nil && f.problem.Condition == t:
		return status.True(t, f.problem.Reason, f.problem.Message)
	case f.Unavailable != nil:
		return status.True(t, v1.ReasonBackendUnreachable, f.Unavailable.Error())
	case f.nameTooLong != "":
		return status.Unknown(t, v1.ReasonPaused, "not checked: the access's name cannot label its Secret")
	case f.waiting():
		return status.Unknown(t, v1.ReasonPaused, "not checked: the Buckety's backend resource is not usable yet")
	}
	return status.False(t, v1.ReasonAsExpected, "the backend is configured")
}

func driverVersionIncompatible(f *facts) status.Cond {
	const t = v1.ConditionDriverVersionIncompatible
	switch {
	case f.problem != nil && f.problem.Condition == t:
		return status.True(t, f.problem.Reason, f.problem.Message)
	case f.waiting(), f.nameTooLong != "":
		return status.Unknown(t, v1.ReasonPaused, "not checked")
	}
	return status.False(t, v1.ReasonAsExpected, "the driver is compatible")
}

func scopingNotImplemented(a *v1.BucketyAccess, f *facts) status.Cond {
	const t = v1.ConditionScopingNotImplemented
	switch {
	case f.issuingUnavailable != "":
		return status.True(t, v1.ReasonScopingUnavailable, "no credential of its own can be issued now, and the backend's own are never handed out instead: "+f.issuingUnavailable)
	case f.keptOwn != "" && f.keptRole != "":
		return status.False(t, v1.ReasonCredentialKept, fmt.Sprintf("Secret %s keeps %s, a credential of the access's own, with the rights of role %s it was granted, not role %s the access names now: the backend no longer issues credentials per access, so it is neither changed, rotated nor repaired, and is revoked when the access is deleted", a.Spec.CredentialsSecretName, f.keptOwn, f.keptRole, roleOf(a)))
	case f.keptOwn != "":
		return status.False(t, v1.ReasonCredentialKept, fmt.Sprintf("Secret %s keeps %s, a credential of the access's own, with the rights of its role; the backend no longer issues them, so it is neither rotated nor repaired, and is revoked when the access is deleted", a.Spec.CredentialsSecretName, f.keptOwn))
	case f.perAccess == nil:
		return status.Unknown(t, v1.ReasonNotDetermined, "credentials were not issued in this reconcile")
	case !*f.perAccess:
		return status.True(t, v1.ReasonCredentialsNotScoped, fmt.Sprintf("role %s and the access parameters are not enforced: %s", roleOf(a), f.sharedWhy))
	}
	return status.False(t, v1.ReasonAsExpected, "the credentials are this access's own, with the rights of its role")
}

func reconciling(r readinessResult) status.Cond {
	const t = v1.ConditionReconciling
	if r.progressing {
		return status.True(t, v1.ReasonProgressing, r.ready.Message)
	}
	return status.False(t, v1.ReasonAsExpected, "no work in progress")
}

// readinessResult is where the Ready chain stopped.
type readinessResult struct {
	ready       status.Cond
	progressing bool
}

// link is one step of the Ready chain: a failing result, or nil to pass.
type link func(a *v1.BucketyAccess, f *facts) *readinessResult

// readyChain is checked in order; the first failing link decides Ready.
var readyChain = []link{
	deletingLink, nameTooLongLink, bucketyMissingLink, notSharedLink, problemLink, bucketyWaitingLink, limitLink, invalidLink,
	backendFailureLink, issuingUnavailableLink, principalConflictLink, secretConflictLink, recordsPendingLink, reissuePacedLink, notWrittenLink,
}

func readiness(a *v1.BucketyAccess, f *facts) readinessResult {
	for _, l := range readyChain {
		if r := l(a, f); r != nil {
			return *r
		}
	}
	return readinessResult{ready: status.True(v1.ConditionReady, v1.ReasonReconciled, fmt.Sprintf("Secret %s holds the credentials for %s", f.secretName, holdsFor(a, f)))}
}

func notReady(reason, msg string, progressing bool) *readinessResult {
	return &readinessResult{ready: status.False(v1.ConditionReady, reason, msg), progressing: progressing}
}

func deletingLink(a *v1.BucketyAccess, f *facts) *readinessResult {
	if !f.deleting {
		return nil
	}
	if f.revokeWaiting != "" {
		return notReady(v1.ReasonDeleting, f.revokeWaiting, true)
	}
	return notReady(v1.ReasonDeleting, "revoking and deleting Secret "+a.Spec.CredentialsSecretName, true)
}

// nameTooLongLink: the access's name cannot label its Secret; it never
// gets one, and nothing is granted.
func nameTooLongLink(_ *v1.BucketyAccess, f *facts) *readinessResult {
	if f.nameTooLong == "" {
		return nil
	}
	return notReady(v1.ReasonInvalidAccess, f.nameTooLong, false)
}

func bucketyMissingLink(a *v1.BucketyAccess, f *facts) *readinessResult {
	if !f.bucketyMissing {
		return nil
	}
	missing := f.missing
	if missing == "" {
		missing = a.Spec.BucketyRef.Name
	}
	return notReady(v1.ReasonBucketyNotFound, fmt.Sprintf("Buckety %s does not exist in namespace %s", missing, a.Namespace), false)
}

// notSharedLink: the Buckety of another namespace does not share with
// this access (or no longer does); what it held is taken back.
func notSharedLink(a *v1.BucketyAccess, f *facts) *readinessResult {
	if f.notShared == "" {
		return nil
	}
	if !f.withdrawn {
		return notReady(v1.ReasonNotShared, f.notShared+"; revoking the access's credentials and deleting Secret "+a.Spec.CredentialsSecretName, true)
	}
	return notReady(v1.ReasonNotShared, f.notShared+"; the access holds no credential and no Secret", false)
}

func problemLink(_ *v1.BucketyAccess, f *facts) *readinessResult {
	if f.problem == nil {
		return nil
	}
	return notReady(f.problem.Reason, f.problem.Message, false)
}

func bucketyWaitingLink(_ *v1.BucketyAccess, f *facts) *readinessResult {
	if f.bucketyWaiting == "" {
		return nil
	}
	return notReady(v1.ReasonBucketyNotReady, f.bucketyWaiting, true)
}

// limitLink: the namespace or the Buckety is at its backend's access
// limit; nothing was granted.
func limitLink(_ *v1.BucketyAccess, f *facts) *readinessResult {
	if f.limitExceeded == "" {
		return nil
	}
	return notReady(v1.ReasonLimitExceeded, f.limitExceeded, false)
}

func invalidLink(_ *v1.BucketyAccess, f *facts) *readinessResult {
	if f.invalid == "" {
		return nil
	}
	return notReady(v1.ReasonInvalidAccess, f.invalid, false)
}

// backendFailureLink: the backend was unreachable, refused buckety, or
// answered with an error.
func backendFailureLink(_ *v1.BucketyAccess, f *facts) *readinessResult {
	reason, msg, progressing, ok := f.BackendFailure.Ready()
	if !ok {
		return nil
	}
	return notReady(reason, msg, progressing)
}

// issuingUnavailableLink: the access waits for the backend to issue
// credentials per access again; its Secret, if any, is kept as it is.
func issuingUnavailableLink(a *v1.BucketyAccess, f *facts) *readinessResult {
	if f.issuingUnavailable == "" {
		return nil
	}
	return notReady(v1.ReasonScopingUnavailable, fmt.Sprintf("Secret %s is kept as it is, and nothing is granted until the backend issues a credential per access again: %s", a.Spec.CredentialsSecretName, f.issuingUnavailable), false)
}

func principalConflictLink(_ *v1.BucketyAccess, f *facts) *readinessResult {
	if f.principalConflict == "" {
		return nil
	}
	return notReady(v1.ReasonPrincipalConflict, f.principalConflict, false)
}

func secretConflictLink(_ *v1.BucketyAccess, f *facts) *readinessResult {
	if f.secretConflict == "" {
		return nil
	}
	return notReady(v1.ReasonSecretConflict, f.secretConflict, false)
}

func recordsPendingLink(_ *v1.BucketyAccess, f *facts) *readinessResult {
	if f.recordsPending == "" {
		return nil
	}
	return notReady(v1.ReasonProgressing, f.recordsPending, true)
}

func reissuePacedLink(_ *v1.BucketyAccess, f *facts) *readinessResult {
	if f.reissuePaced == "" {
		return nil
	}
	return notReady(v1.ReasonProgressing, f.reissuePaced, true)
}

func notWrittenLink(a *v1.BucketyAccess, f *facts) *readinessResult {
	if f.synced {
		return nil
	}
	return notReady(v1.ReasonProgressing, "writing Secret "+a.Spec.CredentialsSecretName, true)
}

// roleOf is a's role, ReadWrite when it names none.
func roleOf(a *v1.BucketyAccess) v1.Role {
	if a.Spec.Role == "" {
		return v1.RoleReadWrite
	}
	return a.Spec.Role
}
