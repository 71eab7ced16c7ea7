package drivers

import "context"

// Prober is an optional capability of a Backend: one cheap read that tells
// whether the service answers with the backend's credentials, without
// touching any resource. The controller's leader calls it every probe
// interval for the BucketyBackend view and the buckety_backend_up metric.
// An unreachable service is an *UnavailableError, refused credentials an
// *AccessDeniedError, as from the other operations.
type Prober interface {
	Probe(ctx context.Context) error
}

// Implementer is an optional capability of a Backend: it names the
// software behind the backend (an S3 server type: minio, versitygw; kafka),
// "" when the config does not say. It never contacts the service.
type Implementer interface {
	Implementation() string
}
