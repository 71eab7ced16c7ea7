package faults

import (
	"context"
	"fmt"
	"math/rand"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/harness"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// The attacks of issue 33 §6, "Run it as an attacker": mallory, with the
// edit role in her namespace and nothing else, goes after the credentials
// buckety mints, while alice's workload (victim_test.go) keeps using her
// topic and bucket with the Secrets buckety gave her:
//
//  1. sibling keys: mallory signs admin API requests (on SeaweedFS: IAM
//     API requests) with her own access's S3 key, aimed at alice's key
//     and user (adminapi_test.go);
//  2. strip and reclaim: mallory copies her Secrets, deletes her Buckety
//     with its finalizer patched away, and alice claims the emptied name;
//     mallory's copies must not reach alice's resource;
//  3. an access flood past limits.accessesPerBuckety and
//     accessesPerNamespace (flood_test.go);
//  4. a backend whose config asks for keys per access while its admin API
//     answers 501: its accesses wait (ScopingUnavailable), and no Secret
//     gets the backend's own keys.
//
// Every run of them ends with the figures a platform team asks first: the
// victim's failed requests, foreign credentials that work on the victim's
// resources, and root keys in tenant Secrets, each 0.

// attackS3 is the hostile run's S3 servers beyond the harness's own.
type attackS3 struct {
	// weed is a SeaweedFS, whose keys per access are IAM users: the
	// harness's server when it is SeaweedFS, otherwise one this run
	// starts (backend s3-w), so that every run counts IAM keys.
	weed *s3test.Server
	// weedBackend is the backend that mints IAM users on weed: s3 or s3-w.
	weedBackend string
	// vgw is a VersityGW with an IAM store: the harness's server when it
	// is VersityGW, otherwise one this run starts (backend s3-v).
	vgw *s3test.Server
	// vgwBackend is the backend that mints keys on vgw: s3 or s3-v.
	vgwBackend string
	// noIAM is a second gateway, without an IAM store, with vgw's root
	// keys: backend s3-noiam sends its S3 requests to vgw and its admin
	// requests here, which answer 501 (XAdminMethodNotSupported).
	noIAM *s3test.Server
}

// noIAMBackend is the backend whose admin API answers 501.
const noIAMBackend = "s3-noiam"

// startAttackS3 starts the servers the attacks need, stopped by PID when
// the test ends.
func (e *env) startAttackS3(t *testing.T) *attackS3 {
	t.Helper()
	startImpl := func(impl, dir string, opts s3test.Options) *s3test.Server {
		s, err := s3test.StartIn(filepath.Join(e.dir, dir), impl, opts, false)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := s.Stop(); err != nil {
				t.Errorf("stop %s: %v", dir, err)
			}
		})
		return s
	}
	start := func(dir string, opts s3test.Options) *s3test.Server { return startImpl("versitygw", dir, opts) }
	a := &attackS3{vgw: e.s3, vgwBackend: "s3", weed: e.s3, weedBackend: "s3"}
	if e.s3.Implementation != "seaweedfs" {
		a.weed, a.weedBackend = startImpl("seaweedfs", "hostile-seaweedfs", s3test.Options{}), "s3-w"
	}
	if e.s3.Implementation != "versitygw" {
		a.vgw, a.vgwBackend = start("hostile-versitygw", s3test.Options{IAM: true, Region: e.s3.Region}), "s3-v"
	}
	a.noIAM = start("hostile-versitygw-noiam", s3test.Options{AccessKey: a.vgw.AccessKey, SecretKey: a.vgw.SecretKey, Region: a.vgw.Region})
	return a
}

// env is what the hostile controller's config reads of these servers.
func (a *attackS3) env() []string {
	return []string{"FAULTS_VGW_ACCESS_KEY=" + a.vgw.AccessKey, "FAULTS_VGW_SECRET_KEY=" + a.vgw.SecretKey,
		"FAULTS_WEED_ACCESS_KEY=" + a.weed.AccessKey, "FAULTS_WEED_SECRET_KEY=" + a.weed.SecretKey}
}

