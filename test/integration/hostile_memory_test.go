package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/app/controller/options"
	"github.com/Yolean/buckety-controller/internal/testhook"
	"github.com/Yolean/buckety-controller/test/proc"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestTenantCannotExhaustMemory (item 1): a tenant with nothing but the
// edit role in its namespace fills it with Secrets of about 1 MiB labelled
// as buckety's, and with Bucketies carrying as much metadata as the API
// takes, while the real controller and webhook binaries run under a memory
// limit (a cgroup, as the kubelet enforces a container's limit, with
// GOMEMLIMIT set to it as the Deployments do). Neither may be OOM-killed or
// exit, and another tenant's Buckety queued behind the whole attack turns
// Ready before the controller has worked through it: counted in the
// attacker's Bucketies taken up first, not timed. How long it takes is a
// figure (logged here, and reported by make faults' hostile-tenant run): a
// loaded machine multiplies it while the product is right. Sizes:
// BUCKETY_ATTACK_LIMIT_MIB (96), BUCKETY_ATTACK_SECRETS (150) and
// BUCKETY_ATTACK_BUCKETIES (300).
//
// Queued behind the attack: the controller's informer sees objects in the
// order the API server wrote them, so a Buckety created after the attack
// reaches the controller only once the attack has (and while the informer
// takes in 300 objects of 200 KiB, the workers take up most of them; how
// many depends on the machine). To measure the queue and not the watch,
// the workers are held at the test hook once they have created the first
// of the attacker's topics, until the controller's cache holds the other
// tenant's Buckety too; then every one of the attacker's Bucketies not
// yet taken up is queued ahead of it.
func TestTenantCannotExhaustMemory(t *testing.T) {
	needInfra(t)
	limit := int64(envInt(t, "BUCKETY_ATTACK_LIMIT_MIB", 96)) << 20
	nSecrets := envInt(t, "BUCKETY_ATTACK_SECRETS", 150)
	nBucketies := envInt(t, "BUCKETY_ATTACK_BUCKETIES", 300)
	t.Setenv("GOMEMLIMIT", strconv.FormatInt(limit, 10))
	if !testhook.Enabled {
		t.Fatal(testhook.NotEnabled)
	}
	kubeconfig, dir := asServiceAccount(t)
	pauseDir := t.TempDir()
	ctrl := runBinaryArgs(t, buildReleaseController(t, testhook.Tag), kubeconfig, dir, []string{testhook.Env + "=" + pauseDir}, []string{"--recheck-interval", "5m"})
	wh := startWebhook(t)
	limits := map[string]*proc.MemoryLimit{}
	for name, pid := range map[string]int{"controller": ctrl.p.PID(), "webhook": wh.p.PID()} {
		m, err := proc.LimitMemory(pid, limit)
		if err != nil {
			t.Fatal(err)
		}
		limits[name] = m
		t.Cleanup(func() {
			if err := m.Remove(); err != nil {
				t.Errorf("remove the %s's memory cgroup: %v", name, err)
			}
		})
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for name, m := range limits {
			kills, err := m.OOMKills()
			t.Logf("%s: OOM kills %d (%v)", name, kills, err)
		}
		for name, p := range map[string]*proc.Process{"controller": ctrl.p, "webhook": wh.p} {
			if done, err := p.Exited(); done {
				t.Logf("%s exited: %v", name, err)
			}
		}
	})
	attacker, victim := namespace(t), namespace(t)
	mallory, alice := tenant(t, attacker, "mallory-"+attacker), tenant(t, victim, "alice-"+victim)
	ctx := context.Background()
	// The control plane is shared with later tests: remove the attack
	// while this controller still runs to release its finalizers (cleanups
	// run last-registered first).
	t.Cleanup(func() {
		start := time.Now()
		for _, ns := range []string{attacker, victim} {
			deleteEach(t, ns, &v1.BucketyList{})
			deleteEach(t, ns, &corev1.SecretList{})
		}
		// 300 finalizers, each a topic deletion and a patch of 200 KiB,
		// by a controller under its memory limit on a shared machine.
		wait.For(t, attackBackstop, "the attack's Bucketies gone (a backstop that ends a hung test, not a speed goal)", func() (bool, string) {
			var list metav1.PartialObjectMetadataList
			list.SetGroupVersionKind(v1.GroupVersion.WithKind("BucketyList"))
			if err := k8s.List(ctx, &list, client.InNamespace(attacker)); err != nil {
				return false, err.Error()
			}
			return len(list.Items) == 0, fmt.Sprintf("%d left", len(list.Items))
		})
		t.Logf("the attack removed in %s", time.Since(start).Round(time.Millisecond))
	})

	quiet := readyAfter(t, alice, victim, "quiet")

	// Hold the workers at their first topic creation of the attack.
	hook := func(suffix string) string { return filepath.Join(pauseDir, testhook.AfterCreate+suffix) }
	if err := os.WriteFile(hook(".arm"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	release := func() {
		if err := os.WriteFile(hook(".release"), nil, 0o644); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(release) // before the attack's removal, which needs the workers
	start := time.Now()
	blob := []byte(strings.Repeat("x", 1<<20-4096))
	parallel(t, nSecrets, func(i int) error {
		return mallory.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: fmt.Sprintf("bait-%04d", i), Labels: map[string]string{v1.ManagedByLabel: v1.ManagedByValue, v1.AccessLabel: "x"}},
			Data:       map[string][]byte{"blob": blob},
		})
	})
	junk := strings.Repeat("y", 200<<10)
	parallel(t, nBucketies, func(i int) error {
		return mallory.Create(ctx, &v1.Buckety{
			ObjectMeta: metav1.ObjectMeta{Namespace: attacker, Name: fmt.Sprintf("junk-%04d", i), Annotations: map[string]string{"junk": junk},
				Labels: map[string]string{"junk-a": strings.Repeat("a", 63), "junk-b": strings.Repeat("b", 63)}},
			Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}", RetentionPolicy: v1.RetentionDelete},
		})
	})
	t.Logf("attack: %d Secrets of 1 MiB and %d Bucketies with 200 KiB of metadata in %s", nSecrets, nBucketies, time.Since(start).Round(time.Millisecond))

	// The other tenant's Buckety, created behind the attack, in the
	// controller's cache (and so its queue) before the workers go on.
	wait.For(t, attackBackstop, "the controller held at its first topic of the attack (a backstop that ends a hung test, not a speed goal)", func() (bool, string) {
		_, err := os.Stat(hook(".reached"))
		return err == nil, "not reached"
	})
	attacked := victimBuckety(victim, "attacked")
	if err := alice.Create(ctx, attacked); err != nil {
		t.Fatal(err)
	}
	wait.For(t, attackBackstop, "the controller's cache holding every Buckety (a backstop that ends a hung test, not a speed goal)", func() (bool, string) {
		cached, err := cachedBucketies(ctrl.met)
		if err != nil {
			return false, err.Error()
		}
		stored := storedBucketies(t)
		return cached == stored, fmt.Sprintf("%d cached, %d stored", cached, stored)
	})
	before := claimsIn(t, attacker)
	release()
	released := time.Now()
	waitReadyBackstop(t, attacked)
	during := time.Since(released)
	after := claimsIn(t, attacker)

	// Let both informers hold everything, then look.
	wait.For(t, attackBackstop, "the attacker's Bucketies claimed (a backstop that ends a hung test, not a speed goal)", func() (bool, string) {
		n := claimsIn(t, attacker)
		return n == nBucketies, fmt.Sprintf("%d of %d", n, nBucketies)
	})
	wait.For(t, attackBackstop, "the attacker's Bucketies reconciled (a backstop that ends a hung test, not a speed goal)", func() (bool, string) {
		var list v1.BucketyList
		if err := k8s.List(ctx, &list, client.InNamespace(attacker)); err != nil {
			return false, err.Error()
		}
		n := 0
		for _, b := range list.Items {
			if meta.FindStatusCondition(b.Status.Conditions, v1.ConditionReady) != nil {
				n++
			}
		}
		return n == nBucketies, fmt.Sprintf("%d of %d with a status", n, nBucketies)
	})
	time.Sleep(3 * time.Second)
	for name, m := range limits {
		kills, err := m.OOMKills()
		if err != nil {
			t.Fatal(err)
		}
		peak, err := m.MaxUsage()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s under a %d MiB limit: peak %.1f MiB, OOM kills %d", name, limit>>20, float64(peak)/(1<<20), kills)
		if kills != 0 {
			t.Errorf("%s: want no OOM kill, got %d", name, kills)
		}
	}
	for name, p := range map[string]*proc.Process{"controller": ctrl.p, "webhook": wh.p} {
		if done, err := p.Exited(); done {
			t.Errorf("%s exited during the attack: %v\n%s", name, err, p.Tail(20))
		}
	}
	// Figures, not bounds: the attacker's 200 KiB writes load the API
	// server every write of the victim's goes through, and a loaded
	// machine slows both.
	t.Logf("figure: the other tenant's Buckety Ready in %s quiet, %s under attack (from the workers' release)", quiet.Round(time.Millisecond), during.Round(time.Millisecond))
	// Not starved, counted rather than timed: the queues take turns by
	// namespace (TestBurstDoesNotStarveAnotherNamespace), so each of the
	// victim's passes waits for one of the attacker's per turn beside
	// those the workers already run, not for the attacker's backlog, which
	// a first-in, first-out queue would take up in full before the
	// victim's first pass.
	workers := options.DefaultMaxConcurrentReconciles
	backlog, served := nBucketies-before, after-before
	t.Logf("fairness: %d of the attacker's %d Bucketies queued ahead of the other tenant's; %d of them taken up before it was Ready (%d workers)", backlog, nBucketies, served, workers)
	if backlog <= 2*workers {
		t.Errorf("want the attack queued ahead of the other tenant's Buckety (more than %d of its Bucketies), got %d: the run cannot tell a fair queue from a first-in, first-out one", 2*workers, backlog)
	} else if served*2 > backlog {
		t.Errorf("want the other tenant's Buckety Ready before half of the attacker's queued Bucketies were taken up, got %d of %d taken up first", served, backlog)
	}
}

