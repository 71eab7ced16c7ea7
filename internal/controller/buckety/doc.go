// Package buckety reconciles Buckety objects: it resolves the naming
// template once, claims the backend resource (refusing one that holds
// content or belongs to another Buckety), converges it through the driver,
// materialises the implicit access of spec.defaultAccess, and on deletion
// waits for every access before retaining or deleting the backend resource.
//
// Reconcile gathers facts in ordered phases; status.go derives every
// condition from those facts in one function, and one status patch is made
// per reconcile. The files follow a pass: setup.go (what wakes a Buckety),
// reconcile.go (the phase list, name and parameter checks), claim.go,
// provision.go and adoption.go (owning and converging the resource, each
// step recorded in the claim before the backend write that depends on it),
// accesses.go (the implicit access and the accesses' readiness), delete.go,
// then facts.go and status.go.
//
// Drift is found two ways: a Buckety's periodic re-check runs Ensure on its
// own resource, and the Sweeper (sweep.go) judges every resource of a
// backend in a few batched requests and enqueues only the drifted ones.
// Where the sweep sees everything Ensure acts on, the periodic re-check is
// only a long safety net, since re-checking one by one costs backend
// requests per Buckety.
package buckety
