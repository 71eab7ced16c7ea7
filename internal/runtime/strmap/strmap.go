// Package strmap builds the canonical key of a string map, for the tables
// that let many objects share one copy of equal maps (the controller's
// cache compaction, the kadm driver's topic configs).
package strmap

import (
	"encoding/binary"
	"maps"
	"slices"
)

// Key returns a key that two maps share exactly when they hold the same
// pairs, and m's keys sorted. Each string goes in with its length before
// it, so no two different maps have the same key, whatever bytes their
// strings hold.
func Key(m map[string]string) (string, []string) {
	keys := slices.Sorted(maps.Keys(m))
	n := 0
	for _, k := range keys {
		n += len(k) + len(m[k]) + 2*binary.MaxVarintLen16
	}
	b := make([]byte, 0, n)
	for _, k := range keys {
		b = binary.AppendUvarint(b, uint64(len(k)))
		b = append(b, k...)
		b = binary.AppendUvarint(b, uint64(len(m[k])))
		b = append(b, m[k]...)
	}
	return string(b), keys
}
