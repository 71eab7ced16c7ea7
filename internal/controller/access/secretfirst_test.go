package access

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// managedSecretsOnly makes r's Client show only the Secrets labelled as
// buckety's, as the controller's cache does (shard.Managed): a Secret a
// tenant made is found only by a fresh read (r.APIReader), and the fake
// client shows every Secret otherwise.
func managedSecretsOnly(r *Reconciler) {
	cl := r.Client.(client.WithWatch)
	r.Client = interceptor.NewClient(cl, interceptor.Funcs{
		Get: func(ctx context.Context, w client.WithWatch, key client.ObjectKey, o client.Object, opts ...client.GetOption) error {
			if err := w.Get(ctx, key, o, opts...); err != nil {
				return err
			}
			if isSecret(o) && o.GetLabels()[v1.ManagedByLabel] != v1.ManagedByValue {
				return apierrors.NewNotFound(corev1.Resource("secrets"), key.Name)
			}
			return nil
		},
	})
}

// isSecret reports whether o is a Secret or a Secret's metadata.
func isSecret(o client.Object) bool {
	switch o := o.(type) {
	case *corev1.Secret:
		return true
	case *metav1.PartialObjectMetadata:
		return o.Kind == "Secret"
	}
	return false
}

// credentialRecords is how many BucketyCredential records r's API server
// holds.
func credentialRecords(t *testing.T, r *Reconciler) int {
	t.Helper()
	var list v1.BucketyCredentialList
	if err := r.Client.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	return len(list.Items)
}

// readyOf is the Ready condition of access a as the API server holds it.
func readyOf(t *testing.T, r *Reconciler, a *v1.BucketyAccess) (*v1.BucketyAccess, *metav1.Condition) {
	t.Helper()
	got := &v1.BucketyAccess{}
	if err := r.Client.Get(context.Background(), client.ObjectKeyFromObject(a), got); err != nil {
		t.Fatal(err)
	}
	return got, meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady)
}

// TestForeignSecretFirstIssuesNothing: a tenant creates a Secret of their
// own, then an access naming it as its credentialsSecretName, on a backend
// that issues a credential per access. The first pass recorded a
// credential, created the principal and granted it on the backend, and
// only then found the Secret not the access's: a live credential in no
// Secret, one per such access, for as long as the access lived. It ends
// as a SecretConflict before any record or backend write; once the
// foreign Secret is deleted, the access is granted as any new one.
func TestForeignSecretFirstIssuesNothing(t *testing.T) {
	a := newOrdersAccess()
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "app"}, Data: map[string][]byte{"password": []byte("keep-me")}}
	refusing := false
	r, be := issuingEnv(t, refuseSecretWrites(&refusing), a, foreign)
	managedSecretsOnly(r)
	ctx := context.Background()
	reconcileN(t, r, a, 3)
	if n := be.Calls("grant"); n != 0 {
		t.Errorf("Secret app not the access's: want no Grant, got %d", n)
	}
	if len(be.secrets) != 0 {
		t.Errorf("Secret app not the access's: want no principal on the backend, got %v", be.secrets)
	}
	if n := credentialRecords(t, r); n != 0 {
		t.Errorf("Secret app not the access's: want no credential record, got %d", n)
	}
	got, ready := readyOf(t, r, a)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Reason != v1.ReasonSecretConflict {
		t.Fatalf("want Ready False %s, got %+v", v1.ReasonSecretConflict, ready)
	}
	if got.Status.Principal != "" {
		t.Errorf("want no principal in the status, got %q", got.Status.Principal)
	}
	s := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(foreign), s); err != nil || string(s.Data["password"]) != "keep-me" || len(s.Data) != 1 {
		t.Fatalf("want the foreign Secret untouched, got %q, %v", s.Data, err)
	}

	if err := r.Client.Delete(ctx, foreign); err != nil {
		t.Fatal(err)
	}
	reconcileN(t, r, a, 2)
	got, ready = readyOf(t, r, a)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		t.Fatalf("foreign Secret deleted: want Ready True, got %+v", ready)
	}
	s = &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(foreign), s); err != nil || !ownsSecret(got, s) {
		t.Fatalf("want Secret app the access's now, got %+v, %v", s.ObjectMeta, err)
	}
	if user, pw := string(s.Data["user"]), string(s.Data["password"]); user != got.Status.Principal || pw == "" || be.secrets[user] != pw {
		t.Errorf("want the Secret to hold the backend's credential of %s, got user %q password %q, backend %v", got.Status.Principal, user, pw, be.secrets)
	}
	if n := credentialRecords(t, r); n != 1 {
		t.Errorf("want one credential record, got %d", n)
	}
}

// TestOwnSecretFirstIsIssued: the access's own Secret from an earlier pass
// (written while its backend shared its keys, say) holds no credential of
// its own yet: the check before the first issue must not take it for a
// conflict.
func TestOwnSecretFirstIsIssued(t *testing.T) {
	a := newOrdersAccess()
	own := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "app",
		Labels: map[string]string{v1.ManagedByLabel: v1.ManagedByValue, v1.AccessLabel: a.Name}},
		Data: map[string][]byte{"user": []byte("shared"), "password": []byte("shared-key")}}
	if err := controllerutil.SetControllerReference(a, own, testScheme(t)); err != nil {
		t.Fatal(err)
	}
	refusing := false
	r, be := issuingEnv(t, refuseSecretWrites(&refusing), a, own)
	managedSecretsOnly(r)
	reconcileN(t, r, a, 2)
	got, ready := readyOf(t, r, a)
	if ready == nil || ready.Status != metav1.ConditionTrue {
		t.Fatalf("Secret app the access's own: want Ready True, got %+v", ready)
	}
	s := &corev1.Secret{}
	if err := r.APIReader.Get(context.Background(), client.ObjectKeyFromObject(own), s); err != nil {
		t.Fatal(err)
	}
	if user, pw := string(s.Data["user"]), string(s.Data["password"]); user != got.Status.Principal || pw == "" || be.secrets[user] != pw {
		t.Errorf("want the Secret to hold the backend's credential of %s, got user %q password %q, backend %v", got.Status.Principal, user, pw, be.secrets)
	}
}
