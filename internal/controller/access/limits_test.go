package access

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/Yolean/buckety-controller/drivers/kadm"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/controller/status"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// TestAdmit: those holding a place count whatever the limits are now;
// the waiting ones ahead (older, or as old and named before) take a place
// each while it fits; the same second orders by name.
func TestAdmit(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	c := func(ref string, at metav1.Time, name string, held bool) contender {
		return contender{refs: []string{ref}, created: at, name: name, held: held, local: true}
	}
	// foreign: an access of another namespace (x) naming a shared Buckety.
	foreign := func(ref string, at metav1.Time, name string, held bool) contender {
		return contender{refs: []string{ref}, created: at, name: name, held: held}
	}
	for _, tc := range []struct {
		name          string
		l             config.Limits
		a             contender
		others        []contender
		ok            bool
		perB, onTotal int
	}{
		{"alone", config.Limits{AccessesPerNamespace: 1}, c("o", t0, "a", false), nil, true, 0, 0},
		{"z held, a as old and named before: z keeps its place", config.Limits{AccessesPerNamespace: 1},
			c("o", t0, "a", false), []contender{c("o", t0, "z", true)}, false, 1, 1},
		{"z waiting, a as old and named before: a goes first", config.Limits{AccessesPerNamespace: 1},
			c("o", t0, "a", false), []contender{c("o", t0, "z", false)}, true, 0, 0},
		{"a waiting ahead of z in the same second", config.Limits{AccessesPerNamespace: 1},
			c("o", t0, "z", false), []contender{c("o", t0, "a", false)}, false, 1, 1},
		{"an older one waiting takes the place", config.Limits{AccessesPerNamespace: 1},
			c("o", t1, "a", false), []contender{c("o", t0, "z", false)}, false, 1, 1},
		{"a newer one waiting does not", config.Limits{AccessesPerNamespace: 1},
			c("o", t0, "z", false), []contender{c("o", t1, "a", false)}, true, 0, 0},
		{"held over a lowered limit", config.Limits{AccessesPerNamespace: 1},
			c("o", t0, "a", false), []contender{c("o", t1, "x", true), c("o", t1, "y", true)}, false, 2, 2},
		{"an older one waiting that does not fit its Buckety takes no place", config.Limits{AccessesPerBuckety: 1, AccessesPerNamespace: 2},
			c("l", t1, "b", false), []contender{c("o", t0, "x", true), c("o", t0, "y", false)}, true, 0, 1},
		{"the Buckety full", config.Limits{AccessesPerBuckety: 1},
			c("o", t1, "b", false), []contender{c("o", t0, "x", true), c("l", t0, "y", true)}, false, 1, 2},
		{"another namespace's access fills the shared Buckety, not the namespace", config.Limits{AccessesPerBuckety: 1, AccessesPerNamespace: 1},
			c("o", t1, "b", false), []contender{foreign("o", t0, "x/y", true)}, false, 1, 0},
		{"another namespace's access elsewhere counts for nothing here", config.Limits{AccessesPerBuckety: 1, AccessesPerNamespace: 1},
			c("o", t1, "b", false), []contender{foreign("l", t0, "x/y", true)}, true, 0, 0},
		{"a waiting older access of another namespace takes no place: the first through the gate does", config.Limits{AccessesPerBuckety: 1},
			c("o", t1, "b", false), []contender{foreign("o", t0, "x/y", false)}, true, 0, 0},
		{"a held access of another namespace counts, one waiting does not", config.Limits{AccessesPerBuckety: 2},
			c("o", t1, "b", false), []contender{foreign("o", t0, "x/h", true), foreign("o", t0, "x/y", false)}, true, 1, 0},
		{"an access naming several counts once in its namespace and once in each Buckety", config.Limits{AccessesPerBuckety: 1, AccessesPerNamespace: 2},
			c("l", t1, "b", false), []contender{{refs: []string{"o", "l"}, created: t0, name: "x", held: true, local: true}}, false, 1, 1},
		{"an access naming several fits only where every one of its Bucketies does", config.Limits{AccessesPerBuckety: 1},
			contender{refs: []string{"m", "o"}, created: t1, name: "b", local: true}, []contender{c("o", t0, "x", true)}, false, 1, 1},
		{"an access naming several, under every limit", config.Limits{AccessesPerBuckety: 2, AccessesPerNamespace: 2},
			contender{refs: []string{"m", "o"}, created: t1, name: "b", local: true}, []contender{c("o", t0, "x", true)}, true, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := quotas{perNamespace: tc.l.AccessesPerNamespace, perBuckety: map[string]int{}}
			for _, o := range append([]contender{tc.a}, tc.others...) {
				for _, ref := range o.refs {
					q.perBuckety[ref] = tc.l.AccessesPerBuckety
				}
			}
			_, perB, total, ok := admit(q, tc.a, tc.others)
			if ok != tc.ok || perB != tc.perB || total != tc.onTotal {
				t.Errorf("want ok %v, per Buckety %d, total %d; got ok %v, %d, %d", tc.ok, tc.perB, tc.onTotal, ok, perB, total)
			}
		})
	}
}

// TestOtherNamespacesLimitsNeverFailADecision: the limits of a
// Buckety an older waiting access of a's namespace also names are read
// from its namespace, which may be gone (limits.namespaces selecting by
// label reads it): taken as no limit, the decision goes on. Those of a's
// own Bucketies must be read.
func TestOtherNamespacesLimitsNeverFailADecision(t *testing.T) {
	one := 1
	cfg := &config.Backend{Name: "svc", Limits: &config.Limits{AccessesPerBuckety: 2,
		Namespaces: []config.NamespaceLimits{{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "small"}}, AccessesPerBuckety: &one}}}}
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "o"}}).Build()
	lim := &namespaceLimits{ctx: context.Background(), c: c, base: &backends.Entry{Name: "svc", Config: cfg}, of: map[string]*config.Backend{}}
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "new"}}
	waiting := contender{refs: []string{"o/orders", "gone/tmp"}, name: "o/old", local: true}
	q, err := quotasOf(lim, a, []string{"o/orders"}, []contender{waiting})
	if err != nil {
		t.Fatalf("want the decision to go on, got %v", err)
	}
	if q.perBuckety["o/orders"] != 2 || q.perBuckety["gone/tmp"] != 0 {
		t.Errorf("want o/orders at the backend's 2 and gone/tmp at no limit, got %v", q.perBuckety)
	}
	if _, err := quotasOf(lim, a, []string{"gone/tmp"}, nil); err == nil {
		t.Error("a's own Buckety in a namespace whose limits cannot be read: want an error")
	}
}

