// Package harness runs buckety's own binaries the way a platform runs them,
// for every test package that needs more than the in-process controller:
// built from the tree under test, acting as their ServiceAccounts under the
// generated RBAC, the webhook serving TLS and registered with the API
// server. The integration tests, the fault harness (test/faults) and the
// scale benchmark (test/scale) share it, so a change to how the binaries
// are started is made once.
//
// Every process is started and stopped by PID through test/proc, on free
// loopback ports.
package harness
