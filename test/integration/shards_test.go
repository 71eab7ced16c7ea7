package integration

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/shard"
	"github.com/Yolean/buckety-controller/test/wait"
)

// shardHolders counts the shards each replica holds, from the shards'
// Leases, as sorted counts ("2 2").
func shardHolders(t *testing.T, ns string) string {
	t.Helper()
	var list coordinationv1.LeaseList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	by := map[string]int{}
	for _, l := range list.Items {
		if l.Labels[shard.LeaseKindLabel] != "shard" && l.Name != appcontroller.LeaderElectionID {
			continue
		}
		if h := holderOf(&l); h != "" && l.Spec.LeaseDurationSeconds != nil && *l.Spec.LeaseDurationSeconds > 1 {
			by[h]++
		}
	}
	var counts []int
	for _, n := range by {
		counts = append(counts, n)
	}
	sort.Ints(counts)
	return fmt.Sprint(counts)
}

// TestShards runs two replicas of four shards in one process: they split
// the shards, each Buckety and access of eight namespaces is labelled with
// its slot and made Ready by its namespace's shard, an access naming a
// Buckety that another shard serves is granted, and when one replica stops
// the other runs every shard and new Bucketies in every namespace.
func TestShards(t *testing.T) {
	needInfra(t)
	_, cfg := scopedBroker(t, 0)
	leases := namespace(t)
	// The labeller's watches (of the objects no shard reads: slot notin
	// the valid values) are held while the test keeps an object out of
	// its shard's cache with a slot no shard serves: the labeller would
	// otherwise give it its slot back at once.
	hideFromLabeller := &heldWatches{selector: shard.SlotLabel + " notin"}
	t.Cleanup(func() { hideFromLabeller.set(false) })
	replica := func() *controllerRun {
		return startControllerWith(t, cfg, nil, func(o *appcontroller.Options) {
			rc := rest.CopyConfig(o.RESTConfig)
			rc.Wrap(hideFromLabeller.transport)
			o.RESTConfig = rc
			o.Recheck = time.Hour
			o.LeaderElect, o.LeaderElectionNamespace, o.Shards = true, leases, 4
			o.LeaseDuration, o.RenewDeadline, o.RetryPeriod = 4*time.Second, 3*time.Second, 500*time.Millisecond
		})
	}
	// Written before shards: a claim and a Secret of buckety's without a
	// slot; the labeller gives them their namespace's.
	before := namespace(t)
	oldClaim := &v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: "shards-before"}, Spec: v1.BucketyClaimSpec{Backend: "kafka", Service: "kafka",
		ResourceName: before + ".old", Phase: v1.ClaimClaimed, Owner: v1.ClaimOwner{Namespace: before, Name: "old", UID: "0"}}}
	create(t, oldClaim)
	t.Cleanup(func() {
		if err := k8s.Delete(context.Background(), oldClaim); client.IgnoreNotFound(err) != nil {
			t.Errorf("delete claim %s: %v", oldClaim.Name, err)
		}
	})
	oldSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "old", Namespace: before, Labels: map[string]string{v1.ManagedByLabel: v1.ManagedByValue}}}
	create(t, oldSecret)

	// An older release's Buckety, implicit access, Secret, claim and
	// credential record: Ready, with buckety's finalizer, and no slot. A
	// controller without shards makes them; the slot labels it gave are
	// taken off, as a release before shards left them.
	legacy := namespace(t)
	old := startControllerWith(t, cfg, nil, func(o *appcontroller.Options) { o.Recheck = time.Hour })
	lb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: legacy}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.legacy",
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "legacy"}}}
	create(t, lb)
	waitCondition(t, lb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	// The implicit access too, with its Secret written: the Buckety is
	// Ready before its access's pass has issued the credential, and a
	// stop in between leaves a Secret the next pass rightly rewrites.
	wait.For(t, waitTimeout, "the legacy Buckety's implicit access Ready", func() (bool, string) {
		var as v1.BucketyAccessList
		if err := k8s.List(context.Background(), &as, client.InNamespace(legacy)); err != nil {
			return false, err.Error()
		}
		for _, a := range as.Items {
			if c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady); c != nil && c.Status == metav1.ConditionTrue && a.Status.ObservedGeneration == a.Generation {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d accesses, none Ready", len(as.Items))
	})
	old.stop(t)
	legacyObjects := unlabelLegacy(t, legacy)
	legacyData := secret(t, legacy, "legacy").Data

	first := replica()
	wait.For(t, waitTimeout, "the first replica holds all four shards", func() (bool, string) {
		got := shardHolders(t, leases)
		return got == "[4]", got
	})
	replica()
	for _, o := range []client.Object{oldClaim, oldSecret} {
		wait.For(t, waitTimeout, fmt.Sprintf("%T %s labelled with its slot", o, o.GetName()), func() (bool, string) {
			get(t, o)
			got := o.GetLabels()[shard.SlotLabel]
			return got == shard.SlotValue(before), got
		})
	}
	wait.For(t, waitTimeout, "two replicas hold two shards each", func() (bool, string) {
		got := shardHolders(t, leases)
		return got == "[2 2]", got
	})

	// The older release's objects get their slot and stay as they were:
	// Ready, and the same credential in the same Secret.
	removeWhileRunning(t, legacy)
	for _, o := range legacyObjects {
		wait.For(t, waitTimeout, fmt.Sprintf("%T %s/%s, from before shards, labelled with its slot", o, o.GetNamespace(), o.GetName()), func() (bool, string) {
			get(t, o)
			got := o.GetLabels()[shard.SlotLabel]
			return got == shard.SlotValue(legacy), got
		})
	}
	waitCondition(t, lb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	for _, o := range legacyObjects {
		if a, ok := o.(*v1.BucketyAccess); ok {
			waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
		}
	}
	if got := secret(t, legacy, "legacy").Data; !maps.EqualFunc(got, legacyData, bytes.Equal) {
		t.Errorf("the Secret of a Buckety from before shards changed once shards labelled it: keys %v, want the same data as before", slices.Sorted(maps.Keys(got)))
	}

	// Watches of two kinds are not ordered: a shard can see an access
	// before the record of the credential its Secret holds. Here the
	// record carries another shard's slot, so the home shard's cache never
	// shows it, and the access gets a pass: it must wait for its record
	// (the API server has it), not issue a new credential in place of the
	// tenant's working one; with its slot back, it is Ready as before.
	var rec *v1.BucketyCredential
	var acc *v1.BucketyAccess
	for _, o := range legacyObjects {
		switch o := o.(type) {
		case *v1.BucketyCredential:
			rec = o
		case *v1.BucketyAccess:
			acc = o
		}
	}
	if rec == nil || acc == nil {
		t.Fatalf("want the legacy access and its credential record, got %v and %v", acc, rec)
	}
	setSlot := func(o client.Object, value string) {
		t.Helper()
		get(t, o)
		before := o.DeepCopyObject().(client.Object)
		lb := o.GetLabels()
		lb[shard.SlotLabel] = value
		o.SetLabels(lb)
		if err := k8s.Patch(context.Background(), o, client.MergeFrom(before)); err != nil {
			t.Fatal(err)
		}
	}
	home := shard.SlotValue(legacy)
	// The next slot is served by the next shard (slot mod 4).
	other := strconv.Itoa((shard.SlotOf(legacy) + 1) % shard.Slots)
	setSlot(rec, other)
	nudge(t, acc, "1")
	waitCondition(t, acc, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonProgressing, waitTimeout)
	if c := meta.FindStatusCondition(acc.Status.Conditions, v1.ConditionReady); c == nil || !strings.Contains(c.Message, "credential record") {
		t.Errorf("an access whose record its cache does not show: want Ready False saying it waits for the record, got %+v", c)
	}
	if got := secret(t, legacy, "legacy").Data; !maps.EqualFunc(got, legacyData, bytes.Equal) {
		t.Errorf("the Secret changed while its access's credential record was out of its shard's cache: keys %v", slices.Sorted(maps.Keys(got)))
	}
	setSlot(rec, home)
	waitCondition(t, acc, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if got := secret(t, legacy, "legacy").Data; !maps.EqualFunc(got, legacyData, bytes.Equal) {
		t.Errorf("the Secret changed once its access's credential record was back in its shard's cache: keys %v", slices.Sorted(maps.Keys(got)))
	}

	// The same for the Buckety: a shard that sees the access and its
	// record but not yet the Buckety they were granted on (labelled after
	// them) must not take the credential back as if the Buckety were
	// gone: it waits for its cache, record and Secret as they were. (The
	// Buckety gets a slot no shard serves: a shard that saw it would
	// label it back at once, before the access's pass.)
	const nowhere = "999"
	hideFromLabeller.set(true)
	setSlot(lb, nowhere)
	nudge(t, acc, "2")
	waitCondition(t, acc, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBucketyNotReady, waitTimeout)
	if c := meta.FindStatusCondition(acc.Status.Conditions, v1.ConditionReady); c == nil || !strings.Contains(c.Message, "cache to show Buckety legacy") {
		t.Errorf("an access whose Buckety its cache does not show: want Ready False saying it waits for the Buckety, got %+v", c)
	}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(rec), &v1.BucketyCredential{}); err != nil {
		t.Errorf("the credential record of an access whose Buckety was out of its shard's cache: %v, want it kept", err)
	}
	setSlot(lb, home)
	hideFromLabeller.set(false)
	waitCondition(t, acc, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if got := secret(t, legacy, "legacy").Data; !maps.EqualFunc(got, legacyData, bytes.Equal) {
		t.Errorf("the Secret changed while its access's Buckety was out of its shard's cache: keys %v", slices.Sorted(maps.Keys(got)))
	}

	nss := make([]string, 8)
	homes := map[int]bool{}
	for i := range nss {
		nss[i] = namespace(t)
		removeWhileRunning(t, nss[i])
		homes[shard.Home(nss[i], 4)] = true
	}
	if len(homes) < 2 {
		t.Fatalf("the test's eight namespaces all hash to one shard of four: %v", nss)
	}
	made := func(name string) []*v1.Buckety {
		var out []*v1.Buckety
		for _, ns := range nss {
			b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}." + name,
				DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: name}}}
			create(t, b)
			out = append(out, b)
		}
		for _, b := range out {
			waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
		}
		return out
	}
	for _, b := range made("one") {
		get(t, b)
		want := shard.SlotValue(b.Namespace)
		if got := b.Labels[shard.SlotLabel]; got != want {
			t.Errorf("Buckety %s/%s: slot label %q, want %q", b.Namespace, b.Name, got, want)
		}
		if got := secret(t, b.Namespace, "one").Labels[shard.SlotLabel]; got != want {
			t.Errorf("Secret %s/one: slot label %q, want %q", b.Namespace, got, want)
		}
	}

	// An access naming a Buckety of a namespace another shard serves.
	owner, consumer := nss[0], ""
	for _, ns := range nss[1:] {
		if shard.Home(ns, 4) != shard.Home(owner, 4) {
			consumer = ns
			break
		}
	}
	orders := sharedBuckety(owner, "orders", "kafka", owner+".orders", consumer, v1.RoleReadOnly)
	create(t, orders)
	reader := foreignAccess(consumer, "reader", owner, "orders", v1.RoleReadOnly)
	create(t, reader)
	waitCondition(t, reader, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if got := string(secret(t, consumer, "reader").Data["topic"]); got != owner+".orders" {
		t.Errorf("the consumer's Secret: topic %q, want %s.orders", got, owner)
	}
	for _, o := range []client.Object{orders, reader} {
		get(t, o)
		if got := o.GetLabels()[shard.SlotLabel]; got != shard.Everywhere {
			t.Errorf("%T %s/%s: slot label %q, want %q: every shard reads it", o, o.GetNamespace(), o.GetName(), got, shard.Everywhere)
		}
	}

	// A Buckety that shares, out of the consumer's shard's cache for a
	// moment (not yet labelled for every shard): the consumer keeps its
	// grant and Secret.
	hideFromLabeller.set(true)
	setSlot(orders, nowhere)
	nudge(t, reader, "1")
	waitCondition(t, reader, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBucketyNotReady, waitTimeout)
	if got := string(secret(t, consumer, "reader").Data["topic"]); got != owner+".orders" {
		t.Errorf("the consumer's Secret while the shared Buckety was out of its shard's cache: topic %q, want it kept (%s.orders)", got, owner)
	}
	setSlot(orders, shard.Everywhere)
	hideFromLabeller.set(false)
	waitCondition(t, reader, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)

	// A Buckety deleted while an access that names it is out of its
	// shard's cache (labelled after it, as after an upgrade): the deletion
	// waits for the access the API server holds, and the topic stays.
	victim := nss[1]
	held := foreignAccess(victim, "held", victim, "one", v1.RoleReadWrite)
	create(t, held)
	waitCondition(t, held, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	hideFromLabeller.set(true)
	setSlot(held, nowhere)
	one := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "one", Namespace: victim}}
	if err := k8s.Delete(context.Background(), one); err != nil {
		t.Fatal(err)
	}
	if c := waitCondition(t, one, v1.ConditionBlockedByAccesses, metav1.ConditionTrue, v1.ReasonAccessesExist, waitTimeout); !strings.HasSuffix(c.Message, ": held") {
		t.Errorf("a Buckety deleted while its access is out of its shard's cache: BlockedByAccesses %q, want it to name access held alone", c.Message)
	}
	setSlot(held, shard.SlotValue(victim))
	hideFromLabeller.set(false)
	if err := k8s.Delete(context.Background(), held); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "Buckety one gone once its access is", func() (bool, string) { return gone(t, one) })

	first.stop(t)
	wait.For(t, waitTimeout, "the remaining replica holds all four shards", func() (bool, string) {
		got := shardHolders(t, leases)
		return got == "[4]", got
	})
	made("two")

	// The resource gauges count each Buckety once, across the shards the
	// replica holds, the one every shard reads included. (One process
	// holds one collector, pointed at the replica that registered it last:
	// the second, which started once the first held every shard.)
	wait.For(t, waitTimeout, "buckety_resources counts each Ready Buckety once", func() (bool, string) {
		var all v1.BucketyList
		if err := k8s.List(context.Background(), &all); err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, b := range all.Items {
			if b.Status.Backend == "kafka" && meta.IsStatusConditionTrue(b.Status.Conditions, v1.ConditionReady) {
				ready++
			}
		}
		got := gauge(t, "buckety_resources", map[string]string{"kind": "Buckety", "backend": "kafka", "condition": v1.ConditionReady, "status": "True"})
		return int(got) == ready, fmt.Sprintf("gauge %v, Ready on the API server %d", got, ready)
	})
}