// orders is Buckety o/orders on backend svc.
var orders = &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "orders"}, Spec: v1.BucketySpec{Backend: "svc"}}

// limitsEnv is a Reconciler on a fake cache holding Buckety o/orders on
// backend svc, which allows limit accesses per namespace.
func limitsEnv(t *testing.T, limit int) (*Reconciler, *backends.Entry) {
	t.Helper()
	c := fake.NewClientBuilder().WithScheme(testScheme(t)).WithStatusSubresource(&v1.BucketyAccess{}).
		WithIndex(&v1.BucketyCredential{}, objects.IndexCredentialOwner, func(o client.Object) []string {
			return []string{o.GetLabels()[v1.ClaimOwnerLabel]}
		}).
		WithIndex(&v1.BucketyAccess{}, objects.IndexBucketyRef, func(o client.Object) []string {
			return objects.RefKeys(o.(*v1.BucketyAccess))
		}).
		WithObjects(orders.DeepCopy()).Build()
	e := &backends.Entry{Name: "svc", Config: &config.Backend{Name: "svc", Limits: &config.Limits{AccessesPerNamespace: limit}}}
	return &Reconciler{Client: c, APIReader: c}, e
}

// mkAccess creates access o/name created at at, and returns it as read back.
func mkAccess(t *testing.T, c client.Client, name string, at time.Time) *v1.BucketyAccess {
	t.Helper()
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: name, UID: types.UID("uid-" + name), CreationTimestamp: metav1.NewTime(at)},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: name}}
	if err := c.Create(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	got := &v1.BucketyAccess{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(a), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// TestSameSecondAccessesGrantOne: "z" is let through while the cache holds
// it alone; "a", created in the same second, is cached before z's grant
// is. a is ordered before z (same second, then name), but z holds its
// place from the moment the gate let it through: a waits, naming
// limits.accessesPerNamespace, and still waits once the cache shows z
// granted.
func TestSameSecondAccessesGrantOne(t *testing.T) {
	r, e := limitsEnv(t, 1)
	ctx := context.Background()
	at := time.Now().Truncate(time.Second)
	z := mkAccess(t, r.Client, "z", at)
	if ok, err := r.withinLimits(ctx, z, single(orders), e, &facts{}); err != nil || !ok {
		t.Fatalf("z alone: want it let through, got %v (%v)", ok, err)
	}
	a := mkAccess(t, r.Client, "a", at)
	if !a.CreationTimestamp.Equal(&z.CreationTimestamp) {
		t.Fatalf("want both created in the same second, got %v and %v", z.CreationTimestamp, a.CreationTimestamp)
	}
	check := func(when string) {
		t.Helper()
		f := &facts{}
		ok, err := r.withinLimits(ctx, a, single(orders), e, f)
		if err != nil {
			t.Fatal(err)
		}
		if ok || !strings.Contains(f.limitExceeded, "limits.accessesPerNamespace: 1") {
			t.Errorf("%s: want a held at limits.accessesPerNamespace: 1, got let through %v (%q)", when, ok, f.limitExceeded)
		}
	}
	check("z's grant not cached yet")
	// z's pass goes on (its own later passes hold the place too).
	if ok, err := r.withinLimits(ctx, z, single(orders), e, &facts{}); err != nil || !ok {
		t.Errorf("z again: want it let through, got %v (%v)", ok, err)
	}
	z.Status.BucketyGeneration = 1
	if err := r.Client.Status().Update(ctx, z); err != nil {
		t.Fatal(err)
	}
	check("z's grant cached")
	if r.gates.placedOn(z.UID, gateKey(e.Name, z.Namespace)) {
		t.Error("want z's place forgotten once the cache shows it granted")
	}
	check("z counted from the cache")
}

// TestConcurrentAccessesGrantAtMostTheLimit: accesses created in one
// second by many at once, each pass deciding as soon as its access is
// cached (seeing some of the others, none granted yet): exactly the limit
// are let through, whatever the interleaving; later passes change nothing.
func TestConcurrentAccessesGrantAtMostTheLimit(t *testing.T) {
	const n, limit = 24, 3
	for round := range 20 {
		r, e := limitsEnv(t, limit)
		at := time.Now().Truncate(time.Second)
		var wg sync.WaitGroup
		var mu sync.Mutex
		granted := map[string]bool{}
		accesses := make([]*v1.BucketyAccess, n)
		for i := range n {
			wg.Go(func() {
				// Names in no order the creation follows.
				a := mkAccess(t, r.Client, fmt.Sprintf("acc-%02d", (i*7)%n), at)
				accesses[i] = a
				ok, err := r.withinLimits(context.Background(), a, single(orders), e, &facts{})
				if err != nil {
					t.Error(err)
				}
				mu.Lock()
				defer mu.Unlock()
				granted[a.Name] = ok
			})
		}
		wg.Wait()
		count := func() (int, []string) {
			var names []string
			for name, ok := range granted {
				if ok {
					names = append(names, name)
				}
			}
			return len(names), names
		}
		if got, names := count(); got != limit {
			t.Fatalf("round %d: want %d of %d let through, got %d: %v", round, limit, n, got, names)
		}
		for _, a := range accesses {
			ok, err := r.withinLimits(context.Background(), a, single(orders), e, &facts{})
			if err != nil {
				t.Fatal(err)
			}
			if ok != granted[a.Name] {
				t.Errorf("round %d: %s: want the decision kept (%v) on its next pass, got %v", round, a.Name, granted[a.Name], ok)
			}
		}
	}
}

// TestIssuedBeforeACrashHoldsItsPlace: "z" was let through by a
// controller that crashed after recording its credential (its user may
// work) and before its status showed the grant; the new process's gate
// never let it through. "a", created in the same second and ordered
// before it, must not take a second place: z's credential record holds
// it, and z's own pass goes on.
func TestIssuedBeforeACrashHoldsItsPlace(t *testing.T) {
	r, e := limitsEnv(t, 1)
	ctx := context.Background()
	at := time.Now().Truncate(time.Second)
	z := mkAccess(t, r.Client, "z", at)
	a := mkAccess(t, r.Client, "a", at)
	rec := &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: "cred-z", Labels: map[string]string{v1.ClaimOwnerLabel: string(z.UID)}},
		Spec: v1.BucketyCredentialSpec{Backend: e.Name, Owner: v1.ClaimOwner{Namespace: "o", Name: "z", UID: string(z.UID)}, Principal: "user-z"}}
	if err := r.Client.Create(ctx, rec); err != nil {
		t.Fatal(err)
	}
	f := &facts{}
	if ok, err := r.withinLimits(ctx, a, single(orders), e, f); err != nil || ok {
		t.Fatalf("a: want it held behind z's issued credential, got let through %v (%v)", ok, err)
	}
	if ok, err := r.withinLimits(ctx, z, single(orders), e, &facts{}); err != nil || !ok {
		t.Fatalf("z: want its issued credential to keep its place, got %v (%v)", ok, err)
	}
}

