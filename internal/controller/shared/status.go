package shared

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
)

// Outcome is what one reconcile of an object decided, for Finish.
type Outcome struct {
	// Conditions and ObservedGeneration point into the object's status.
	Conditions         *[]metav1.Condition
	ObservedGeneration *int64
	// Derived is every condition, as the kind's status.go derived it.
	Derived []Cond
	// Failure classifies the reconcile for the retry backoff; Deleting
	// objects are not backed off (deletion paces itself).
	Failure  Failure
	Deleting bool
}

// Finish is the deferred tail of every reconcile, the one place status is
// written: it applies the derived conditions, advances observedGeneration
// when Ready is True, picks the retry delay, and patches the status
// subresource when *status changed from *statusBefore (pointers: the
// status is compared after the conditions are applied, and only the status,
// so a finalizer patch alone does not cause a status write). On error the
// result carries no delay: the error's rate limiter decides.
func Finish(ctx context.Context, c ctrl.Client, backoff *Backoff, obj, orig ctrl.Object, statusBefore, status any, o Outcome, res reconcile.Result, reterr error) (reconcile.Result, error) {
	Apply(o.Conditions, obj.GetGeneration(), o.Derived)
	if meta.IsStatusConditionTrue(*o.Conditions, v1.ConditionReady) {
		*o.ObservedGeneration = obj.GetGeneration()
	}
	if reterr == nil && !o.Deleting && backoff != nil {
		res = backoff.Retry(types.UID(obj.GetUID()), o.Failure, res)
	}
	if !equality.Semantic.DeepEqual(statusBefore, status) {
		if err := c.Status().Patch(ctx, obj, ctrl.MergeFrom(orig)); err != nil && !apierrors.IsNotFound(err) {
			reterr = errors.Join(reterr, fmt.Errorf("patch status: %w", err))
		}
	}
	if reterr != nil {
		res = reconcile.Result{}
	}
	return res, reterr
}
