package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/minioadmin"
	"github.com/Yolean/buckety-controller/drivers/s3/versityadmin"
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

// scopingOf asks be's Issuing until the server's admin API is up (MinIO
// answers 503 XMinioServerNotInitialized for a moment after it serves
// S3, which the controller, too, waits out as unavailable).
func scopingOf(t *testing.T, be *Backend) drivers.Issuing {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		sc, err := be.Issuing(context.Background())
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
			if sc := scopingOf(t, be); !sc.PerAccess {
				t.Fatalf("want the backend scoped, got %+v", sc)
			}
			fx.ensure(t, "ledger", nil)
			fx.ensure(t, "payroll", nil)
			fx.put(t, "ledger", "seed", "body of seed")
			fx.put(t, "payroll", "seed", "body of seed")
			grant := func(name, role string, serial int, secret string, fresh bool) drivers.Access {
				t.Helper()
				a := drivers.Access{Resource: "ledger", Namespace: "team", Name: name, UID: "uid-" + name, Role: drivers.Role(role), Secret: secret, Assert: drivers.Reassert}
				if fresh {
					a.Assert = drivers.IssueNew
				}
				a.Principal = be.Principal(a, serial)
				if fresh {
					if found, err := be.InspectPrincipal(ctx, a.Principal); err != nil || found {
						t.Fatalf("inspect %s before its issue: want absent, got %v (%v)", a.Principal, found, err)
					}
				}
				g, err := be.Grant(ctx, a)
				if err != nil {
					t.Fatalf("grant %s: %v", name, err)
				}
				if !g.PerAccess || string(g.Data[SecretAccessKeyID]) != a.Principal || string(g.Data[SecretSecretAccessKey]) == fx.cfg.SecretAccessKey {
					t.Fatalf("grant %s: want a key of its own, got scoped=%v key %s", name, g.PerAccess, g.Data[SecretAccessKeyID])
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
				if err := be.minioAdmin().PutCannedPolicy(ctx, MinIOPolicyName(ro.Principal), policy); err != nil {
					t.Fatal(err)
				}
			case ImplVersityGW:
				if err := be.versityIssuer().setBucketGrant(ctx, "ledger", ro.Principal, "ReadWrite", nil); err != nil {
					t.Fatal(err)
				}
			}
			wantOK(t, "ReadOnly put after the out-of-band change (the change took)", r.put("ledger", "oob"))
			d, err := be.SweepCredentials(ctx, both)
			if err != nil || len(d) != 1 || d[0] != 1 {
				t.Fatalf("sweep after the reader's rights changed: want [1], got %v (%v)", d, err)
			}
			ro.Assert = drivers.Reassert
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
				if err := be.versityAdmin().DeleteUser(ctx, ro2.Principal); err != nil {
					t.Fatal(err)
				}
				wo := grant("producer", "WriteOnly", 1, "", true)
				wantOK(t, "WriteOnly put after a user vanished from under its statement", as(wo).put("ledger", "w"))
			}
		})
	}
}

