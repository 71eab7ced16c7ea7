package buckety

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/status"
)

// statusFields tells status.Finish where a Buckety keeps its status.
var statusFields = status.StatusFields[*v1.Buckety, v1.BucketyStatus]{
	Status:             func(b *v1.Buckety) *v1.BucketyStatus { return &b.Status },
	Conditions:         func(s *v1.BucketyStatus) *[]metav1.Condition { return &s.Conditions },
	ObservedGeneration: func(s *v1.BucketyStatus) *int64 { return &s.ObservedGeneration },
}

// conditions derives every condition of a Buckety from the facts of one
// reconcile, one small function per type (v1.BucketyConditions declares the
// set). It is the only place Buckety conditions are decided, so the status a
// user sees can be read off this file.
func conditions(b *v1.Buckety, f *facts) []status.Cond {
	r := readiness(b, f)
	return []status.Cond{
		backendUnavailable(f),
		driverVersionIncompatible(b, f),
		parameterDrift(f),
		degraded(f),
		blockedByAccesses(f),
		scopingNotImplemented(f),
		quotaWarning(b, f.quota),
		draining(b, f),
		provisioned(b, f, r),
		r.ready,
		reconciling(r),
	}
}

func backendUnavailable(f *facts) status.Cond {
	const t = v1.ConditionBackendUnavailable
	switch {
	case f.problem != nil && f.problem.Condition == t:
		return status.True(t, f.problem.Reason, f.problem.Message)
	case f.Unavailable != nil:
		return status.True(t, v1.ReasonBackendUnreachable, f.Unavailable.Error())
	case f.problem != nil:
		return status.Unknown(t, v1.ReasonPaused, "not checked: "+f.problem.Message)
	}
	return status.False(t, v1.ReasonAsExpected, "the backend is configured"+reached(f))
}

func driverVersionIncompatible(b *v1.Buckety, f *facts) status.Cond {
	const t = v1.ConditionDriverVersionIncompatible
	switch {
	case f.problem != nil && f.problem.Condition == t:
		return status.True(t, f.problem.Reason, f.problem.Message)
	case f.problem != nil:
		return status.Unknown(t, v1.ReasonPaused, "not checked: the backend is unavailable")
	}
	return status.False(t, v1.ReasonAsExpected, fmt.Sprintf("driver %s %s is compatible", b.Status.Driver, b.Status.DriverBuildVersion))
}

func parameterDrift(f *facts) status.Cond {
	const t = v1.ConditionParameterDrift
	switch {
	case f.drift != nil:
		return status.True(t, v1.ReasonDriftUnrepairable, f.drift.Error())
	case f.provisioned:
		return status.False(t, v1.ReasonAsExpected, "the backend resource matches spec.parameters")
	}
	return status.Unknown(t, v1.ReasonNotDetermined, "the backend resource was not compared in this reconcile")
}

func degraded(f *facts) status.Cond {
	const t = v1.ConditionDegraded
	switch {
	case len(f.shortfalls) > 0:
		return status.True(t, v1.ReasonParameterNotApplied, shortfallMessage(f))
	case f.ownerRecordsUnavailable != "" && f.provisioned:
		return status.True(t, v1.ReasonOwnerRecordsUnavailable, f.ownerRecordsUnavailable)
	case f.provisioned:
		return status.False(t, v1.ReasonAsExpected, "every parameter is applied")
	}
	return status.Unknown(t, v1.ReasonNotDetermined, "the backend resource was not compared in this reconcile")
}

func blockedByAccesses(f *facts) status.Cond {
	const t = v1.ConditionBlockedByAccesses
	if len(f.blockedBy) > 0 {
		return status.True(t, v1.ReasonAccessesExist, "deletion waits for these BucketyAccess objects to be deleted (they are not deleted for you): "+strings.Join(f.blockedBy, ", "))
	}
	return status.False(t, v1.ReasonAsExpected, "no access blocks deletion")
}

