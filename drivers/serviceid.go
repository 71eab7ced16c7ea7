package drivers

import "context"

// ServiceIdentifier is implemented by backends that can tell which service
// they reach: a Kafka cluster's ID. A backend's config may be pointed at
// another service of the same kind (a migration, a typo that reaches
// staging), where resources of the same names are someone else's. A claim
// records the identity of the service its resource was created or adopted
// on, and a pass that finds its backend reaching another writes nothing
// there. Optional: a backend without it, or whose service has no identity,
// is trusted as before.
type ServiceIdentifier interface {
	// ServiceID is a stable identity of the service the backend reaches,
	// one another service of the same kind does not share; "" when the
	// service has none. A backend asks the service once per process (a
	// change of where it points takes a restart) and keeps the answer; an
	// error is not kept, and the next call asks again.
	ServiceID(ctx context.Context) (string, error)
}

// ServiceIDOf is be's ServiceID, "" for a backend that is not a
// ServiceIdentifier.
func ServiceIDOf(ctx context.Context, be Backend) (string, error) {
	if si, ok := be.(ServiceIdentifier); ok {
		return si.ServiceID(ctx)
	}
	return "", nil
}
