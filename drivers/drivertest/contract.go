package drivertest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
)

// The backend contract (drivers.Backend), against one running service.
// Resource names are valid for every service: lowercase letters, digits and
// '-', 3 to 63 characters.

// contract is one service's running target and what it is checked with.
type contract struct {
	suite *Suite
	svc   Service
	tg    *Target
}

// resource is a resource of the suite's with the service's Params.
func (c *contract) resource(name string) drivers.Resource {
	return drivers.Resource{Name: name, Parameters: maps.Clone(c.svc.Params)}
}

func (c *contract) ensure(t *testing.T, r drivers.Resource) drivers.EnsureResult {
	t.Helper()
	res, err := c.tg.Backend.Ensure(context.Background(), r)
	if err != nil {
		t.Fatalf("Ensure(%s, %v, dry run %v): want no error, got %v", r.Name, r.Parameters, r.DryRun, err)
	}
	return res
}

// noWrites checks that nothing was written since the last Reset, and that
// something was read: a counter that saw nothing is not wired.
func (c *contract) noWrites(t *testing.T, what string) {
	t.Helper()
	writes, all := c.tg.Requests.Reset()
	if len(writes) != 0 {
		t.Errorf("%s: want no write, got %v (of %d requests)", what, writes, all)
	}
	if all == 0 {
		t.Errorf("%s: the request counter saw no request at all: it is not wired to the backend", what)
	}
}

func (c *contract) snapshot(t *testing.T, r drivers.Resource) string {
	t.Helper()
	if c.tg.Snapshot == nil {
		return ""
	}
	return c.tg.Snapshot(t, r)
}

func (c *contract) inspectMissing(t *testing.T) {
	in, err := c.tg.Backend.Inspect(context.Background(), c.resource("suite-missing"))
	if err != nil || in.Exists || in.HasContent {
		t.Fatalf("Inspect of a missing resource: want neither existing nor content, got %+v, %v", in, err)
	}
}

// ensureCreatesOnce: the first Ensure creates and says so; the second finds
// nothing to change and makes no write; the new resource holds no content.
func (c *contract) ensureCreatesOnce(t *testing.T) {
	r := c.resource("suite-create")
	res := c.ensure(t, r)
	if !res.Created || len(res.Changes) == 0 {
		t.Errorf("first Ensure: want Created with the creation in Changes, got %+v", res)
	}
	c.tg.Requests.Reset()
	res = c.ensure(t, r)
	c.noWrites(t, "second Ensure")
	if res.Created || len(res.Changes) != 0 {
		t.Errorf("second Ensure: want neither Created nor changes, got %+v", res)
	}
	in, err := c.tg.Backend.Inspect(context.Background(), r)
	if err != nil || !in.Exists || in.HasContent {
		t.Errorf("Inspect of the new resource: want existing without content, got %+v, %v", in, err)
	}
}

// dryRun: a dry run writes nothing, and lists exactly what the real Ensure
// then does: the creation of a missing resource, and each Step's changes.
func (c *contract) dryRun(t *testing.T) {
	ctx := context.Background()
	missing := c.resource("suite-dry-missing")
	missing.DryRun = true
	c.tg.Requests.Reset()
	res := c.ensure(t, missing)
	c.noWrites(t, "dry run of a missing resource")
	want := "any"
	if c.svc.CreateChange != "" {
		want = fmt.Sprintf(c.svc.CreateChange, missing.Name)
	}
	if res.Created || len(res.Changes) != 1 || c.svc.CreateChange != "" && res.Changes[0] != want {
		t.Errorf("dry run of a missing resource: want one change (%s) and nothing created, got %+v", want, res)
	}
	if in, err := c.tg.Backend.Inspect(ctx, missing); err != nil || in.Exists {
		t.Errorf("after a dry run: want the resource still missing, got %+v, %v", in, err)
	}

	r := c.resource("suite-dry-run")
	c.ensure(t, r)
	for i, step := range c.svc.Steps {
		what := fmt.Sprintf("step %d (%v)", i+1, step.Params)
		before := c.snapshot(t, r)
		r.Parameters, r.DryRun = step.Params, true
		c.tg.Requests.Reset()
		dry := c.ensure(t, r)
		c.noWrites(t, what+", dry run")
		if after := c.snapshot(t, r); after != before {
			t.Errorf("%s: want the resource untouched by the dry run, was %s, now %s", what, before, after)
		}
		r.DryRun = false
		real := c.ensure(t, r)
		if !slices.Equal(dry.Changes, real.Changes) {
			t.Errorf("%s: want the dry run to list exactly the changes Ensure makes, dry run %q, Ensure %q", what, dry.Changes, real.Changes)
		}
		switch {
		case step.Changes == nil && len(real.Changes) == 0:
			t.Errorf("%s: want the change to make Ensure write, got no changes", what)
		case step.Changes != nil && !slices.Equal(real.Changes, step.Changes):
			t.Errorf("%s: want changes %q, got %q", what, step.Changes, real.Changes)
		}
		c.tg.Requests.Reset()
		again := c.ensure(t, r)
		c.noWrites(t, what+", Ensure again")
		if len(again.Changes) != 0 {
			t.Errorf("%s, Ensure again: want no changes, got %q", what, again.Changes)
		}
	}
}

