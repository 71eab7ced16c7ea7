package scale

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// The rebuild (issue "one owner across clusters"): the scoped namespace's
// control plane is lost (new etcd) and rebuilt from git, with buckety
// reinstalled under the same installation name and the same manifests.
// Every Buckety must come back Ready on the topic it had, with its data
// (provenance Created: buckety created it, under this installation), and
// every principal the first run issued, which no BucketyCredential of the
// new cluster accounts for, must be revoked after the orphan grace.
const (
	// scopedOrphanGrace is credentials.orphanGrace of the scoped backend:
	// short, so the wait for the first run's principals is bounded.
	scopedOrphanGrace = 10 * time.Second
	// rebuildOwnerCheck is --owner-check-interval of the rebuilt
	// cluster's controller: how often it looks for orphaned principals.
	rebuildOwnerCheck = 2 * time.Second
)

// savedCluster is what of an env names its control plane, to point the env
// at another and back.
type savedCluster struct {
	cp                    *controlplane.ControlPlane
	k8s                   client.WithWatch
	kubeconfig, configDir string
}

// rebuildFigures runs with the scoped Bucketies of ns provisioned (names,
// each with params) and a settled controller running with args. It stops
// that controller, wipes ns from the first control plane as a lost etcd
// would (finalizers and all, no backend touched), starts a new control
// plane, installs the controller's RBAC and the same config there, starts
// the controller with a short owner check, re-creates ns and its Bucketies
// as the manifests would, and measures the time until all are Ready, the
// Kafka requests meanwhile, and what is left of the first run's principals
// after the grace. first is the first provisioning of the same Bucketies,
// for comparison.
//
// It leaves e pointing at the new control plane, with a controller with
// args running there, for the deletion figures. The returned func ends the
// rebuild: it stops that controller and the new control plane, points e
// back at the first (which has no trace of ns left) and cold-starts a
// controller with args there, as the scoped phase found it.
//
// The webhook stays registered with the first control plane only: the
// Bucketies are the same ones it admitted there, and it only validates.
func rebuildFigures(t *testing.T, e *env, tb *table, ns string, names []string, params func(string) map[string]string, first provisioned, args []string) (restore func()) {
	t.Helper()
	ctx := context.Background()
	n := len(names)

	// What the first run left: each Buckety's topic, one record more in
	// every topic (its data, to find after the rebuild), and the users it
	// issued on the scoped broker.
	topicOf := map[string]string{}
	var bl v1.BucketyList
	if err := e.k8s.List(ctx, &bl, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, b := range bl.Items {
		topicOf[b.Name] = b.Status.BackendResourceName
	}
	topics := make([]string, 0, n)
	for _, name := range names {
		if topicOf[name] == "" {
			t.Fatalf("before the rebuild: Buckety %s/%s has no topic", ns, name)
		}
		topics = append(topics, topicOf[name])
	}
	adm := e.scopedAdmin()
	defer adm.Close()
	if err := produceOneEach(ctx, adm, topics); err != nil {
		t.Fatalf("before the rebuild: mark every topic with a record: %v", err)
	}
	ends0, err := endOffsets(ctx, adm, topics)
	if err != nil {
		t.Fatal(err)
	}
	oldUsers, _ := e.scopedPrincipals(ctx, adm)
	if len(oldUsers) < n {
		t.Fatalf("before the rebuild: want at least %d buckety users on the scoped broker, got %d", n, len(oldUsers))
	}

	// The wipe: the controller stopped, ns gone from the first control
	// plane with nothing done on any backend. The first control plane
	// keeps the rest (the other namespaces the later phases measure).
	e.stopController()
	wipeNamespace(t, e.k8s, ns)
	old := savedCluster{cp: e.cp, k8s: e.k8s, kubeconfig: e.kubeconfig, configDir: e.configDir}

	// The new control plane, the controller's RBAC and the same config.
	dir := filepath.Join(e.dir, "rebuild")
	cpCtx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cpStart := time.Now()
	cp := harness.ControlPlane(cpCtx, t, dir, false)
	cpUp := time.Since(cpStart)
	// Stopped before the control plane at cleanup, if the test ends here.
	t.Cleanup(e.stopController)
	e.cp = cp
	scheme, err := appcontroller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	if e.k8s, err = client.NewWithWatch(e.unlimited(), client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	e.kubeconfig, e.configDir = harness.ControllerFiles(cpCtx, t, cp, e.k8s, dir, e.configYAML())
	if err := e.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}

	before := e.scopedRequests()
	ctrlStart := time.Now()
	e.startController(append(append([]string{}, args...), "--owner-check-interval="+rebuildOwnerCheck.String()))
	prov := provision(t, e, ns, names, scopedBackend, params, time.Duration(n)*700*time.Millisecond+5*time.Minute)
	reqs := e.scopedRequests().minus(before)

	// Every Buckety on the topic it had, with its data, provenance Created.
	if err := e.k8s.List(ctx, &bl, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var notCreated, moved []string
	for _, b := range bl.Items {
		if b.Status.Provenance != v1.ProvenanceCreated {
			notCreated = append(notCreated, fmt.Sprintf("%s: %q", b.Name, b.Status.Provenance))
		}
		if b.Status.BackendResourceName != topicOf[b.Name] {
			moved = append(moved, fmt.Sprintf("%s: %s, had %s", b.Name, b.Status.BackendResourceName, topicOf[b.Name]))
		}
	}
	ends, err := endOffsets(ctx, adm, topics)
	if err != nil {
		t.Fatal(err)
	}
	var lost []string
	for _, tp := range topics {
		if ends[tp] < ends0[tp] {
			lost = append(lost, fmt.Sprintf("%s: end offset %d, had %d", tp, ends[tp], ends0[tp]))
		}
	}
	ok := len(notCreated) == 0 && len(moved) == 0 && len(lost) == 0
	tb.add("kadm scoped: rebuild (new etcd, same installation): all Ready, provenance Created", n,
		fmt.Sprintf("%s (not Created %d, on another topic %d, data lost %d)", secs(prov.total), len(notCreated), len(moved), len(lost)),
		fmt.Sprintf("all %d Created, on their topics and data", n), ptr(ok), fmt.Sprintf("%.2f× first provisioning", prov.total.Seconds()/first.total.Seconds()))
	// Issue 54: the owner records a rebuild reads (every topic exists and
	// is re-attached) at no visible cost: no slower than the first build.
	tb.add("kadm scoped: rebuild: time to all Ready against the first build (same Bucketies, with access)", n,
		fmt.Sprintf("%s against %s", secs(prov.total), secs(first.total)), "≤ 1× first build", ptr(prov.total <= first.total),
		fmt.Sprintf("%.2f× first build", prov.total.Seconds()/first.total.Seconds()))
	tb.add("kadm scoped: rebuild: new control plane ready / Kafka requests until all Ready", n, secs(cpUp)+" / "+reqs.String(), "", nil, "")
	tb.add("kadm scoped: rebuild: controller API writes, per Buckety", n, fmt.Sprintf("%.2f = %s", float64(prov.writes.total())/float64(n), prov.writes), "", nil, "")
	for what, bad := range map[string][]string{"provenance not Created": notCreated, "on another topic": moved, "data lost": lost} {
		if len(bad) > 0 {
			t.Errorf("after the rebuild: %d of %d Bucketies %s, e.g. %v", len(bad), n, what, bad[:min(len(bad), 5)])
		}
	}

	// The new Secrets: each a user of its own that works (a sample
	// produces), none an old one.
	e.checkScopedSecrets(ctx, ns, names)
	newUsers := map[string]bool{}
	var reused []string
	for _, name := range names {
		var s corev1.Secret
		if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-creds"}, &s); err != nil {
			t.Fatal(err)
		}
		u := string(s.Data["sasl.username"])
		newUsers[u] = true
		if oldUsers[u] {
			reused = append(reused, name+": "+u)
		}
	}

	// The first run's principals, after the grace and one owner check
	// from the controller's start; then, if some are left, until none is
	// or a bound that only a sweep that does not come reaches.
	due := ctrlStart.Add(scopedOrphanGrace + rebuildOwnerCheck)
	time.Sleep(time.Until(due))
	leftAt := func() (users, acls int, present map[string]bool) {
		present, aclsOf := e.scopedPrincipals(ctx, adm)
		for u := range oldUsers {
			if present[u] {
				users++
			}
			acls += aclsOf[u]
		}
		return users, acls, present
	}
	// Provisioning may have outlasted the grace: the first count is
	// reported with the time it was taken.
	leftFirst, leftACLs, present := leftAt()
	firstAt := time.Since(ctrlStart)
	left := leftFirst
	bound := due.Add(2*time.Minute + time.Duration(n)*100*time.Millisecond)
	for (left > 0 || leftACLs > 0) && time.Now().Before(bound) {
		time.Sleep(500 * time.Millisecond)
		left, leftACLs, present = leftAt()
	}
	gone := time.Since(ctrlStart)
	newLeft := 0
	for u := range newUsers {
		if present[u] {
			newLeft++
		}
	}
	value := fmt.Sprintf("%d of %d (%d users / %d ACLs left %s after the controller started; first counted at %s: %d users; grace + one check = %s)",
		left, len(oldUsers), left, leftACLs, secs(gone), secs(firstAt), leftFirst, secs(scopedOrphanGrace+rebuildOwnerCheck))
	tb.add("kadm scoped: rebuild: old principals left after the grace (goal 0)", n, value, "0", ptr(left == 0 && leftACLs == 0), "")
	tb.add("kadm scoped: rebuild: new users on the broker / new Secrets naming an old user", n, fmt.Sprintf("%d / %d", newLeft, len(reused)),
		fmt.Sprintf("%d / 0", n), ptr(newLeft == n && len(reused) == 0), "")
	if left > 0 || leftACLs > 0 {
		var still []string
		for u := range oldUsers {
			if present[u] {
				still = append(still, u)
			}
		}
		sort.Strings(still)
		t.Errorf("after the rebuild: %d of the first run's %d users (%d ACLs) left on the broker %s after the controller started (orphanGrace %s, owner check %s), e.g. %v",
			left, len(oldUsers), leftACLs, gone.Round(time.Second), scopedOrphanGrace, rebuildOwnerCheck, still[:min(len(still), 5)])
	}
	if newLeft != n || len(reused) > 0 {
		t.Errorf("after the rebuild: want the %d new users on the broker and none an old one, got %d on the broker, %d reused: %v", n, newLeft, len(reused), reused[:min(len(reused), 5)])
	}

	// The deletion figures are measured with the controller's own owner
	// check, as in the rest of the run: restart it with args.
	e.stopController()
	coldStart(t, e, args, n, true, nil)

	return func() {
		t.Helper()
		e.stopController()
		e.cp, e.k8s, e.kubeconfig, e.configDir = old.cp, old.k8s, old.kubeconfig, old.configDir
		if err := cp.Stop(); err != nil {
			t.Errorf("stop the rebuilt control plane: %v", err)
		}
		var all v1.BucketyList
		if err := e.k8s.List(ctx, &all); err != nil {
			t.Fatal(err)
		}
		coldStart(t, e, args, len(all.Items), true, nil)
	}
}

// wipeNamespace removes ns's Bucketies, accesses and Secrets, and the
// claims and credentials of its Bucketies and accesses, finalizers
// stripped, with no controller running: the namespace as a lost etcd
// leaves it, its backend resources untouched. The namespace object stays
// (without kube-controller-manager a deleted namespace never goes).
func wipeNamespace(t *testing.T, c client.Client, ns string) {
	t.Helper()
	ctx := context.Background()
	var objs []client.Object
	var bl v1.BucketyList
	var al v1.BucketyAccessList
	var cl v1.BucketyClaimList
	var crl v1.BucketyCredentialList
	var sl corev1.SecretList
	for _, l := range []client.ObjectList{&bl, &al, &sl} {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []client.ObjectList{&cl, &crl} {
		if err := c.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	for i := range bl.Items {
		objs = append(objs, &bl.Items[i])
	}
	for i := range al.Items {
		objs = append(objs, &al.Items[i])
	}
	for i := range sl.Items {
		objs = append(objs, &sl.Items[i])
	}
	for i := range cl.Items {
		if cl.Items[i].Spec.Owner.Namespace == ns {
			objs = append(objs, &cl.Items[i])
		}
	}
	for i := range crl.Items {
		if crl.Items[i].Spec.Owner.Namespace == ns {
			objs = append(objs, &crl.Items[i])
		}
	}
	unfinalize := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := parallel(len(objs), workers, func(i int) error {
		o := objs[i]
		if len(o.GetFinalizers()) > 0 {
			if err := c.Patch(ctx, o, unfinalize); err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("strip the finalizers of %T %s: %w", o, o.GetName(), err)
			}
		}
		if err := c.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %T %s: %w", o, o.GetName(), err)
		}
		return nil
	}); err != nil {
		t.Fatalf("wipe %s: %v", ns, err)
	}
	for _, l := range []client.ObjectList{&bl, &al} {
		if err := c.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	if len(bl.Items)+len(al.Items) > 0 {
		t.Fatalf("wipe %s: want no Buckety or access left, got %d and %d", ns, len(bl.Items), len(al.Items))
	}
	t.Logf("wiped %s from the first control plane: %d objects", ns, len(objs))
}

// scopedAdmin is a client of the scoped broker as its superuser; the
// caller closes it. Its requests are the harness's: use it outside the
// windows whose scoped requests are counted.
func (e *env) scopedAdmin() *kgo.Client {
	e.t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(e.scoped.Addrs...), kgo.SASL(scram.Auth{User: "buckety", Pass: scopedPassword}.AsSha512Mechanism()),
		kgo.DisableIdempotentWrite())
	if err != nil {
		e.t.Fatal(err)
	}
	return cl
}

// scopedPrincipals lists buckety's users on the scoped broker and the
// number of ACLs of each.
func (e *env) scopedPrincipals(ctx context.Context, cl *kgo.Client) (users map[string]bool, acls map[string]int) {
	e.t.Helper()
	got, all, err := kafka.BucketyCredentials(ctx, cl)
	if err != nil {
		e.t.Fatal(err)
	}
	users, acls = map[string]bool{}, map[string]int{}
	for u := range got {
		users[u] = true
	}
	for u, list := range all {
		acls[u] = len(list)
	}
	return users, acls
}

// produceOneEach writes one record to each topic.
func produceOneEach(ctx context.Context, cl *kgo.Client, topics []string) error {
	recs := make([]*kgo.Record, len(topics))
	for i, tp := range topics {
		recs[i] = &kgo.Record{Topic: tp, Value: []byte("before the rebuild")}
	}
	pctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return cl.ProduceSync(pctx, recs...).FirstErr()
}

// endOffsets sums each topic's partitions' end offsets.
func endOffsets(ctx context.Context, cl *kgo.Client, topics []string) (map[string]int64, error) {
	lo, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	if err := lo.Error(); err != nil {
		return nil, err
	}
	out := map[string]int64{}
	lo.Each(func(o kadm.ListedOffset) { out[o.Topic] += o.Offset })
	return out, nil
}
