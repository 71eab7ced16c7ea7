// Package claims records which Buckety owns which backend resource, in
// cluster-scoped BucketyClaim objects that only the controller writes.
// Both reconcilers trust a claim, never a status field, for what a
// Buckety may use or delete.
//
// # Why claims are API objects
//
// Two Bucketies, in any namespaces, can resolve to the same topic or bucket.
// Exactly one may own it, across controller restarts, leader hand-overs and
// caches that lag, and what buckety does to the resource when its owner is
// deleted must not depend on anything a tenant can write.
//
// The mechanism is one cluster-scoped BucketyClaim object per backend
// resource, named by a hash of (backend, resource name), created before the
// first backend write:
//
//   - Atomic without coordination. The API server refuses a second object
//     of the same name, so two reconciles (or two controller replicas in a
//     split-brain moment, or a new leader with a cold cache) cannot both
//     create the claim. The loser reads the claim fresh and reports the
//     owner, after checking fresh that the owner exists; a claim whose owner
//     is gone (force-deleted) is stale, removed with a UID precondition, and
//     taken.
//   - Durable intent. The claim records, before the backend write that
//     depends on it, the adoption check's verdict: the check (a read) runs
//     first, and the claim is born in its phase, Creating (about to
//     create), Adopted (it existed, empty) or Adopting; a resource refused
//     for its content is never claimed. Later phases are advanced with an
//     optimistic-lock update: Creating -> Created once created. A claim
//     taken over from a deleted owner starts Claimed (nothing written yet),
//     and the check then advances it. Adopting (both the tenant,
//     spec.adoption, and the backend, adoption.allow, opt in to adopting
//     a resource with content; nothing is written while it differs from
//     the tenant's parameters) -> Adopted once settled. A crash
//     or a lost status patch after the create leaves Creating, which later
//     passes finish as Created, never as Adopted.
//   - Unforgeable. Tenants get no RBAC for claims; Buckety status mirrors
//     the claim and is rewritten from it. Deletion reads the Buckety's
//     claims fresh (by owner UID) and deletes a resource only when its
//     claim says Created or Creating (or Adopted, on a backend whose
//     maintainer set adoption.deleteAdopted) and the backend's current
//     name policy still gives the name to the Buckety's namespace.
//   - Released on every path: a Buckety's deletion releases every claim
//     with its UID (whether or not it was ever provisioned), a claim never
//     written to the backend is released when the resolved name changes
//     or the adoption check refuses the resource (a Claimed one), and a
//     stale claim of a deleted owner is taken over.
//
// The alternatives were weaker: an in-memory table forgets claims on
// restart and is per process; status fields are written after the backend
// write (so a crash loses them) and tenants with status access can forge
// them; a claim recorded on the Buckety itself cannot be made unique across
// objects without a second, unique record anyway.
package claims
