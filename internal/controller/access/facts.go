package access

import "github.com/Yolean/buckety-controller/internal/controller/shared"

// facts is what one reconcile learned.
type facts struct {
	deleting bool
	// bucketyMissing: the referenced Buckety does not exist.
	bucketyMissing bool
	// bucketyWaiting explains why the Buckety's resource is not usable yet.
	bucketyWaiting string
	// problem pauses reconciliation (backend gone, driver changed, major
	// mismatch).
	problem *shared.Problem
	// invalid: the role or parameters fail the driver's validation.
	invalid string
	// BackendFailure is the driver failure, if any.
	shared.BackendFailure
	// secretConflict names a Secret buckety does not own.
	secretConflict string
	// scoped is the driver's answer; nil when Grant did not run.
	scoped *bool
	// synced: the Secret holds the driver's payload.
	synced bool
	// secretName is the Secret written.
	secretName string
}
