package faults

import (
	"context"
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	claimstore "github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/test/wait"
)

// fault is what a churn run does to the system while the operations run:
// it gets the operation index and acts when it chooses to.
type fault func(t *testing.T, e *env, r *rand.Rand, p params) (at func(op int), count func() int)

// faultControllerKills SIGKILLs the controller at Kills random moments
// (before random operations, after a random delay) and restarts it.
func faultControllerKills(t *testing.T, e *env, r *rand.Rand, p params) (func(int), func() int) {
	when := map[int]bool{}
	for len(when) < p.Kills {
		when[1+r.Intn(p.Ops-1)] = true
	}
	n := 0
	return func(op int) {
		if !when[op] {
			return
		}
		time.Sleep(time.Duration(r.Intn(300)) * time.Millisecond)
		e.crashController()
		n++
	}, func() int { return n }
}

// faultAPIServerRestart SIGKILLs kube-apiserver once, mid-run, and starts it
// again after a few seconds; the churn's own writes retry until it is back.
func faultAPIServerRestart(t *testing.T, e *env, r *rand.Rand, p params) (func(int), func() int) {
	at := p.Ops/3 + r.Intn(p.Ops/3+1)
	n := 0
	return func(op int) {
		if op != at {
			return
		}
		if err := e.cp.KillAPIServer(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(2+r.Intn(4)) * time.Second)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := e.cp.RestartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		n++
	}, func() int { return n }
}

// bky is the harness's record of one Buckety name over its incarnations.
type bky struct {
	name, backend string
	live          bool
	retention     v1.RetentionPolicy
	// retained: a previous incarnation left the resource in place, so the
	// next one adopts it.
	retained bool
	// adoptedNow: the live incarnation was created over a retained resource.
	adoptedNow bool
	// provUnknown: the previous incarnation was deleted before buckety
	// stamped its status, so this one may be Created or Adopted.
	provUnknown bool
	// wantPresent/wantAbsent: what the backend must hold for this name after
	// the last incarnation's deletion (both false: either is acceptable).
	wantPresent, wantAbsent bool
	partitions              int
	accesses                map[string]bool
	defaultSecret           string
}

func (b *bky) resource(ns string) string {
	if b.backend == "kafka" {
		return ns + "." + b.name
	}
	return ns + "-" + b.name
}