// drift: drift Ensure does not repair is reported as a *drivers.DriftError
// naming the parameter, by a dry run (which writes nothing) and by Ensure.
func (c *contract) drift(t *testing.T) {
	if c.svc.Drift == nil {
		t.Skip("the service declares no Drift")
	}
	r := c.resource("suite-drift")
	c.ensure(t, r)
	r.Parameters = c.svc.Drift
	for _, dry := range []bool{true, false} {
		r.DryRun = dry
		c.tg.Requests.Reset()
		_, err := c.tg.Backend.Ensure(context.Background(), r)
		var d *drivers.DriftError
		if !errors.As(err, &d) || d.Parameter != c.svc.DriftParameter {
			t.Errorf("Ensure(%v, dry run %v): want a *drivers.DriftError on %s, got %v", c.svc.Drift, dry, c.svc.DriftParameter, err)
		}
		if dry {
			c.noWrites(t, "dry run with drift")
		}
	}
}

// content: what a consumer wrote is content.
func (c *contract) content(t *testing.T) {
	r := c.resource("suite-content")
	c.ensure(t, r)
	c.tg.PutContent(t, r)
	in, err := c.tg.Backend.Inspect(context.Background(), r)
	if err != nil || !in.Exists || !in.HasContent || in.Detail == "" || !strings.Contains(in.Detail, c.svc.ContentDetail) {
		t.Errorf("Inspect after content was written: want existing with content and a detail containing %q, got %+v, %v", c.svc.ContentDetail, in, err)
	}
}

// delete: a missing resource is success, twice; an existing one is removed
// and deleting it again is success; one with content is removed too,
// calling again while Delete reports progress.
func (c *contract) delete(t *testing.T) {
	ctx := context.Background()
	for i := 1; i <= 2; i++ {
		if err := c.tg.Backend.Delete(ctx, c.resource("suite-never-created")); err != nil {
			t.Errorf("Delete #%d of a missing resource: want success, got %v", i, err)
		}
	}
	for _, withContent := range []bool{false, true} {
		r := c.resource("suite-delete")
		if withContent {
			r.Name = "suite-delete-full"
		}
		c.ensure(t, r)
		if withContent {
			c.tg.PutContent(t, r)
		}
		c.deleteAll(t, r)
		c.waitGone(t, r)
		if err := c.tg.Backend.Delete(ctx, r); err != nil {
			t.Errorf("Delete of %s again: want success, got %v", r.Name, err)
		}
	}
}

// deleteAll calls Delete until it no longer reports progress.
func (c *contract) deleteAll(t *testing.T, r drivers.Resource) {
	t.Helper()
	for pass := 1; ; pass++ {
		err := c.tg.Backend.Delete(context.Background(), r)
		var ip *drivers.InProgressError
		if errors.As(err, &ip) && pass < 20 {
			continue
		}
		if err != nil {
			t.Fatalf("Delete of %s, pass %d: want success, got %v", r.Name, pass, err)
		}
		return
	}
}

// waitGone waits for Inspect to report r missing: some servers answer for a
// deleted resource for a moment (MinIO's HeadBucket after DeleteBucket).
func (c *contract) waitGone(t *testing.T, r drivers.Resource) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		in, err := c.tg.Backend.Inspect(context.Background(), r)
		if err == nil && !in.Exists {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after Delete: want %s missing, got %+v, %v", r.Name, in, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// unavailable: a server that stopped answering makes every operation fail
// as *drivers.UnavailableError within about the request timeout, and
// Inspect count what it cannot see as content.
func unavailable(t *testing.T, svc Service) {
	tg := svc.Open(t, unavailableTimeout)
	if tg.Stop == nil {
		t.Skip("the service's Target cannot Stop")
	}
	ctx := context.Background()
	r := drivers.Resource{Name: "suite-down", Parameters: maps.Clone(svc.Params)}
	// The setup, with the server up: on a loaded machine (make test runs
	// the e2e suite beside this) one of its requests can outlast the short
	// timeout, so it is tried a few times; what is asserted comes after.
	var err error
	for try := 0; try < 5; try++ {
		if _, err = tg.Backend.Ensure(ctx, r); err == nil || !drivers.IsUnavailable(err) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	if err := tg.Stop(); err != nil {
		t.Fatal(err)
	}
	limit := 2 * unavailableTimeout
	start := time.Now()
	_, err = tg.Backend.Ensure(ctx, r)
	if !drivers.IsUnavailable(err) {
		t.Errorf("Ensure: want *drivers.UnavailableError, got %T %v", err, err)
	}
	if took := time.Since(start); took > limit {
		t.Errorf("Ensure: want the error within about the %s request timeout, took %s", unavailableTimeout, took)
	}
	in, err := tg.Backend.Inspect(ctx, r)
	if err == nil || !in.HasContent {
		t.Errorf("Inspect: want an error, and what it cannot see counted as content, got %+v, %v", in, err)
	}
	start = time.Now()
	if err := tg.Backend.Delete(ctx, r); !drivers.IsUnavailable(err) {
		t.Errorf("Delete: want *drivers.UnavailableError, got %T %v", err, err)
	}
	if took := time.Since(start); took > limit {
		t.Errorf("Delete: want the error within about the %s request timeout, took %s", unavailableTimeout, took)
	}
}
