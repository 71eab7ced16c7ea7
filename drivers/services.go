package drivers

// ServiceAddresser is implemented by a driver's options (Config) that can
// say which service instance they reach, as normalised addresses (Kafka
// brokers as host:port, an S3 endpoint as scheme://host:port). The config
// loader refuses two backends that share an address but not a claim space
// (the backends' `service`): one resource must have one owner, whichever
// backend a Buckety names.
type ServiceAddresser interface {
	ServiceAddresses() []string
}

// NameReserver is implemented by a driver whose services keep resources of
// their own, or of well-known systems beside them, under names a tenant
// must never claim (and buckety must never adopt or converge): Kafka's
// internal topics, Schema Registry's _schemas, Kafka Connect's default
// topics. Patterns are globs (path.Match: * matches any run of
// characters). A backend's reservedNames add to them.
type NameReserver interface {
	ReservedNames() []string
}

// NameFolder is implemented by a driver whose service takes names that
// differ for the same name: Kafka refuses a topic whose name differs from
// an existing one's only in '.' against '_' (the two collide in its
// metric names), so a tenant's "_.transaction_state" would keep Kafka
// from ever creating __transaction_state. FoldName maps a name to the
// form such names share. A reserved pattern (NameReserver, a backend's
// reservedNames) then reserves every name that folds to the fold of a
// name it matches.
type NameFolder interface {
	FoldName(name string) string
}

// Locator is implemented by a driver whose parameters select where a
// resource lives, not only how it is configured: an R2 bucket's
// jurisdiction picks the endpoint every call on the bucket goes to. The
// controller records these parameters in the claim when it claims the
// resource and passes the recorded values to every later Inspect, Ensure
// and Delete; the webhook refuses a change to them in every state, and the
// controller reports one instead of acting on it.
type Locator interface {
	LocationParameters() []string
}

// LocationParameters returns d's location parameters (Locator), or none.
func LocationParameters(d Driver) []string {
	if l, ok := d.(Locator); ok {
		return l.LocationParameters()
	}
	return nil
}