// runChurn runs Ops random operations — creates, parameter updates,
// deletes with Retain and with Delete, explicit accesses added and removed,
// and re-creates of deleted names — while the fault acts, then waits for
// convergence and takes the inventory.
func runChurn(t *testing.T, e *env, p params, tb *table, run string, f fault) {
	r := rng(p.Seed, run)
	ns := e.namespace(fmt.Sprintf("f-%s-%d", strings.TrimSuffix(run, "-churn"), r.Intn(1e6)))
	e.startController()
	ctx := context.Background()
	at, faults := f(t, e, r, p)
	state := map[string]*bky{}
	accessOf := map[string]string{} // access name → Buckety name
	nextB, nextA := 0, 0
	live := func() []*bky {
		var out []*bky
		for _, n := range sortedKeys(state) {
			if state[n].live {
				out = append(out, state[n])
			}
		}
		return out
	}
	// retry runs a write until the API server answers (it may be down).
	retry := func(what string, fn func() error) error {
		deadline := time.Now().Add(2 * time.Minute)
		for {
			err := fn()
			if err == nil || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) || apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
				return err
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	ops := map[string]int{}
	for op := 0; op < p.Ops; op++ {
		at(op)
		lv := live()
		kind := r.Intn(100)
		switch {
		case kind < 35 || len(lv) == 0:
			// create, or re-create a deleted name (a third of the time)
			var b *bky
			var gone []string
			for _, n := range sortedKeys(state) {
				if !state[n].live {
					gone = append(gone, n)
				}
			}
			if len(gone) > 0 && r.Intn(3) == 0 {
				b = state[gone[r.Intn(len(gone))]]
			} else {
				backend := "kafka"
				if r.Intn(2) == 0 {
					backend = "s3"
				}
				b = &bky{name: fmt.Sprintf("b%03d", nextB), backend: backend}
				nextB++
			}
			retention := v1.RetentionRetain
			if r.Intn(2) == 0 {
				retention = v1.RetentionDelete
			}
			obj := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: ns}, Spec: v1.BucketySpec{Backend: b.backend, RetentionPolicy: retention}}
			partitions := 1
			if b.retained && b.partitions > 1 {
				// A retained topic keeps its partitions, and Kafka cannot
				// shrink them: a tenant re-creating it asks for at least as
				// many (fewer is DriftUnrepairable, correctly).
				partitions = b.partitions
			}
			if b.backend == "kafka" {
				obj.Spec.Name = "${namespace}.${name}"
				obj.Spec.Parameters = map[string]string{"partitions": strconv.Itoa(partitions)}
			} else {
				obj.Spec.Name = "${namespace}-${name}"
			}
			if b.retained {
				// Over the resource a previous incarnation retained, which
				// may hold that incarnation's parameters: buckety converges
				// a resource that existed before only when both the backend
				// and the Buckety ask it to.
				obj.Spec.Adoption = v1.AdoptionAndConverge
			}
			secret := ""
			if r.Intn(2) == 0 {
				secret = b.name + "-default"
				obj.Spec.DefaultAccess = &v1.DefaultAccess{CredentialsSecretName: secret}
			}
			err := retry("create "+b.name, func() error { return e.k8s.Create(ctx, obj) })
			if apierrors.IsAlreadyExists(err) {
				ops["create skipped: previous incarnation still deleting"]++
				continue // the previous incarnation is still being deleted
			}
			if err != nil {
				t.Fatalf("create %s: %v", b.name, err)
			}
			ops["create"]++
			b.adoptedNow = b.retained
			b.live, b.retention, b.partitions, b.accesses, b.defaultSecret = true, retention, partitions, map[string]bool{}, secret
			b.wantPresent, b.wantAbsent = false, false
			state[b.name] = b
		case kind < 55:
			b := lv[r.Intn(len(lv))]
			partitions := b.partitions
			err := retry("update "+b.name, func() error {
				var obj v1.Buckety
				if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.name}, &obj); err != nil {
					return err
				}
				if obj.Spec.Parameters == nil {
					obj.Spec.Parameters = map[string]string{}
				}
				partitions = b.partitions
				switch {
				case b.backend == "kafka" && r.Intn(2) == 0:
					partitions = b.partitions + 1
					obj.Spec.Parameters["partitions"] = strconv.Itoa(partitions)
				case b.backend == "kafka":
					obj.Spec.Parameters["config.retention.ms"] = strconv.Itoa(3600000 * (1 + r.Intn(100)))
				default:
					obj.Spec.Parameters["versioning"] = strconv.FormatBool(r.Intn(2) == 0)
				}
				return e.k8s.Update(ctx, &obj)
			})
			if err == nil {
				ops["update"]++
				b.partitions = partitions
			}
		case kind < 70:
			// delete: accesses first (they block deletion), then the Buckety
			b := lv[r.Intn(len(lv))]
			for a := range b.accesses {
				if err := retry("delete access "+a, func() error {
					return e.k8s.Delete(ctx, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: a, Namespace: ns}})
				}); err != nil && !apierrors.IsNotFound(err) {
					t.Fatal(err)
				}
				delete(accessOf, a)
			}
			b.accesses = map[string]bool{}
			var cur v1.Buckety
			if err := retry("get "+b.name, func() error {
				return e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.name}, &cur)
			}); err != nil {
				t.Fatal(err)
			}
			stamped := cur.Status.Provenance != ""
			if err := retry("delete "+b.name, func() error {
				return e.k8s.Delete(ctx, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: b.name, Namespace: ns}})
			}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			ops["delete "+string(b.retention)]++
			b.live = false
			b.wantPresent, b.wantAbsent = false, false
			adopted := b.adoptedNow && !b.provUnknown
			uncertain := b.adoptedNow && b.provUnknown
			if uncertain && stamped {
				// The previous incarnation may not have created the
				// resource: go by what this one found.
				adopted, uncertain = cur.Status.Provenance == v1.ProvenanceAdopted, false
			}
			b.provUnknown = false
			switch {
			case uncertain:
				b.retained, b.provUnknown = true, true
			case adopted:
				// An adopted resource is never deleted by buckety.
				b.wantPresent, b.retained = true, true
			case b.retention == v1.RetentionDelete:
				// Whatever buckety created for this name it must delete,
				// stamped or not: nothing else creates these names.
				b.wantAbsent, b.retained = true, false
			case stamped:
				b.wantPresent, b.retained = true, true
			default:
				// Retain, deleted before its status was stamped: the
				// resource may or may not have been created, so the next
				// incarnation may create or adopt.
				b.retained, b.provUnknown = true, true
			}
		case kind < 85:
			b := lv[r.Intn(len(lv))]
			name := fmt.Sprintf("a%03d", nextA)
			nextA++
			role := v1.RoleReadWrite
			if r.Intn(2) == 0 {
				role = v1.RoleReadOnly
			}
			a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
				Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: b.name}, CredentialsSecretName: name + "-creds", Role: role}}
			if err := retry("create access "+name, func() error { return e.k8s.Create(ctx, a) }); err != nil {
				t.Fatalf("create access %s: %v", name, err)
			}
			ops["access add"]++
			b.accesses[name] = true
			accessOf[name] = b.name
		default:
			if len(accessOf) == 0 {
				continue
			}
			names := sortedKeys(accessOf)
			a := names[r.Intn(len(names))]
			if err := retry("delete access "+a, func() error {
				return e.k8s.Delete(ctx, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: a, Namespace: ns}})
			}); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
			ops["access remove"]++
			delete(state[accessOf[a]].accesses, a)
			delete(accessOf, a)
		}
		time.Sleep(time.Duration(r.Intn(150)) * time.Millisecond)
	}
	var opList []string
	for _, k := range sortedKeys(ops) {
		opList = append(opList, fmt.Sprintf("%s %d", k, ops[k]))
	}
	tb.add(t, run, "operations", strings.Join(opList, ", "), true)
	tb.add(t, run, "faults injected", faults(), true)

	// Converge: every live Buckety and access Ready, every deleted one gone.
	var problems []string
	converged := wait.Until(time.Now().Add(p.Converge), func() bool {
		problems = e.churnProblems(ctx, ns, state, accessOf)
		return len(problems) == 0
	})
	notReady, stuck, orphanAccesses := 0, 0, 0
	for _, pr := range problems {
		switch {
		case strings.HasPrefix(pr, "stuck"):
			stuck++
		case strings.HasPrefix(pr, "orphan"):
			orphanAccesses++
		default:
			notReady++
		}
	}
	tb.add(t, run, "Bucketies and accesses Ready, or gone if deleted", fmt.Sprintf("%d not Ready %s", notReady, strings.Join(first(filter(problems, "not Ready"), 3), "; ")), converged || notReady == 0)
	tb.add(t, run, "stuck finalizers (deleted, still present)", fmt.Sprintf("%d %s", stuck, strings.Join(first(filter(problems, "stuck"), 3), "; ")), stuck == 0)
	tb.add(t, run, "orphan accesses (no live Buckety or explicit access of the harness)", fmt.Sprintf("%d %s", orphanAccesses, strings.Join(first(filter(problems, "orphan"), 3), "; ")), orphanAccesses == 0)

	// Inventory.
	topics, err := e.topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	buckets, err := e.buckets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	inventory := map[string]bool{}
	for n := range topics {
		if strings.HasPrefix(n, ns+".") {
			inventory[n] = true
		}
	}
	for n := range buckets {
		if strings.HasPrefix(n, ns+"-") {
			inventory[n] = true
		}
	}
	known := map[string]*bky{}
	for _, b := range state {
		known[b.resource(ns)] = b
	}
	var unaccounted, unaskedDeletes, wrongAdoption []string
	for res := range inventory {
		b := known[res]
		if b == nil || (!b.live && b.wantAbsent) {
			unaccounted = append(unaccounted, res)
		}
	}
	for res, b := range known {
		if (b.live || b.wantPresent) && !inventory[res] {
			unaskedDeletes = append(unaskedDeletes, res)
		}
	}
	var list v1.BucketyList
	if err := e.k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, o := range list.Items {
		b := state[o.Name]
		if b == nil || !b.live || o.DeletionTimestamp != nil {
			continue
		}
		want := v1.ProvenanceCreated
		if b.adoptedNow {
			want = v1.ProvenanceAdopted
		}
		if b.adoptedNow && b.provUnknown && o.Status.Provenance == v1.ProvenanceCreated {
			continue
		}
		if o.Status.Provenance != want {
			wrongAdoption = append(wrongAdoption, fmt.Sprintf("%s: want %s, got %q", o.Name, want, o.Status.Provenance))
		}
	}
	sort.Strings(unaccounted)
	sort.Strings(unaskedDeletes)
	sort.Strings(wrongAdoption)
	tb.add(t, run, "backend resources unaccounted for (inventory − created ∪ retained ∪ adopted)", count(unaccounted), len(unaccounted) == 0)
	tb.add(t, run, "resources deleted that were not asked to be", count(unaskedDeletes), len(unaskedDeletes) == 0)
	tb.add(t, run, "provenance wrong (created stamped Adopted, or unstamped)", count(wrongAdoption), len(wrongAdoption) == 0)

	// Claims: each live Buckety's stamped resource is its own, and no two
	// live Bucketies hold one resource; none reports a name conflict.
	claims := map[string][]string{}
	var leaked []string
	for _, o := range list.Items {
		if o.DeletionTimestamp != nil {
			continue
		}
		// Every name in this run has one live Buckety, so a conflict is a
		// claim left behind by a deleted incarnation (stamped or not).
		for _, c := range o.Status.Conditions {
			if c.Reason == v1.ReasonNameConflict {
				leaked = append(leaked, fmt.Sprintf("%s: %s", o.Name, c.Message))
				break
			}
		}
		if o.Status.BackendResourceName == "" {
			continue
		}
		key := o.Status.Backend + "/" + o.Status.BackendResourceName
		claims[key] = append(claims[key], o.Name)
		if b := state[o.Name]; b != nil && o.Status.BackendResourceName != b.resource(ns) {
			leaked = append(leaked, fmt.Sprintf("%s holds %s", o.Name, key))
		}
	}
	for key, holders := range claims {
		if len(holders) > 1 {
			leaked = append(leaked, fmt.Sprintf("%s claimed by %s", key, strings.Join(holders, ", ")))
		}
	}
	// The controller's own records: every BucketyClaim of this run's
	// namespace must belong to a live Buckety with that UID, or be
	// retained for a resource an incarnation left in place (issue 50: it
	// counts until a maintainer releases it).
	liveUID := map[string]bool{}
	for _, o := range list.Items {
		liveUID[string(o.UID)] = true
	}
	var cls v1.BucketyClaimList
	if err := e.k8s.List(ctx, &cls); err != nil {
		t.Fatal(err)
	}
	for _, cl := range cls.Items {
		if b := state[cl.Spec.Owner.Name]; b != nil && b.retained && claimstore.IsRetained(&cl) {
			continue
		}
		if cl.Spec.Owner.Namespace == ns && !liveUID[cl.Spec.Owner.UID] {
			leaked = append(leaked, fmt.Sprintf("BucketyClaim %s (%s) of deleted %s", cl.Name, cl.Spec.ResourceName, cl.Spec.Owner.Name))
		}
	}
	sort.Strings(leaked)
	tb.add(t, run, "leaked claims", count(leaked), len(leaked) == 0)

	// Orphan Secrets: buckety-managed Secrets no live Buckety or access
	// names.
	wantSecrets := map[string]bool{}
	for _, b := range state {
		if b.live && b.defaultSecret != "" {
			wantSecrets[b.defaultSecret] = true
		}
	}
	for a := range accessOf {
		wantSecrets[a+"-creds"] = true
	}
	var secrets corev1.SecretList
	if err := e.k8s.List(ctx, &secrets, client.InNamespace(ns), client.MatchingLabels{v1.ManagedByLabel: v1.ManagedByValue}); err != nil {
		t.Fatal(err)
	}
	var orphans []string
	for _, s := range secrets.Items {
		if !wantSecrets[s.Name] {
			orphans = append(orphans, s.Name)
		}
	}
	sort.Strings(orphans)
	tb.add(t, run, "orphan Secrets", count(orphans), len(orphans) == 0)
	e.credentialFigures(t, tb, run, ns, p.Converge, false)
}

