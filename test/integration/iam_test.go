package integration

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/seaweedfs"
	"github.com/Yolean/buckety-controller/test/wait"
)

// getAccess reads an access fresh.
func getAccess(t *testing.T, ns, name string) *v1.BucketyAccess {
	t.Helper()
	a := &v1.BucketyAccess{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, a); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestIAMScopedAccess: through the controller, on SeaweedFS's IAM API,
// an access's Secret holds a key IAM issued to a user of its own (the
// status names the user, not the key), which reaches its bucket and not
// a neighbour's; a rotation gives a new user and key, the old working
// until the grace ends, then gone; a deleted Secret is written again with
// a new key and the old one deleted; a deleted access's user is gone.
func TestIAMScopedAccess(t *testing.T) {
	needInfra(t)
	srv := seaweedfs.Start(t, seaweedfs.Options{})
	admin := iam.New(srv.Endpoint, "us-east-1", srv.AccessKey, srv.SecretKey, &http.Client{Timeout: 10 * time.Second})
	sc := s3driver.Config{Implementation: s3driver.ImplSeaweedFS, Endpoint: srv.Endpoint, Region: "us-east-1", ForcePathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: harness.Duration(10 * time.Second), Credentials: &s3driver.Credentials{}}
	be := harness.S3("s3-iam", sc)
	be.Credentials = harness.Grace(3 * time.Second)
	startController(t, harness.ConfigYAML(be), nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	for _, name := range []string{"ledger", "payroll"} {
		create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3-iam", Name: ns + "-" + name}})
	}
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "app"}}
	create(t, a)
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, a, v1.ConditionScopingNotImplemented, metav1.ConditionFalse, "", waitTimeout)
	first := secret(t, ns, "app").Data
	user := getAccess(t, ns, "app").Status.Principal
	if user == "" || string(first["accessKeyID"]) == user {
		t.Fatalf("want status.principal the user and the Secret a key IAM issued, got user %q key %q", user, first["accessKeyID"])
	}
	if err := listWith(first, ns+"-ledger"); err != nil {
		t.Errorf("the Secret on its bucket: %v", err)
	}
	if err := listWith(first, ns+"-payroll"); err == nil {
		t.Error("the Secret reaches the neighbour's bucket")
	}

	patch(t, a, `{"spec":{"rotation":"r1"}}`)
	var second map[string][]byte
	wait.For(t, waitTimeout, "a new key in the Secret", func() (bool, string) {
		second = secret(t, ns, "app").Data
		return string(second["accessKeyID"]) != string(first["accessKeyID"]), string(second["accessKeyID"])
	})
	if err := listWith(second, ns+"-ledger"); err != nil {
		t.Errorf("the rotated key: %v", err)
	}
	wait.For(t, waitTimeout, "the old user revoked after the grace", func() (bool, string) {
		_, err := admin.GetUser(context.Background(), user)
		return iam.IsNoSuchEntity(err), fmt.Sprint(err)
	})
	if err := listWith(first, ns+"-ledger"); err == nil {
		t.Error("the key of the revoked user still works")
	}

	// The tenant deletes the Secret: a new key, the old one deleted.
	if err := k8s.Delete(context.Background(), secret(t, ns, "app")); err != nil {
		t.Fatal(err)
	}
	var third map[string][]byte
	wait.For(t, waitTimeout, "the Secret written again with a new key", func() (bool, string) {
		s := &corev1.Secret{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, s); err != nil {
			return false, err.Error()
		}
		third = s.Data
		return string(third["accessKeyID"]) != string(second["accessKeyID"]), string(third["accessKeyID"])
	})
	if err := listWith(third, ns+"-ledger"); err != nil {
		t.Errorf("the new key: %v", err)
	}
	if err := listWith(second, ns+"-ledger"); err == nil {
		t.Error("the key of the deleted Secret still works")
	}

	cur := getAccess(t, ns, "app").Status.Principal
	if err := k8s.Delete(context.Background(), getAccess(t, ns, "app")); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the deleted access's user gone", func() (bool, string) {
		_, err := admin.GetUser(context.Background(), cur)
		return iam.IsNoSuchEntity(err), fmt.Sprint(err)
	})
	if err := listWith(third, ns+"-ledger"); err == nil {
		t.Error("a deleted access's key still works")
	}
}