// keyBackends are the S3 backends that mint a key per access: s3, and
// s3-v and s3-w unless s3 is that server.
func (a *attackS3) keyBackends() []string {
	out := []string{"s3"}
	for _, be := range []string{a.vgwBackend, a.weedBackend} {
		if be != "s3" {
			out = append(out, be)
		}
	}
	return out
}

// s3Backend is one s3 backend of the hostile run's config: its keys are
// the variables keyVar_ACCESS_KEY and keyVar_SECRET_KEY, a key per access
// (through adminEndpoint where the server has one apart), with limits.
func s3Backend(name, service, impl, endpoint, region, keyVar, adminEndpoint string, limits *config.Limits) config.Backend {
	c := harness.S3Server(impl, endpoint, region, keyVar+"_ACCESS_KEY", keyVar+"_SECRET_KEY")
	c.RequestTimeout = harness.Duration(10 * time.Second)
	c.Credentials = &s3driver.Credentials{AdminEndpoint: adminEndpoint}
	b := harness.S3(name, c)
	b.Service, b.Limits = service, limits
	return b
}

// accessLimits are limits.accessesPerBuckety and accessesPerNamespace of
// the hostile run's backends: the flood puts a third of its accesses on
// each of three Bucketies, so both bite (perNamespace < 2 × perBuckety).
func accessLimits(p params) (perBuckety, perNamespace int) {
	m := max(2, p.AttackAccesses/5)
	return m, m * 3 / 2
}

// attack is the state of one hostile run's attacks.
type attack struct {
	t   *testing.T
	e   *env
	p   params
	tb  *table
	r   *rand.Rand
	ctx context.Context
	run string
	id  int

	alice, mallory     client.Client
	aliceNS, malloryNS string
	// ctrl is the run's controller (its metrics and pprof addresses).
	ctrl *harness.Controller
	s3x  *attackS3
	vic  *victim

	// stolen is the data of Secrets mallory copied before she lost their
	// accesses, by Secret name.
	stolen map[string]map[string][]byte
	// forged are keys mallory tried to create, or to set on alice's key,
	// through the admin APIs.
	forged []map[string][]byte
	// victims are alice's resources, on which every credential of
	// mallory's is tried at the end.
	victims []victimResource
	// aliceRequests and aliceFailed are alice's requests outside her
	// workload's loop: on a resource she reclaimed, with a key attacked.
	aliceRequests int
	aliceFailed   []string
	// reclaimed are alice's Bucketies on names mallory stripped, by
	// Buckety name, when alice got them.
	reclaimed map[string]bool
}

// reclaimTarget is one name mallory holds, strips and alice claims.
type reclaimTarget struct {
	// kind is "topic" or "bucket"; obj the Buckety's name (in both
	// namespaces); name the topic or bucket.
	kind, obj, name string
	// malloryBackend and aliceBackend reach the same service.
	malloryBackend, aliceBackend string
	// endpoint and region are a bucket's S3 server.
	endpoint, region string
}

// reclaimTargets are a topic and a bucket on each S3 backend that mints
// keys.
func (a *attack) reclaimTargets() []reclaimTarget {
	out := []reclaimTarget{
		// Mallory's namespace is at limits.perNamespace on kafka (her junk
		// Bucketies), so she holds the topic through kafka-b, which shares
		// its claim space; alice claims it through kafka.
		{kind: "topic", obj: "reclaim-k", name: fmt.Sprintf("f-reclaim-%d-k", a.id), malloryBackend: "kafka-b", aliceBackend: "kafka"},
		{kind: "bucket", obj: "reclaim-s", name: fmt.Sprintf("f-reclaim-%d-s", a.id), malloryBackend: "s3", aliceBackend: "s3", endpoint: a.e.s3.Endpoint, region: a.e.s3.Region},
	}
	if a.s3x.vgwBackend != "s3" {
		out = append(out, reclaimTarget{kind: "bucket", obj: "reclaim-v", name: fmt.Sprintf("f-reclaim-%d-v", a.id), malloryBackend: a.s3x.vgwBackend, aliceBackend: a.s3x.vgwBackend,
			endpoint: a.s3x.vgw.Endpoint, region: a.s3x.vgw.Region})
	}
	if a.s3x.weedBackend != "s3" {
		out = append(out, reclaimTarget{kind: "bucket", obj: "reclaim-w", name: fmt.Sprintf("f-reclaim-%d-w", a.id), malloryBackend: a.s3x.weedBackend, aliceBackend: a.s3x.weedBackend,
			endpoint: a.s3x.weed.Endpoint, region: a.s3x.weed.Region})
	}
	return out
}

