// Package buckety reconciles Buckety objects: it resolves the naming
// template once, claims the backend resource (refusing one that holds
// content or belongs to another Buckety), converges it through the driver,
// materialises the implicit access of spec.defaultAccess, and on deletion
// waits for every access before retaining or deleting the backend resource.
//
// Reconcile gathers facts in ordered phases; status.go derives every
// condition from those facts in one function, and one status patch is made
// per reconcile.
package buckety
