package buckety

import (
	"context"
	"maps"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
)

// Namespaces. Where an entry of a backend's limits.namespaces selects by
// label, a namespace's labels choose its limits (config.Backend.ForNamespace),
// so the platform relabelling a namespace can give it a larger budget or
// limit. Its Bucketies that wait for room are woken by the relabel, not at
// their next retry, which backs off to minutes. An entry by name needs no
// watch: a namespace's name never changes. Any relabel wakes them, whichever
// way their limits moved: one pass each, and few wait in one namespace.

// selectsByLabel reports whether a backend of set chooses a namespace's
// limits by its labels.
func selectsByLabel(set *backends.Set) bool {
	if set == nil {
		return false
	}
	for _, e := range set.Entries() {
		if e.Config.UsesNamespaceLabels() {
			return true
		}
	}
	return false
}

// namespaceRelabelled passes only the updates of a namespace that change
// its labels, the one thing of a namespace its limits follow.
func namespaceRelabelled() predicate.Predicate {
	return objects.UpdatesWhere(func(e event.UpdateEvent) bool {
		return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
	})
}

// namespaceToWaiting maps a namespace to its Bucketies that wait for room
// under its limits (waitsForRoom), read from the cache.
func namespaceToWaiting(mgr manager.Manager) handler.MapFunc {
	c, log := mgr.GetClient(), mgr.GetLogger()
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var list v1.BucketyList
		// Only conditions and names are read: the cache's own objects.
		if err := c.List(ctx, &list, client.InNamespace(obj.GetName()), client.UnsafeDisableDeepCopy); err != nil {
			log.Error(err, "list the Bucketies of a relabelled namespace; those waiting for room wait for their retry", "namespace", obj.GetName())
			return nil
		}
		var out []reconcile.Request
		for i := range list.Items {
			if waitsForRoom(&list.Items[i]) {
				out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
			}
		}
		return out
	}
}

// waitsForRoom reports whether b is refused for its namespace's limits on
// its backend: Ready False with BudgetExceeded (limits.partitions,
// diskBytes, quotaBytes) or LimitExceeded (limits.perNamespace), each of
// which limits.namespaces can override.
func waitsForRoom(b *v1.Buckety) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionFalse &&
		(c.Reason == v1.ReasonBudgetExceeded || c.Reason == v1.ReasonLimitExceeded)
}