// keysBuckety is the Buckety whose implicit access gives mallory a key of
// her own on an S3 backend, for the admin API attacks.
func keysBuckety(ns, backend string) *v1.Buckety {
	return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keys-" + backend}, Spec: v1.BucketySpec{Backend: backend, Name: "${namespace}-keys-" + backend,
		RetentionPolicy: v1.RetentionDelete, DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "keys-" + backend}}}
}

// rootgrab returns mallory's two Bucketies on the backend whose admin API
// answers 501: one with an implicit access (defaultAccess), one with an
// explicit ReadOnly access (an explicit access replaces the implicit
// one, so they cannot share a Buckety).
func (a *attack) rootgrab() ([]*v1.Buckety, *v1.BucketyAccess) {
	return []*v1.Buckety{
			{ObjectMeta: metav1.ObjectMeta{Namespace: a.malloryNS, Name: "rootgrab"}, Spec: v1.BucketySpec{Backend: noIAMBackend, Name: fmt.Sprintf("f-rootgrab-%d", a.id),
				RetentionPolicy: v1.RetentionDelete, DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "rootgrab"}}},
			{ObjectMeta: metav1.ObjectMeta{Namespace: a.malloryNS, Name: "rootgrab-x"}, Spec: v1.BucketySpec{Backend: noIAMBackend, Name: fmt.Sprintf("f-rootgrab-%d-x", a.id),
				RetentionPolicy: v1.RetentionDelete}},
		},
		&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: a.malloryNS, Name: "rootgrab-x-ro"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "rootgrab-x"},
			CredentialsSecretName: "rootgrab-x-ro", Role: v1.RoleReadOnly}}
}

// reclaimAccesses are mallory's two explicit accesses on a reclaim
// target, which also hold its Buckety's deletion (AccessesExist) until
// she strips the finalizer.
func reclaimAccesses(ns string, tg reclaimTarget) []*v1.BucketyAccess {
	return []*v1.BucketyAccess{
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tg.obj + "-rw"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: tg.obj}, CredentialsSecretName: tg.obj + "-rw"}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tg.obj + "-ro"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: tg.obj}, CredentialsSecretName: tg.obj + "-ro", Role: v1.RoleReadOnly}},
	}
}

