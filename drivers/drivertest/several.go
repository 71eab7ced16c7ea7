package drivertest

import (
	"context"
	"fmt"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
)

// One access, several resources (drivers.SeveralGranter): the Secret's
// several-resource shape, and, with Target.UseCredentials, one principal
// with rights on every resource, Drop and Revoke.

// severalResources are the resources of the several-resource contract.
var severalResources = []string{"suite-several-0", "suite-several-1", "suite-several-2"}

// severalAccess is a ReadWrite access over names, each keyed k<i>, with
// the principal a CredentialIssuer derives when the Target issues
// per-access credentials (as in credentials, grant.go).
func (c *contract) severalAccess(names []string) drivers.Access {
	a := drivers.Access{Resource: names[0], Namespace: "suite", Name: "several", UID: "suite-several-uid", Role: drivers.RoleReadWrite,
		ResourceParameters: c.resource(names[0]).Parameters}
	for i, n := range names {
		a.Several = append(a.Several, drivers.AccessResource{Key: fmt.Sprintf("k%d", i), Name: n, Parameters: c.resource(n).Parameters})
	}
	if sc, ok := c.tg.Backend.(drivers.CredentialIssuer); ok && c.tg.UseCredentials != nil {
		a.Principal = sc.Principal(a, 1)
	}
	return a
}

// CheckSeveralGrant checks a Grant for an access naming several resources
// against the declared keys (CheckGrant) and the several-resource shape:
// one key holding every resource's name in order (drivers.SeveralList), a
// per-resource key whose <base>.<key> holds each resource's name (topic,
// bucket), and no plain key of that base: the key of an access naming one
// is not in the Secret. (Another per-resource key, as s3's region.<key>
// beside region, may have a plain key too.)
func CheckSeveralGrant(t testing.TB, keys []drivers.SecretKey, a drivers.Access, g drivers.Grant) {
	t.Helper()
	CheckGrant(t, keys, g)
	list := drivers.SeveralList(a.Resources())
	found := false
	for _, v := range g.Data {
		found = found || string(v) == list
	}
	if !found {
		t.Errorf("want a key holding the resources in order, %q, got %v", list, g.Data)
	}
	names := func(base string) bool {
		for _, r := range a.Several {
			if string(g.Data[drivers.SeveralKey(base, r.Key)]) != r.Name {
				return false
			}
		}
		return true
	}
	var bases []string
	for _, k := range keys {
		if k.PerResource && names(k.Name) {
			bases = append(bases, k.Name)
			if v, ok := g.Data[k.Name]; ok {
				t.Errorf("want no key %s in the Secret of an access naming several (it has %s.<key>), got %q", k.Name, k.Name, v)
			}
		}
	}
	if len(bases) == 0 {
		t.Errorf("want a per-resource key (SecretKey.PerResource) whose <base>.<resource key> holds each resource's name %v, got %v", a.Resources(), g.Data)
	}
}

// several: a driver that is a drivers.SeveralGranter returns the
// several-resource Secret for an access naming several resources; with
// per-access credentials (Target.UseCredentials), the one principal uses
// every resource, loses the one dropped (Access.Drop) and keeps the
// others, and after Revoke is refused on every one.
func (c *contract) several(t *testing.T) {
	if _, ok := c.suite.Driver.(drivers.SeveralGranter); !ok {
		t.Skip("the driver is not a drivers.SeveralGranter: an access names one resource")
	}
	ctx := context.Background()
	for _, n := range severalResources {
		c.ensure(t, c.resource(n))
	}
	keys := c.suite.Driver.SecretKeys()
	a := c.severalAccess(severalResources)
	g, err := c.tg.Backend.Grant(ctx, a)
	if err != nil {
		t.Fatalf("Grant(%v): want no error, got %v", a.Resources(), err)
	}
	CheckSeveralGrant(t, keys, a, g)
	use := c.tg.UseCredentials
	if use == nil {
		return
	}
	on := func(a drivers.Access, name string) drivers.Access { a.Resource, a.Several = name, nil; return a }
	for _, n := range severalResources {
		eventually(t, "the credential accepted on "+n, func() error { return use(ctx, on(a, n), g.Data) })
	}
	kept := c.severalAccess(severalResources[:2])
	kept.Drop, kept.Assert = severalResources[2:], drivers.Reassert
	if sc, ok := c.tg.Backend.(drivers.CredentialIssuer); ok {
		_, key := sc.CredentialKeys()
		kept.Secret = string(g.Data[key])
	}
	again, err := c.tg.Backend.Grant(ctx, kept)
	if err != nil {
		t.Fatalf("Grant(%v, Drop %v): want no error, got %v", kept.Resources(), kept.Drop, err)
	}
	CheckSeveralGrant(t, keys, kept, again)
	eventually(t, "the credential refused on the dropped "+severalResources[2], func() error {
		if use(ctx, on(kept, severalResources[2]), again.Data) == nil {
			return errStillAccepted
		}
		return nil
	})
	for _, n := range severalResources[:2] {
		if err := use(ctx, on(kept, n), again.Data); err != nil {
			t.Errorf("after dropping %s: want the credential still accepted on %s, got %v", severalResources[2], n, err)
		}
	}
	kept.Drop = nil
	if err := c.tg.Backend.Revoke(ctx, kept); err != nil {
		t.Fatalf("Revoke(%v): want success, got %v", kept.Resources(), err)
	}
	for _, n := range severalResources[:2] {
		eventually(t, "the revoked credential refused on "+n, func() error {
			if use(ctx, on(kept, n), again.Data) == nil {
				return errStillAccepted
			}
			return nil
		})
	}
}
