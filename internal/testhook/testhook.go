// Package testhook lets a test stop the controller between two writes, to
// kill the real process there and prove that what it wrote first is enough
// to recover.
//
// The hook is compiled in only with the build tag buckety_testhooks, which
// the integration tests use (make test-integration passes it, and the
// harness builds the controller binary with it where a test needs the
// hook). Without the tag, Pause is an empty function the compiler inlines
// away, so the release binary holds neither the hook's code nor its
// environment variable: release_test.go checks the binary built as a
// release is. A test that needs the hook checks Enabled first and fails
// with NotEnabled when it is compiled out.
package testhook

// Tag is the build tag that compiles the hook in.
const Tag = "buckety_testhooks"

// NotEnabled is the failure message of a test that needs the hook in a
// build without it.
const NotEnabled = "the test hook is compiled out: build with -tags " + Tag + " (make test-integration does)"

// Env names the directory where pause points are signalled.
const Env = "BUCKETY_TEST_PAUSE_DIR"

// Points where the controller can be paused.
const (
	// AfterCreate: the driver created the backend resource; nothing about
	// it has been written to the API server since.
	AfterCreate = "after-create"
	// AfterInspect: the adoption check found no resource; the create has
	// not been attempted.
	AfterInspect = "after-inspect"
	// AfterIssue: a per-access credential is set on the backend (user
	// and grants); its Secret has not been written since.
	AfterIssue = "after-issue"
	// AfterDrainStep: the driver made a drain step (spec.drain); status.drain
	// has not been written since, so what the step deleted is not counted.
	AfterDrainStep = "after-drain-step"
)
