// Package config is buckety-controller.yaml: the cluster maintainer's list of
// backends, each a named connection to one backing service through one
// driver.
//
// The controller and the admission webhook load the same file with the same
// code, so a template or parameter the webhook admits is one the controller
// can reconcile. They differ in one thing: the webhook loads it without
// credentials. Fields a driver tags `credential:"true"` are then cleared
// before substitution and not required, so the webhook Deployment needs no
// credential Secret and never holds one in memory.
//
// A misconfigured controller must say exactly what is wrong, because the
// maintainer's only view of it is a crash-looping Pod's log: every error
// names the file, the field path (backends[1].config.seedBrokers) and what to
// do about it.
package config
