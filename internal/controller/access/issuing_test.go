package access

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
)

// issuingBackend is the in-memory test backend (drivertest) that issues
// a credential of its own to every access, as an IAM server does: the
// secret of a principal is the backend's, made by Grant when the access
// brings none (or is being issued). It counts the secrets it issued, and
// refuses grants of the roles in refuse (drivers.RefusedError).
type issuingBackend struct {
	*drivertest.Backend
	mu      sync.Mutex
	secrets map[string]string
	issued  int
	refuse  map[drivers.Role]bool
}

func (b *issuingBackend) Issuing(context.Context) (drivers.Issuing, error) {
	return drivers.Issuing{PerAccess: true}, nil
}

func (b *issuingBackend) Principal(a drivers.Access, serial int) string {
	return fmt.Sprintf("u-%s-%d", a.UID, serial)
}

func (b *issuingBackend) InspectPrincipal(_ context.Context, p string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.secrets[p]
	return ok, nil
}

func (b *issuingBackend) CredentialKeys() (string, string) { return "user", "password" }

func (b *issuingBackend) Grant(ctx context.Context, a drivers.Access) (drivers.Grant, error) {
	if _, err := b.Backend.Grant(ctx, a); err != nil {
		return drivers.Grant{}, err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.refuse[a.Role.OrDefault()] {
		return drivers.Grant{}, &drivers.RefusedError{Err: errors.New("bucket policy too large")}
	}
	secret := b.secrets[a.Principal]
	switch {
	case a.IsNew() || (a.Asserts() && a.Secret == ""):
		b.issued++
		secret = fmt.Sprintf("s-%d", b.issued)
	case a.Asserts():
		secret = a.Secret
	}
	b.secrets[a.Principal] = secret
	return drivers.Grant{Data: map[string][]byte{"user": []byte(a.Principal), "password": []byte(secret)}, Principal: a.Principal, PerAccess: true}, nil
}

func (b *issuingBackend) Revoke(ctx context.Context, a drivers.Access) error {
	if err := b.Backend.Revoke(ctx, a); err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.secrets, a.Principal)
	return nil
}

func (b *issuingBackend) issues() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.issued
}

// issuingDriver is the test driver opening an issuingBackend.
type issuingDriver struct {
	drivertest.Driver
	be *issuingBackend
}

func (d *issuingDriver) Open(context.Context, string, drivers.Config) (drivers.Backend, error) {
	return d.be, nil
}

// builderIndexer registers the controller's field indexes on a fake
// client builder.
type builderIndexer struct{ b *fake.ClientBuilder }

func (i builderIndexer) IndexField(_ context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	i.b.WithIndex(obj, field, extract) // registers on the builder itself
	return nil
}

// issuingEnv is a Reconciler on a fake client (every index, funcs
// intercepting it) holding Buckety o/orders on backend svc, provisioned
// with its claim, and objs; svc issues credentials of its own.
func issuingEnv(t *testing.T, funcs interceptor.Funcs, objs ...client.Object) (*Reconciler, *issuingBackend) {
	t.Helper()
	be := &issuingBackend{Backend: drivertest.NewBackend(), secrets: map[string]string{}, refuse: map[drivers.Role]bool{}}
	dir := t.TempDir()
	yaml := "backends:\n- {name: svc, driver: test, config: {endpoint: test://svc}}\n"
	if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	reg := drivers.NewRegistry(&issuingDriver{Driver: drivertest.Driver{Named: "test"}, be: be})
	cfg, err := config.Load(dir, config.Options{Registry: reg, Lookup: func(string) (string, bool) { return "", false }})
	if err != nil {
		t.Fatal(err)
	}
	set, err := backends.Open(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b := provisioned("o", "orders", "svc")
	b.Generation = 0
	cl := &v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: "claim-orders"},
		Spec: v1.BucketyClaimSpec{Backend: "svc", ResourceName: b.Status.BackendResourceName, Phase: v1.ClaimCreated,
			Owner: v1.ClaimOwner{Namespace: b.Namespace, Name: b.Name, UID: string(b.UID)}}}
	idx := &builderIndexer{b: fake.NewClientBuilder().WithScheme(testScheme(t)).WithStatusSubresource(&v1.BucketyAccess{})}
	if err := objects.SetupIndexes(context.Background(), idx); err != nil {
		t.Fatal(err)
	}
	c := interceptor.NewClient(idx.b.WithObjects(append([]client.Object{b, cl}, objs...)...).Build(), funcs)
	return &Reconciler{Client: c, APIReader: c, Backends: set, Claims: &claims.Store{Client: c, APIReader: c}}, be
}

