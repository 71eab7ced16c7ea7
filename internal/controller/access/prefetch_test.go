package access

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/metrics"
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
	if got, fresh, ok := r.secrets.get("a", "7", "u-a", nil); !ok || !fresh || got != "pw" {
		t.Errorf("want pw kept as fresh at 7, got %q fresh=%v ok=%v", got, fresh, ok)
	}
	if _, _, ok := r.secrets.get("a", "8", "u-a", nil); ok {
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
	if got, fresh, ok := r.secrets.get("b", "9", "u-b", nil); !ok || fresh || got != "written" {
		t.Errorf("want the pass's record kept over the list's, got %q fresh=%v ok=%v", got, fresh, ok)
	}
}

// TestPrefetchReadsOnlyItsShardsSecrets: a shard's start reads the Secrets
// its cache holds (buckety's, of its slots), not the other
// shards' (at 100,000 on four replicas each would read all 100,000); one
// shard reads every buckety Secret.
func TestPrefetchReadsOnlyItsShardsSecrets(t *testing.T) {
	s := coreScheme(t)
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
	// Labelled every shard's: buckety labels a Secret with its
	// namespace's slot only (an access naming another namespace's Buckety
	// too), so this is a tenant's, and no shard's cache or start reads it.
	objs = append(objs, secret("ns-0", "everywhere", shard.Everywhere, true))
	// Not buckety's, and buckety's from before shards (no slot yet: no
	// shard's cache holds it until the labeller gives it one).
	objs = append(objs, secret("ns-1", "tenant", shard.SlotValue("ns-1"), false), secret("ns-2", "legacy", "", true))
	if want[0] == 0 || want[1] == 0 {
		t.Fatalf("want namespaces on both shards, got %v", want)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	for k := range 2 {
		r := &Reconciler{APIReader: c, Serves: &shard.Serves{K: k, N: 2}}
		if n, err := r.listSecretsVerified(context.Background(), nil); err != nil || n != want[k] {
			t.Errorf("shard %d of 2: want %d Secrets recorded, got %d (err %v)", k, want[k], n, err)
		}
	}
	r := &Reconciler{APIReader: c}
	if n, err := r.listSecretsVerified(context.Background(), nil); err != nil || n != 12+2 {
		t.Errorf("one shard: want every buckety Secret (14) recorded, got %d (err %v)", n, err)
	}
}

// TestPrefetchReportsItsOutcome: the start-up read is observable (how long
// it took, by result, and what it recorded), so a start whose accesses fall
// back to a GET each can be told from one that did not; a read cut short
// by a stop reports nothing.
func TestPrefetchReportsItsOutcome(t *testing.T) {
	s := coreScheme(t)
	var objs []client.Object
	for i := range 3 {
		sec := accessSecret(fmt.Sprintf("s%d", i), types.UID(fmt.Sprintf("uid-%d", i)))
		objs = append(objs, &sec)
	}
	good := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).Build()
	failing := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
			return errors.New("the API server is down")
		}}).Build()
	observed := func(result string) uint64 {
		var m dto.Metric
		if err := metrics.SecretPrefetchDuration.WithLabelValues(result).(prometheus.Metric).Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetHistogram().GetSampleCount()
	}
	recorded := func() float64 {
		var m dto.Metric
		if err := metrics.SecretPrefetchRecorded.Write(&m); err != nil {
			t.Fatal(err)
		}
		return m.GetCounter().GetValue()
	}
	done0, failed0, rec0 := observed("done"), observed("failed"), recorded()

	(&Reconciler{APIReader: good}).prefetchSecrets(context.Background(), func() bool { return false })
	if got := observed("done") - done0; got != 1 {
		t.Errorf("a read that finished: want 1 observed as done, got %d", got)
	}
	if got := recorded() - rec0; got != 3 {
		t.Errorf("want 3 Secrets counted as recorded, got %v", got)
	}

	(&Reconciler{APIReader: failing}).prefetchSecrets(context.Background(), func() bool { return false })
	if got := observed("failed") - failed0; got != 1 {
		t.Errorf("a read that failed: want 1 observed as failed, got %d", got)
	}

	stopped, cancel := context.WithCancel(context.Background())
	cancel()
	(&Reconciler{APIReader: failing}).prefetchSecrets(stopped, func() bool { return false })
	if d, f := observed("done")-done0, observed("failed")-failed0; d != 1 || f != 1 {
		t.Errorf("a read cut short by a stop: want nothing more observed, got done %d, failed %d", d, f)
	}
}