// churnProblems lists what keeps the run from having converged.
func (e *env) churnProblems(ctx context.Context, ns string, state map[string]*bky, accessOf map[string]string) []string {
	var out []string
	var bl v1.BucketyList
	if err := e.k8s.List(ctx, &bl, client.InNamespace(ns)); err != nil {
		return []string{"not Ready: list: " + err.Error()}
	}
	seen := map[string]bool{}
	for _, o := range bl.Items {
		seen[o.Name] = true
		b := state[o.Name]
		switch {
		case b == nil || !b.live || o.DeletionTimestamp != nil:
			if b != nil && b.live {
				continue // a re-created name whose previous incarnation is still finishing (cannot happen: create waits)
			}
			out = append(out, "stuck: Buckety "+o.Name+" "+condSummary(o.Status.Conditions))
		case !ready(o.Status.Conditions, o.Generation):
			out = append(out, "not Ready: Buckety "+o.Name+" "+condSummary(o.Status.Conditions))
		}
	}
	for _, b := range state {
		if b.live && !seen[b.name] {
			out = append(out, "not Ready: Buckety "+b.name+" missing")
		}
	}
	var al v1.BucketyAccessList
	if err := e.k8s.List(ctx, &al, client.InNamespace(ns)); err != nil {
		return append(out, "not Ready: list accesses: "+err.Error())
	}
	for _, o := range al.Items {
		_, live := accessOf[o.Name]
		// The implicit access of a defaultAccess carries the Buckety's name.
		if b := state[o.Name]; b != nil && b.live && b.defaultSecret != "" && o.Spec.BucketyRef.Name == b.name {
			live = true
		}
		switch {
		case o.DeletionTimestamp != nil:
			out = append(out, "stuck: access "+o.Name+" "+condSummary(o.Status.Conditions))
			continue
		case !live:
			out = append(out, "orphan: access "+o.Name+" of Buckety "+o.Spec.BucketyRef.Name)
			continue
		}
		if !ready(o.Status.Conditions, o.Generation) {
			out = append(out, "not Ready: access "+o.Name+" "+condSummary(o.Status.Conditions))
		}
	}
	return out
}

func condSummary(conds []metav1.Condition) string {
	for _, c := range conds {
		if c.Type == v1.ConditionReady {
			return fmt.Sprintf("(Ready=%s %s: %s)", c.Status, c.Reason, c.Message)
		}
	}
	return "(no Ready condition)"
}

func filter(l []string, prefix string) []string {
	var out []string
	for _, s := range l {
		if strings.HasPrefix(s, prefix) {
			out = append(out, s)
		}
	}
	return out
}

func count(l []string) string {
	if len(l) == 0 {
		return "0"
	}
	return fmt.Sprintf("%d (%s)", len(l), strings.Join(first(l, 3), "; "))
}
