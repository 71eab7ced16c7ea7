package access

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
)

// LimitRetry is how soon an access waiting for its namespace's or its
// Buckety's access limit looks again: a deleted access frees a place, and
// nothing else wakes the next in line.
const LimitRetry = time.Minute

// withinLimits checks the backend's limits.accessesPerBuckety and
// limits.accessesPerNamespace before an access is granted for the first
// time. Accesses granted once (status.bucketyGeneration set) hold their
// place, even under a limit lowered later; the others of the namespace on
// the backend are taken oldest first (by creation, then name), each
// granted while its Buckety and the namespace are under their limits, so
// the answer is the same whichever pass runs first (the cache holds an
// access only after every access created before it). All is read from the
// cache.
func (r *Reconciler) withinLimits(ctx context.Context, a *v1.BucketyAccess, e *backends.Entry, f *facts) (bool, error) {
	l := e.Config.Limits
	if l == nil || (l.AccessesPerNamespace == 0 && l.AccessesPerBuckety == 0) || a.Status.BucketyGeneration != 0 {
		return true, nil
	}
	var list v1.BucketyAccessList
	// Counted, never written: the cache's own objects, not copies.
	if err := r.Client.List(ctx, &list, ctrl.InNamespace(a.Namespace), ctrl.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("count the accesses of namespace %s: %w", a.Namespace, err)
	}
	backendOf := map[string]string{a.Spec.BucketyRef.Name: e.Name}
	perBuckety, total := map[string]int{}, 0
	var waiting []*v1.BucketyAccess
	for i := range list.Items {
		o := &list.Items[i]
		if o.UID == a.UID || !o.DeletionTimestamp.IsZero() {
			continue
		}
		be, ok := backendOf[o.Spec.BucketyRef.Name]
		if !ok {
			be = r.backendOf(ctx, a.Namespace, o.Spec.BucketyRef.Name)
			backendOf[o.Spec.BucketyRef.Name] = be
		}
		switch {
		case be != e.Name:
		case o.Status.BucketyGeneration != 0:
			perBuckety[o.Spec.BucketyRef.Name]++
			total++
		case olderThan(o, a):
			waiting = append(waiting, o)
		}
	}
	fits := func(ref string) bool {
		return (l.AccessesPerBuckety == 0 || perBuckety[ref] < l.AccessesPerBuckety) && (l.AccessesPerNamespace == 0 || total < l.AccessesPerNamespace)
	}
	slices.SortFunc(waiting, func(x, y *v1.BucketyAccess) int {
		if olderThan(x, y) {
			return -1
		}
		return 1
	})
	for _, o := range waiting {
		if fits(o.Spec.BucketyRef.Name) {
			perBuckety[o.Spec.BucketyRef.Name]++
			total++
		}
	}
	ref := a.Spec.BucketyRef.Name
	switch {
	case l.AccessesPerBuckety > 0 && perBuckety[ref] >= l.AccessesPerBuckety:
		f.limitExceeded = fmt.Sprintf("Buckety %s already has %d BucketyAccesses, the most backend %s allows per Buckety (limits.accessesPerBuckety: %d in buckety-controller.yaml); this one gets no credential and no Secret until one of them is deleted", ref, perBuckety[ref], e.Name, l.AccessesPerBuckety)
	case l.AccessesPerNamespace > 0 && total >= l.AccessesPerNamespace:
		f.limitExceeded = fmt.Sprintf("namespace %s already has %d BucketyAccesses on backend %s, the most its limits allow (limits.accessesPerNamespace: %d in buckety-controller.yaml); this one gets no credential and no Secret until one of them is deleted", a.Namespace, total, e.Name, l.AccessesPerNamespace)
	default:
		return true, nil
	}
	return false, nil
}

// olderThan orders accesses by creation, then name: the order in which
// limits grant them.
func olderThan(o, a *v1.BucketyAccess) bool {
	if !o.CreationTimestamp.Equal(&a.CreationTimestamp) {
		return o.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return o.Name < a.Name
}

// backendOf is the backend of Buckety ns/name as the cache shows it, ""
// when it is not there.
func (r *Reconciler) backendOf(ctx context.Context, ns, name string) string {
	b := &v1.Buckety{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
		return ""
	}
	if b.Status.Backend != "" {
		return b.Status.Backend
	}
	return b.Spec.Backend
}
