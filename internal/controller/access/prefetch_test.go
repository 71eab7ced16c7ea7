package access

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// keyedIssuer is a CredentialIssuer whose Secrets hold user and password.
type keyedIssuer struct{}

func (keyedIssuer) Issuing(context.Context) (drivers.Issuing, error) {
	return drivers.Issuing{PerAccess: true}, nil
}
func (keyedIssuer) Principal(a drivers.Access, serial int) string { return "u-" + a.UID }
func (keyedIssuer) InspectPrincipal(context.Context, string) (bool, error) {
	return false, nil
}
func (keyedIssuer) CredentialKeys() (string, string) { return "user", "password" }

// TestPrefetchKeepsBoundedCredentialsAsFresh: what the start's list finds
// under the keys of a backend that issues per-access credentials is kept
// as read afresh, only while it is
// the size of a credential, and never over what a pass recorded.
func TestPrefetchKeepsBoundedCredentialsAsFresh(t *testing.T) {
	var r Reconciler
	keys := []issuedKey{{sc: keyedIssuer{}, principal: "user", secret: "password"}}
	secret := func(rv string, data map[string]string) *corev1.Secret {
		s := &corev1.Secret{Data: map[string][]byte{}}
		s.ResourceVersion = rv
		for k, v := range data {
			s.Data[k] = []byte(v)
		}
		return s
	}
	r.knowIssuedSecret(keys, "a", secret("7", map[string]string{"user": "u-a", "password": "pw"}))
	if got, fresh, ok := r.secrets.get("a", "7", "u-a"); !ok || !fresh || got != "pw" {
		t.Errorf("want pw kept as fresh at 7, got %q fresh=%v ok=%v", got, fresh, ok)
	}
	if _, _, ok := r.secrets.get("a", "8", "u-a"); ok {
		t.Error("want nothing at another resourceVersion")
	}
	huge := strings.Repeat("x", 1<<20)
	for uid, data := range map[types.UID]map[string]string{
		"big-user":     {"user": huge, "password": "pw"},
		"big-password": {"user": "u-big-password", "password": huge},
		"no-user":      {"password": "pw"},
		"no-password":  {"user": "u-no-password"},
	} {
		r.knowIssuedSecret(keys, uid, secret("1", data))
		if r.secrets.has(uid) {
			t.Errorf("%s: want nothing kept", uid)
		}
	}
	r.secrets.put("b", "9", "u-b", "written")
	r.knowIssuedSecret(keys, "b", secret("5", map[string]string{"user": "u-b", "password": "listed"}))
	if got, fresh, ok := r.secrets.get("b", "9", "u-b"); !ok || fresh || got != "written" {
		t.Errorf("want the pass's record kept over the list's, got %q fresh=%v ok=%v", got, fresh, ok)
	}
}

// TestPrefetchReadsOnlyItsShardsSecrets: a shard's start reads the Secrets
// its cache holds (buckety's, of its slots or every shard's), not the other
// shards' (at 100,000 on four replicas each would read all 100,000); one
// shard reads every buckety Secret.
func TestPrefetchReadsOnlyItsShardsSecrets(t *testing.T) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	controller := true
	var objs []client.Object
	want := map[int]int{} // per shard of two, the Secrets its prefetch records
	secret := func(ns, name, slot string, managed bool) *corev1.Secret {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "BucketyAccess", Name: name, UID: types.UID(ns + "/" + name), Controller: &controller}}},
			Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"k": []byte(name)}}
		if managed {
			sec.Labels[v1.ManagedByLabel] = v1.ManagedByValue
		}
		if slot != "" {
			sec.Labels[shard.SlotLabel] = slot
		}
		return sec
	}
	for i := range 12 {
		ns := fmt.Sprintf("ns-%d", i)
		objs = append(objs, secret(ns, "a", shard.SlotValue(ns), true))
		want[shard.Home(ns, 2)]++
	}
	// Every shard's (an access naming another namespace's Buckety).
	objs = append(objs, secret("ns-0", "everywhere", shard.Everywhere, true))
	want[0]++
	want[1]++
	// Not buckety's, and buckety's from before shards (no slot yet: no
	// shard's cache holds it until the labeller gives it one).
	objs = append(objs, secret("ns-1", "tenant", shard.SlotValue("ns-1"), false), secret("ns-2", "legacy", "", true))
	if want[0] == 0 || want[1] == 0 {
		t.Fatalf("want namespaces on both shards, got %v", want)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	for k := range 2 {
		r := &Reconciler{APIReader: c, Serves: &shard.Serves{K: k, N: 2}}
		if n, err := r.listSecretsVerified(context.Background()); err != nil || n != want[k] {
			t.Errorf("shard %d of 2: want %d Secrets recorded, got %d (err %v)", k, want[k], n, err)
		}
	}
	r := &Reconciler{APIReader: c}
	if n, err := r.listSecretsVerified(context.Background()); err != nil || n != 12+2 {
		t.Errorf("one shard: want every buckety Secret (14) recorded, got %d (err %v)", n, err)
	}
}
