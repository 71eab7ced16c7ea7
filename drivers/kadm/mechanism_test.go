package kadm

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// openWithMechanism opens a backend of its own on f's broker with f's
// config but credentials.mechanism mech, as the controller restarted
// after the operator changed it would.
func (f *fixture) openWithMechanism(t *testing.T, mech string) *Backend {
	t.Helper()
	be := f.openWith(t, func(c *Config) { c.Credentials = &Credentials{Mechanism: mech} })
	be.SetInstallation("east", nil)
	return be
}

// mechanismsOf lists the SCRAM mechanisms principal has on the broker,
// read out of band.
func mechanismsOf(t *testing.T, f *fixture, principal string) []string {
	t.Helper()
	users, err := f.admin.DescribeUserSCRAMs(context.Background(), principal)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, c := range users[principal].CredInfos {
		out = append(out, c.Mechanism.String())
	}
	slices.Sort(out)
	return out
}

// loginWith is what a workload with the Secret data, but authenticating
// with mech, gets from a produce to topic: nil when it logged in and
// wrote.
func loginWith(t *testing.T, data map[string][]byte, mech, topic string) error {
	t.Helper()
	d := map[string][]byte{}
	for k, v := range data {
		d[k] = v
	}
	d[SecretSASLMechanism] = []byte(mech)
	cl, err := kafka.SecretClient(d)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	return produce(cl, topic)
}

