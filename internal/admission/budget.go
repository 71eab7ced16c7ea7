package admission

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/budget"
	"github.com/Yolean/buckety-controller/internal/config"
)

// countedAnnotation carries, on the webhook cache's stripped copy of a
// Buckety (never on the API server), what its parameters count against
// its namespace's budget: "partitions,diskBytes,quotaBytes". The cache
// keeps no parameters, so the figure is computed once, as the object is
// stored.
const countedAnnotation = "budget.buckety.yolean.se/counted"

// StripBucketyCounting is the webhook cache's transform of a Buckety when
// some backend budgets partitions or bytes: StripBuckety, plus what the
// Buckety counts against that budget (countedAnnotation) on backends that
// have one.
func StripBucketyCounting(cfg *config.Config) toolscache.TransformFunc {
	var transform toolscache.TransformFunc
	transform = func(obj any) (any, error) {
		if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			o, err := transform(d.Obj)
			d.Obj = o
			return d, err
		}
		b, ok := obj.(*v1.Buckety)
		if !ok {
			return obj, nil
		}
		out, err := StripBuckety(b)
		if err != nil {
			return out, err
		}
		be, ok := cfg.Backend(b.Spec.Backend)
		if !ok || !be.MayBudget() {
			return out, nil
		}
		c := budget.Counted(budget.Footprint(be, budget.EffectiveParameters(be, b)))
		s := out.(*v1.Buckety)
		s.Annotations = map[string]string{countedAnnotation: fmt.Sprintf("%d,%d,%d", c.Partitions, c.DiskBytes, c.QuotaBytes)}
		return s, nil
	}
	return transform
}

// counted reads countedAnnotation back.
func counted(b *v1.Buckety) v1.Budgeted {
	parts := strings.Split(b.Annotations[countedAnnotation], ",")
	if len(parts) != 3 {
		return v1.Budgeted{}
	}
	var n [3]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return v1.Budgeted{} // written by StripBucketyCounting; never malformed
		}
		n[i] = v
	}
	return v1.Budgeted{Partitions: n[0], DiskBytes: n[1], QuotaBytes: n[2]}
}

// BudgetCounter sums what the Bucketies of a namespace on a backend count
// against its budget, leaving out the Buckety named except.
type BudgetCounter func(ctx context.Context, namespace, backend, except string) (v1.Budgeted, error)

// CacheBudgetCounter sums from a cache filled through StripBucketyCounting.
func CacheBudgetCounter(r client.Reader) BudgetCounter {
	return func(ctx context.Context, ns, backend, except string) (v1.Budgeted, error) {
		var list v1.BucketyList
		if err := r.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return v1.Budgeted{}, err
		}
		var sum v1.Budgeted
		for i := range list.Items {
			b := &list.Items[i]
			if b.Spec.Backend != backend || b.Name == except || !b.DeletionTimestamp.IsZero() {
				continue
			}
			sum = budget.Add(sum, counted(b))
		}
		return sum, nil
	}
}

// WithBudgetCounter sets how a namespace's use is summed against the
// backend's partition and byte budgets; without one those budgets are
// left to the controller (unbounded resources are refused either way).
func (v *Validators) WithBudgetCounter(c BudgetCounter) *Validators {
	v.budget = c
	return v
}

// checkBudget refuses a Buckety that is unbounded where its backend
// budgets, or that would take its namespace past the budget (a new one,
// or one that grows: old holds the previous parameters on update, nil on
// create). The controller checks again from its claims.
func (v *Validators) checkBudget(ctx context.Context, p *field.Path, b *config.Backend, ns, name string, old, new map[string]string) field.ErrorList {
	if !b.Limits.HasByteBudget() {
		return nil
	}
	asked := budget.Footprint(b, new)
	if errs := budget.Unbounded(p.Child("parameters"), b, asked); len(errs) > 0 && (old == nil || len(budget.Unbounded(p.Child("parameters"), b, budget.Footprint(b, old))) == 0) {
		// Unbounded is refused on create, and when an update makes it so;
		// a resource unbounded since before the budget keeps its other edits.
		return errs
	}
	if v.budget == nil {
		return nil
	}
	var had v1.Budgeted
	counted := budget.Counted(asked)
	if old != nil {
		had = budget.Counted(budget.Footprint(b, old))
		counted = budget.Kept(asked, counted, had)
	}
	others, err := v.budget(ctx, ns, b.Name, name)
	if err != nil {
		return nil // the controller checks from its claims
	}
	if msg := budget.Exceeded(b, ns, others, counted, had); msg != "" {
		return field.ErrorList{field.Forbidden(p.Child("parameters").Key(budget.ExceededParameter(b, others, counted, had, old, new)), msg)}
	}
	return nil
}