// nudge gives a a pass, as any watch event would: an annotation set to v.
// A merge patch, without the resource version: the controller writes a's
// status meanwhile, and an update would conflict with it.
func nudge(t *testing.T, a *v1.BucketyAccess, v string) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test.buckety.yolean.se/nudge":`+strconv.Quote(v)+`}}}`))
	if err := k8s.Patch(context.Background(), a, patch); err != nil {
		t.Fatalf("nudge %s/%s: %v", a.Namespace, a.Name, err)
	}
}

// unlabelLegacy takes the slot label off every object of ns's Bucketies
// (the Bucketies, accesses, buckety's Secrets, and the claims and
// credential records they own), as a release before shards wrote them, and
// returns them. It fails unless there is at least one of each.
func unlabelLegacy(t *testing.T, ns string) []client.Object {
	t.Helper()
	ctx := context.Background()
	var (
		bs     v1.BucketyList
		as     v1.BucketyAccessList
		ss     corev1.SecretList
		claims v1.BucketyClaimList
		creds  v1.BucketyCredentialList
	)
	for _, l := range []client.ObjectList{&bs, &as, &ss} {
		if err := k8s.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range []client.ObjectList{&claims, &creds} {
		if err := k8s.List(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	var out []client.Object
	add := func(kind string, objs []client.Object) {
		if len(objs) == 0 {
			t.Fatalf("no %s of namespace %s to take the slot label off", kind, ns)
		}
		out = append(out, objs...)
	}
	add("Buckety", pointers(bs.Items, func(*v1.Buckety) bool { return true }))
	add("BucketyAccess", pointers(as.Items, func(*v1.BucketyAccess) bool { return true }))
	add("Secret of buckety's", pointers(ss.Items, func(s *corev1.Secret) bool { return s.Labels[v1.ManagedByLabel] == v1.ManagedByValue }))
	add("claim", pointers(claims.Items, func(c *v1.BucketyClaim) bool { return c.Spec.Owner.Namespace == ns }))
	add("credential record", pointers(creds.Items, func(c *v1.BucketyCredential) bool { return c.Spec.Owner.Namespace == ns }))
	unlabel := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"`+shard.SlotLabel+`":null}}}`))
	for _, o := range out {
		if o.GetLabels()[shard.SlotLabel] == "" {
			t.Fatalf("%T %s/%s has no slot label before the test takes it off: the controller without shards no longer labels", o, o.GetNamespace(), o.GetName())
		}
		if err := k8s.Patch(ctx, o, unlabel); err != nil {
			t.Fatalf("take the slot label off %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
		}
	}
	return out
}

// pointers is the objects of items that keep says to keep.
func pointers[T any, P interface {
	*T
	client.Object
}](items []T, keep func(P) bool) []client.Object {
	var out []client.Object
	for i := range items {
		if p := P(&items[i]); keep(p) {
			out = append(out, p)
		}
	}
	return out
}

// get reads obj afresh from the API server.
func get(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatalf("get %T %s/%s: %v", obj, obj.GetNamespace(), obj.GetName(), err)
	}
}
