package shard

import (
	"hash/fnv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// The slot of a namespace is recorded on objects: it must be FNV-1a, the
// function the package documents, and must never change.
func TestSlotOfIsFNV1a(t *testing.T) {
	for _, ns := range []string{"", "default", "team-a", "kube-system", "a-very-long-namespace-name-of-sixty-three-characters-abcdefghij"} {
		h := fnv.New32a()
		if _, err := h.Write([]byte(ns)); err != nil {
			t.Fatal(err)
		}
		if got, want := SlotOf(ns), int(h.Sum32()%Slots); got != want {
			t.Errorf("SlotOf(%q) = %d, want %d", ns, got, want)
		}
	}
}

// Every slot belongs to exactly one shard, whatever the number of shards,
// and a namespace's home shard serves its slot.
func TestShardsPartitionTheSlots(t *testing.T) {
	for _, shards := range []int{1, 2, 3, 4, 7, 16, Slots} {
		seen := map[int]int{}
		for k := 0; k < shards; k++ {
			for _, s := range SlotsOf(k, shards) {
				if prev, ok := seen[s]; ok {
					t.Errorf("%d shards: slot %d in shard %d and %d", shards, s, prev, k)
				}
				seen[s] = k
				if ShardOfSlot(s, shards) != k {
					t.Errorf("%d shards: slot %d listed in shard %d, ShardOfSlot says %d", shards, s, k, ShardOfSlot(s, shards))
				}
			}
			if v := SlotValues(k, shards); v[len(v)-1] != Everywhere {
				t.Errorf("%d shards: shard %d's values %v do not select %q", shards, k, v, Everywhere)
			}
		}
		if len(seen) != Slots {
			t.Errorf("%d shards cover %d slots, want %d", shards, len(seen), Slots)
		}
		for _, ns := range []string{"default", "team-a", "team-b"} {
			if got := seen[SlotOf(ns)]; got != Home(ns, shards) {
				t.Errorf("%d shards: %s's slot is in shard %d, Home says %d", shards, ns, got, Home(ns, shards))
			}
		}
	}
}

// TestManagedSecretsLeaveOutEverywhere: a shard's Secret cache holds
// buckety's Secrets of its own slots only; a Secret a tenant labelled
// Everywhere is in no shard's cache (buckety never labels a Secret so),
// while Bucketies and accesses labelled Everywhere are in every one.
func TestManagedSecretsLeaveOutEverywhere(t *testing.T) {
	s := &Serves{K: 1, N: 4}
	secrets, err := ManagedSecrets(s)
	if err != nil {
		t.Fatal(err)
	}
	objects, err := Selecting(s)
	if err != nil {
		t.Fatal(err)
	}
	own := SlotValues(1, 4)[0]
	managed := func(slot string) labels.Set {
		return labels.Set{v1.ManagedByLabel: v1.ManagedByValue, SlotLabel: slot}
	}
	if !secrets.Matches(managed(own)) {
		t.Errorf("a managed Secret of slot %s is not selected by %s", own, secrets)
	}
	if secrets.Matches(managed(Everywhere)) {
		t.Errorf("a Secret labelled %s is selected by %s", Everywhere, secrets)
	}
	if secrets.Matches(labels.Set{SlotLabel: own}) {
		t.Errorf("a Secret not managed by buckety is selected by %s", secrets)
	}
	if !objects.Matches(labels.Set{SlotLabel: Everywhere}) {
		t.Errorf("an object labelled %s is not selected by %s", Everywhere, objects)
	}
	all, err := ManagedSecrets(nil)
	if err != nil || !all.Matches(managed(Everywhere)) || !all.Matches(managed(own)) {
		t.Errorf("one shard: want every managed Secret selected, got %v, %v", all, err)
	}
}

// TestCheckLabelRefusesAnInvalidValueKept: an object whose slot label is
// present but read by no shard (the empty value, which the webhook's
// match condition once let through on a metadata-only update) may not
// keep it: a tenant could otherwise hide the object from every shard, a
// credential left issued after its share was withdrawn. A valid value it
// has (buckety's, Everywhere once sharing ended) it may keep.
func TestCheckLabelRefusesAnInvalidValueKept(t *testing.T) {
	own, other := SlotValue("payments"), SlotValue("payments-x")
	if own == other {
		t.Fatalf("the test needs two namespaces of different slots; both are in %s", own)
	}
	slot := func(v string) map[string]string { return map[string]string{SlotLabel: v} }
	for _, c := range []struct {
		name       string
		labels     map[string]string
		old        map[string]string
		refusedFor string
	}{
		{"create with the empty value", slot(""), nil, "Invalid value"},
		{"update keeping the empty value", slot(""), slot(""), "Invalid value"},
		{"update setting the empty value", slot(""), nil, "Invalid value"},
		{"update keeping a value no shard reads", slot("abc"), slot("abc"), "Invalid value"},
		{"update keeping a slot out of range", slot("256"), slot("256"), "Invalid value"},
		{"update keeping a slot not as SlotValue writes it", slot("0" + own), slot("0" + own), "Invalid value"},
		{"update removing the label buckety set", nil, slot(own), "Required value"},
		{"update moving it to another slot", slot(other), slot(own), "Invalid value"},
		{"create without the label", nil, nil, ""},
		{"update setting buckety's value over the empty one", slot(own), slot(""), ""},
		{"update removing the empty value", nil, slot(""), ""},
		{"update keeping buckety's value", slot(own), slot(own), ""},
		{"update keeping another valid slot it had", slot(other), slot(other), ""},
		{"update keeping Everywhere", slot(Everywhere), slot(Everywhere), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			errs := CheckLabel(c.labels, c.old, own)
			switch {
			case c.refusedFor == "" && len(errs) > 0:
				t.Errorf("want admitted, got %v", errs.ToAggregate())
			case c.refusedFor != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), c.refusedFor)):
				t.Errorf("want refused (%s), got %v", c.refusedFor, errs.ToAggregate())
			}
		})
	}
}

// TestUnservedSelectsWhatNoShardReads: the labeller's selector holds an
// object without the slot label, or with a value no shard's cache selects
// (the empty one too), and nothing a shard reads.
func TestUnservedSelectsWhatNoShardReads(t *testing.T) {
	sel, err := Unserved()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []labels.Set{{}, {"team": "a"}, {SlotLabel: ""}, {SlotLabel: "abc"}, {SlotLabel: "256"}, {SlotLabel: "-1"}, {SlotLabel: "01"}} {
		if !sel.Matches(l) {
			t.Errorf("%v: not selected by %s, but no shard reads it", l, sel)
		}
		if ValidValue(l[SlotLabel]) {
			t.Errorf("%v: ValidValue says a shard reads it", l)
		}
	}
	const shards = 3
	for k := range shards {
		for _, v := range SlotValues(k, shards) {
			if sel.Matches(labels.Set{SlotLabel: v}) {
				t.Errorf("%s=%s: selected by %s, but shard %d reads it", SlotLabel, v, sel, k)
			}
			if !ValidValue(v) {
				t.Errorf("%s: ValidValue says no shard reads it, but shard %d does", v, k)
			}
		}
	}
}
