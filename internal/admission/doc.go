// Package admission validates Buckety and BucketyAccess objects for the
// buckety-webhook. It uses the same config loader, naming package and
// drivers as the controller, so whatever it admits the controller can
// reconcile, and it rejects bad input while no controller runs at all.
//
// Parameters are checked twice, on purpose: against the driver's published
// parameters.schema.json with its CEL rules (what editors and downstream
// platforms see), and by the driver's own validation (which has the precise
// messages). Where both flag a key, the driver's message is kept.
//
// The hot path makes no API calls: schemas and CEL programs are compiled at
// start-up, and the one lookup an access needs (its Buckety's backend) reads
// the informer cache.
package admission
