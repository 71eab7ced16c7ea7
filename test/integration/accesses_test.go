package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

func gone(t *testing.T, obj client.Object) (bool, string) {
	err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj)
	if apierrors.IsNotFound(err) {
		return true, "gone"
	}
	if err != nil {
		return false, err.Error()
	}
	return false, "still there"
}

// TestImplicitToExplicitMigration: defaultAccess materialises an implicit
// access; an explicit access replaces it (its Secret goes with it); removing
// defaultAccess with no explicit access removes the implicit one too.
func TestImplicitToExplicitMigration(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.orders", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "orders-topic"}}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	implicit := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(implicit), implicit); err != nil {
		t.Fatal(err)
	}
	if implicit.Labels[v1.ImplicitLabel] != "true" || !metav1.IsControlledBy(implicit, b) || implicit.Spec.Role != v1.RoleReadWrite {
		t.Fatalf("want an implicit access labelled and owned by the Buckety, got labels %v owners %v role %s", implicit.Labels, implicit.OwnerReferences, implicit.Spec.Role)
	}
	secret(t, ns, "orders-topic")

	// Two explicit accesses with different roles and fresh Secret names.
	for _, a := range []*v1.BucketyAccess{
		{ObjectMeta: metav1.ObjectMeta{Name: "orders-reader", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "orders-reader", Role: v1.RoleReadOnly}},
		{ObjectMeta: metav1.ObjectMeta{Name: "orders-writer", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "orders-writer", Role: v1.RoleWriteOnly}},
	} {
		create(t, a)
	}
	wait.For(t, waitTimeout, "implicit access removed", func() (bool, string) { return gone(t, implicit) })
	wait.For(t, waitTimeout, "implicit Secret removed", func() (bool, string) {
		return gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-topic", Namespace: ns}})
	})
	reader := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "orders-reader", Namespace: ns}}
	waitCondition(t, reader, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, reader, v1.ConditionScopingNotImplemented, metav1.ConditionTrue, v1.ReasonCredentialsNotScoped, waitTimeout)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, b, v1.ConditionScopingNotImplemented, metav1.ConditionTrue, v1.ReasonCredentialsNotScoped, waitTimeout)
	if r, w := secret(t, ns, "orders-reader"), secret(t, ns, "orders-writer"); string(r.Data["topic"]) != string(w.Data["topic"]) || string(r.Data["bootstrap"]) != string(w.Data["bootstrap"]) {
		t.Errorf("v1alpha1: want identical credentials for every access, got %q and %q", r.Data, w.Data)
	}

	// A Buckety whose defaultAccess is removed, with no explicit access.
	solo := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "solo", Namespace: ns},
		Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.solo", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "solo-topic"}}}
	create(t, solo)
	waitCondition(t, solo, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	patch(t, solo, `{"spec":{"defaultAccess":null}}`)
	wait.For(t, waitTimeout, "implicit access of solo removed", func() (bool, string) {
		return gone(t, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "solo", Namespace: ns}})
	})
	wait.For(t, waitTimeout, "solo's Secret removed", func() (bool, string) {
		return gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "solo-topic", Namespace: ns}})
	})
	waitCondition(t, solo, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
}

// TestForeignSecretIsNeverOverwritten: a Secret buckety did not create keeps
// its content; the access says why it is not Ready, and recovers once the
// Secret is gone.
func TestForeignSecretIsNeverOverwritten(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	ns := namespace(t)
	foreign := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "orders-topic", Namespace: ns}, StringData: map[string]string{"password": "keep-me"}}
	create(t, foreign)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.orders", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "orders-topic"}}}
	create(t, b)
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}}
	c := waitCondition(t, a, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonSecretConflict, waitTimeout)
	if want := "Secret orders-topic already exists and was not created by buckety"; !contains(c.Message, want) {
		t.Errorf("want message containing %q, got %q", want, c.Message)
	}
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAccessesNotReady, waitTimeout)
	time.Sleep(2 * time.Second) // several reconciles
	s := secret(t, ns, "orders-topic")
	if string(s.Data["password"]) != "keep-me" || len(s.Data) != 1 || s.Labels[v1.ManagedByLabel] != "" {
		t.Fatalf("the foreign Secret was touched: %q labels %v", s.Data, s.Labels)
	}
	if err := k8s.Delete(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
