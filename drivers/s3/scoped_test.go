package s3

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// scopedFixture opens a backend with credentials on impl (versitygw with
// an IAM store and its admin endpoint).
func scopedFixture(t *testing.T, impl string) *fixture {
	t.Helper()
	var admin string
	fx := newFixture(t, impl, s3test.Options{IAM: true}, func(c *Config) {
		c.Credentials = &Credentials{}
	})
	admin = fx.srv.AdminEndpoint
	if impl == ImplVersityGW {
		// reopen with the admin endpoint the server got
		cfg := *fx.cfg
		cfg.Credentials = &Credentials{AdminEndpoint: admin}
		fx.cfg = &cfg
		fx.backend, fx.counter = open(t, &cfg)
	}
	return fx
}

// scopingOf asks be's Scoping until the server's admin API is up (MinIO
// answers 503 XMinioServerNotInitialized for a moment after it serves
// S3, which the controller, too, waits out as unavailable).
func scopingOf(t *testing.T, be *Backend) drivers.Scoping {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sc, err := be.Scoping(context.Background())
		switch {
		case err == nil:
			return sc
		case !drivers.IsUnavailable(err) || time.Now().After(deadline):
			t.Fatalf("scoping: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestScopedKeysPerAccess: on MinIO and VersityGW, with credentials set,
// every access gets a key of its own that does what its role allows on
// its bucket and nothing else; the sweep sees rights changed out of band
// and a re-asserting grant repairs them; a rotated key overlaps its
// successor until revoked; a revoked key is refused at once.
func TestScopedKeysPerAccess(t *testing.T) {
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			fx := scopedFixture(t, impl)
			be := fx.backend
			ctx := context.Background()
			if sc := scopingOf(t, be); !sc.Scoped {
				t.Fatalf("want the backend scoped, got %+v", sc)
			}
			fx.ensure(t, "ledger", nil)
			fx.ensure(t, "payroll", nil)
			fx.put(t, "ledger", "seed", "body of seed")
			fx.put(t, "payroll", "seed", "body of seed")
			grant := func(name, role string, serial int, secret string, fresh bool) drivers.Access {
				t.Helper()
				a := drivers.Access{Resource: "ledger", Namespace: "team", Name: name, UID: "uid-" + name, Role: role, Secret: secret, Assert: true, New: fresh}
				a.Principal = be.Principal(a, serial)
				if fresh {
					if found, err := be.InspectPrincipal(ctx, a.Principal); err != nil || found {
						t.Fatalf("inspect %s before its mint: want absent, got %v (%v)", a.Principal, found, err)
					}
				}
				g, err := be.Grant(ctx, a)
				if err != nil {
					t.Fatalf("grant %s: %v", name, err)
				}
				if !g.Scoped || string(g.Data[SecretAccessKeyID]) != a.Principal || string(g.Data[SecretSecretAccessKey]) == fx.cfg.SecretAccessKey {
					t.Fatalf("grant %s: want a key of its own, got scoped=%v key %s", name, g.Scoped, g.Data[SecretAccessKeyID])
				}
				a.Secret = string(g.Data[SecretSecretAccessKey])
				return a
			}
			as := func(a drivers.Access) s3Ops {
				return s3Ops{t: t, cl: s3As(fx.srv, a.Principal, a.Secret)}
			}
			rw, ro := grant("writer", "ReadWrite", 1, "", true), grant("reader", "ReadOnly", 1, "", true)
			w, r := as(rw), as(ro)
			wantOK(t, "ReadWrite put", w.put("ledger", "k"))
			wantOK(t, "ReadWrite get", w.get("ledger", "k"))
			wantOK(t, "ReadWrite list", w.list("ledger"))
			wantOK(t, "ReadOnly get", r.get("ledger", "k"))
			wantOK(t, "ReadOnly list", r.list("ledger"))
			wantDenied(t, "ReadOnly put", r.put("ledger", "r"))
			wantDenied(t, "ReadOnly delete", r.del("ledger", "k"))
			for who, o := range map[string]s3Ops{"ReadWrite": w, "ReadOnly": r} {
				wantDenied(t, who+" list the neighbour's bucket", o.list("payroll"))
				wantDenied(t, who+" get from the neighbour's bucket", o.get("payroll", "seed"))
				wantDenied(t, who+" put in the neighbour's bucket", o.put("payroll", "x"))
				wantDenied(t, who+" delete in the neighbour's bucket", o.del("payroll", "seed"))
				if err := o.createBucket("mine-" + strings.ToLower(who)); err == nil {
					t.Errorf("%s: want bucket creation refused, it succeeded", who)
				}
			}
			wantOK(t, "ReadWrite delete", w.del("ledger", "k"))

			both := []drivers.Access{rw, ro}
			if d, err := be.SweepCredentials(ctx, both); err != nil || len(d) != 0 {
				t.Fatalf("sweep of fresh grants: want no drift, got %v (%v)", d, err)
			}
			// Out of band: the reader is given the writer's rights.
			switch impl {
			case ImplMinIO:
				policy, err := minioAccessPolicy("ledger", "ReadWrite")
				if err != nil {
					t.Fatal(err)
				}
				if err := be.minioAdmin().update(ctx, ro.Principal, "", policy); err != nil {
					t.Fatal(err)
				}
			case ImplVersityGW:
				if err := be.setBucketGrant(ctx, "ledger", ro.Principal, "ReadWrite"); err != nil {
					t.Fatal(err)
				}
			}
			wantOK(t, "ReadOnly put after the out-of-band change (the change took)", r.put("ledger", "oob"))
			d, err := be.SweepCredentials(ctx, both)
			if err != nil || len(d) != 1 || d[0] != 1 {
				t.Fatalf("sweep after the reader's rights changed: want [1], got %v (%v)", d, err)
			}
			ro.New = false
			if _, err := be.Grant(ctx, ro); err != nil {
				t.Fatal(err)
			}
			wantDenied(t, "ReadOnly put after the repair", r.put("ledger", "r2"))
			if d, err := be.SweepCredentials(ctx, both); err != nil || len(d) != 0 {
				t.Fatalf("sweep after the repair: want no drift, got %v (%v)", d, err)
			}

			// Rotation: the next serial works alongside the old until that is revoked.
			ro2 := grant("reader", "ReadOnly", 2, "", true)
			wantOK(t, "rotated ReadOnly get", as(ro2).get("ledger", "seed"))
			wantOK(t, "old ReadOnly get during the overlap", r.get("ledger", "seed"))
			if err := be.Revoke(ctx, ro); err != nil {
				t.Fatal(err)
			}
			wantRefusedKey(t, "old ReadOnly after its revocation", r.get("ledger", "seed"))
			wantOK(t, "rotated ReadOnly get after the old one's revocation", as(ro2).get("ledger", "seed"))
			if err := be.Revoke(ctx, ro); err != nil {
				t.Errorf("revoking a key already gone: want success, got %v", err)
			}
			if found, err := be.InspectPrincipal(ctx, ro.Principal); err != nil || found {
				t.Errorf("inspect a revoked key: want absent, got %v (%v)", found, err)
			}
			if d, err := be.SweepCredentials(ctx, []drivers.Access{rw, ro2}); err != nil || len(d) != 0 {
				t.Fatalf("sweep after the rotation: want no drift, got %v (%v)", d, err)
			}
			if impl == ImplVersityGW {
				// A user deleted without its statement (out of band)
				// must not block the next grant on the bucket: the
				// gateway refuses policies naming missing users.
				if err := be.versityAdmin().deleteUser(ctx, ro2.Principal); err != nil {
					t.Fatal(err)
				}
				wo := grant("producer", "WriteOnly", 1, "", true)
				wantOK(t, "WriteOnly put after a user vanished from under its statement", as(wo).put("ledger", "w"))
			}
		})
	}
}

