package drivers

// DrainDeclarer is implemented by a Driver whose backends implement
// Drainer. The admission webhook opens no backend, so it cannot ask a
// Backend whether it drains; the driver declares it here, together with
// whether a backend of this driver allows drains when its configuration
// says nothing (buckety-controller.yaml's drain.allow). The controller
// checks the opened Backend itself as well.
type DrainDeclarer interface {
	// DrainPolicy says what the driver's backends do with spec.drain.
	DrainPolicy() DrainPolicy
}

// DrainPolicy is a driver's declaration of drain support.
type DrainPolicy struct {
	// Supported: the driver's backends implement Drainer.
	Supported bool
	// AllowedByDefault: a backend whose configuration has no drain.allow
	// allows spec.drain.
	AllowedByDefault bool
}

// DrainPolicyOf is d's declaration; the zero DrainPolicy (no drain) for a
// driver that declares none.
func DrainPolicyOf(d Driver) DrainPolicy {
	if dd, ok := d.(DrainDeclarer); ok {
		return dd.DrainPolicy()
	}
	return DrainPolicy{}
}