// TestScopedForeignPrincipal: a key that exists before buckety issued it
// (someone else's) is reported by InspectPrincipal, which is how the
// controller refuses it; a shared backend says why in Issuing.
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
				// A service account of root's, and a user of its own.
				policy, err := minioAccessPolicy("ledger", "ReadOnly")
				if err != nil {
					t.Fatal(err)
				}
				if err := be.minioAdmin().Add(ctx, "", principal, "someone-elses-secret", policy, "theirs", "not buckety's"); err != nil {
					t.Fatal(err)
				}
				user := be.Principal(drivers.Access{UID: "uid-squatted-user"}, 1)
				if err := be.minioAdmin().SetUser(ctx, user, "someone-elses-secret"); err != nil {
					t.Fatal(err)
				}
				if found, err := be.InspectPrincipal(ctx, user); err != nil || !found {
					t.Errorf("inspect a user someone else made: want found, got %v (%v)", found, err)
				}
			case ImplVersityGW:
				if err := be.versityAdmin().CreateUser(ctx, principal, "someone-elses-secret"); err != nil {
					t.Fatal(err)
				}
			}
			if found, err := be.InspectPrincipal(ctx, principal); err != nil || !found {
				t.Errorf("inspect a key someone else made: want found, got %v (%v)", found, err)
			}
		})
	}
	unscoped := newFixture(t, ImplMinIO, s3test.Options{}, nil)
	if sc := scopingOf(t, unscoped.backend); sc.PerAccess || !strings.Contains(sc.Reason, "set credentials") {
		t.Errorf("a backend without credentials: want unscoped with the reason, got %+v", sc)
	}
	noIAM := newFixture(t, ImplVersityGW, s3test.Options{}, nil)
	cfg := *noIAM.cfg
	cfg.Credentials = &Credentials{AdminEndpoint: noIAM.srv.AdminEndpoint}
	be, _ := open(t, &cfg)
	sc := scopingOf(t, be)
	if sc.PerAccess || !sc.Required || !strings.Contains(sc.Reason, "--iam-dir") {
		t.Errorf("a gateway without an IAM store: want unscoped, required, with the reason, got %+v", sc)
	}
	// Nor does Grant hand out the gateway's own keys on such a backend.
	g, err := be.Grant(context.Background(), drivers.Access{Resource: "ledger", Namespace: "team", Name: "a", UID: "uid-a"})
	if err == nil || strings.Contains(string(g.Data[SecretSecretAccessKey]), cfg.SecretAccessKey) {
		t.Errorf("grant without a key of its own on a backend with credentials: want refused, got %v (%v)", g.Data, err)
	}
	if unscoped.backend.cfg.Credentials == nil {
		if sc := scopingOf(t, unscoped.backend); sc.Required {
			t.Errorf("a backend without credentials: want not required, got %+v", sc)
		}
	}
}

