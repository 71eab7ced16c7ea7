package shared

import "github.com/Yolean/buckety-controller/internal/backends"

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
