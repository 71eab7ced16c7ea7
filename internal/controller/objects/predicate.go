package objects

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// UpdatesWhere passes only the updates for which changed is true: the
// watches on Namespaces, whose creation and deletion events wake nothing
// (a namespace's Bucketies and accesses are reconciled on their own).
func UpdatesWhere(changed func(event.UpdateEvent) bool) predicate.Predicate {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc:  changed,
	}
}