// grantsElsewhere are the ways access y shows a grant made on another
// backend than svc, or on another Buckety: each writes y's status or
// returns a record to create. selfOnly: only y's own pass can tell (it
// compares the generation with its Buckety's; the others count an earlier
// release's grant as it says, which holds a place too many, never one too
// few).
var grantsElsewhere = []struct {
	name     string
	prior    func(y *v1.BucketyAccess) client.Object
	selfOnly bool
}{
	{"a grant on another backend", func(y *v1.BucketyAccess) client.Object {
		y.Status.BucketyGeneration, y.Status.Backend = 3, "other"
		return nil
	}, false},
	{"an earlier release's grant of a later generation", func(y *v1.BucketyAccess) client.Object {
		y.Status.BucketyGeneration = orders.Generation + 2
		return nil
	}, true},
	{"a credential on another backend", func(y *v1.BucketyAccess) client.Object {
		return &v1.BucketyCredential{ObjectMeta: metav1.ObjectMeta{Name: "cred-y", Labels: map[string]string{v1.ClaimOwnerLabel: string(y.UID)}},
			Spec: v1.BucketyCredentialSpec{Backend: "other", Owner: v1.ClaimOwner{Namespace: "o", Name: "y", UID: string(y.UID)}, Principal: "user-y"}}
	}, false},
}

// grantedElsewhere creates access y at at, granted elsewhere by prior.
func grantedElsewhere(t *testing.T, c client.Client, prior func(*v1.BucketyAccess) client.Object, at time.Time) *v1.BucketyAccess {
	t.Helper()
	ctx := context.Background()
	y := mkAccess(t, c, "y", at)
	if o := prior(y); o != nil {
		if err := c.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	} else if err := c.Status().Update(ctx, y); err != nil {
		t.Fatal(err)
	}
	return y
}

// TestGrantedElsewhereHoldsNoPlace: under accessesPerNamespace: 1, "g"
// (created first) holds the place; "y" was granted, or issued a
// credential, on another backend, where a Buckety of the same name was
// before it was made again on this one; or, by an earlier release, on a
// later generation than its Buckety has (so on another Buckety). Neither
// holds a place here: y waits.
func TestGrantedElsewhereHoldsNoPlace(t *testing.T) {
	for _, c := range grantsElsewhere {
		t.Run(c.name, func(t *testing.T) {
			r, e := limitsEnv(t, 1)
			ctx := context.Background()
			at := time.Now().Truncate(time.Second)
			g := mkAccess(t, r.Client, "g", at.Add(-time.Minute))
			g.Status.BucketyGeneration, g.Status.Backend = 1, e.Name
			if err := r.Client.Status().Update(ctx, g); err != nil {
				t.Fatal(err)
			}
			y := grantedElsewhere(t, r.Client, c.prior, at)
			f := &facts{}
			if ok, err := r.withinLimits(ctx, y, single(orders), e, f); err != nil || ok {
				t.Fatalf("y: want it held behind g, its earlier grant elsewhere holding no place, got let through %v (%v)", ok, err)
			}
			if !strings.Contains(f.limitExceeded, "accessesPerNamespace") {
				t.Errorf("y: want the limit named, got %q", f.limitExceeded)
			}
			if ok, err := r.withinLimits(ctx, g, single(orders), e, &facts{}); err != nil || !ok {
				t.Errorf("g: want it to keep its place, got %v (%v)", ok, err)
			}
		})
	}
}

