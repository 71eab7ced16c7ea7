package retry

import (
	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// BackendFailure is the driver failure of one reconcile, by how it is
// handled. Both kinds' facts embed it.
type BackendFailure struct {
	// Unavailable: the backend could not be reached (retried soon).
	Unavailable error
	// AccessDenied: the backend refused buckety's credentials (retried on
	// the slower backoff; someone must act).
	AccessDenied error
	// Other: the backend answered with an error (retried soon).
	Other error
}

// Record files err under its class, as the driver's typed errors tell it
// (the classes backends.Classify counts in metrics).
func (b *BackendFailure) Record(err error) {
	switch {
	case drivers.IsUnavailable(err):
		b.Unavailable = err
	case drivers.IsAccessDenied(err):
		b.AccessDenied = err
	default:
		b.Other = err
	}
}

// Err is the recorded failure, if any.
func (b *BackendFailure) Err() error {
	switch {
	case b.Unavailable != nil:
		return b.Unavailable
	case b.AccessDenied != nil:
		return b.AccessDenied
	}
	return b.Other
}

// Ready is the Ready reason and message of the recorded failure, and
// whether the controller is still working on it (it retries soon); ok is
// false when nothing failed. Both kinds' Ready chains use it.
func (b *BackendFailure) Ready() (reason, msg string, progressing, ok bool) {
	switch {
	case b.Unavailable != nil:
		return v1.ReasonBackendUnreachable, b.Unavailable.Error(), true, true
	case b.AccessDenied != nil:
		return v1.ReasonBackendAccessDenied, b.AccessDenied.Error(), false, true
	case b.Other != nil:
		return v1.ReasonBackendError, b.Other.Error(), true, true
	}
	return "", "", false, false
}
