// Package drivertest holds what tests need around drivers, in two parts.
//
// A driver for tests of the code around drivers (the registry, the config
// loader, naming, admission and the reconcilers): Driver, whose service,
// when a test gives it one, is an in-memory Backend that can be told to
// hang, fail or hold content. It is never registered in drivers/all, so no
// binary can be configured with it.
//
// A conformance suite every real driver runs from its own tests: Suite.
// The drivers.Driver and drivers.Backend contracts are stated once, in
// package drivers, so they are checked once, here, rather than by a copy
// of the same harness in every driver's tests that drifts from the others.
// A driver fills in a Suite with what only it knows (its validation cases,
// how to start its real service and open a backend on it, how to count the
// requests that reach the service, how to put content into a resource) and
// runs it; its own tests keep only what is particular to it. The suite runs
// against real servers only, never a mock of one: what it proves is what
// the service answered.
package drivertest