// TestSharedBucketyCountsEveryNamespace: a Buckety shared with namespace x
// has one place (accessesPerBuckety: 1); its own namespace's access takes
// it, and x's access waits, naming the Buckety and the limit (the owner
// namespace's, whatever x's is); x's namespace limit is not touched by
// o's access.
func TestSharedBucketyCountsEveryNamespace(t *testing.T) {
	one := 1
	for _, c := range []struct {
		name   string
		limits *config.Limits
		key    string
	}{
		{"the backend's limits", &config.Limits{AccessesPerBuckety: 1, AccessesPerNamespace: 1}, "limits.accessesPerBuckety: 1"},
		// A Buckety's accessesPerBuckety is its owner namespace's (o: 1,
		// by a limits.namespaces entry), not that of a namespace it is
		// shared with (x: the backend's 5).
		{"the owner's entry in limits.namespaces", &config.Limits{AccessesPerBuckety: 5, Namespaces: []config.NamespaceLimits{{Names: []string{"o"}, AccessesPerBuckety: &one}}}, "limits.namespaces[0].accessesPerBuckety: 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r, e := limitsEnv(t, 0)
			e.Config.Limits = c.limits
			ctx := context.Background()
			shared := orders.DeepCopy()
			shared.Spec.Sharing = []v1.SharingRule{{Namespace: "x", Roles: []v1.Role{v1.RoleReadOnly}}}
			own := mkAccess(t, r.Client, "own", time.Now().Add(-time.Minute))
			if ok, err := r.withinLimits(ctx, own, single(shared), e, &facts{}); err != nil || !ok {
				t.Fatalf("o's own access: want it let through, got %v (%v)", ok, err)
			}
			x := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "reader", UID: "uid-x-reader", CreationTimestamp: metav1.Now()},
				Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Namespace: "o", Name: "orders"}, CredentialsSecretName: "reader", Role: v1.RoleReadOnly}}
			if err := r.Client.Create(ctx, x); err != nil {
				t.Fatal(err)
			}
			f := &facts{}
			ok, err := r.withinLimits(ctx, x, single(shared), e, f)
			if err != nil {
				t.Fatal(err)
			}
			if ok || !strings.Contains(f.limitExceeded, "Buckety o/orders already has 1 BucketyAccesses") || !strings.Contains(f.limitExceeded, "("+c.key+" in buckety-controller.yaml)") {
				t.Errorf("x's access: want it held at the shared Buckety's accessesPerBuckety (%s), got let through %v (%q)", c.key, ok, f.limitExceeded)
			}
			// Deleted, o's access frees the place for x's.
			if err := r.Client.Delete(ctx, own); err != nil {
				t.Fatal(err)
			}
			r.gates.settle(own.UID)
			if ok, err := r.withinLimits(ctx, x, single(shared), e, &facts{}); err != nil || !ok {
				t.Errorf("x's access once o's is gone: want it let through, got %v (%v)", ok, err)
			}
		})
	}
}

// TestForeignWaitingPastItsOwnLimitHoldsNoPlace: Buckety o/orders
// (accessesPerBuckety: 1) is shared with x, whose accessesPerNamespace (1)
// is taken by a grant on another Buckety. x's older access to orders can
// never be granted while that holds: it takes no place in orders (no
// waiting access of another namespace does), and o's own access is let
// through. Counted, x could keep orders full with any number of accesses
// past its own limit.
func TestForeignWaitingPastItsOwnLimitHoldsNoPlace(t *testing.T) {
	r, e := limitsEnv(t, 0)
	e.Config.Limits = &config.Limits{AccessesPerBuckety: 1, AccessesPerNamespace: 1}
	ctx := context.Background()
	shared := orders.DeepCopy()
	shared.Spec.Sharing = []v1.SharingRule{{Namespace: "x", Roles: []v1.Role{v1.RoleReadOnly}}}
	mk := func(name, ns, bucketyName string, at time.Time) *v1.BucketyAccess {
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: name, UID: types.UID("uid-x-" + name), CreationTimestamp: metav1.NewTime(at)},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Namespace: ns, Name: bucketyName}, CredentialsSecretName: name, Role: v1.RoleReadOnly}}
		if err := r.Client.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	held := mk("own", "", "logs", time.Now().Add(-2*time.Hour))
	held.Status.BucketyGeneration, held.Status.Backend = 1, "svc"
	if err := r.Client.Status().Update(ctx, held); err != nil {
		t.Fatal(err)
	}
	mk("reader", "o", "orders", time.Now().Add(-time.Hour))
	own := mkAccess(t, r.Client, "own", time.Now())
	f := &facts{}
	if ok, err := r.withinLimits(ctx, own, single(shared), e, f); err != nil || !ok {
		t.Errorf("o's own access: want it let through, x's waiting access holding no place past x's limit; got %v (%v, %q)", ok, err, f.limitExceeded)
	}
}

// TestSharedBucketyOfAnotherShardCountsItsOwnersAccesses: with two
// shards, Buckety o/orders (accessesPerBuckety: 1, shared with namespace
// ns) is of the other shard than ns, and o's granted access carries o's
// slot: ns's shard's cache does not hold it. ns's access still waits
// behind it, read from the API server.
func TestSharedBucketyOfAnotherShardCountsItsOwnersAccesses(t *testing.T) {
	ns := ""
	for _, n := range []string{"x", "y", "z", "w", "v", "u", "t", "s"} {
		if shard.Home(n, 2) != shard.Home("o", 2) {
			ns = n
			break
		}
	}
	if ns == "" {
		t.Fatal("no namespace of the other shard than o among the candidates")
	}
	ctx := context.Background()
	r, e := limitsEnv(t, 0)
	e.Config.Limits = &config.Limits{AccessesPerBuckety: 1}
	r.Serves = &shard.Serves{K: shard.Home(ns, 2), N: 2}
	shared := orders.DeepCopy()
	shared.Spec.Sharing = []v1.SharingRule{{Namespace: ns, Roles: []v1.Role{v1.RoleReadOnly}}}
	// o's access is in the API server, not in ns's shard's cache.
	apiServer := fake.NewClientBuilder().WithScheme(testScheme(t)).WithStatusSubresource(&v1.BucketyAccess{}).Build()
	r.APIReader = apiServer
	own := mkAccess(t, apiServer, "own", time.Now().Add(-time.Minute))
	own.Status.BucketyGeneration, own.Status.Backend = 1, "svc"
	if err := apiServer.Status().Update(ctx, own); err != nil {
		t.Fatal(err)
	}
	x := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader", UID: "uid-reader", CreationTimestamp: metav1.Now()},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Namespace: "o", Name: "orders"}, CredentialsSecretName: "reader", Role: v1.RoleReadOnly}}
	if err := r.Client.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	f := &facts{}
	if ok, err := r.withinLimits(ctx, x, single(shared), e, f); err != nil || ok || !strings.Contains(f.limitExceeded, "Buckety o/orders already has 1 BucketyAccesses") {
		t.Errorf("%s's access: want it held behind o's granted one, got let through %v (%v, %q)", ns, ok, err, f.limitExceeded)
	}
}