// newOrdersAccess is access o/app on Buckety orders, its Secret app.
func newOrdersAccess() *v1.BucketyAccess {
	return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "app", UID: "uid-app", Generation: 1},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "app"}}
}

// refuseSecretWrites fails every create and patch of a Secret while
// *on, as an immutable Secret, a full quota or an admission policy does.
func refuseSecretWrites(on *bool) interceptor.Funcs {
	refused := apierrors.NewForbidden(corev1.Resource("secrets"), "app", errors.New("denied by policy"))
	return interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			if _, ok := obj.(*corev1.Secret); ok && *on {
				return refused
			}
			return c.Create(ctx, obj, opts...)
		},
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			if _, ok := obj.(*corev1.Secret); ok && *on {
				return refused
			}
			return c.Patch(ctx, obj, patch, opts...)
		},
	}
}

func reconcileN(t *testing.T, r *Reconciler, a *v1.BucketyAccess, n int) {
	t.Helper()
	for range n {
		_, _ = r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Name}})
	}
}

// TestUnwritableSecretIsNotAnIssueLoop: the access's Secret cannot be
// written (a policy refuses it), for a new access (its credential
// Minting) and for one whose tenant removed the password from its Secret
// and made it immutable. Each retry of the pass issued a new credential
// on the backend, unpaced, for as long as the write failed: an issue was
// counted for the pacing only once the Secret held it. Ten passes in a
// row issue at most two; once the Secret can be written (and the pacing's
// wait is over), the access gets a working credential.
func TestUnwritableSecretIsNotAnIssueLoop(t *testing.T) {
	for _, granted := range []bool{false, true} {
		t.Run(fmt.Sprintf("granted before %v", granted), func(t *testing.T) {
			a := newOrdersAccess()
			refusing := !granted
			r, be := issuingEnv(t, refuseSecretWrites(&refusing), a)
			ctx := context.Background()
			key := types.NamespacedName{Namespace: "o", Name: "app"}
			before := 0
			if granted {
				reconcileN(t, r, a, 2)
				s := &corev1.Secret{}
				if err := r.Client.Get(ctx, key, s); err != nil || len(s.Data["password"]) == 0 {
					t.Fatalf("want the access granted first, got %v", err)
				}
				// kubectl patch secret app --type=merge -p '{"immutable":true,"data":{"password":null}}'
				delete(s.Data, "password")
				if err := r.Client.Update(ctx, s); err != nil {
					t.Fatal(err)
				}
				refusing, before = true, be.issues()
				r.reissues = reissues{} // a quiet spell since
			}
			reconcileN(t, r, a, 10)
			if n := be.issues() - before; n > 2 {
				t.Fatalf("Secret unwritable, 10 passes: want at most 2 credentials issued, got %d", n)
			}
			// The pacing's wait is over, and the Secret can be written.
			r.reissues = reissues{}
			refusing = false
			reconcileN(t, r, a, 1)
			s := &corev1.Secret{}
			if err := r.Client.Get(ctx, key, s); err != nil {
				t.Fatalf("want the Secret written, got %v", err)
			}
			if got, want := string(s.Data["password"]), be.secrets[string(s.Data["user"])]; got == "" || got != want {
				t.Errorf("want the Secret to hold the backend's secret of %s, got %q, backend %q", s.Data["user"], got, want)
			}
		})
	}
}

