package integration

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// TestScopedForeignSecretFirstWritesNothing: a tenant makes Secrets of
// their own, then accesses naming them, on a broker where buckety issues
// each access a SCRAM user and ACLs: a Buckety's implicit access and an
// explicit one. Each access's first pass created its user and ACLs and
// recorded the credential before finding it could not write the Secret:
// a live user in no Secret for as long as the conflict lasted, one per
// access pointed at a Secret of one's own. Counted from before any access
// exists, the broker answers no user or ACL write and no credential is
// recorded while the conflicts last; each access is granted once its
// Secret's name is free.
func TestScopedForeignSecretFirstWritesNothing(t *testing.T) {
	needInfra(t)
	b := kafka.Start(t, kafka.Options{SASL: []string{"SCRAM-SHA-512:buckety:s3cr3t"}, ACLs: true, CountRequests: true})
	startController(t, harness.ConfigYAML(superuserBackend(b, 0)), nil, time.Hour)
	ns := namespace(t)
	before := userAndACLWrites(t, b)
	foreign := map[string]*corev1.Secret{}
	for _, name := range []string{"events", "app"} {
		foreign[name] = &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, StringData: map[string]string{"password": "keep-me"}}
		create(t, foreign[name])
	}
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".events",
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "events"}}})
	// An explicit access on a Buckety of its own: an explicit access
	// would take the implicit one's place on Buckety events.
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".orders"}})
	create(t, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "app"}})
	accesses := map[string]*v1.BucketyAccess{"events": {ObjectMeta: metav1.ObjectMeta{Name: "events", Namespace: ns}}, "app": {ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}}}
	for _, a := range accesses {
		waitCondition(t, a, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonSecretConflict, waitTimeout)
	}
	if got := userAndACLWrites(t, b) - before; got != 0 {
		t.Errorf("accesses whose Secrets are taken: want no user or ACL writes, got %d", got)
	}
	for name, a := range accesses {
		get(t, a)
		if a.Status.Principal != "" {
			t.Errorf("access %s: want no principal while its Secret is taken, got %q", name, a.Status.Principal)
		}
		if creds := credentialsOf(t, a.UID); len(creds) != 0 {
			t.Errorf("access %s: want no credential record while its Secret is taken, got %d", name, len(creds))
		}
		if s := secret(t, ns, name); string(s.Data["password"]) != "keep-me" || len(s.Data) != 1 {
			t.Errorf("the foreign Secret %s was touched: %q", name, s.Data)
		}
	}
	for name, a := range accesses {
		if err := k8s.Delete(context.Background(), foreign[name]); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
		get(t, a)
		if err := produceWith(t, secret(t, ns, name).Data, ns+"."+a.Spec.BucketyRef.Name); err != nil {
			t.Errorf("access %s after the conflict: want its Secret to work, got %v", name, err)
		}
	}
}