// TestForeignNamingAnUnprovisionedBucketyHoldsNoPlace: x's older access
// names o/orders (shared with x, accessesPerBuckety: 1) and x/pending,
// which is not provisioned (and may never be): it cannot be granted, and
// takes no place in orders; o's own access is let through.
func TestForeignNamingAnUnprovisionedBucketyHoldsNoPlace(t *testing.T) {
	r, e := limitsEnv(t, 0)
	e.Config.Limits = &config.Limits{AccessesPerBuckety: 1}
	ctx := context.Background()
	shared := orders.DeepCopy()
	shared.Spec.Sharing = []v1.SharingRule{{Namespace: "x", Roles: []v1.Role{v1.RoleReadOnly}}}
	pending := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "pending"}, Spec: v1.BucketySpec{Backend: "svc"}}
	if err := r.Client.Create(ctx, pending); err != nil {
		t.Fatal(err)
	}
	x := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "both", UID: "uid-x-both", CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))},
		Spec: v1.BucketyAccessSpec{BucketyRefs: []v1.BucketyReference{{Namespace: "o", Name: "orders"}, {Name: "pending"}}, CredentialsSecretName: "both", Role: v1.RoleReadOnly}}
	if err := r.Client.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	own := mkAccess(t, r.Client, "own", time.Now())
	f := &facts{}
	if ok, err := r.withinLimits(ctx, own, single(shared), e, f); err != nil || !ok {
		t.Errorf("o's own access: want it let through, x's access naming an unprovisioned Buckety holding no place; got %v (%v, %q)", ok, err, f.limitExceeded)
	}
}

// TestLetThroughForAnotherBucketyStaysCounted: o's access p is let
// through for o/logs (accessesPerNamespace: 1), its grant not cached yet.
// A decision of x's access on o/orders, shared with x, takes o's gate too
// but does not list p (it names neither orders nor x): p must stay let
// through, and o's next access (older, as one created in the same second
// and named before it may be) wait behind it.
func TestLetThroughForAnotherBucketyStaysCounted(t *testing.T) {
	r, e := limitsEnv(t, 1)
	ctx := context.Background()
	logs := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "logs"}, Spec: v1.BucketySpec{Backend: "svc"}}
	if err := r.Client.Create(ctx, logs); err != nil {
		t.Fatal(err)
	}
	p := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "p", UID: "uid-p", CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour))},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "logs"}, CredentialsSecretName: "p"}}
	if err := r.Client.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	if ok, err := r.withinLimits(ctx, p, single(logs), e, &facts{}); err != nil || !ok {
		t.Fatalf("p: want it let through, got %v (%v)", ok, err)
	}
	shared := orders.DeepCopy()
	shared.Spec.Sharing = []v1.SharingRule{{Namespace: "x", Roles: []v1.Role{v1.RoleReadOnly}}}
	x := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "reader", UID: "uid-x-reader", CreationTimestamp: metav1.Now()},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Namespace: "o", Name: "orders"}, CredentialsSecretName: "reader", Role: v1.RoleReadOnly}}
	if err := r.Client.Create(ctx, x); err != nil {
		t.Fatal(err)
	}
	if _, err := r.withinLimits(ctx, x, single(shared), e, &facts{}); err != nil {
		t.Fatal(err)
	}
	// Older than p (created in the same second, ordered by name, say):
	// only p's place, not its age, holds q back.
	q := mkAccess(t, r.Client, "q", time.Now().Add(-2*time.Hour))
	f := &facts{}
	if ok, err := r.withinLimits(ctx, q, single(orders), e, f); err != nil || ok {
		t.Errorf("o's next access: want it held behind p (accessesPerNamespace 1), got let through %v (%v)", ok, err)
	}
}

// TestWithdrawnAccessHoldsNoPlace: Buckety o/orders (accessesPerBuckety:
// 1) shared with x, then with y alone. x's access, older and withdrawn
// (its status no longer shows a grant), stays in x, where only its tenant
// can delete it: it holds no place, and y's access is let through. The
// owner's own access to orders then waits behind y's: a shared Buckety's
// accesses of every namespace count, its owner's included.
func TestWithdrawnAccessHoldsNoPlace(t *testing.T) {
	r, e := limitsEnv(t, 0)
	e.Config.Limits = &config.Limits{AccessesPerBuckety: 1}
	ctx := context.Background()
	shared := orders.DeepCopy()
	shared.Spec.Sharing = []v1.SharingRule{{Namespace: "y", Roles: []v1.Role{v1.RoleReadOnly}}}
	foreign := func(ns string, at time.Time) *v1.BucketyAccess {
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader", UID: types.UID("uid-" + ns), CreationTimestamp: metav1.NewTime(at)},
			Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Namespace: "o", Name: "orders"}, CredentialsSecretName: "reader", Role: v1.RoleReadOnly}}
		if err := r.Client.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		return a
	}
	foreign("x", time.Now().Add(-time.Hour))
	y := foreign("y", time.Now())
	f := &facts{}
	if ok, err := r.withinLimits(ctx, y, single(shared), e, f); err != nil || !ok {
		t.Fatalf("y's access: want it let through, x's withdrawn one holding no place; got %v (%v, %q)", ok, err, f.limitExceeded)
	}
	own := mkAccess(t, r.Client, "own", time.Now().Add(time.Minute))
	f = &facts{}
	if ok, err := r.withinLimits(ctx, own, single(shared), e, f); err != nil || ok || !strings.Contains(f.limitExceeded, "Buckety orders already has 1 BucketyAccesses") {
		t.Errorf("the owner's own access: want it held behind y's at accessesPerBuckety, got let through %v (%v, %q)", ok, err, f.limitExceeded)
	}
}

