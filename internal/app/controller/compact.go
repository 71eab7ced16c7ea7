package controller

import (
	"sync"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/runtime/strmap"
)

// compact makes a cached object share what it has in common with the
// others, once the strip transforms have cut it down (see cacheOptions):
// the decoder gives every object its own copy of every string, map and
// slice, although a shard's 25,000 Bucketies carry the same eleven
// condition types, reasons and mostly the same messages, the same backend,
// driver and parameter defaults, and the same few slot labels. A heap
// profile at 100,000 Bucketies on four replicas showed the decoder's
// strings, slices and maps as 130 of the cache's 200 MB.
//
//   - Strings that repeat (condition types, statuses, reasons, messages;
//     backends, drivers, roles, phases; namespaces, finalizers, label keys
//     and the values of labels that are not a name or UID) are interned:
//     equal strings share one copy.
//   - Maps that repeat (labels without a name or UID among their values,
//     parameters, parameter defaults and effective parameters, a claim's
//     location) are shared: objects with equal maps hold one map.
//   - Condition and finalizer slices are copied to their length: the
//     decoder grows them by doubling, so eleven conditions held sixteen.
//
// Nothing a reader sees changes: the values are equal, the cache hands out
// deep copies (client.UnsafeDisableDeepCopy readers only read), and
// informers never change a stored object. The tables are bounded: each is
// dropped and started again when full, so tenants who write many distinct
// values cost at most one table, and objects keep what they were given.
func compact(o client.Object) {
	o.SetNamespace(pool.str(o.GetNamespace()))
	o.SetFinalizers(internAll(o.GetFinalizers()))
	refs := o.GetOwnerReferences()
	for i := range refs {
		refs[i].APIVersion = pool.str(refs[i].APIVersion)
		refs[i].Kind = pool.str(refs[i].Kind)
	}
	o.SetLabels(pool.labels(o.GetLabels()))
	switch t := o.(type) {
	case *v1.Buckety:
		s := &t.Spec
		s.Backend = pool.str(s.Backend)
		s.Name = pool.str(s.Name)
		s.Parameters = pool.strMap(s.Parameters)
		st := &t.Status
		st.Conditions = compactConditions(st.Conditions)
		st.Backend = pool.str(st.Backend)
		st.Driver = pool.str(st.Driver)
		st.DriverBuildVersion = pool.str(st.DriverBuildVersion)
		st.Provenance = v1.Provenance(pool.str(string(st.Provenance)))
		st.ParameterDefaults = pool.strMap(st.ParameterDefaults)
		st.EffectiveParameters = pool.strMap(st.EffectiveParameters)
	case *v1.BucketyAccess:
		s := &t.Spec
		s.Role = v1.Role(pool.str(string(s.Role)))
		s.Rotation = pool.str(s.Rotation)
		s.SecretFormats = internAll(s.SecretFormats)
		s.Parameters = pool.strMap(s.Parameters)
		st := &t.Status
		st.Conditions = compactConditions(st.Conditions)
		st.Rotation = pool.str(st.Rotation)
	case *v1.BucketyClaim:
		s := &t.Spec
		s.Backend = pool.str(s.Backend)
		s.Phase = v1.ClaimPhase(pool.str(string(s.Phase)))
		s.Service = pool.str(s.Service)
		s.Owner.Namespace = pool.str(s.Owner.Namespace)
		s.Location = pool.strMap(s.Location)
	}
}

// compactConditions copies conditions to a slice of their length, with
// their strings interned.
func compactConditions(in []metav1.Condition) []metav1.Condition {
	if len(in) == 0 {
		return in
	}
	out := make([]metav1.Condition, len(in))
	for i, c := range in {
		c.Type = pool.str(c.Type)
		c.Status = metav1.ConditionStatus(pool.str(string(c.Status)))
		c.Reason = pool.str(c.Reason)
		c.Message = pool.str(c.Message)
		out[i] = c
	}
	return out
}

// internAll copies ss to a slice of its length, its strings interned.
func internAll(ss []string) []string {
	if len(ss) == 0 {
		return ss
	}
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = pool.str(s)
	}
	return out
}

// uniqueLabels are the label keys whose values name one object (an
// access, an owner's UID): interning or sharing them would only fill the
// tables.
var uniqueLabels = map[string]bool{v1.AccessLabel: true, v1.ClaimOwnerLabel: true, corev1.LabelMetadataName: true}

// Bounds of the tables: past these, a table is dropped and started again.
const (
	maxInterned   = 1 << 14
	maxSharedMaps = 1 << 12
)

// pool is the process's tables. The informers' goroutines share them.
var pool = &compactor{}

// compactor holds the interned strings and the shared maps.
type compactor struct {
	mu   sync.Mutex
	strs map[string]string
	maps map[string]map[string]string
}

// str returns s, or an equal string an earlier call returned.
func (c *compactor) str(s string) string {
	if s == "" {
		return s
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.strLocked(s)
}

func (c *compactor) strLocked(s string) string {
	if got, ok := c.strs[s]; ok {
		return got
	}
	if c.strs == nil || len(c.strs) >= maxInterned {
		c.strs = make(map[string]string, 256)
	}
	c.strs[s] = s
	return s
}

// strMap returns m, or a map equal to it an earlier call returned; its
// keys and values interned.
func (c *compactor) strMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sharedLocked(m)
}

// labels is strMap for labels, which are shared only when no value is an
// object's name or UID; otherwise only their keys and other values are
// interned.
func (c *compactor) labels(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range m {
		if uniqueLabels[k] {
			out := make(map[string]string, len(m))
			for k, v := range m {
				if !uniqueLabels[k] {
					v = c.strLocked(v)
				}
				out[c.strLocked(k)] = v
			}
			return out
		}
	}
	return c.sharedLocked(m)
}

func (c *compactor) sharedLocked(m map[string]string) map[string]string {
	key, keys := strmap.Key(m)
	if got, ok := c.maps[key]; ok {
		return got
	}
	if c.maps == nil || len(c.maps) >= maxSharedMaps {
		c.maps = make(map[string]map[string]string, 64)
	}
	out := make(map[string]string, len(m))
	for _, k := range keys {
		out[c.strLocked(k)] = c.strLocked(m[k])
	}
	c.maps[key] = out
	return out
}
