package strmap

import (
	"slices"
	"testing"
)

func TestKeyIsEqualExactlyForEqualMaps(t *testing.T) {
	maps := []map[string]string{
		nil,
		{"a": "b"},
		{"a": "b", "c": "d"},
		{"c": "d", "a": "b", "e": ""},
		// The same bytes split differently between key and value, and
		// between pairs: each must have a key of its own.
		{"ab": ""},
		{"a": "b "},
		{"a": "bc", "d": ""},
		{"a": "b", "cd": ""},
		{"a\x01b": "c"},
	}
	for i, m := range maps {
		k, keys := Key(m)
		if !slices.IsSorted(keys) || len(keys) != len(m) {
			t.Errorf("%v: keys %q, want its %d keys sorted", m, keys, len(m))
		}
		// Equal maps built in another order have the same key.
		c := map[string]string{}
		for _, kk := range slices.Backward(keys) {
			c[kk] = m[kk]
		}
		if k2, _ := Key(c); k2 != k {
			t.Errorf("%v: an equal map's key %q, want %q", m, k2, k)
		}
		for j, o := range maps {
			if ko, _ := Key(o); i != j && ko == k {
				t.Errorf("%v and %v share the key %q", m, o, k)
			}
		}
	}
}
