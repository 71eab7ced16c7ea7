package drivertest

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/Yolean/buckety-controller/drivers"
)

// Secrets: what Grant writes is held to what the driver declares
// (Driver.SecretKeys), and Revoke is idempotent.

// GrantCase is an access the suite grants, and the Secret it must get.
type GrantCase struct {
	// Name names the subtest.
	Name string
	// Access is granted. An empty Resource is the suite's own resource, or
	// the first of Several's.
	Access drivers.Access
	// Want are Secret values the grant writes besides the Target's
	// SecretData; an empty value: any non-empty value. The Secret holds
	// exactly these keys and the SecretData's.
	Want map[string]string
	// PerAccess is the Grant's PerAccess.
	PerAccess bool
}

// CheckGrant checks a Grant's Secret data against the declared keys: every
// required key present and non-empty, no undeclared key, and every key a
// valid Secret data key.
func CheckGrant(t testing.TB, keys []drivers.SecretKey, g drivers.Grant) {
	t.Helper()
	if err := drivers.CheckSecretData(keys, g.Data); err != nil {
		t.Errorf("want the declared Secret keys, got %v (keys %v)", err, slices.Sorted(maps.Keys(g.Data)))
	}
	for k := range g.Data {
		if msgs := validation.IsConfigMapKey(k); len(msgs) > 0 {
			t.Errorf("Secret key %q: want a valid Secret data key, got %v", k, msgs)
		}
	}
}

// runSecretKeys: the declaration is one the registry accepts (at least one
// key every Secret has, required keys environment variable names, each key
// declared once and described); NewRegistry panics otherwise.
func (s *Suite) runSecretKeys(t *testing.T) {
	defer func() {
		if r := recover(); r != nil {
			t.Fatalf("want a driver the registry accepts, got %v", r)
		}
	}()
	drivers.NewRegistry(s.Driver)
}

func (c *contract) grant(t *testing.T) {
	if len(c.suite.Grants) == 0 {
		t.Skip("the suite declares no Grants")
	}
	keys := c.suite.Driver.SecretKeys()
	for _, gc := range c.suite.Grants {
		t.Run(gc.Name, func(t *testing.T) {
			a := gc.Access
			switch {
			case a.Resource != "":
			case len(a.Several) > 0:
				a.Resource = a.Several[0].Name
			default:
				a.Resource = "suite-grant"
			}
			g, err := c.tg.Backend.Grant(context.Background(), a)
			if err != nil {
				t.Fatalf("Grant(%+v): want no error, got %v", a, err)
			}
			CheckGrant(t, keys, g)
			want := maps.Clone(c.tg.SecretData)
			if want == nil {
				want = map[string]string{}
			}
			maps.Copy(want, gc.Want)
			got := map[string]string{}
			for k, v := range g.Data {
				got[k] = string(v)
				if w, ok := want[k]; ok && w == "" && len(v) > 0 {
					want[k] = got[k] // any non-empty value
				}
			}
			if !maps.Equal(got, want) {
				t.Errorf("Grant(%+v): want Secret data %v, got %v", a, want, got)
			}
			if g.PerAccess != gc.PerAccess {
				t.Errorf("Grant(%+v): want PerAccess %v, got %v", a, gc.PerAccess, g.PerAccess)
			}
		})
	}
}

// revoke: Revoke of an access never granted is success (a missing principal
// is success), and so is revoking twice.
func (c *contract) revoke(t *testing.T) {
	ctx := context.Background()
	never := drivers.Access{Resource: "suite-revoke", Namespace: "suite", Name: "never-granted", Role: drivers.RoleReadWrite}
	granted := drivers.Access{Resource: "suite-revoke", Namespace: "suite", Name: "granted", Role: drivers.RoleReadWrite}
	if _, err := c.tg.Backend.Grant(ctx, granted); err != nil {
		t.Fatal(err)
	}
	for _, a := range []drivers.Access{never, granted} {
		for i := 1; i <= 2; i++ {
			if err := c.tg.Backend.Revoke(ctx, a); err != nil {
				t.Errorf("Revoke #%d of %s: want success, got %v", i, a.Name, err)
			}
		}
	}
}