// TestMinIOTenantKeyReachesNoKey: tenant A's issued key, used as a hostile
// tenant would against MinIO's admin API, lists, inspects, adds, re-keys
// and deletes no key, its own or tenant B's, and B keeps working.
func TestMinIOTenantKeyReachesNoKey(t *testing.T) {
	fx := scopedFixture(t, ImplMinIO)
	be := fx.backend
	ctx := context.Background()
	if sc := scopingOf(t, be); !sc.PerAccess {
		t.Fatalf("want the backend scoped, got %+v", sc)
	}
	fx.ensure(t, "bucket-a", nil)
	fx.ensure(t, "bucket-b", nil)
	fx.put(t, "bucket-b", "seed", "body of seed")
	grant := func(ns, bucket string) drivers.Access {
		a := drivers.Access{Resource: bucket, Namespace: ns, Name: "app", UID: "uid-" + ns, Assert: drivers.IssueNew}
		a.Principal = be.Principal(a, 1)
		g, err := be.Grant(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		a.Secret = string(g.Data[SecretSecretAccessKey])
		return a
	}
	a, b := grant("tenant-a", "bucket-a"), grant("tenant-b", "bucket-b")
	bOps := s3Ops{t, s3As(fx.srv, b.Principal, b.Secret)}
	wantOK(t, "B reads its bucket", bOps.get("bucket-b", "seed"))

	// A's key, signing admin requests as MinIO's own client would.
	evil := minioadmin.New(fx.srv.Endpoint, fx.srv.Region, a.Principal, a.Secret, nil)
	policy, err := minioAccessPolicy("bucket-b", "ReadWrite")
	if err != nil {
		t.Fatal(err)
	}
	attempts := map[string]func() error{
		"list B's service accounts": func() error { _, err := evil.List(ctx, b.Principal); return err },
		"info of its own key":       func() error { _, _, err := evil.Info(ctx, a.Principal); return err },
		"info of B's key":           func() error { _, _, err := evil.Info(ctx, b.Principal); return err },
		"add a service account of itself, without a policy": func() error {
			return evil.Add(ctx, "", "bkyevil-1", "evil-secret-0001", []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::*"]}]}`), "", "")
		},
		"add a service account of B": func() error { return evil.Add(ctx, b.Principal, "bkyevil-2", "evil-secret-0002", policy, "", "") },
		"remove B's user":            func() error { return evil.RemoveUser(ctx, b.Principal) },
		"remove its own user":        func() error { return evil.RemoveUser(ctx, a.Principal) },
		"user-info of B":             func() error { _, _, err := evil.UserInfo(ctx, b.Principal); return err },
		"user-info of itself":        func() error { _, _, err := evil.UserInfo(ctx, a.Principal); return err },
		"list users":                 func() error { _, err := evil.ListUsers(ctx); return err },
		"change its own secret":      func() error { return evil.SetUser(ctx, a.Principal, "evil-secret-0003") },
		"re-key B":                   func() error { return evil.SetUser(ctx, b.Principal, "evil-secret-0004") },
		"attach readwrite to itself": func() error { return evil.SetUserPolicy(ctx, a.Principal, "readwrite") },
		"rewrite its own policy":     func() error { return evil.PutCannedPolicy(ctx, MinIOPolicyName(a.Principal), policy) },
		"list policies":              func() error { _, err := evil.ListCannedPolicies(ctx); return err },
	}
	for what, try := range attempts {
		if err := try(); err == nil {
			t.Errorf("tenant A's key: %s: want refused, it succeeded", what)
		}
	}
	// Two routes MinIO answers whatever a policy says: a user's list of
	// its own service accounts (an issued key has none, and can make none),
	// and delete-service-account, which does nothing to a key that is a
	// user.
	if own, err := evil.List(ctx, a.Principal); err == nil && len(own) != 0 {
		t.Errorf("tenant A's own service accounts: want none, got %v", own)
	}
	if err := evil.Delete(ctx, b.Principal); err != nil {
		t.Logf("delete-service-account of B's key: %v", err)
	}
	wantOK(t, "B still reads its bucket", bOps.get("bucket-b", "seed"))
	wantOK(t, "A still reaches its own bucket", s3Ops{t, s3As(fx.srv, a.Principal, a.Secret)}.list("bucket-a"))
	wantDenied(t, "A reads B's bucket", s3Ops{t, s3As(fx.srv, a.Principal, a.Secret)}.get("bucket-b", "seed"))
	if d, err := be.SweepCredentials(ctx, []drivers.Access{a, b}); err != nil || len(d) != 0 {
		t.Errorf("sweep after the attempts: want no drift, got %v (%v)", d, err)
	}
	for _, k := range []string{"bkyevil-1", "bkyevil-2"} {
		if found, err := be.InspectPrincipal(ctx, k); err != nil || found {
			t.Errorf("key %s the attacker tried to add: want absent, got %v (%v)", k, found, err)
		}
	}
}

// TestMinIOLegacyKeyReplaced: a key issued before keys were users (a
// service account of the legacy parent) drifts in the sweep, and its
// re-assert replaces it with a user of the same key and secret (the
// Secret keeps working); revocation of such a key deletes it; a service
// account of another parent under buckety's name is left alone.
func TestMinIOLegacyKeyReplaced(t *testing.T) {
	fx := scopedFixture(t, ImplMinIO)
	be := fx.backend
	ctx := context.Background()
	scopingOf(t, be)
	m := be.minioAdmin()
	makeLegacyParent(t, m)
	fx.ensure(t, "ledger", nil)
	fx.put(t, "ledger", "seed", "body of seed")
	a := drivers.Access{Resource: "ledger", Namespace: "team", Name: "old", UID: "uid-old", Role: "ReadOnly", Secret: "legacy-secret-000001"}
	a.Principal = be.Principal(a, 1)
	policy, err := minioAccessPolicy("ledger", "ReadOnly")
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Add(ctx, testParent, a.Principal, a.Secret, policy, "buckety", "legacy"); err != nil {
		t.Fatal(err)
	}
	key := s3Ops{t, s3As(fx.srv, a.Principal, a.Secret)}
	wantOK(t, "legacy key reads", key.get("ledger", "seed"))
	if d, err := be.SweepCredentials(ctx, []drivers.Access{a}); err != nil || len(d) != 1 {
		t.Fatalf("sweep of a legacy key: want it drifted, got %v (%v)", d, err)
	}
	a.Assert = drivers.Reassert
	if _, err := be.Grant(ctx, a); err != nil {
		t.Fatal(err)
	}
	if u, found, err := m.UserInfo(ctx, a.Principal); !found || err != nil || !slices.Equal(u.Policies(), []string{MinIOPolicyName(a.Principal)}) {
		t.Errorf("legacy key after the re-assert: want a user holding its own policy, got %+v, %v (%v)", u, found, err)
	}
	if accounts, err := m.List(ctx, testParent); err != nil || len(accounts) != 0 {
		t.Errorf("legacy parent's service accounts after the re-assert: want none, got %v (%v)", accounts, err)
	}
	wantOK(t, "the same key and secret read, as a user", key.get("ledger", "seed"))
	wantDenied(t, "and may not write", key.put("ledger", "w"))
	if d, err := be.SweepCredentials(ctx, []drivers.Access{a}); err != nil || len(d) != 0 {
		t.Errorf("sweep after the re-assert: want no drift, got %v (%v)", d, err)
	}

	// Revoking a legacy key that was never replaced.
	b := drivers.Access{Resource: "ledger", Namespace: "team", Name: "older", UID: "uid-older", Secret: "legacy-secret-000002"}
	b.Principal = be.Principal(b, 1)
	if err := m.Add(ctx, testParent, b.Principal, b.Secret, policy, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := be.Revoke(ctx, b); err != nil {
		t.Fatal(err)
	}
	wantRefusedKey(t, "revoked legacy key", s3Ops{t, s3As(fx.srv, b.Principal, b.Secret)}.get("ledger", "seed"))

	// A service account of root under a recorded name is not buckety's.
	c := drivers.Access{Resource: "ledger", Namespace: "team", Name: "squat", UID: "uid-squat", Secret: "squat-secret-000003", Assert: drivers.Reassert}
	c.Principal = be.Principal(c, 1)
	if err := m.Add(ctx, "", c.Principal, c.Secret, policy, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := be.Grant(ctx, c); err == nil || !strings.Contains(err.Error(), "did not issue") {
		t.Errorf("grant over root's service account: want refused as not buckety's, got %v", err)
	}
	if err := be.Revoke(ctx, c); err != nil {
		t.Errorf("revoke of a name someone else holds: want success without touching it, got %v", err)
	}
	wantOK(t, "root's service account still works", s3Ops{t, s3As(fx.srv, c.Principal, c.Secret)}.get("ledger", "seed"))
}

// TestVersityFullPolicyMintsNoUser: once a bucket's policy cannot name one
// more key, a grant on it fails before the gateway has a user for it, so
// an access flood leaves no users behind; and the access keys it probes
// for are answered by one S3 request, not by listing every user.
func TestVersityFullPolicyMintsNoUser(t *testing.T) {
	fx := scopedFixture(t, ImplVersityGW)
	be := fx.backend
	ctx := context.Background()
	scopingOf(t, be)
	fx.ensure(t, "ledger", nil)
	full := -1
	for i := 0; i < 200; i++ {
		a := drivers.Access{Resource: "ledger", Namespace: "flood", Name: fmt.Sprintf("a%d", i), UID: fmt.Sprintf("uid-flood-%d", i), Assert: drivers.IssueNew}
		a.Principal = be.Principal(a, 1)
		_, err := be.Grant(ctx, a)
		if err == nil {
			continue
		}
		if !errors.Is(err, errPolicyTooLarge) {
			t.Fatalf("grant %d: want success or errPolicyTooLarge, got %v", i, err)
		}
		if found, ierr := be.InspectPrincipal(ctx, a.Principal); ierr != nil || found {
			t.Fatalf("grant %d refused as too large: want no user left for %s, got %v (%v)", i, a.Principal, found, ierr)
		}
		full = i
		break
	}
	if full < 10 {
		t.Fatalf("want the policy full after some tens of keys, got %d", full)
	}
	t.Logf("bucket policy full after %d keys", full)
	users, err := be.versityAdmin().ListUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != full {
		t.Errorf("want exactly the %d granted users, got %d", full, len(users))
	}
}

// TestVersityForeignUserNotTakenOver: a user someone made under buckety's
// name after the controller saw it absent and recorded it (Recorded) is
// refused, not re-keyed: its own secret keeps working. A later pass (an
// interrupted issue of buckety's own, not Recorded) does re-key it.
func TestVersityForeignUserNotTakenOver(t *testing.T) {
	fx := scopedFixture(t, ImplVersityGW)
	be := fx.backend
	ctx := context.Background()
	scopingOf(t, be)
	fx.ensure(t, "ledger", nil)
	a := drivers.Access{Resource: "ledger", Namespace: "team", Name: "raced", UID: "uid-raced", Assert: drivers.IssueRecorded}
	a.Principal = be.Principal(a, 1)
	if err := be.versityAdmin().CreateUser(ctx, a.Principal, "TheirOwnSecret0123456789"); err != nil {
		t.Fatal(err)
	}
	_, err := be.Grant(ctx, a)
	if !drivers.IsPrincipalExists(err) {
		t.Fatalf("grant over a user made in the meantime: want a PrincipalExistsError, got %v", err)
	}
	theirs := s3Ops{t, s3As(fx.srv, a.Principal, "TheirOwnSecret0123456789")}
	wantDenied(t, "their key still authenticates (and is granted nothing)", theirs.list("ledger"))
	a.Assert = drivers.IssueNew
	if _, err := be.Grant(ctx, a); err != nil {
		t.Fatalf("a later pass of the same issue: %v", err)
	}
}

// TestSweepJudgesTheOthers: one access whose rights cannot be judged (a
// record naming a bucket no policy can name) does not keep the sweep from
// judging, and reporting, the others' drift.
func TestSweepJudgesTheOthers(t *testing.T) {
	fx := scopedFixture(t, ImplMinIO)
	be := fx.backend
	ctx := context.Background()
	scopingOf(t, be)
	fx.ensure(t, "ledger", nil)
	ok := drivers.Access{Resource: "ledger", Namespace: "team", Name: "ok", UID: "uid-ok", Assert: drivers.IssueNew}
	ok.Principal = be.Principal(ok, 1)
	if _, err := be.Grant(ctx, ok); err != nil {
		t.Fatal(err)
	}
	gone := drivers.Access{Resource: "ledger", Namespace: "team", Name: "gone", UID: "uid-gone"}
	gone.Principal = be.Principal(gone, 1) // never issued: drifted
	broken := drivers.Access{Resource: "no*such", Namespace: "other", Name: "broken", UID: "uid-broken"}
	broken.Principal = be.Principal(broken, 1)
	d, err := be.SweepCredentials(ctx, []drivers.Access{broken, ok, gone})
	if err == nil || !strings.Contains(err.Error(), broken.Principal) {
		t.Errorf("want an error naming the access that could not be judged, got %v", err)
	}
	if len(d) != 1 || d[0] != 2 {
		t.Errorf("want the missing key (index 2) reported drifted beside the error, got %v", d)
	}
}

// The issuers' admin clients, for tests that change the server out of
// band as its operator would.

func (b *Backend) minioAdmin() *minioadmin.Client { return b.scoping.issuer.(*minioIssuer).admin }

func (b *Backend) versityAdmin() *versityadmin.Client { return b.scoping.issuer.(*versityIssuer).admin }

func (b *Backend) versityIssuer() *versityIssuer { return b.scoping.issuer.(*versityIssuer) }

// hangingProxy is a reverse proxy to endpoint that forwards a request
// unless held says otherwise: a held request is answered never (it waits
// until its client gives up, or the test ends), as by a server that hangs
// mid-sweep. held names what the request asks for (from its URL and its
// body); Held lists the names of the requests held so far.
type hangingProxy struct {
	*httptest.Server
	mu   sync.Mutex
	held []string
}

func newHangingProxy(t *testing.T, endpoint string, held func(r *http.Request, body []byte) (string, bool)) *hangingProxy {
	t.Helper()
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	ended := make(chan struct{})
	p := &hangingProxy{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if name, ok := held(r, body); ok {
			p.mu.Lock()
			p.held = append(p.held, name)
			p.mu.Unlock()
			select {
			case <-r.Context().Done():
			case <-ended:
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	t.Cleanup(func() { close(ended) }) // first: Close waits for the held
	return p
}

// Held lists the names of the requests held, in order.
func (p *hangingProxy) Held() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.held)
}

// TestIAMSweepStopsWhenTheServerHangs: an IAM server that stops answering
// after ListUsers ends the sweep at the first user's request that times
// out (unavailable, the users not judged left to the next sweep), rather
// than waiting out requestTimeout for each user in turn: with a thousand
// users and 30 s, a round of hours that held up every other backend's.
func TestIAMSweepStopsWhenTheServerHangs(t *testing.T) {
	srv, be, _ := iamFixture(t)
	ctx := context.Background()
	if err := (s3Ops{t: t, cl: rawClient(t, be.cfg, be.cfg.Endpoint)}).createBucket("ledger"); err != nil {
		t.Fatal(err)
	}
	var as []drivers.Access
	for i := range 4 {
		a := drivers.Access{Resource: "ledger", Namespace: "team", Name: fmt.Sprintf("a%d", i), UID: fmt.Sprintf("uid-hang-%d", i), Role: drivers.RoleReadOnly, Assert: drivers.IssueRecorded}
		a.Principal = be.Principal(a, 1)
		if _, err := be.Grant(ctx, a); err != nil {
			t.Fatal(err)
		}
		as = append(as, a)
	}
	hung := newHangingProxy(t, srv.Endpoint, func(_ *http.Request, body []byte) (string, bool) {
		form, err := url.ParseQuery(string(body))
		if err != nil || form.Get("Action") == "ListUsers" {
			return "", false
		}
		return form.Get("UserName"), true
	})
	cfg := *be.cfg
	cfg.Credentials = &Credentials{IAMEndpoint: hung.URL}
	cfg.RequestTimeout = drivers.Duration{Duration: time.Second}
	hungBe, _ := open(t, &cfg)
	drifted, err := hungBe.SweepCredentials(ctx, as)
	if !drivers.IsUnavailable(err) || len(drifted) != 0 {
		t.Errorf("want the server unavailable and nothing judged drifted, got %v (%v)", drifted, err)
	}
	if held := slices.Compact(hung.Held()); len(held) != 1 || held[0] != as[0].Principal {
		t.Errorf("want the sweep stopped at the first user (%s), got requests held for %v", as[0].Principal, held)
	}
}

// TestVersitySweepStopsWhenTheGatewayHangs: a gateway that answers its
// admin API but no GetBucketPolicy ends the sweep at the first bucket
// whose read times out (unavailable), rather than waiting out
// requestTimeout for each bucket in turn.
func TestVersitySweepStopsWhenTheGatewayHangs(t *testing.T) {
	fx := scopedFixture(t, ImplVersityGW)
	be := fx.backend
	ctx := context.Background()
	scopingOf(t, be)
	var as []drivers.Access
	for i := range 4 {
		bucket := fmt.Sprintf("ledger-%d", i)
		fx.ensure(t, bucket, nil)
		a := drivers.Access{Resource: bucket, Namespace: "team", Name: fmt.Sprintf("a%d", i), UID: fmt.Sprintf("uid-hang-%d", i), Role: drivers.RoleReadOnly, Assert: drivers.IssueNew}
		a.Principal = be.Principal(a, 1)
		if _, err := be.Grant(ctx, a); err != nil {
			t.Fatal(err)
		}
		as = append(as, a)
	}
	hung := newHangingProxy(t, fx.srv.Endpoint, func(r *http.Request, _ []byte) (string, bool) {
		if _, ok := r.URL.Query()["policy"]; !ok || r.Method != http.MethodGet {
			return "", false
		}
		return strings.Trim(r.URL.Path, "/"), true
	})
	cfg := *fx.cfg
	cfg.Endpoint = hung.URL
	cfg.RequestTimeout = drivers.Duration{Duration: time.Second}
	hungBe, _ := open(t, &cfg)
	drifted, err := hungBe.SweepCredentials(ctx, as)
	if !drivers.IsUnavailable(err) || len(drifted) != 0 {
		t.Errorf("want the gateway unavailable and nothing judged drifted, got %v (%v)", drifted, err)
	}
	if held := slices.Compact(hung.Held()); len(held) != 1 {
		t.Errorf("want the sweep stopped at the first bucket, got GetBucketPolicy held for %v", held)
	}
}
