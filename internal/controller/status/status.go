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
	if !o.Hold && !equality.Semantic.DeepEqual(f.Status(orig), status) {
		if err := c.Status().Patch(ctx, obj, ctrl.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
			reterr = errors.Join(reterr, fmt.Errorf("patch status: %w", err))
		}
	}
	if reterr != nil {
		res = reconcile.Result{}
	}
	return res, reterr
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
