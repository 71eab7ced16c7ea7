package shard

import (
	"hash/fnv"
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