// TestSeveralWhoseFirstIsGoneStillCounts: an access naming several
// Bucketies, the first another namespace's that stopped sharing and was
// deleted, holds its grant on o/orders. It still counts against
// limits.accessesPerNamespace (1 here): a new access waits. Counted by
// the backend of its first Bucketies alone, it counted nowhere, and two
// cooperating namespaces could grant any number (one shared Buckety
// deleted per round).
func TestSeveralWhoseFirstIsGoneStillCounts(t *testing.T) {
	r, e := limitsEnv(t, 1)
	ctx := context.Background()
	s := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "several", UID: "uid-several", CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))},
		Spec: v1.BucketyAccessSpec{BucketyRefs: []v1.BucketyReference{{Namespace: "a", Name: "gone"}, {Name: "orders"}}, CredentialsSecretName: "several"}}
	if err := r.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.Status.BucketyGeneration, s.Status.Withdrawn = 1, []string{"a/gone"}
	if err := r.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	n := mkAccess(t, r.Client, "next", time.Now())
	f := &facts{}
	ok, err := r.withinLimits(ctx, n, single(orders), e, f)
	if err != nil {
		t.Fatal(err)
	}
	if ok || !strings.Contains(f.limitExceeded, "accessesPerNamespace") {
		t.Errorf("want the next access to wait for limits.accessesPerNamespace (o/several holds the one place), got let through %v (%q)", ok, f.limitExceeded)
	}
}

// TestSeveralKeepsItsPlaceWhenItsFirstStopsSharing: an access naming
// another namespace's Buckety first and orders second holds the one place
// (accessesPerNamespace: 1), granted on backend svc; the first stops
// sharing with it, so its pass resolves orders alone. It keeps its place,
// an older access waiting or not: its grant was on this backend, whichever
// of its Bucketies comes first now.
func TestSeveralKeepsItsPlaceWhenItsFirstStopsSharing(t *testing.T) {
	r, e := limitsEnv(t, 1)
	ctx := context.Background()
	older := mkAccess(t, r.Client, "older", time.Now().Add(-2*time.Hour))
	s := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "several", UID: "uid-several", CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))},
		Spec: v1.BucketyAccessSpec{BucketyRefs: []v1.BucketyReference{{Namespace: "a", Name: "shared"}, {Name: "orders"}}, CredentialsSecretName: "several"}}
	if err := r.Client.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
	s.Status.BucketyGeneration, s.Status.Backend, s.Status.Withdrawn = 4, e.Name, []string{"a/shared"}
	if err := r.Client.Status().Update(ctx, s); err != nil {
		t.Fatal(err)
	}
	on := &grantedOn{several: true, targets: []target{{b: orders}}, withdrawn: []string{"a/shared"}}
	if ok, err := r.withinLimits(ctx, s, on, e, &facts{}); err != nil || !ok {
		t.Errorf("several, its first withdrawn: want it to keep its place, got %v (%v)", ok, err)
	}
	f := &facts{}
	if ok, err := r.withinLimits(ctx, older, single(orders), e, f); err != nil || ok {
		t.Errorf("older: want it to wait behind o/several's grant, got let through %v (%v)", ok, err)
	}
}

// TestOthersGrantedElsewhereHoldNoPlace: under accessesPerNamespace: 1,
// "y" (newer) shows a grant, or holds a credential, made on another
// backend (its Buckety made again on this one, no pass of it yet): "n",
// older, is not kept waiting behind it, as y would not be let through
// here on that grant either.
func TestOthersGrantedElsewhereHoldNoPlace(t *testing.T) {
	for _, c := range grantsElsewhere {
		t.Run(c.name, func(t *testing.T) {
			r, e := limitsEnv(t, 1)
			ctx := context.Background()
			at := time.Now().Truncate(time.Second)
			if c.selfOnly {
				return
			}
			n := mkAccess(t, r.Client, "n", at.Add(-time.Minute))
			grantedElsewhere(t, r.Client, c.prior, at)
			f := &facts{}
			if ok, err := r.withinLimits(ctx, n, single(orders), e, f); err != nil || !ok {
				t.Errorf("n: want it let through, y's grant elsewhere holding no place here, got %v (%v, %q)", ok, err, f.limitExceeded)
			}
		})
	}
}

// TestWrittenRecordsTheBackend: a pass that publishes the access's
// Secret records its backend in status.backend, also for a status an
// earlier release wrote at the same generation of its Buckety (which
// would otherwise keep being judged by its generation alone).
func TestWrittenRecordsTheBackend(t *testing.T) {
	b := orders.DeepCopy()
	b.Generation, b.UID = 4, "uid-orders"
	for _, st := range []v1.BucketyAccessStatus{
		{},
		{BucketyGeneration: 4},
		{BucketyGeneration: 4, Backend: "old", BucketyUID: "uid-before"},
	} {
		a := &v1.BucketyAccess{Status: st}
		single(b).written(a, "svc")
		if a.Status.Backend != "svc" || a.Status.BucketyGeneration != 4 || a.SecretUIDOf("o", "orders") != "uid-orders" {
			t.Errorf("from %+v: want backend svc at generation 4 for uid-orders, got %q at %d for %q", st, a.Status.Backend, a.Status.BucketyGeneration, a.Status.BucketyUID)
		}
	}
	// An access naming several records each one's generation, and its
	// first's UID.
	logs := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "o", Name: "logs", UID: "uid-logs", Generation: 2}}
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "o"}, Spec: v1.BucketyAccessSpec{BucketyRefs: []v1.BucketyReference{{Name: "orders"}, {Name: "logs"}}}}
	(&grantedOn{several: true, targets: []target{{b: b}, {b: logs}}}).written(a, "svc")
	if a.SecretUIDOf("o", "orders") != "uid-orders" || a.SecretUIDOf("o", "logs") != "" || a.SecretGenerationOf("o", "logs") != 2 {
		t.Errorf("an access naming several: want its first's UID and each one's generation, got %q, %v", a.Status.BucketyUID, a.Status.BucketyGenerations)
	}
}

