// Package shared holds what both reconcilers need and neither owns:
// resolving the sticky (backend, driver, driverMajor) triple against the
// running configuration, the deferred status write that ends every
// reconcile (Finish), retry backoff, the record of the controller's own
// writes that keeps it from acting on a stale cache, field indexes,
// finalizers and condition helpers. Claims on backend resources have their
// own package, claims.
package shared
