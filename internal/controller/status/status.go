package status

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
)

// StatusFields tells Finish where objects of one kind, O, keep their
// status, of type S. Finish reads the status before and after through the
// same function, so it always compares and patches the object's own
// status: a status of another kind, or of another object, cannot be passed
// (it does not compile), where a pointer of the wrong type would have been
// compared, found unchanged, and never patched.
type StatusFields[O ctrl.Object, S any] struct {
	// Status points at obj's status.
	Status func(obj O) *S
	// Conditions and ObservedGeneration point into a status.
	Conditions         func(s *S) *[]metav1.Condition
	ObservedGeneration func(s *S) *int64
}

// Outcome is what one reconcile of an object decided, for Finish.
type Outcome struct {
	// Derived is every condition, as the kind's status.go derived it.
	Derived []Cond
	// Failure classifies the reconcile for the retry backoff; Deleting
	// objects are not backed off (deletion paces itself).
	Failure  retry.Failure
	Deleting bool
	// Hold computes the status but does not write it: the caller keeps it
	// (Held) and writes it with a later pass.
	Hold bool
	// Written makes the status write this controller's own (Written.Write)
	// and asks for a rerun when a change of someone else's came during
	// this pass's writes (Written.Rerun); nil: neither.
	Written *Written
}

// Finish is the deferred tail of every reconcile, the one place status is
// written: it applies the derived conditions to obj's status, advances
// observedGeneration when Ready is True, picks the retry delay, and
// patches the status subresource when obj's status differs from orig's
// (orig is obj as read at the start of the reconcile; the status is
// compared after the conditions are applied, and only the status, so a
// finalizer patch alone does not cause a status write). On error the
// result carries no delay: the error's rate limiter decides.
func Finish[O ctrl.Object, S any](ctx context.Context, c ctrl.Client, backoff *retry.Backoff, f StatusFields[O, S], obj, orig O, o Outcome, res reconcile.Result, reterr error) (reconcile.Result, error) {
	status := f.Status(obj)
	conditions := f.Conditions(status)
	Apply(conditions, obj.GetGeneration(), o.Derived)
	keepRecordedTimes(*conditions, *f.Conditions(f.Status(orig)))
	if meta.IsStatusConditionTrue(*conditions, v1.ConditionReady) {
		*f.ObservedGeneration(status) = obj.GetGeneration()
	}
	if reterr == nil && !o.Deleting && backoff != nil {
		res = backoff.Retry(types.UID(obj.GetUID()), o.Failure, res)
	}
	if !o.Hold && !f.equal(f.Status(orig), status) {
		if err := o.Written.Write(obj, func() error { return c.Status().Patch(ctx, obj, ctrl.MergeFrom(orig)) }); err != nil && !apierrors.IsNotFound(err) {
			reterr = errors.Join(reterr, fmt.Errorf("patch status: %w", err))
		}
	}
	if reterr != nil {
		res = reconcile.Result{}
	} else if o.Written.Rerun(obj) && (res.RequeueAfter == 0 || res.RequeueAfter > RaceRetry) {
		// A change of someone else's came during this pass's writes
		// and its event was dropped with theirs (Written.Write).
		res = reconcile.Result{RequeueAfter: RaceRetry}
	}
	return res, reterr
}

// equal is equality.Semantic.DeepEqual(a, b), with the conditions compared
// first by conditionsEqual: on a settled pass (every pass of a cold start)
// the statuses are equal, and the reflective comparison of a list of ten
// conditions, each transition time through a reflect.Call of the
// semantic equality's function, was 6 % of a cold start's CPU at 10,000
// Bucketies. The rest of the status is compared with the conditions set
// aside for the call (a and b belong to the pass: obj and its copy).
func (f StatusFields[O, S]) equal(a, b *S) bool {
	ca, cb := f.Conditions(a), f.Conditions(b)
	if !conditionsEqual(*ca, *cb) {
		return false
	}
	ka, kb := *ca, *cb
	*ca, *cb = nil, nil
	eq := equality.Semantic.DeepEqual(a, b)
	*ca, *cb = ka, kb
	return eq
}

// conditionsEqual is equality.Semantic.DeepEqual for condition lists:
// every field of metav1.Condition (TestConditionsEqualIsSemanticDeepEqual
// fails when it gains one), the transition times as instants, nil equal
// to empty.
func conditionsEqual(a, b []metav1.Condition) bool {
	if len(a) != len(b) { // nil and empty are equal, as for DeepEqual

		return false
	}
	for i := range a {
		x, y := &a[i], &b[i]
		if x.Type != y.Type || x.Status != y.Status || x.ObservedGeneration != y.ObservedGeneration ||
			x.Reason != y.Reason || x.Message != y.Message || !x.LastTransitionTime.Equal(&y.LastTransitionTime) {
			return false
		}
	}
	return true
}

// keepRecordedTimes gives each condition of conds whose status is the one
// recorded (in orig, as read) the recorded transition time: a pass that
// started from a status it held in memory (buckety.Held), not the
// recorded one, and came back to the recorded status would otherwise
// stamp a transition the object never showed, and patch a status whose
// only change is that time, on every retry of a failure.
func keepRecordedTimes(conds, orig []metav1.Condition) {
	for i := range conds {
		if o := meta.FindStatusCondition(orig, conds[i].Type); o != nil && o.Status == conds[i].Status {
			conds[i].LastTransitionTime = o.LastTransitionTime
		}
	}
}