// TestScopedForeignPrincipal: a key that exists before buckety minted it
// (someone else's) is reported by InspectPrincipal, which is how the
// controller refuses it; an unscoped backend says why in Scoping.
func TestScopedForeignPrincipal(t *testing.T) {
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			fx := scopedFixture(t, impl)
			be := fx.backend
			ctx := context.Background()
			scopingOf(t, be)
			a := drivers.Access{Resource: "ledger", Namespace: "team", Name: "squatted", UID: "uid-squatted"}
			principal := be.Principal(a, 1)
			switch impl {
			case ImplMinIO:
				policy, err := minioAccessPolicy("ledger", "ReadOnly")
				if err != nil {
					t.Fatal(err)
				}
				if err := be.minioAdmin().add(ctx, DefaultParentUser, principal, "someone-elses-secret", policy, "theirs", "not buckety's"); err != nil {
					t.Fatal(err)
				}
			case ImplVersityGW:
				if err := be.versityAdmin().createUser(ctx, principal, "someone-elses-secret"); err != nil {
					t.Fatal(err)
				}
			}
			if found, err := be.InspectPrincipal(ctx, principal); err != nil || !found {
				t.Errorf("inspect a key someone else made: want found, got %v (%v)", found, err)
			}
		})
	}
	unscoped := newFixture(t, ImplMinIO, s3test.Options{}, nil)
	if sc := scopingOf(t, unscoped.backend); sc.Scoped || !strings.Contains(sc.Reason, "set credentials") {
		t.Errorf("a backend without credentials: want unscoped with the reason, got %+v", sc)
	}
	noIAM := newFixture(t, ImplVersityGW, s3test.Options{}, nil)
	cfg := *noIAM.cfg
	cfg.Credentials = &Credentials{AdminEndpoint: noIAM.srv.AdminEndpoint}
	be, _ := open(t, &cfg)
	if sc := scopingOf(t, be); sc.Scoped || !strings.Contains(sc.Reason, "--iam-dir") {
		t.Errorf("a gateway without an IAM store: want unscoped with the reason, got %+v", sc)
	}
}
