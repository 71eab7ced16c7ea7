package shard

import (
	"hash/fnv"
	"testing"
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
