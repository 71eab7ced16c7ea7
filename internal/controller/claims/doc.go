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
// resource, named by a hash of (service, resource name), created before the
// first backend write. The service is the backend's `service` in the config
// (by default its name): backends that reach one Kafka cluster or S3
// endpoint share one claim space, so a topic created through one cannot get
// a second owner through another (the config loader refuses backends that
// reach one service in two spaces; claims made before services existed,
// named by backend, are honoured under that name too: Key).
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
//     first, and the claim is born in its phase, Created (about to create:
//     the final phase, so a create costs one claim write) or Adopting (it
//     exists); a resource refused for its content is never claimed. Later
//     phases are advanced with an optimistic-lock update: Created ->
//     Adopting only in the pass that recorded it, when the create found the
//     resource made by someone else meanwhile (nothing is written to it:
//     Ensure is CreateOnly). A claim taken over from a deleted owner starts
//     Claimed (nothing written yet), and the check then advances it; it
//     keeps the record of the owner it was taken from until the new owner
//     has written to the resource (a create: once the create succeeded),
//     so a takeover refused, given up or whose create failed reverts to
//     it.
//     Adopting -> Adopted once the adoption settles: nothing is written
//     while the resource differs from the tenant's parameters, unless both
//     the backend (adoption.allow) and the tenant (spec.adoption
//     AdoptAndConverge) ask to converge, and a resource with content needs
//     both keys on every pass. A crash between the claim and the create
//     leaves Created, so later passes create the resource as buckety's,
//     never as Adopted. Claims left Creating by an older controller (which
//     recorded the intent first and Created after the create) are treated
//     as Created and advanced to it.
//   - Read your writes. The store remembers the claims it wrote until the
//     cache shows them (recent.go), so the pass right after a claim's
//     create, which its own writes wake, does not inspect and claim again.
//   - Where the resource lives. The claim records the owner's location
//     parameters (drivers.Locator: R2's jurisdiction) when it is made;
//     every later backend call uses them (Effective), so an edit of the
//     spec, even during deletion, never points a call at another resource.
//     A claim taken over keeps them: a Buckety whose parameters select
//     another location is refused, and its check never looks elsewhere.
//   - Fresh before writing. A claim read from the cache is confirmed with a
//     fresh read (Store.Confirm) before the first backend write that relies
//     on it, so a lagging cache or a leader that lost its lease cannot
//     re-create a resource just deleted.
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
//     stale claim of a deleted owner is taken over. A claim whose owner
//     vanished without its deletion running (its finalizer removed by
//     hand) is stamped by the Janitor, for the maintainer to see, and
//     taken over by the next Buckety that resolves to the resource.
//
// The alternatives were weaker: an in-memory table forgets claims on
// restart and is per process; status fields are written after the backend
// write (so a crash loses them) and tenants with status access can forge
// them; a claim recorded on the Buckety itself cannot be made unique across
// objects without a second, unique record anyway.
package claims
