package access

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// TestKnownSecretsKeepNothingPastTheBound: whoever stores it (a pass's
// read or write, the start's prefetch), a principal or secret longer than
// maxKeptCredential is not kept, and one stored over an earlier record
// drops that record.
func TestKnownSecretsKeepNothingPastTheBound(t *testing.T) {
	atBound, past := strings.Repeat("s", maxKeptCredential), strings.Repeat("s", maxKeptCredential+1)
	huge := strings.Repeat("x", 1<<20)
	for _, tc := range []struct {
		name              string
		principal, secret string
		fresh             bool
		kept              bool
	}{
		{"a credential buckety issues", "u-a", "pw", false, true},
		{"a secret at the bound", "u-a", atBound, false, true},
		{"a secret past the bound", "u-a", past, false, false},
		{"a tenant's megabyte, read by a pass", "u-a", huge, false, false},
		{"a tenant's megabyte, read by the prefetch", "u-a", huge, true, false},
		{"a megabyte principal", huge, "pw", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var k knownSecrets
			if tc.fresh {
				k.putFresh("a", "2", tc.principal, tc.secret, nil)
			} else {
				k.put("a", "2", tc.principal, tc.secret)
			}
			if got := k.has("a"); got != tc.kept {
				t.Errorf("want kept %v, got %v", tc.kept, got)
			}
		})
	}
	var k knownSecrets
	k.put("a", "1", "u-a", "pw")
	k.put("a", "2", "u-a", huge)
	if k.has("a") {
		t.Error("a megabyte stored over an earlier record: want nothing kept for the access, got a record kept")
	}
}

// TestSecretOfDoesNotKeepATenantMegabyte: a tenant writes 1 MiB as the
// password of its access's Secret. The pass that reads it uses it, as it
// would any edited password, but does not keep it: every pass reads the
// Secret afresh, as for a secret never seen. A password of buckety's size
// is kept, and the next pass reads nothing.
func TestSecretOfDoesNotKeepATenantMegabyte(t *testing.T) {
	for _, tc := range []struct {
		name     string
		password string
		kept     bool
	}{
		{"buckety's size", strings.Repeat("p", 43), true},
		{"a tenant's megabyte", strings.Repeat("x", 1<<20), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := limitsEnv(t, 0)
			r.prefetch.state = prefetchDone // nothing to prefetch in this test
			ctx := context.Background()
			a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "app", UID: types.UID("uid-app")},
				Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "app"}}
			principal, controller := "u-"+string(a.UID), true
			s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "app",
				Labels:          map[string]string{v1.ManagedByLabel: v1.ManagedByValue, v1.AccessLabel: a.Name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "BucketyAccess", Name: a.Name, UID: a.UID, Controller: &controller}}},
				Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"user": []byte(principal), "password": []byte(tc.password)}}
			if err := r.Client.Create(ctx, s); err != nil {
				t.Fatal(err)
			}
			for pass := range 2 {
				got, fresh, _, err := r.secretOf(ctx, a, keyedIssuer{}, principal, false)
				if err != nil {
					t.Fatal(err)
				}
				if got != tc.password {
					t.Fatalf("pass %d: want the Secret's password (%d bytes), got %d bytes", pass, len(tc.password), len(got))
				}
				if wantFresh := pass == 0 || !tc.kept; fresh != wantFresh {
					t.Errorf("pass %d: want read afresh %v, got %v", pass, wantFresh, fresh)
				}
				if r.secrets.has(a.UID) != tc.kept {
					t.Errorf("pass %d: want the password kept in memory %v, got %v", pass, tc.kept, !tc.kept)
				}
			}
		})
	}
}

// TestWiderThanItsAccess: a retired credential is revoked before its grace
// ends when it holds a right its access's role no longer has; widening,
// the same role, and a record without a role (an earlier release's) keep
// the grace.
func TestWiderThanItsAccess(t *testing.T) {
	for _, tc := range []struct {
		cred, access v1.Role
		want         bool
	}{
		{v1.RoleReadWrite, v1.RoleReadOnly, true},
		{v1.RoleReadWrite, v1.RoleWriteOnly, true},
		{v1.RoleReadOnly, v1.RoleWriteOnly, true},
		{v1.RoleWriteOnly, v1.RoleReadOnly, true},
		{v1.RoleReadWrite, "", false},
		{v1.RoleReadOnly, v1.RoleReadWrite, false},
		{v1.RoleReadOnly, "", false},
		{v1.RoleReadOnly, v1.RoleReadOnly, false},
		{"", v1.RoleReadOnly, false},
	} {
		c := &v1.BucketyCredential{Spec: v1.BucketyCredentialSpec{Role: tc.cred}}
		a := &v1.BucketyAccess{Spec: v1.BucketyAccessSpec{Role: tc.access}}
		if got := widerThanItsAccess(c, a); got != tc.want {
			t.Errorf("credential %q, access %q: want wider %v, got %v", tc.cred, tc.access, tc.want, got)
		}
	}
}