// TestRotatedAndNarrowedRefusedRevokesTheKey: a granted ReadWrite access
// is rotated and narrowed to ReadOnly in one edit
// ({"spec":{"role":"ReadOnly","rotation":"leak"}}), and the backend
// refuses the ReadOnly grant outright (a bucket policy too large). The
// new credential, born ReadOnly, is not wider than its access, and only
// it was judged: the old ReadWrite key the Secret holds stayed live for
// good. It is revoked (fail closed), as for a narrowing alone
// (TestNarrowingRefusedRevokesTheKey).
func TestRotatedAndNarrowedRefusedRevokesTheKey(t *testing.T) {
	a := newOrdersAccess()
	refusing := false
	r, be := issuingEnv(t, refuseSecretWrites(&refusing), a)
	ctx := context.Background()
	reconcileN(t, r, a, 2)
	got := &v1.BucketyAccess{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(a), got); err != nil {
		t.Fatal(err)
	}
	old := got.Status.Principal
	if old == "" || len(be.secrets) != 1 {
		t.Fatalf("want the access granted a credential first, got principal %q, backend %v", old, be.secrets)
	}
	got.Spec.Role, got.Spec.Rotation, got.Generation = v1.RoleReadOnly, "leak", got.Generation+1
	if err := r.Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	be.refuse[drivers.RoleReadOnly] = true
	rec := events.NewFakeRecorder(100)
	r.Recorder = rec
	reconcileN(t, r, a, 2)
	if _, live := be.secrets[old]; live {
		t.Errorf("ReadOnly refused after a rotation and narrowing: want the ReadWrite key %s revoked, still live (backend %v)", old, be.secrets)
	}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: CredentialName("svc", old)}, &v1.BucketyCredential{}); !apierrors.IsNotFound(err) {
		t.Errorf("want the record of %s deleted, got %v", old, err)
	}
	told := false
	for len(rec.Events) > 0 {
		e := <-rec.Events
		told = told || strings.Contains(e, v1.EventCredentialRevoked) && strings.Contains(e, "credential "+old+", granted role ReadWrite, was revoked")
	}
	if !told {
		t.Errorf("want a %s event naming %s", v1.EventCredentialRevoked, old)
	}
}

// TestForeignSecretIssuesNothing: the Secret of a granted access loses
// buckety's labels (its tenant, or a GitOps sync, removed them): it is
// no longer the access's. The pass read it as holding nothing and issued
// the credential again, a new password on the backend while the workload
// still used the one that Secret holds, before the Secret write reported
// the conflict. It ends as a SecretConflict before any issue.
func TestForeignSecretIssuesNothing(t *testing.T) {
	a := newOrdersAccess()
	refusing := false
	r, be := issuingEnv(t, refuseSecretWrites(&refusing), a)
	ctx := context.Background()
	reconcileN(t, r, a, 2)
	s := &corev1.Secret{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: "o", Name: "app"}, s); err != nil || len(s.Data["password"]) == 0 {
		t.Fatalf("want the access granted first, got %v", err)
	}
	held, before := string(s.Data["password"]), be.issues()
	s.Labels = nil
	if err := r.Client.Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	reconcileN(t, r, a, 3)
	if n := be.issues() - before; n != 0 {
		t.Errorf("Secret not the access's: want no credential issued, got %d", n)
	}
	if got := be.secrets[string(s.Data["user"])]; got != held {
		t.Errorf("want the backend's password still the one the Secret holds (%q), got %q", held, got)
	}
	got := &v1.BucketyAccess{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(a), got); err != nil {
		t.Fatal(err)
	}
	if ready := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady); ready == nil || ready.Reason != v1.ReasonSecretConflict {
		t.Errorf("want Ready %s, got %+v", v1.ReasonSecretConflict, ready)
	}
}
