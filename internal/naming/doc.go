// Package naming implements the Buckety naming-template grammar shared by the
// controller, which resolves spec.name once and freezes the result in
// status.backendResourceName, and the admission webhook, which rejects a
// template that cannot resolve before any controller sees it. Both sides must
// agree exactly, so this package is the one implementation.
//
// The grammar follows the Downward API's vocabulary:
//
//	${name}                  metadata.name
//	${namespace}             metadata.namespace
//	${label['prefix/key']}   metadata.labels[key] (single or double quotes)
//	${backend.key}           defaults.key of the resolved backend
//
// Everything else is literal text. Resolution is a single pass: substituted
// values are never scanned again, so a label value that contains "${" stays
// literal (and is then rejected by the driver's name rules). A "$" that does
// not start "${" is a syntax error, because no backend resource name accepts
// "$" and a silent literal would only fail later with a worse message.
// Resolution reports every missing source at once so a tenant fixes them in
// one round trip.
package naming