// TestSpanRoles: before a Grant changes a credential's role, its record
// says a role covering both (a pass cut short after the Grant leaves it
// never narrower than what the principal holds).
func TestSpanRoles(t *testing.T) {
	for _, tc := range []struct{ was, role, want v1.Role }{
		{v1.RoleReadOnly, v1.RoleReadOnly, v1.RoleReadOnly},
		{v1.RoleReadOnly, v1.RoleWriteOnly, v1.RoleReadWrite},
		{v1.RoleReadWrite, v1.RoleReadOnly, v1.RoleReadWrite},
		{v1.RoleReadOnly, v1.RoleReadWrite, v1.RoleReadWrite},
		{"", v1.RoleWriteOnly, v1.RoleReadWrite},
	} {
		if got := spanRoles(tc.was, tc.role); got != tc.want {
			t.Errorf("%q to %q: want %q recorded before the Grant, got %q", tc.was, tc.role, tc.want, got)
		}
	}
}

// TestOrphanCheckRevokesNarrowedRetiring: the orphan check revokes a
// retiring credential whose role has a right its access's no longer has,
// before its retireAfter (its access's passes may stop short of it: a
// Secret conflict, a kept key); one as narrow as its access keeps its
// grace.
func TestOrphanCheckRevokesNarrowedRetiring(t *testing.T) {
	r, _ := limitsEnv(t, 0)
	ctx := context.Background()
	a := mkAccess(t, r.Client, "app", time.Now())
	a.Spec.Role = v1.RoleReadOnly
	if err := r.Client.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	o := &Orphans{Reconciler: r}
	later := metav1.NewTime(time.Now().Add(time.Hour))
	for _, tc := range []struct {
		role v1.Role
		want string
	}{{v1.RoleReadWrite, whyNarrowed}, {v1.RoleReadOnly, ""}, {"", ""}} {
		c := &v1.BucketyCredential{Spec: v1.BucketyCredentialSpec{Phase: v1.CredentialRetiring, RetireAfter: &later, Role: tc.role,
			Owner: v1.ClaimOwner{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID)}}}
		got, err := o.unwanted(ctx, c, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("retiring %q, access ReadOnly: want %q, got %q", tc.role, tc.want, got)
		}
	}
}

// TestKeptCredentialSaysItsRole: on a backend that no longer issues
// credentials per access, the access keeps the key of its own its Secret
// holds, and nothing changes that key's rights. Its tenant narrowed
// spec.role since: the condition says the role the key was granted, not
// "the rights of its role", which would claim the narrowing took.
func TestKeptCredentialSaysItsRole(t *testing.T) {
	r, e := limitsEnv(t, 0)
	ctx := context.Background()
	a := mkAccess(t, r.Client, "app", time.Now())
	a.Spec.Role = v1.RoleReadOnly
	if err := r.Client.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	a.Status.Principal = "u-app"
	rec := &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: "cred-app", Labels: map[string]string{v1.ClaimOwnerLabel: string(a.UID)}},
		Spec: v1.BucketyCredentialSpec{Backend: e.Name, Principal: "u-app", Serial: 1, Phase: v1.CredentialActive, Role: v1.RoleReadWrite,
			Owner: v1.ClaimOwner{Namespace: a.Namespace, Name: a.Name, UID: string(a.UID)}}}
	yes := true
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace, Name: a.Spec.CredentialsSecretName,
		Labels:          map[string]string{v1.ManagedByLabel: v1.ManagedByValue, v1.AccessLabel: a.Name},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "BucketyAccess", Name: a.Name, UID: a.UID, Controller: &yes}}}}
	for _, o := range []client.Object{rec, s} {
		if err := r.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	check := func(want string) {
		t.Helper()
		f := &facts{}
		kept, err := r.keepOwn(ctx, a, e, single(orders), f)
		if err != nil || !kept {
			t.Fatalf("want the key kept, got %v (%v)", kept, err)
		}
		c := scopingNotImplemented(a, f)
		if c.Reason != v1.ReasonCredentialKept || !strings.Contains(c.Message, want) {
			t.Errorf("want CredentialKept saying %q, got %s: %s", want, c.Reason, c.Message)
		}
	}
	check("with the rights of role ReadWrite it was granted, not role ReadOnly the access names now")
	a.Spec.Role = v1.RoleReadWrite
	check("with the rights of its role;")
}

// TestRotationAskedMidIssueIsNotDone: status.rotation takes the
// spec.rotation value the credential the Secret now holds was issued for.
// A rotation asked for ("2") while the one for "1" was being issued (its
// record written at generation 3, handed over at 4) is not taken for
// done: status.rotation says "1", and the next pass issues the
// credential for "2". A record of this generation honours spec.rotation;
// one of an earlier release (no rotation recorded, an earlier
// generation) leaves status.rotation as it was.
func TestRotationAskedMidIssueIsNotDone(t *testing.T) {
	a := &v1.BucketyAccess{}
	a.Generation, a.Spec.Rotation, a.Status.Rotation = 4, "2", "0"
	for _, c := range []struct {
		name string
		cur  v1.BucketyCredentialSpec
		want string
	}{
		{"issued for 1 at generation 3", v1.BucketyCredentialSpec{AccessGeneration: 3, Rotation: "1"}, "1"},
		{"issued at this generation", v1.BucketyCredentialSpec{AccessGeneration: 4, Rotation: "2"}, "2"},
		{"an earlier release's record of this generation", v1.BucketyCredentialSpec{AccessGeneration: 4}, "2"},
		{"an earlier release's record of an earlier generation", v1.BucketyCredentialSpec{AccessGeneration: 3}, "0"},
	} {
		cur := &v1.BucketyCredential{Spec: c.cur}
		if got := honoured(a, cur); got != c.want {
			t.Errorf("%s: want status.rotation %q, got %q", c.name, c.want, got)
		}
	}
}
