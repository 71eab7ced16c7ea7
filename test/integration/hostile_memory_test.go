package integration

import (
	"context"
	"fmt"
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
	"github.com/Yolean/buckety-controller/test/proc"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestTenantCannotExhaustMemory (item 1): a tenant with nothing but the
// edit role in its namespace fills it with Secrets of about 1 MiB labelled
// as buckety's, and with Bucketies carrying as much metadata as the API
// takes, while the real controller and webhook binaries run under a memory
// limit (a cgroup, as the kubelet enforces a container's limit, with
// GOMEMLIMIT set to it as the Deployments do). Neither may be OOM-killed,
// and another tenant's Buckety turns Ready meanwhile. Sizes:
// BUCKETY_ATTACK_LIMIT_MIB (96), BUCKETY_ATTACK_SECRETS (150) and
// BUCKETY_ATTACK_BUCKETIES (300); make faults runs it larger.
func TestTenantCannotExhaustMemory(t *testing.T) {
	needInfra(t)
	limit := int64(envInt(t, "BUCKETY_ATTACK_LIMIT_MIB", 96)) << 20
	nSecrets := envInt(t, "BUCKETY_ATTACK_SECRETS", 150)
	nBucketies := envInt(t, "BUCKETY_ATTACK_BUCKETIES", 300)
	t.Setenv("GOMEMLIMIT", strconv.FormatInt(limit, 10))
	kubeconfig, dir := asServiceAccount(t)
	ctrl := runBinaryArgs(t, buildReleaseController(t), kubeconfig, dir, nil, []string{"--recheck-interval", "5m"})
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
		wait.For(t, 6*time.Minute, "the attack's Bucketies gone", func() (bool, string) {
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

	during := readyAfter(t, alice, victim, "attacked")
	// Let both informers hold everything, then look.
	wait.For(t, 2*time.Minute, "the attacker's Bucketies reconciled", func() (bool, string) {
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
	t.Logf("the other tenant's Buckety Ready in %s quiet, %s under attack", quiet.Round(time.Millisecond), during.Round(time.Millisecond))
	// The queues take turns by namespace (TestBurstDoesNotStarveAnotherNamespace),
	// but the attacker's 200 KiB writes still load the API server every
	// write of the victim's goes through: a generous bound, the figure is
	// what make faults reports.
	if during > time.Minute {
		t.Errorf("want the other tenant's Buckety Ready within a minute under attack, took %s", during)
	}
}

// readyAfter creates a Buckety with defaultAccess as the tenant c in ns and
// returns how long it took to turn Ready with its Secret.
func readyAfter(t *testing.T, c client.Client, ns, name string) time.Duration {
	t.Helper()
	start := time.Now()
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: name + "-topic"}}}
	if err := c.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", 2*time.Minute)
	return time.Since(start)
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