// grantedOnOrders is a scoped fixture with topic orders and an access of
// uid and role on it, granted on the fixture's backend (SCRAM-SHA-512).
func grantedOnOrders(t *testing.T, uid string, role drivers.Role) (*fixture, drivers.Access, drivers.Grant) {
	t.Helper()
	f := scopedFixture(t, true)
	f.ensure(t, "orders", nil)
	a := drivers.Access{Resource: "orders", Namespace: "team", Name: "app", UID: uid, Role: role}
	a.Principal = f.backend.Principal(a, 1)
	g, err := f.backend.Grant(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	return f, a, g
}

// TestMechanismChangeIsDrift: after credentials.mechanism changes from
// SCRAM-SHA-512 to SCRAM-SHA-256, a user issued before has only the old
// mechanism while its Secret now names the new one, so the credential
// sweep reports it drifted; the re-assert from the Secret (what the
// controller does with a drifted access) makes the Secret's password log
// in over SCRAM-SHA-256, leaves the user that mechanism only, and the
// sweep quiet.
func TestMechanismChangeIsDrift(t *testing.T) {
	f, a, g := grantedOnOrders(t, "uid-mech", drivers.RoleReadWrite)
	ctx := context.Background()
	password := string(g.Data[SecretSASLPassword])
	if got := mechanismsOf(t, f, a.Principal); fmt.Sprint(got) != "[SCRAM-SHA-512]" {
		t.Fatalf("before the change: want the user on [SCRAM-SHA-512], got %v", got)
	}
	if got, err := f.backend.SweepCredentials(ctx, []drivers.Access{a}); err != nil || len(got) != 0 {
		t.Fatalf("before the change: want no drift, got %v (%v)", got, err)
	}

	b256 := f.openWithMechanism(t, "SCRAM-SHA-256")
	got, err := b256.SweepCredentials(ctx, []drivers.Access{a})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[0]" {
		t.Errorf("after the change to SCRAM-SHA-256: want the access drifted (its user has SCRAM-SHA-512 only), got %v", got)
	}

	// The controller re-asserts a drifted access with its Secret's
	// password.
	a.Secret, a.Assert = password, drivers.Reassert
	g, err = b256.Grant(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if m, p := string(g.Data[SecretSASLMechanism]), string(g.Data[SecretSASLPassword]); m != "SCRAM-SHA-256" || p != password {
		t.Fatalf("re-assert: want the Secret's password on SCRAM-SHA-256, got %s and a password equal: %v", m, p == password)
	}
	if err := loginWith(t, g.Data, "SCRAM-SHA-256", "orders"); err != nil {
		t.Errorf("re-assert: want the Secret's password to log in over SCRAM-SHA-256, got %v", err)
	}
	if got := mechanismsOf(t, f, a.Principal); fmt.Sprint(got) != "[SCRAM-SHA-256]" {
		t.Errorf("re-assert: want the user on [SCRAM-SHA-256] only, got %v", got)
	}
	if got, err := b256.SweepCredentials(ctx, []drivers.Access{a}); err != nil || len(got) != 0 {
		t.Errorf("after the re-assert: want no drift, got %v (%v)", got, err)
	}
}

// TestMechanismChangeNewPasswordEndsOld: after a change of
// credentials.mechanism, a tenant who deletes its Secret (to end a leaked
// password) gets a new password, and the old one no longer logs in over
// either mechanism: the user keeps the new mechanism's credential only.
func TestMechanismChangeNewPasswordEndsOld(t *testing.T) {
	f, a, old := grantedOnOrders(t, "uid-leak", drivers.RoleReadWrite)
	ctx := context.Background()
	if err := loginWith(t, old.Data, "SCRAM-SHA-512", "orders"); err != nil {
		t.Fatalf("before the change: want the password to log in over SCRAM-SHA-512, got %v", err)
	}

	b256 := f.openWithMechanism(t, "SCRAM-SHA-256")
	// The Secret deleted: a new password for the same principal.
	a.Secret, a.Assert = "", drivers.Reassert
	g, err := b256.Grant(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if string(g.Data[SecretSASLPassword]) == string(old.Data[SecretSASLPassword]) {
		t.Fatal("want a new password")
	}
	if got := mechanismsOf(t, f, a.Principal); fmt.Sprint(got) != "[SCRAM-SHA-256]" {
		t.Errorf("want the user on [SCRAM-SHA-256] only, got %v", got)
	}
	if err := loginWith(t, g.Data, "SCRAM-SHA-256", "orders"); err != nil {
		t.Errorf("want the new password to log in over SCRAM-SHA-256, got %v", err)
	}
	for _, mech := range []string{"SCRAM-SHA-512", "SCRAM-SHA-256"} {
		if err := loginWith(t, old.Data, mech, "orders"); err == nil {
			t.Errorf("want the old password refused over %s", mech)
		}
	}
}

// TestSweepBothMechanisms: a user holding both SCRAM mechanisms (a crash
// between upsertUser's upsert and its deletion of the other mechanism, or
// one set out of band) is drift, and its re-assert leaves only the
// configured one.
func TestSweepBothMechanisms(t *testing.T) {
	f, a, g := grantedOnOrders(t, "uid-both", drivers.RoleReadOnly)
	ctx := context.Background()
	if _, err := f.admin.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{{User: a.Principal, Mechanism: kadm.ScramSha256, Iterations: scramIterations, Password: "other"}}); err != nil {
		t.Fatal(err)
	}
	got, err := f.backend.SweepCredentials(ctx, []drivers.Access{a})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[0]" {
		t.Errorf("want the access drifted (its user also has SCRAM-SHA-256), got %v", got)
	}
	a.Secret, a.Assert = string(g.Data[SecretSASLPassword]), drivers.Reassert
	if _, err := f.backend.Grant(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := mechanismsOf(t, f, a.Principal); fmt.Sprint(got) != "[SCRAM-SHA-512]" {
		t.Errorf("after the re-assert: want the user on [SCRAM-SHA-512] only, got %v", got)
	}
	if got, err := f.backend.SweepCredentials(ctx, []drivers.Access{a}); err != nil || len(got) != 0 {
		t.Errorf("after the re-assert: want no drift, got %v (%v)", got, err)
	}
}

// TestHasOnlyMechanism: a user's credentials match the configured
// mechanism only when they hold it and not the other SCRAM mechanism.
func TestHasOnlyMechanism(t *testing.T) {
	s256, s512 := kadm.CredInfo{Mechanism: kadm.ScramSha256}, kadm.CredInfo{Mechanism: kadm.ScramSha512}
	for _, tc := range []struct {
		name  string
		infos []kadm.CredInfo
		mech  kadm.ScramMechanism
		want  bool
	}{
		{name: "none", mech: kadm.ScramSha512, want: false},
		{name: "the configured one", infos: []kadm.CredInfo{s512}, mech: kadm.ScramSha512, want: true},
		{name: "the configured one, 256", infos: []kadm.CredInfo{s256}, mech: kadm.ScramSha256, want: true},
		{name: "the other one only", infos: []kadm.CredInfo{s512}, mech: kadm.ScramSha256, want: false},
		{name: "both", infos: []kadm.CredInfo{s256, s512}, mech: kadm.ScramSha512, want: false},
		{name: "both, 256", infos: []kadm.CredInfo{s512, s256}, mech: kadm.ScramSha256, want: false},
	} {
		if got := hasOnlyMechanism(tc.infos, tc.mech); got != tc.want {
			t.Errorf("%s: want %v, got %v", tc.name, tc.want, got)
		}
	}
}