// attackBackstop ends a hung run of TestTenantCannotExhaustMemory. It is
// not a speed goal: on a loaded 2-core machine a minute's work can take
// several, and the product is right as long as it gets there.
const attackBackstop = 15 * time.Minute

// claimsIn counts the claims held by Bucketies of namespace ns: those the
// controller has taken up. Claims are small, so counting them does not
// load the API server as listing the attack's Bucketies would.
func claimsIn(t *testing.T, ns string) int {
	t.Helper()
	var list v1.BucketyClaimList
	if err := k8s.List(context.Background(), &list); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range list.Items {
		if c.Spec.Owner.Namespace == ns {
			n++
		}
	}
	return n
}

// victimBuckety is the other tenant's Buckety ns/name, with defaultAccess.
func victimBuckety(ns, name string) *v1.Buckety {
	return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: name + "-topic"}}}
}

// readyAfter creates victimBuckety(ns, name) as the tenant c and returns
// how long it took to turn Ready with its Secret: a figure.
func readyAfter(t *testing.T, c client.Client, ns, name string) time.Duration {
	t.Helper()
	start := time.Now()
	b := victimBuckety(ns, name)
	if err := c.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	waitReadyBackstop(t, b)
	return time.Since(start)
}

// waitReadyBackstop waits until b is Ready, ending the test only at
// attackBackstop.
func waitReadyBackstop(t *testing.T, b *v1.Buckety) {
	t.Helper()
	wait.For(t, attackBackstop, fmt.Sprintf("Buckety %s/%s Ready (a backstop that ends a hung test, not a speed goal)", b.Namespace, b.Name), func() (bool, string) {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
			return false, err.Error()
		}
		return meta.IsStatusConditionTrue(b.Status.Conditions, v1.ConditionReady), condString(b.Status.Conditions)
	})
}

