// Package envsubst implements the y-cluster envsubst contract: opt-in
// ${VAR} interpolation of configuration values from the environment.
//
// Upstream, this is github.com/Yolean/y-cluster/pkg/envsubst. The Go module
// proxy available to this project refuses that module, so the same contract is
// written here with the same exported API (Apply, Expand, LookupFunc, OSEnv and
// the `envsubst:"true"` struct tag). Switching to the upstream import is meant
// to be a mechanical change of import paths.
//
// Interpolation is opt-in per field because a configuration value that happens
// to contain "${" must never silently change meaning when it is moved into a
// field that is substituted. Fields that are not tagged and contain "${" are
// rejected: that is the forward-compatibility guard that lets a field become
// substitutable later without changing what an existing file means. Map keys
// are never substituted.
package envsubst
