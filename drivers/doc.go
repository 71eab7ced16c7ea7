// Package drivers is the contract between buckety and the libraries that talk
// to backing services.
//
// A Driver is stateless knowledge about one kind of service: its name, its
// SemVer, the options type a backend's `config:` block decodes into, and the
// rules for resource names, parameters and access. Validation lives on the
// Driver, not on a connection, because the admission webhook must validate
// with no credentials and no network. Open turns a validated config into a
// Backend: one long-lived connection per configured backend, reused for the
// life of the process, which carries the spec's operations.
//
// Drivers know nothing of Kubernetes objects: they take names and
// map[string]string parameters and return plain results and typed errors
// (DriftError, InProgressError, UnavailableError). The controller turns those
// into conditions; field.ErrorList is used only as a precise, path-carrying
// error list, the same one admission responses are built from.
//
// Drivers MUST NOT have internal defaults: an omitted parameter means "send
// nothing", so the backing service's own default applies and a driver upgrade
// never silently changes existing resources.
//
// Every driver in the product is registered explicitly in package
// drivers/all; there is no init-time self-registration, so what a binary can
// talk to is visible in one file.
//
// The contract stated here is checked once, by the conformance suite in
// drivers/drivertest, which every driver runs from its own tests against
// the real services it talks to; a driver's tests add only what is
// particular to it.
package drivers