func scopingNotImplemented(f *facts) status.Cond {
	const t = v1.ConditionScopingNotImplemented
	switch {
	case f.shared > 0:
		// Not named here: the message would change with every access
		// granted, and a Buckety that an access over 128 names would be
		// written 128 times for one grant. Each access says so in its own
		// condition, and `kubectl get bucketyaccess -o wide` shows it.
		return status.True(t, v1.ReasonCredentialsNotScoped, "accesses of this Buckety hold credentials broader than their role or parameters; each says why in its own ScopingNotImplemented condition (column Not-Scoped of kubectl get bucketyaccess -o wide)")
	case f.accessesChecked:
		return status.False(t, v1.ReasonAsExpected, "every access's credentials match its role")
	}
	return status.Unknown(t, v1.ReasonNotDetermined, "accesses were not checked in this reconcile")
}

// provisioned is True once the backend resource exists (drift aside);
// otherwise it carries Ready's reason, since the same link failed.
func provisioned(b *v1.Buckety, f *facts, r readinessResult) status.Cond {
	const t = v1.ConditionProvisioned
	switch {
	case r.provisioned && f.drift != nil:
		return status.True(t, v1.ReasonDriftUnrepairable, "the backend resource exists, with drift the driver will not repair: "+f.drift.Error())
	case r.provisioned:
		return status.True(t, v1.ReasonReconciled, fmt.Sprintf("%s %s on backend %s", provenanceWord(b), b.Status.BackendResourceName, b.Status.Backend))
	}
	return status.False(t, r.ready.Reason, r.ready.Message)
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
	ready status.Cond
	// progressing: the controller is still working (Reconciling=True).
	progressing bool
	// provisioned: the backend resource exists (every link before the
	// access links passed).
	provisioned bool
}

// link is one step of the Ready chain: it returns a failing result, or nil
// to pass on to the next link.
type link func(b *v1.Buckety, f *facts) *readinessResult

// readyChain is checked in order; the first link that fails decides Ready.
// Before provisionedLinks the backend resource is not usable; after them it
// exists and Ready waits only on parameters applied and access Secrets.
var readyChain = []link{
	deletingLink, problemLink, templateLink, nameLink, parametersLink, conflictLink, limitLink, budgetLink, ownerLink, replacedLink, handedOverLink, adoptionLink, adoptionDriftLink, settlingLink,
	locationLink, backendFailureLink, claimLink, notYetProvisionedLink,
	// The backend resource exists from here on.
	driftLink, shortfallLink, implicitAccessLink, pendingAccessesLink,
}

// readiness runs the Ready chain.
func readiness(b *v1.Buckety, f *facts) readinessResult {
	for _, l := range readyChain {
		if r := l(b, f); r != nil {
			return *r
		}
	}
	return readinessResult{ready: status.True(v1.ConditionReady, v1.ReasonReconciled, readyMessage(b, f)), provisioned: true}
}

func notReady(reason, msg string, progressing bool) *readinessResult {
	return &readinessResult{ready: status.False(v1.ConditionReady, reason, msg), progressing: progressing}
}

func existsNotReady(reason, msg string, progressing bool) *readinessResult {
	r := notReady(reason, msg, progressing)
	r.provisioned = true
	return r
}

func deletingLink(_ *v1.Buckety, f *facts) *readinessResult {
	if !f.deleting {
		return nil
	}
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
	return notReady(v1.ReasonDeleting, msg, true)
}

func problemLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.problem == nil {
		return nil
	}
	return notReady(f.problem.Reason, f.problem.Message, false)
}

func templateLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.templateErr == nil {
		return nil
	}
	return notReady(v1.ReasonTemplateUnresolvable, "spec.name: "+f.templateErr.Error(), false)
}

func nameLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.invalidName == "" {
		return nil
	}
	return notReady(v1.ReasonInvalidName, f.invalidName, false)
}

func parametersLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.invalidParams == "" {
		return nil
	}
	return notReady(v1.ReasonInvalidParameters, f.invalidParams, false)
}

func conflictLink(b *v1.Buckety, f *facts) *readinessResult {
	if f.conflict == nil {
		return nil
	}
	return notReady(v1.ReasonNameConflict, conflictMessage(resourceOf(b, f), b.Spec.Backend, f.conflict), false)
}

