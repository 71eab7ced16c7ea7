// Package access reconciles BucketyAccess objects: once its Buckety's backend
// resource is provisioned, it asks the driver for the consumer's credentials
// and writes them as one Opaque Secret with flat keys, owned by the access.
// It never overwrites a Secret buckety did not create, and repairs a Secret
// edited or deleted by hand. On deletion it revokes, then deletes the
// Secret.
//
// As for Buckety, phases record facts and status.go derives every condition.
// setup.go says what wakes an access, reconcile.go runs the phases,
// secret.go writes the Secret, delete.go revokes and cleans up.
package access
