// Package configfile implements the y-cluster configuration-file contract:
// one YAML file in a directory given with -c, decoded strictly, with opt-in
// environment substitution and lifecycle hooks.
//
// Upstream, this is github.com/Yolean/y-cluster/pkg/configfile. The Go module
// proxy available to this project refuses that module, so the same contract is
// written here with the same exported API; switching to the upstream import is
// meant to be a mechanical change.
//
// Load runs, in this order: read <dir>/<filename>; strict YAML decode (unknown
// keys and duplicate keys are errors); envsubst.Apply with the process
// environment; then the optional hooks SetDir(absDir), ApplyDefaults() and
// Validate(). The order matters: defaults must not hide a value the file did
// set, and validation must see the substituted values a process will use.
//
// Beyond upstream, unknown keys are reported with their full field path and
// the keys that are allowed there, because a controller that crash-loops on a
// typo must say exactly where the typo is.
package configfile