// passInvalid makes a's spec name a parameter its driver (kadm) refuses,
// and runs a grant pass of it; it returns what the pass learned.
func passInvalid(t *testing.T, r *Reconciler, e *backends.Entry, a *v1.BucketyAccess) *facts {
	t.Helper()
	ctx := context.Background()
	a.Spec.Parameters = map[string]string{"retentionMs": "1"}
	if err := r.Client.Update(ctx, a); err != nil {
		t.Fatal(err)
	}
	f := &facts{}
	if _, err := r.grantOn(ctx, a, single(orders), e, f, reconcile.Result{}); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestInvalidAccessHoldsNoPlace: under limits.accessesPerNamespace: 1,
// "bad", the older, names a parameter its driver refuses. Its pass reports
// the field and takes no place, and once its status says so, "good",
// created after it, is let through: an access that is never granted does
// not keep its namespace's newer ones waiting behind it. (Before, bad was
// let through the gate before it was validated, and held the one place in
// memory, granted nothing, until it was deleted or the controller
// restarted; and as the older waiting access it was ahead of good for
// ever.) An edit of bad's spec takes it back into the queue, ahead of
// good, until its pass judges the edit.
func TestInvalidAccessHoldsNoPlace(t *testing.T) {
	r, e := limitsEnv(t, 1)
	e.Driver = kadm.New()
	ctx := context.Background()
	bad := mkAccess(t, r.Client, "bad", time.Now().Add(-time.Hour))
	f := passInvalid(t, r, e, bad)
	if !strings.Contains(f.invalid, `spec.parameters[retentionMs]`) {
		t.Errorf("bad: want its pass to name spec.parameters[retentionMs], got invalid %q, limit %q", f.invalid, f.limitExceeded)
	}
	if r.gates.placedOn(bad.UID, gateKey(e.Name, bad.Namespace)) {
		t.Error("bad: want no place taken by an access its driver refuses")
	}
	good := mkAccess(t, r.Client, "good", time.Now())
	decide := func() (bool, string) {
		t.Helper()
		f := &facts{}
		ok, err := r.withinLimits(ctx, good, single(orders), e, f)
		if err != nil {
			t.Fatal(err)
		}
		return ok, f.limitExceeded
	}
	if ok, _ := decide(); ok {
		t.Error("good, bad's status not written yet: want it waiting behind the older bad")
	}
	// bad's pass writes its status, as status.Finish does.
	status.Apply(&bad.Status.Conditions, bad.Generation, conditions(bad, f))
	if err := r.Client.Status().Update(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if ok, why := decide(); !ok {
		t.Errorf("good, bad judged invalid: want it let through, bad holding no place; held: %q", why)
	}
	r.gates.settle(good.UID)
	bad.Spec.Parameters = map[string]string{"consumerGroupPrefix": "bad"}
	bad.Generation++ // as the API server does on a spec edit (the fake client does not)
	if err := r.Client.Update(ctx, bad); err != nil {
		t.Fatal(err)
	}
	if ok, _ := decide(); ok {
		t.Error("good, bad's spec edited and not judged yet: want it waiting behind bad again")
	}
}

// TestLetThroughThenInvalidGivesItsPlaceBack: "late" is let through the
// gate (the one place under limits.accessesPerNamespace: 1), and its grant
// stalls; its tenant then makes it invalid. Its next pass gives the place
// back, as a restart would: "next" is let through. One with a credential
// of its own recorded keeps it (TestIssuedBeforeACrashHoldsItsPlace).
func TestLetThroughThenInvalidGivesItsPlaceBack(t *testing.T) {
	r, e := limitsEnv(t, 1)
	e.Driver = kadm.New()
	ctx := context.Background()
	late := mkAccess(t, r.Client, "late", time.Now().Add(-time.Hour))
	if ok, err := r.withinLimits(ctx, late, single(orders), e, &facts{}); err != nil || !ok {
		t.Fatalf("late: want it let through, got %v (%v)", ok, err)
	}
	f := passInvalid(t, r, e, late)
	if f.invalid == "" || r.gates.placedOn(late.UID, gateKey(e.Name, late.Namespace)) {
		t.Errorf("late, made invalid: want it reported (%q) and its place given back (still placed: %v)", f.invalid, r.gates.placedOn(late.UID, gateKey(e.Name, late.Namespace)))
	}
	status.Apply(&late.Status.Conditions, late.Generation, conditions(late, f))
	if err := r.Client.Status().Update(ctx, late); err != nil {
		t.Fatal(err)
	}
	next := mkAccess(t, r.Client, "next", time.Now())
	f = &facts{}
	if ok, err := r.withinLimits(ctx, next, single(orders), e, f); err != nil || !ok {
		t.Errorf("next: want it let through once late gave its place back; got %v (%v, %q)", ok, err, f.limitExceeded)
	}
}

// TestSharedAgainIsPlacedAnew: x's access names its own logs and o/orders
// (accessesPerBuckety: 1). It was granted on both; o stopped sharing, so
// its rights on orders were taken back (status.withdrawn), and o's own
// access took orders' one place. o shares again: x's access, still
// granted on logs, does not take orders back past the limit (it did: its
// grant on logs let it past, one more credential on orders per share
// given again); orders stays withdrawn, saying why, and logs stays
// granted. Once o's access is deleted, orders is taken back.
func TestSharedAgainIsPlacedAnew(t *testing.T) {
	r, e := limitsEnv(t, 0)
	e.Config.Limits = &config.Limits{AccessesPerBuckety: 1}
	ctx := context.Background()
	shared := orders.DeepCopy()
	shared.Spec.Sharing = []v1.SharingRule{{Namespace: "x", Roles: []v1.Role{v1.RoleReadOnly}}}
	logs := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "logs", Generation: 1}, Spec: v1.BucketySpec{Backend: "svc"}}
	if err := r.Client.Create(ctx, logs); err != nil {
		t.Fatal(err)
	}
	multi := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: "x", Name: "multi", UID: "uid-multi", CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))},
		Spec: v1.BucketyAccessSpec{BucketyRefs: []v1.BucketyReference{{Name: "logs"}, {Namespace: "o", Name: "orders"}}, CredentialsSecretName: "multi", Role: v1.RoleReadOnly}}
	if err := r.Client.Create(ctx, multi); err != nil {
		t.Fatal(err)
	}
	multi.Status.BucketyGeneration, multi.Status.Backend, multi.Status.Withdrawn = 1, e.Name, []string{"o/orders"}
	multi.Status.BucketyGenerations = map[string]int64{"x/logs": 1}
	if err := r.Client.Status().Update(ctx, multi); err != nil {
		t.Fatal(err)
	}
	own := mkAccess(t, r.Client, "own", time.Now())
	own.Status.BucketyGeneration, own.Status.Backend = 1, e.Name
	if err := r.Client.Status().Update(ctx, own); err != nil {
		t.Fatal(err)
	}
	both := func() *grantedOn {
		return &grantedOn{several: true, targets: []target{{ref: multi.Spec.BucketyRefs[0], b: logs}, {ref: multi.Spec.BucketyRefs[1], b: shared}}}
	}
	on, f := both(), &facts{}
	ok, err := r.withinLimits(ctx, multi, on, e, f)
	if err != nil {
		t.Fatal(err)
	}
	if !ok || len(on.targets) != 1 || on.targets[0].b != logs {
		t.Errorf("shared again at its limit: want the access granted on x/logs alone, got let through %v on %d Bucketies (%q)", ok, len(on.targets), f.limitExceeded)
	}
	if len(on.held) != 1 || on.held[0] != "o/orders" || len(on.heldWhy) != 1 || !strings.Contains(on.heldWhy[0], "Buckety o/orders shares with it again but already has 1 BucketyAccesses") || !strings.Contains(on.heldWhy[0], "limits.accessesPerBuckety: 1") {
		t.Errorf("want o/orders held at its limit, naming it; got %v (%q)", on.held, on.heldWhy)
	}
	if len(on.withdrawn) != 0 {
		// Withdrawn, a pass that did not get as far as the Secret would
		// give up the rest too (giveUp), though nothing is to be taken
		// away.
		t.Errorf("want nothing to take away (on.withdrawn), got %v", on.withdrawn)
	}
	if err := r.Client.Delete(ctx, own); err != nil {
		t.Fatal(err)
	}
	r.gates.settle(own.UID)
	on = both()
	if ok, err := r.withinLimits(ctx, multi, on, e, &facts{}); err != nil || !ok || len(on.targets) != 2 || len(on.held) != 0 {
		t.Errorf("o's access gone: want o/orders taken back, got let through %v (%v) on %d Bucketies, held %v", ok, err, len(on.targets), on.held)
	}
}