// runAttacks carries out the attacks in order; figures go to the table as
// each ends, and summary adds the run's totals.
func (a *attack) runAttacks() {
	t := a.t
	start := time.Now()
	a.stolen, a.reclaimed = map[string]map[string][]byte{}, map[string]bool{}
	a.victims = append(a.victims,
		victimResource{kind: "topic", name: a.aliceNS + ".orders"},
		victimResource{kind: "bucket", name: a.aliceNS + "-files", endpoint: a.e.s3.Endpoint, key: "before"})
	// Everything mallory needs is created at once, so the waits overlap.
	keyBackends := a.s3x.keyBackends()
	for _, be := range keyBackends {
		a.create(a.mallory, keysBuckety(a.malloryNS, be))
	}
	rbs, ra := a.rootgrab()
	for _, b := range rbs {
		a.create(a.mallory, b)
	}
	a.create(a.mallory, ra)
	targets := a.reclaimTargets()
	for _, tg := range targets {
		b := a.reclaimBuckety(a.malloryNS, tg.malloryBackend, tg)
		b.Spec.DefaultAccess = nil
		a.create(a.mallory, b)
		for _, x := range reclaimAccesses(a.malloryNS, tg) {
			a.create(a.mallory, x)
		}
	}
	a.stripAndReclaim(targets)
	t.Logf("%s: strip and reclaim done at %s", a.run, time.Since(start).Round(time.Millisecond))
	for _, be := range keyBackends {
		waitReady(t, a.e, keysBuckety(a.malloryNS, be), 2*time.Minute)
	}
	a.siblingKeys()
	t.Logf("%s: admin API attacks done at %s", a.run, time.Since(start).Round(time.Millisecond))
	a.flood()
	t.Logf("%s: access flood done at %s", a.run, time.Since(start).Round(time.Millisecond))
	a.issuingUnavailable()
	t.Logf("%s: the attacks of issue 33 §6 took %s", a.run, time.Since(start).Round(time.Millisecond))
	a.budgetEscapes()
	t.Logf("%s: the budget escapes of issue 50 done at %s", a.run, time.Since(start).Round(time.Millisecond))
	a.secondInstallation()
	t.Logf("%s: the second installation of issue 49 done at %s", a.run, time.Since(start).Round(time.Millisecond))
	a.sharingAttacks()
	t.Logf("%s: the sharing attacks of issue 51 done at %s", a.run, time.Since(start).Round(time.Millisecond))
}

// create creates obj as c, or fails the test.
func (a *attack) create(c client.Client, obj client.Object) {
	a.t.Helper()
	if err := c.Create(a.ctx, obj); err != nil {
		a.t.Fatalf("create %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
	}
}

// reclaimBuckety is the Buckety on a reclaim target, in ns, through
// backend, with an implicit access (mallory's go without: she has
// explicit ones).
func (a *attack) reclaimBuckety(ns, backend string, tg reclaimTarget) *v1.Buckety {
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tg.obj}, Spec: v1.BucketySpec{Backend: backend, Name: tg.name,
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: tg.obj}}}
	if tg.kind == "topic" {
		b.Spec.Parameters = map[string]string{"partitions": "1"}
	}
	return b
}

