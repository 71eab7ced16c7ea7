package drivers

import "context"

// Prober is an optional capability of a Backend: one cheap read that tells
// whether the service answers with the backend's credentials, without
// touching any resource. The controller's leader calls it every probe
// interval for the BucketyBackend view and the buckety_backend_up metric.
// An unreachable service is an *UnavailableError, refused credentials an
// *AccessDeniedError, as from the other operations.
//
// The error is for a backend that does not serve. Something wrong with a
// backend that serves (a setting that puts its data at risk, which its
// operator should fix) is a Warning (Warner), not an error: the backend's
// Ready stays True, and what else the view asks of it is still asked.
type Prober interface {
	Probe(ctx context.Context) error
}

// Warning is something a probe that passed found wrong with a backend
// that serves: a setting of the service that puts data at risk, or that
// only its operator can fix. The BucketyBackend shows it as its Degraded
// condition, and buckety_backend_degraded as 1.
type Warning struct {
	// Reason names the warning in one CamelCase word, the Degraded
	// condition's reason (RegistryNotCompacted).
	Reason string
	// Message says what is wrong, what it risks and how to fix it, for
	// the backend's operator. It names no credential.
	Message string
}

// Warner is an optional capability of a Prober: the warnings of its last
// Probe that returned nil, none for a backend it found nothing wrong with.
// The view asks after each Probe that passed. It sends no request: Probe,
// bounded by its context, reads whatever the warnings need.
type Warner interface {
	ProbeWarnings() []Warning
}

// Implementer is an optional capability of a Backend: it names the
// software behind the backend (an S3 server type: minio, versitygw; kafka),
// "" when the config does not say. It never contacts the service.
type Implementer interface {
	Implementation() string
}