// TestWithdrawnFromOneHoldsNoPlaceThere: accesses x/multi and y/multi
// each name their own logs and o/orders, granted on both under
// accessesPerBuckety 2; the limit is lowered to 1, o stops sharing and
// shares again, and both are granted on their logs, withdrawn from
// orders. Each counted the other on orders (its grant on logs counted for
// every Bucketies it names), so both stayed held for good and orders held
// neither: the first to pass takes orders back.
func TestWithdrawnFromOneHoldsNoPlaceThere(t *testing.T) {
	r, e := limitsEnv(t, 0)
	e.Config.Limits = &config.Limits{AccessesPerBuckety: 1}
	ctx := context.Background()
	shared := orders.DeepCopy()
	shared.Spec.Sharing = []v1.SharingRule{{Namespace: "x", Roles: []v1.Role{v1.RoleReadOnly}}, {Namespace: "y", Roles: []v1.Role{v1.RoleReadOnly}}}
	var ons []*grantedOn
	var accesses []*v1.BucketyAccess
	for _, ns := range []string{"x", "y"} {
		logs := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "logs", Generation: 1}, Spec: v1.BucketySpec{Backend: "svc"}}
		if err := r.Client.Create(ctx, logs); err != nil {
			t.Fatal(err)
		}
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "multi", UID: types.UID("uid-" + ns), CreationTimestamp: metav1.NewTime(time.Now().Add(-time.Hour).Truncate(time.Second))},
			Spec: v1.BucketyAccessSpec{BucketyRefs: []v1.BucketyReference{{Name: "logs"}, {Namespace: "o", Name: "orders"}}, CredentialsSecretName: "multi", Role: v1.RoleReadOnly}}
		if err := r.Client.Create(ctx, a); err != nil {
			t.Fatal(err)
		}
		a.Status.BucketyGeneration, a.Status.Backend, a.Status.Withdrawn = 1, e.Name, []string{"o/orders"}
		if err := r.Client.Status().Update(ctx, a); err != nil {
			t.Fatal(err)
		}
		accesses = append(accesses, a)
		ons = append(ons, &grantedOn{several: true, targets: []target{{ref: a.Spec.BucketyRefs[0], b: logs}, {ref: a.Spec.BucketyRefs[1], b: shared}}})
	}
	if ok, err := r.withinLimits(ctx, accesses[0], ons[0], e, &facts{}); err != nil || !ok || len(ons[0].targets) != 2 || len(ons[0].held) != 0 {
		t.Errorf("x's access, orders held by no one: want it taken back, got let through %v (%v) on %d Bucketies, held %v (%q)", ok, err, len(ons[0].targets), ons[0].held, ons[0].heldWhy)
	}
}
