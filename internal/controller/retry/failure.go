package retry

import (
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
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

// Record files err under its class.
func (b *BackendFailure) Record(err error) {
	switch backends.Classify(err) {
	case backends.ClassUnavailable:
		b.Unavailable = err
	case backends.ClassAccessDenied:
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