// credentials is the extension point for per-access credentials
// (Target.UseCredentials): Grant is idempotent for one access (the same
// principal, and a Secret that works), two accesses get two principals,
// Revoke makes the revoked access's credential refused and leaves the
// other's working, and revoking again is success. Drivers that hand every
// access the backend's own credentials skip it.
func (c *contract) credentials(t *testing.T) {
	use := c.tg.UseCredentials
	if use == nil {
		t.Skip("the driver hands every access the backend's own credentials: no per-access principal (Target.UseCredentials)")
	}
	ctx := context.Background()
	r := c.resource("suite-credentials")
	c.ensure(t, r)
	a := drivers.Access{Resource: r.Name, Namespace: "suite", Name: "reader", UID: "suite-reader-uid", Role: drivers.RoleReadWrite, ResourceParameters: r.Parameters}
	b := a
	b.Name, b.UID = "writer", "suite-writer-uid"
	// A CredentialIssuer's principals are derived for the controller,
	// which passes them to Grant and Revoke.
	if sc, ok := c.tg.Backend.(drivers.CredentialIssuer); ok {
		a.Principal, b.Principal = sc.Principal(a, 1), sc.Principal(b, 1)
	}
	grant := func(a drivers.Access) drivers.Grant {
		t.Helper()
		g, err := c.tg.Backend.Grant(ctx, a)
		if err != nil {
			t.Fatalf("Grant(%s): want no error, got %v", a.Name, err)
		}
		CheckGrant(t, c.suite.Driver.SecretKeys(), g)
		return g
	}
	first := grant(a)
	// The Secret is the source of truth: a second Grant gets its secret.
	if sc, ok := c.tg.Backend.(drivers.CredentialIssuer); ok {
		_, key := sc.CredentialKeys()
		a.Secret = string(first.Data[key])
	}
	again, other := grant(a), grant(b)
	if first.Principal == "" || again.Principal != first.Principal {
		t.Errorf("Grant twice for one access: want one principal, got %q and %q", first.Principal, again.Principal)
	}
	if other.Principal == first.Principal {
		t.Errorf("Grant for two accesses: want two principals, got %q for both", first.Principal)
	}
	// A service may take a moment to apply a credential (or to
	// re-authenticate an open connection).
	eventually(t, "the granted credential accepted", func() error { return use(ctx, a, again.Data) })
	eventually(t, "the other access's credential accepted", func() error { return use(ctx, b, other.Data) })
	for i := 1; i <= 2; i++ {
		if err := c.tg.Backend.Revoke(ctx, a); err != nil {
			t.Fatalf("Revoke #%d: want success, got %v", i, err)
		}
	}
	eventually(t, "the revoked credential refused", func() error {
		if use(ctx, a, again.Data) == nil {
			return errStillAccepted
		}
		return nil
	})
	if err := use(ctx, b, other.Data); err != nil {
		t.Errorf("after revoking %s: want %s's credential still accepted, got %v", a.Name, b.Name, err)
	}
}

// applyTimeout bounds how long a service may take to apply a credential.
const applyTimeout = 15 * time.Second

// errStillAccepted is what a revoked credential's check reports while the
// service still accepts it.
var errStillAccepted = errors.New("still accepted")

// eventually calls check every pollInterval until it returns nil, and fails
// t with what and the last error when applyTimeout passes first. The suite
// polls by itself rather than with test/wait: drivers import nothing of
// test/, which is built on them.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(applyTimeout)
	for err := check(); err != nil; err = check() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true after %s; last seen: %v", what, applyTimeout, err)
		}
		time.Sleep(pollInterval)
	}
}

// pollInterval is how often eventually checks.
const pollInterval = 100 * time.Millisecond