// limitLink: the namespace is at its limit on the backend.
func limitLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.limitExceeded == "" {
		return nil
	}
	return notReady(v1.ReasonLimitExceeded, f.limitExceeded, false)
}

// budgetLink: the namespace's budget has no room for this Buckety (a new
// one is not created) or for its growth (an existing one keeps what it
// has).
func budgetLink(b *v1.Buckety, f *facts) *readinessResult {
	if f.budgetExceeded == "" {
		return nil
	}
	if f.claim != nil && b.Status.Provenance != "" {
		return existsNotReady(v1.ReasonBudgetExceeded, f.budgetExceeded+"; the resource keeps its current parameters", false)
	}
	return notReady(v1.ReasonBudgetExceeded, f.budgetExceeded+"; this Buckety waits", false)
}

// locationLink: a parameter that selects where the resource lives was
// changed after the resource was claimed, or differs from where a
// resource retained from a deleted Buckety lives.
func locationLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.locationChanged == "" {
		return nil
	}
	if f.locationRetained {
		return notReady(v1.ReasonInvalidParameters, f.locationChanged+"; it selects where the resource lives, and a retained resource is taken over only where it lives: set it as the resource was made, or choose another spec.name (nothing is asked of the backend while they differ)", false)
	}
	return notReady(v1.ReasonInvalidParameters, f.locationChanged+"; it selects where the resource lives and cannot change: put it back (nothing is written, and deletion uses the claimed value, while they differ)", false)
}

func adoptionLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.adoptionRefused == "" {
		return nil
	}
	hint := f.adoptionHint
	if hint == "" {
		hint = "buckety does not claim a resource that already holds content: empty it, or choose another spec.name"
	}
	return notReady(v1.ReasonAdoptionRefused, f.adoptionRefused+"; "+hint, false)
}

// ownerLink: the resource's owner record names another installation.
func ownerLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.ownedElsewhere == "" {
		return nil
	}
	if f.misnamed {
		return notReady(v1.ReasonInstallationMismatch, f.ownedElsewhere, false)
	}
	return notReady(v1.ReasonOwnedElsewhere, f.ownedElsewhere, false)
}

// replacedLink: the resource under the name is not the one the Buckety
// held (recordGone).
func replacedLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.recordGone == "" {
		return nil
	}
	return notReady(v1.ReasonResourceReplaced, f.recordGone, false)
}

// handedOverLink: the backend hands its resources over to another
// installation.
func handedOverLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.handedOver == "" {
		return nil
	}
	return notReady(v1.ReasonHandedOver, f.handedOver, false)
}

// adoptionDriftLink: an adoption the tenant asked for waits for the
// tenant, since the resource differs from spec.parameters and nothing is
// applied before the tenant agrees.
func adoptionDriftLink(b *v1.Buckety, f *facts) *readinessResult {
	if len(f.adoptionDrift) == 0 {
		return nil
	}
	accept := "or spec.adoption is AdoptAndConverge"
	if !f.adoptionCanConverge {
		accept = "(buckety converges a resource it did not create only when the backend allows adoption and spec.adoption is AdoptAndConverge; this backend does not)"
	}
	return notReady(v1.ReasonAdoptionDrift, fmt.Sprintf("%s on backend %s already exists and differs from spec.parameters; nothing is applied until they match %s; converging would: %s", resourceOf(b, f), b.Spec.Backend, accept, strings.Join(f.adoptionDrift, "; ")), false)
}

// settlingLink: an adoption waits for an unrecorded resource to stay
// unrecorded (settleUnrecorded).
func settlingLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.ownerSettling == "" {
		return nil
	}
	return notReady(v1.ReasonProgressing, f.ownerSettling, true)
}

// backendFailureLink: the backend was unreachable, refused buckety, or
// answered with an error.
func backendFailureLink(_ *v1.Buckety, f *facts) *readinessResult {
	reason, msg, progressing, ok := f.BackendFailure.Ready()
	if !ok {
		return nil
	}
	return notReady(reason, msg, progressing)
}

func claimLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.claimErr == nil {
		return nil
	}
	return notReady(v1.ReasonProgressing, "recording this Buckety's claim on the backend resource failed, retrying: "+f.claimErr.Error(), true)
}

func notYetProvisionedLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.provisioned || f.drift != nil {
		return nil
	}
	return notReady(v1.ReasonProgressing, "provisioning", true)
}

func driftLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.drift == nil {
		return nil
	}
	return existsNotReady(v1.ReasonDriftUnrepairable, f.drift.Error(), false)
}

func shortfallLink(_ *v1.Buckety, f *facts) *readinessResult {
	if len(f.shortfalls) == 0 {
		return nil
	}
	return existsNotReady(v1.ReasonParameterNotApplied, "the backend did not apply every requested parameter: "+shortfallMessage(f), false)
}

func implicitAccessLink(_ *v1.Buckety, f *facts) *readinessResult {
	if f.implicitErr == "" {
		return nil
	}
	return existsNotReady(v1.ReasonAccessesNotReady, f.implicitErr, false)
}

func pendingAccessesLink(_ *v1.Buckety, f *facts) *readinessResult {
	if len(f.accessesPending) == 0 {
		return nil
	}
	return existsNotReady(v1.ReasonAccessesNotReady, "waiting for access Secrets: "+strings.Join(f.accessesPending, ", "), true)
}

func reached(f *facts) string {
	if f.provisioned || f.drift != nil || f.AccessDenied != nil || f.Other != nil {
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
	if f.shared > 0 || f.accessesChecked {
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

// draining derives Draining from status.drain and the time of the pass:
// True while a drain runs (reason DrainStuck once it deleted nothing for
// its stuckAfter), False with the outcome of the last drain otherwise.
// Messages carry figures only as they change with progress, so a pass that
// deletes nothing does not rewrite the condition.
func draining(b *v1.Buckety, f *facts) status.Cond {
	const t = v1.ConditionDraining
	st := b.Status.Drain
	if st == nil {
		return status.False(t, v1.ReasonNoDrain, "no drain was requested (spec.drain)")
	}
	switch st.Phase {
	case v1.DrainPhaseDraining:
		terms := termsOf(b, nil)
		if f.drainTerms != nil {
			terms = *f.drainTerms
		}
		progress := drainProgress(b, st)
		if st.LastProgressTime != nil && !f.now.IsZero() && f.now.Sub(st.LastProgressTime.Time) >= terms.stuckAfter {
			msg := fmt.Sprintf("drain %q deleted nothing for %s or more (stuckAfter); %s", st.Request, terms.stuckAfter, progress)
			if st.Message != "" {
				msg += "; " + st.Message
			}
			return status.True(t, v1.ReasonDrainStuck, msg)
		}
		msg := fmt.Sprintf("drain %q: %s", st.Request, progress)
		if st.Message != "" {
			msg += "; " + st.Message
		}
		return status.True(t, v1.ReasonDraining, msg)
	case v1.DrainPhaseDrained:
		return status.False(t, v1.ReasonDrained, fmt.Sprintf("drain %q completed: deleted %s", st.Request, contentWords(b, st.Deleted)))
	case v1.DrainPhaseCancelled:
		return status.False(t, v1.ReasonDrainCancelled, fmt.Sprintf("drain %q %s", st.Request, st.Message))
	}
	return status.False(t, v1.ReasonDrainRefused, fmt.Sprintf("drain %q: %s", st.Request, st.Message))
}

// drainProgress tells what a running drain deleted and what is left.
func drainProgress(b *v1.Buckety, st *v1.DrainStatus) string {
	msg := "deleted " + contentWords(b, st.Deleted)
	if st.Initial != nil && st.Initial.Objects != nil {
		msg += fmt.Sprintf(" of %d at the start", *st.Initial.Objects)
	}
	if st.Current != nil && st.Current.Objects != nil {
		msg += fmt.Sprintf("; %d left after the last pass", *st.Current.Objects)
	}
	return msg
}