// stripAndReclaim: mallory's Bucketies on the targets, each with two
// explicit accesses (reclaimAccesses), turn Ready; she copies both Secrets and checks they reach her resource
// without writing to it (Metadata, ListObjects), deletes the Buckety and
// patches its finalizer away. Alice then creates a Buckety on the same
// name, which buckety hands her as the name is empty, writes to it, and
// mallory's copies are tried on it at once.
func (a *attack) stripAndReclaim(targets []reclaimTarget) {
	t, ctx := a.t, a.ctx
	start := time.Now()
	worked, tried := 0, 0
	for _, tg := range targets {
		waitReady(t, a.e, a.reclaimBuckety(a.malloryNS, tg.malloryBackend, tg), 2*time.Minute)
		for _, x := range reclaimAccesses(a.malloryNS, tg) {
			s := x.Spec.CredentialsSecretName
			d := a.waitSecret(a.malloryNS, s)
			a.stolen[s] = d
			tried++
			if err := ownResourceWorks(ctx, d, tg); err != nil {
				t.Logf("%s: mallory's Secret %s on her own %s %s before the strip: %v", a.run, s, tg.kind, tg.name, err)
				continue
			}
			worked++
		}
	}
	// Without this the reclaim figures below would prove nothing.
	a.tb.add(t, a.run, "strip and reclaim: mallory's keys that reach her own names before the strip (Metadata, ListObjects)", fmt.Sprintf("%d of %d", worked, tried), worked == tried)
	t.Logf("%s: mallory's names held at %s", a.run, time.Since(start).Round(time.Millisecond))
	for _, tg := range targets {
		a.strip(a.reclaimBuckety(a.malloryNS, tg.malloryBackend, tg))
	}
	t.Logf("%s: mallory's Bucketies stripped at %s", a.run, time.Since(start).Round(time.Millisecond))
	for _, tg := range targets {
		a.create(a.alice, a.reclaimBuckety(a.aliceNS, tg.aliceBackend, tg))
	}
	got := 0
	for _, tg := range targets {
		mine := a.reclaimBuckety(a.aliceNS, tg.aliceBackend, tg)
		var cur v1.Buckety
		if !wait.Until(time.Now().Add(2*time.Minute), func() bool {
			return a.e.k8s.Get(ctx, client.ObjectKeyFromObject(mine), &cur) == nil && ready(cur.Status.Conditions, cur.Generation)
		}) {
			t.Logf("%s: alice's %s on %s not Ready: %v", a.run, tg.obj, tg.name, cur.Status.Conditions)
			continue
		}
		got++
		a.reclaimed[tg.obj] = true
		t.Logf("%s: alice's %s Ready at %s", a.run, tg.obj, time.Since(start).Round(time.Millisecond))
		d := a.waitSecret(a.aliceNS, tg.obj)
		// Alice writes first, so a fetch or a get by mallory has
		// something to read.
		vr := victimResource{kind: tg.kind, name: tg.name, endpoint: tg.endpoint, key: "alice-reclaimed"}
		a.aliceRequests++
		if err := aliceWrites(ctx, d, vr); err != nil {
			a.aliceFailed = append(a.aliceFailed, fmt.Sprintf("write to her reclaimed %s %s: %v", tg.kind, tg.name, err))
		}
		a.victims = append(a.victims, vr)
		var reached []string
		keys := 0
		for _, x := range reclaimAccesses(a.malloryNS, tg) {
			s := x.Spec.CredentialsSecretName
			w, tried := reach(ctx, a.stolen[s], vr)
			if tried {
				keys++
			}
			if len(w) > 0 {
				reached = append(reached, s+": "+strings.Join(w, ", "))
			}
		}
		a.tb.add(t, a.run, fmt.Sprintf("strip and reclaim: mallory's old keys that reach alice's reclaimed %s (%s)", tg.kind, tg.aliceBackend),
			fmt.Sprintf("%d of %d", len(reached), keys), len(reached) == 0 && keys == len(reclaimAccesses(a.malloryNS, tg)))
		if len(reached) > 0 {
			t.Logf("%s: mallory's stripped Secrets reach alice's %s %s: %v", a.run, tg.kind, tg.name, reached)
		}
	}
	a.tb.add(t, a.run, "strip and reclaim: emptied names alice claims after mallory's Buckety is stripped", fmt.Sprintf("%d of %d", got, len(targets)), got == len(targets))
}

// strip deletes b as mallory and patches its finalizers away while her
// accesses hold the deletion, as the edit role allows.
func (a *attack) strip(b *v1.Buckety) {
	t, ctx := a.t, a.ctx
	if err := a.mallory.Delete(ctx, b); err != nil {
		t.Fatalf("delete %s: %v", b.Name, err)
	}
	if !wait.Until(time.Now().Add(time.Minute), func() bool {
		cur := &v1.Buckety{}
		err := a.e.k8s.Get(ctx, client.ObjectKeyFromObject(b), cur)
		if apierrors.IsNotFound(err) {
			return true
		}
		if err != nil || len(cur.Finalizers) == 0 {
			return false
		}
		stripped := cur.DeepCopy()
		stripped.Finalizers = nil
		if err := a.mallory.Patch(ctx, stripped, client.MergeFromWithOptions(cur, client.MergeFromWithOptimisticLock{})); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			t.Fatalf("patch the finalizers of %s away: %v", b.Name, err)
		}
		return false
	}) {
		t.Fatalf("%s/%s still there a minute after mallory stripped it", b.Namespace, b.Name)
	}
}