// TestPrefetchReleasesAPassAtItsPage: a pass waiting for the start-up read
// goes on once the page holding its Secret is recorded, not when the last
// of a shard's hundreds of pages is; one whose Secret comes later waits
// for it; each page's request has its own deadline, not the whole read's.
func TestPrefetchReleasesAPassAtItsPage(t *testing.T) {
	s := coreScheme(t)
	secret := func(uid string) corev1.Secret {
		sec := accessSecret(uid, types.UID(uid))
		sec.ResourceVersion = "1"
		return sec
	}
	// Two pages, served by hand: the second only once the test lets it.
	secondAsked, secondGo := make(chan struct{}), make(chan struct{})
	var deadlines []time.Duration
	c := fake.NewClientBuilder().WithScheme(s).WithInterceptorFuncs(interceptor.Funcs{
		List: func(ctx context.Context, _ client.WithWatch, l client.ObjectList, opts ...client.ListOption) error {
			dl, ok := ctx.Deadline()
			if !ok {
				return errors.New("a page's list has no deadline")
			}
			deadlines = append(deadlines, time.Until(dl))
			o := (&client.ListOptions{}).ApplyOptions(opts)
			sl := l.(*corev1.SecretList)
			if o.Continue == "" {
				sl.Items, sl.Continue = []corev1.Secret{secret("first")}, "page-2"
				return nil
			}
			close(secondAsked)
			select {
			case <-secondGo:
			case <-ctx.Done():
				return ctx.Err()
			}
			sl.Items = []corev1.Secret{secret("second")}
			return nil
		}}).Build()
	r := &Reconciler{APIReader: c}
	ctx := context.Background()

	ran := make(chan struct{})
	go func() {
		defer close(ran)
		r.prefetchSecrets(ctx, func() bool { return false })
	}()
	<-secondAsked
	// The read is blocked on its second page: a pass whose Secret was on
	// the first goes on (a hang here is the failure).
	r.prefetchSecrets(ctx, func() bool { return r.verified.has("first") })
	if !r.verified.has("first") || r.verified.has("second") {
		t.Fatalf("want the first page recorded and the second not yet, got first %v second %v", r.verified.has("first"), r.verified.has("second"))
	}
	later := make(chan bool)
	go func() {
		r.prefetchSecrets(ctx, func() bool { return r.verified.has("second") })
		later <- r.verified.has("second")
	}()
	close(secondGo)
	if !<-later {
		t.Error("a pass waiting for the second page went on before it was recorded")
	}
	<-ran
	for i, d := range deadlines {
		if d > prefetchPageTimeout {
			t.Errorf("page %d: its list had %s, want at most prefetchPageTimeout (%s)", i+1, d, prefetchPageTimeout)
		}
	}
	// Done: a later pass does not wait, and nothing is read again.
	r.prefetchSecrets(ctx, func() bool { return false })
	if len(deadlines) != 2 {
		t.Errorf("want 2 list requests in all, got %d", len(deadlines))
	}
}

// coreScheme is a scheme of Kubernetes' own kinds, for a fake client.
func coreScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// accessSecret is a buckety Secret in namespace "ns" that the BucketyAccess
// with uid controls, as the start-up read records it.
func accessSecret(name string, uid types.UID) corev1.Secret {
	controller := true
	return corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name,
		Labels:          map[string]string{v1.ManagedByLabel: v1.ManagedByValue},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "BucketyAccess", Name: name, UID: uid, Controller: &controller}}},
		Type: corev1.SecretTypeOpaque}
}

// staleIssuer is a keyed issuer whose Secrets name a mechanism: one
// written under another is stale (drivers.StaleSecrets), as kadm's are.
type staleIssuer struct {
	keyedIssuer
	mechanism string
}

func (s *staleIssuer) SecretStale(data map[string][]byte) bool {
	got, ok := data["mechanism"]
	return ok && string(got) != s.mechanism
}

// TestPrefetchKeepsASecretForTheIssuersItIsCurrentFor: two backends issue
// under the same Secret keys, and only one changed its mechanism. Every
// Secret is stale for one of them, and the Secret does not say which is
// its own: a Secret the start read was not kept at all when any issuer
// found it stale, so every pass of every access waited for the whole
// read and then read its Secret on its own. It is kept, and found, for
// the issuers it is current for; an access of the other reads it.
func TestPrefetchKeepsASecretForTheIssuersItIsCurrentFor(t *testing.T) {
	old, moved := &staleIssuer{mechanism: "A"}, &staleIssuer{mechanism: "B"}
	var r Reconciler
	data := map[string][]byte{"user": []byte("u-a"), "password": []byte("pw"), "mechanism": []byte("A")}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "7"}, Data: data}
	k := issuedKey{sc: old, all: []drivers.CredentialIssuer{old, moved}}
	k.principal, k.secret = old.CredentialKeys()
	r.knowIssuedSecret([]issuedKey{k}, "a", s)
	if got, _, ok := r.secrets.get("a", "7", "u-a", old); !ok || got != "pw" {
		t.Errorf("the issuer the Secret is current for: want it found, got %q %v", got, ok)
	}
	if _, _, ok := r.secrets.get("a", "7", "u-a", moved); ok {
		t.Error("the issuer the Secret is stale for: want it read on its own, got it found")
	}
}
