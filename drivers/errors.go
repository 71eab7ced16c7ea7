package drivers

import (
	"errors"
	"fmt"
)

// DriftError is drift between the parameters and the service that the driver
// will not repair in place, such as a Kafka partition count that would have
// to shrink. The controller surfaces it as ParameterDrift and waits for a
// human.
type DriftError struct {
	// Parameter is the spec.parameters key that drifted.
	Parameter string
	// Current is the value on the service; Desired the value in the spec.
	Current, Desired string
	// Reason explains why it cannot be repaired and what to do.
	Reason string
}

func (e *DriftError) Error() string {
	return fmt.Sprintf("parameter %s: service has %s, spec wants %s: %s", e.Parameter, e.Current, e.Desired, e.Reason)
}

// InProgressError means Delete made progress but has more to do. The caller
// shows the progress and calls Delete again.
type InProgressError struct {
	// Done and Remaining count the units of work (objects, versions);
	// Remaining is -1 when unknown.
	Done, Remaining int64
	// Message describes the progress.
	Message string
}

func (e *InProgressError) Error() string { return "deletion in progress: " + e.Message }

// UnavailableError means the service could not be reached at all (connection
// refused, timeout, DNS), as opposed to a request that reached it and failed.
// The controller surfaces it as BackendUnavailable.
type UnavailableError struct {
	Backend string
	Err     error
}

func (e *UnavailableError) Error() string {
	return fmt.Sprintf("backend %s unreachable: %v", e.Backend, e.Err)
}

func (e *UnavailableError) Unwrap() error { return e.Err }

// IsUnavailable reports whether err is or wraps an *UnavailableError.
func IsUnavailable(err error) bool {
	var u *UnavailableError
	return errors.As(err, &u)
}

// AccessDeniedError means the service was reached and refused the
// controller's credentials or permissions: a configuration problem for the
// cluster maintainer, not an outage.
type AccessDeniedError struct {
	Backend string
	Err     error
}

func (e *AccessDeniedError) Error() string {
	return fmt.Sprintf("backend %s refused the controller's credentials: %v", e.Backend, e.Err)
}

func (e *AccessDeniedError) Unwrap() error { return e.Err }

// IsAccessDenied reports whether err is or wraps an *AccessDeniedError.
func IsAccessDenied(err error) bool {
	var a *AccessDeniedError
	return errors.As(err, &a)
}

// PrincipalExistsError means Grant found the principal it was to create
// already there, made by someone else after the controller checked
// (Access.Assert IssueRecorded): it is never altered, and the access reports
// PrincipalConflict.
type PrincipalExistsError struct {
	Backend, Principal string
}

func (e *PrincipalExistsError) Error() string {
	return fmt.Sprintf("principal %s already exists on backend %s and buckety did not create it: it is never altered or deleted, and nothing was granted (a maintainer may delete it to let buckety issue it)", e.Principal, e.Backend)
}

// IsPrincipalExists reports whether err is or wraps a *PrincipalExistsError.
func IsPrincipalExists(err error) bool {
	var p *PrincipalExistsError
	return errors.As(err, &p)
}

// RefusedError means the service, or the driver on its behalf, refused
// what a request asks for itself (a bucket policy too large to store):
// asking again gives the same answer. Only such an answer is taken for a
// refusal of a grant; a server error or a throttled request is asked
// again.
type RefusedError struct {
	Err error
}

func (e *RefusedError) Error() string { return e.Err.Error() }

func (e *RefusedError) Unwrap() error { return e.Err }

// IsRefused reports whether err is or wraps a *RefusedError.
func IsRefused(err error) bool {
	var r *RefusedError
	return errors.As(err, &r)
}

// NotCreatedError means the service answered a create with a refusal (a
// replication factor above the broker count, a region the server does not
// serve, the controller's credentials denied): the call made nothing. It
// wraps the classified error (a *RefusedError, an *AccessDeniedError, or
// another the caller retries). A create whose outcome is unknown (no
// answer, a server error) is never one: it may have made the resource.
type NotCreatedError struct {
	Err error
}

func (e *NotCreatedError) Error() string { return e.Err.Error() }

func (e *NotCreatedError) Unwrap() error { return e.Err }

// IsNotCreated reports whether err is or wraps a *NotCreatedError.
func IsNotCreated(err error) bool {
	var n *NotCreatedError
	return errors.As(err, &n)
}

// Replaced is implemented by a driver's refusal of a resource that is not
// the one its owner record was written for: that one was deleted out of
// band, and someone created one of the same name since (kadm's
// TopicReplacedError, from the topic IDs its records carry). It comes
// wrapped in a *RefusedError. The controller reports it as
// ResourceReplaced, as it does a bucket whose record went with it: the
// Buckety's accesses revoke the credentials they hold on the name, a drain
// is refused, and a deletion under retentionPolicy Delete finishes as
// Retain would, leaving the resource as it is.
type Replaced interface {
	error
	ResourceReplaced()
}

// IsReplaced reports whether err is or wraps a Replaced refusal.
func IsReplaced(err error) bool {
	var r Replaced
	return errors.As(err, &r)
}