// issuingUnavailable: mallory's accesses on the backend whose config asks
// for keys per access and whose admin API answers 501 must wait with
// Ready=False, reason ScopingUnavailable, and no Secret may hold the
// backend's own keys.
func (a *attack) issuingUnavailable() {
	t, ctx := a.t, a.ctx
	_, ra := a.rootgrab()
	names := []string{"rootgrab", ra.Name} // the implicit access is named as its Buckety
	waiting := func() int {
		n := 0
		for _, name := range names {
			var cur v1.BucketyAccess
			if a.e.k8s.Get(ctx, client.ObjectKey{Namespace: a.malloryNS, Name: name}, &cur) != nil {
				continue
			}
			c := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
			if c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1.ReasonScopingUnavailable && c.ObservedGeneration == cur.Generation {
				n++
			}
		}
		return n
	}
	n := 0
	wait.Until(time.Now().Add(time.Minute), func() bool { n = waiting(); return n == len(names) })
	a.tb.add(t, a.run, fmt.Sprintf("accesses on %s (credentials set, admin API 501) with Ready=False ScopingUnavailable", noIAMBackend), fmt.Sprintf("%d of %d", n, len(names)), n == len(names))
	var holding []string
	for _, name := range []string{"rootgrab", ra.Spec.CredentialsSecretName} { // the Secrets
		s := &corev1.Secret{}
		if err := a.e.k8s.Get(ctx, client.ObjectKey{Namespace: a.malloryNS, Name: name}, s); err != nil {
			continue
		}
		if holdsAny(s, a.s3x.vgw.AccessKey, a.s3x.vgw.SecretKey) {
			holding = append(holding, name)
		}
	}
	a.tb.add(t, a.run, fmt.Sprintf("Secrets of accesses on %s holding its root keys", noIAMBackend), len(holding), len(holding) == 0)
}