// storedBucketies counts the Bucketies the API server holds, from one
// page of one (not a list of the attack's 60 MB).
func storedBucketies(t *testing.T) int {
	t.Helper()
	var page metav1.PartialObjectMetadataList
	page.SetGroupVersionKind(v1.GroupVersion.WithKind("BucketyList"))
	if err := k8s.List(context.Background(), &page, client.Limit(1)); err != nil {
		t.Fatal(err)
	}
	n := len(page.Items)
	if page.RemainingItemCount != nil {
		n += int(*page.RemainingItemCount)
	} else if page.Continue != "" {
		t.Fatal("a page of Bucketies with more to come but no remainingItemCount")
	}
	return n
}

// cachedBucketies counts the Bucketies in the controller's cache, from its
// buckety_resources gauge (each Buckety counted once under its Ready
// condition's status), scraped at addr as the API server's admin.
func cachedBucketies(addr string) (int, error) {
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+cp.RESTConfig.BearerToken)
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("controller metrics: %s", resp.Status)
	}
	n, seen := 0.0, false
	for _, line := range strings.Split(string(body), "\n") {
		series, value, ok := strings.Cut(line, " ")
		if !ok || !strings.HasPrefix(series, "buckety_resources{") || !strings.Contains(series, `condition="Ready"`) || !strings.Contains(series, `kind="Buckety"`) {
			continue
		}
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", line, err)
		}
		n, seen = n+f, true
	}
	if !seen {
		return 0, fmt.Errorf("no buckety_resources for Bucketies on /metrics")
	}
	return int(n), nil
}

// deleteEach deletes every object of list's kind in ns, one request each,
// 16 at a time. A DeleteCollection of hundreds of large objects is one
// request the API server works through alone, and it can outlast the
// request timeout on a loaded machine; single deletes retry on their own.
func deleteEach(t *testing.T, ns string, list client.ObjectList) {
	t.Helper()
	ctx := context.Background()
	var names metav1.PartialObjectMetadataList
	gvk, err := apiutil.GVKForObject(list, k8s.Scheme())
	if err != nil {
		t.Fatal(err)
	}
	names.SetGroupVersionKind(gvk)
	if err := k8s.List(ctx, &names, client.InNamespace(ns)); err != nil {
		t.Errorf("list %s in %s: %v", gvk.Kind, ns, err)
		return
	}
	parallel(t, len(names.Items), func(i int) error {
		o := &names.Items[i]
		o.SetGroupVersionKind(schema.GroupVersionKind{Group: gvk.Group, Version: gvk.Version, Kind: strings.TrimSuffix(gvk.Kind, "List")})
		var err error
		for attempt := 0; attempt < 5; attempt++ {
			if err = client.IgnoreNotFound(k8s.Delete(ctx, o)); err == nil || !apierrors.IsTimeout(err) && !apierrors.IsServerTimeout(err) && !apierrors.IsTooManyRequests(err) {
				break
			}
		}
		if err != nil {
			return fmt.Errorf("delete %s %s/%s: %w", o.Kind, ns, o.Name, err)
		}
		return nil
	})
}