// summary adds the run's totals: alice's failed requests, foreign
// credentials that work on her resources, and root keys in tenant Secrets.
func (a *attack) summary() {
	t, ctx := a.t, a.ctx
	a.vic.halt()
	rounds, requests, failed, p50, worst := a.vic.stats(time.Time{}, time.Now())
	failed = append(failed, a.aliceFailed...)
	requests += a.aliceRequests
	a.tb.add(t, a.run, "victim: alice's failed requests (her workload while attacked, her keys after each attack)", fmt.Sprintf("%d of %d", len(failed), requests), len(failed) == 0)
	if len(failed) > 0 {
		t.Logf("%s: alice's failed requests: %v", a.run, first(failed, 10))
	}
	// Her round trips are figures: a round the attack stalls past its
	// timeout fails its requests, which the row above counts, and a slow
	// machine stretches every round while the product is right.
	a.tb.add(t, a.run, "victim: alice's workload round trip while attacked, p50/max (ms)", fmt.Sprintf("%d/%d over %d rounds", p50.Milliseconds(), worst.Milliseconds(), rounds), rounds > 0)

	works, tried := a.foreignCredentials()
	a.tb.add(t, a.run, "foreign credentials that work on alice's resources", fmt.Sprintf("%d (%d credential × resource pairs tried)", len(works), tried), len(works) == 0)
	if len(works) > 0 {
		t.Logf("%s: foreign credentials that work: %v", a.run, first(works, 10))
	}
	keys := []string{a.e.s3.AccessKey, a.e.s3.SecretKey, a.s3x.vgw.AccessKey, a.s3x.vgw.SecretKey, a.s3x.noIAM.AccessKey, a.s3x.noIAM.SecretKey,
		a.s3x.weed.AccessKey, a.s3x.weed.SecretKey, superuserPassword}
	var holding []string
	for _, ns := range []string{a.aliceNS, a.malloryNS} {
		if err := a.e.eachSecret(ctx, ns, func(s *corev1.Secret) {
			if holdsAny(s, keys...) {
				holding = append(holding, ns+"/"+s.Name)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
	backends := "kafka, kafka-b, " + strings.Join(a.s3x.keyBackends(), ", ") + ", " + noIAMBackend
	a.tb.add(t, a.run, fmt.Sprintf("root keys in tenant Secrets (%s)", backends), len(holding), len(holding) == 0)
	if len(holding) > 0 {
		t.Logf("%s: Secrets holding a backend's own keys: %v", a.run, holding)
	}
}

// foreignCredentials tries every credential mallory holds or held (the
// Secrets in her namespace, the copies she kept of stripped ones, the
// keys she tried to forge) on every resource of alice's; it returns the
// pairs on which any request worked, and how many pairs it tried.
func (a *attack) foreignCredentials() (works []string, tried int) {
	t, ctx := a.t, a.ctx
	creds := map[string]map[string][]byte{}
	if err := a.e.eachSecret(ctx, a.malloryNS, func(s *corev1.Secret) {
		if _, ok := s.Data["sasl.username"]; ok {
			creds["Secret "+s.Name] = s.Data
		} else if _, ok := s.Data["accessKeyID"]; ok {
			creds["Secret "+s.Name] = s.Data
		}
	}); err != nil {
		t.Fatal(err)
	}
	for name, d := range a.stolen {
		creds["copy of Secret "+name] = d
	}
	for i, d := range a.forged {
		creds[fmt.Sprintf("forged key %d (%s)", i, d["accessKeyID"])] = d
	}
	type pair struct {
		cred string
		r    victimResource
	}
	var pairs []pair
	for _, name := range sortedKeys(creds) {
		for _, r := range a.victims {
			if tries(creds[name], r) {
				pairs = append(pairs, pair{name, r})
			}
		}
	}
	out := make([][]string, len(pairs))
	parallelN(t, len(pairs), func(i int) error {
		out[i], _ = reach(ctx, creds[pairs[i].cred], pairs[i].r)
		return nil
	})
	for i, w := range out {
		if len(w) > 0 {
			works = append(works, fmt.Sprintf("%s on %s %s: %s", pairs[i].cred, pairs[i].r.kind, pairs[i].r.name, strings.Join(w, ", ")))
		}
	}
	return works, len(pairs)
}

// holdsAny reports whether any value of s contains any of keys.
func holdsAny(s *corev1.Secret, keys ...string) bool {
	for _, v := range s.Data {
		for _, k := range keys {
			if k != "" && strings.Contains(string(v), k) {
				return true
			}
		}
	}
	for _, v := range s.StringData {
		for _, k := range keys {
			if k != "" && strings.Contains(v, k) {
				return true
			}
		}
	}
	return false
}

// eachSecret calls f on every Secret of ns, a page at a time (mallory's
// namespace holds her 1 MiB bait Secrets).
func (e *env) eachSecret(ctx context.Context, ns string, f func(*corev1.Secret)) error {
	cont := ""
	for {
		var l corev1.SecretList
		if err := e.k8s.List(ctx, &l, client.InNamespace(ns), client.Limit(20), client.Continue(cont)); err != nil {
			return fmt.Errorf("list the Secrets of %s: %w", ns, err)
		}
		for i := range l.Items {
			f(&l.Items[i])
		}
		if cont = l.Continue; cont == "" {
			return nil
		}
	}
}

// waitSecret waits up to a minute for a Secret an access writes, and
// returns its data.
func (a *attack) waitSecret(ns, name string) map[string][]byte {
	a.t.Helper()
	var d map[string][]byte
	var err error
	if !wait.Until(time.Now().Add(time.Minute), func() bool { d, err = a.e.secretData(a.ctx, ns, name); return err == nil }) {
		a.t.Fatalf("Secret %s/%s: %v", ns, name, err)
	}
	return d
}

// secretData reads a Secret's data.
func (e *env) secretData(ctx context.Context, ns, name string) (map[string][]byte, error) {
	s := &corev1.Secret{}
	if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		return nil, err
	}
	return s.Data, nil
}
