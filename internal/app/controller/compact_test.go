package controller

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// cachedSet is what a shard's cache holds for one Buckety with its
// default access: the Buckety, the access, the claim and the Secret's
// metadata, as the controller writes them (i is the Buckety's number).
func cachedSet(i int) []client.Object {
	ns := fmt.Sprintf("team-%d", i%50)
	name := fmt.Sprintf("orders-%d", i)
	uid := func(kind string) types.UID { return types.UID(fmt.Sprintf("%08d-0000-4000-8000-%s", i, kind)) }
	at := metav1.NewTime(time.Date(2026, 11, 29, 20, 0, i%60, 0, time.UTC))
	cond := func(t, status, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, ObservedGeneration: 1, LastTransitionTime: at}
	}
	slot := map[string]string{shard.SlotLabel: fmt.Sprint(i % 64)}
	meta := func(kind, name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: ns, UID: uid(kind), ResourceVersion: fmt.Sprint(100000 + i), Generation: 1,
			CreationTimestamp: at, Labels: slot, Finalizers: []string{v1.Finalizer}}
	}
	topic := ns + "." + name
	yes := true
	b := &v1.Buckety{TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "Buckety"}, ObjectMeta: meta("b", name),
		Spec: v1.BucketySpec{Backend: "kafka", Parameters: map[string]string{"partitions": "3", "retention.ms": "604800000"},
			DefaultAccess: &v1.DefaultAccess{Role: "readwrite", CredentialsSecretName: name + "-kafka"}},
		Status: v1.BucketyStatus{Backend: "kafka", Driver: "kadm", DriverBuildVersion: "v1.4.0", BackendResourceName: topic,
			Provenance: v1.ProvenanceCreated, ObservedGeneration: 1,
			ParameterDefaults:   map[string]string{"partitions": "1", "replication.factor": "1", "retention.ms": "604800000", "cleanup.policy": "delete", "segment.bytes": "1073741824"},
			EffectiveParameters: map[string]string{"partitions": "3", "replication.factor": "1", "retention.ms": "604800000", "cleanup.policy": "delete", "segment.bytes": "1073741824"},
			Conditions: []metav1.Condition{
				cond(v1.ConditionBackendUnavailable, "False", "AsExpected", "the backend is configured and answered"),
				cond(v1.ConditionDriverVersionIncompatible, "False", "AsExpected", "driver kadm v1.4.0 is compatible"),
				cond(v1.ConditionParameterDrift, "False", "AsExpected", "the backend resource matches spec.parameters"),
				cond(v1.ConditionDegraded, "False", "AsExpected", "every parameter is applied"),
				cond(v1.ConditionBlockedByAccesses, "False", "AsExpected", "no access blocks deletion"),
				cond(v1.ConditionScopingNotImplemented, "False", "AsExpected", "every access's credentials match its role"),
				cond(v1.ConditionQuotaWarning, "False", "AsExpected", "no quota is set"),
				cond(v1.ConditionDraining, "False", "AsExpected", "no drain is requested"),
				cond(v1.ConditionProvisioned, "True", "Reconciled", "created "+topic+" on backend kafka"),
				cond(v1.ConditionReady, "True", "Reconciled", "the topic and 1 access Secret are in sync"),
				cond(v1.ConditionReconciling, "False", "AsExpected", "no work in progress"),
			}}}
	a := &v1.BucketyAccess{TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "BucketyAccess"}, ObjectMeta: meta("a", name),
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: name}, CredentialsSecretName: name + "-kafka", Role: "readwrite"},
		Status: v1.BucketyAccessStatus{Principal: "buckety-" + string(uid("a")), ObservedGeneration: 1, BucketyGeneration: 1,
			Conditions: []metav1.Condition{
				cond(v1.ConditionBackendUnavailable, "False", "AsExpected", "the backend is configured"),
				cond(v1.ConditionDriverVersionIncompatible, "False", "AsExpected", "the Buckety's driver is compatible"),
				cond(v1.ConditionParameterDrift, "False", "NotApplicable", "an access has no backend resource of its own"),
				cond(v1.ConditionDegraded, "False", "AsExpected", "the credentials work"),
				cond(v1.ConditionBlockedByAccesses, "False", "NotApplicable", "an access blocks no deletion"),
				cond(v1.ConditionScopingNotImplemented, "False", "AsExpected", "the credentials are scoped to the role"),
				cond(v1.ConditionReady, "True", "Reconciled", "Secret "+name+"-kafka is in sync"),
				cond(v1.ConditionReconciling, "False", "AsExpected", "no work in progress"),
			}}}
	a.Labels = map[string]string{shard.SlotLabel: slot[shard.SlotLabel], v1.ImplicitLabel: "true"}
	a.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "Buckety", Name: name, UID: uid("b"), Controller: &yes, BlockOwnerDeletion: &yes}}
	cl := &v1.BucketyClaim{TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "BucketyClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("kafka.%x", i*2654435761), UID: uid("c"), ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: at,
			Labels: map[string]string{v1.ClaimOwnerLabel: string(uid("b")), shard.SlotLabel: slot[shard.SlotLabel]}},
		Spec: v1.BucketyClaimSpec{Backend: "kafka", ResourceName: topic, Owner: v1.ClaimOwner{Namespace: ns, Name: name, UID: string(uid("b"))}, Phase: "Bound",
			Budgeted: &v1.Budgeted{Partitions: 3, DiskBytes: 3 << 30}}}
	s := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"}, ObjectMeta: meta("s", name+"-kafka")}
	s.Finalizers = nil
	s.Labels = map[string]string{v1.ManagedByLabel: v1.ManagedByValue, v1.AccessLabel: name, shard.SlotLabel: slot[shard.SlotLabel]}
	s.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1.GroupVersion.String(), Kind: "BucketyAccess", Name: name, UID: uid("a"), Controller: &yes, BlockOwnerDeletion: &yes}}
	return []client.Object{b, a, cl, s}
}

// encoded is set as the API server sends it.
func encoded(t testing.TB, set []client.Object) [][]byte {
	t.Helper()
	out := make([][]byte, len(set))
	for i, o := range set {
		raw, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = raw
	}
	return out
}

// decode is what an informer receives: each object decoded from its JSON,
// with strings, maps and slices of its own. A Secret is decoded as the
// metadata informer does, to its metadata.
func decode(t testing.TB, raws [][]byte) []client.Object {
	t.Helper()
	dec, err := deserializer()
	if err != nil {
		t.Fatal(err)
	}
	out := make([]client.Object, len(raws))
	for i, raw := range raws {
		var tm metav1.TypeMeta
		if err := json.Unmarshal(raw, &tm); err != nil {
			t.Fatal(err)
		}
		if tm.Kind == "Secret" {
			m := &metav1.PartialObjectMetadata{}
			if err := json.Unmarshal(raw, m); err != nil {
				t.Fatal(err)
			}
			out[i] = m
			continue
		}
		got, _, err := dec.Decode(raw, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = got.(client.Object)
	}
	return out
}

// deserializer decodes the controller's kinds.
var deserializer = sync.OnceValues(func() (kruntime.Decoder, error) {
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	return serializer.NewCodecFactory(scheme).UniversalDeserializer(), nil
})

// decoded is set encoded and decoded.
func decoded(t testing.TB, set []client.Object) []client.Object {
	t.Helper()
	return decode(t, encoded(t, set))
}

// transformed runs the cache's transform for o's kind.
func transformed(t testing.TB, o client.Object, compacted bool) client.Object {
	t.Helper()
	steps := []func(client.Object){stripFields}
	if _, ok := o.(*metav1.PartialObjectMetadata); ok {
		steps = []func(client.Object){stripSecretFields}
	}
	if compacted {
		steps = append(steps, compact)
	}
	out, err := objectTransform(steps...)(o)
	if err != nil {
		t.Fatal(err)
	}
	return out.(client.Object)
}

// TestCompactChangesNoValue: a compacted object equals the stripped one,
// field for field.
func TestCompactChangesNoValue(t *testing.T) {
	for _, o := range decoded(t, cachedSet(7)) {
		stripped := transformed(t, o.DeepCopyObject().(client.Object), false)
		got := transformed(t, o, true)
		if !equality.Semantic.DeepEqual(stripped, got) {
			t.Errorf("%T: compacting changed it:\nstripped  %+v\ncompacted %+v", o, stripped, got)
		}
	}
}

// TestCompactShares: two objects decoded separately share their repeated
// strings and maps once compacted, hold slices of their length, and keep
// their own copies of what names them.
func TestCompactShares(t *testing.T) {
	one, two := decoded(t, cachedSet(1)), decoded(t, cachedSet(65)) // the same slot: 1 % 64
	for i := range one {
		one[i], two[i] = transformed(t, one[i], true), transformed(t, two[i], true)
	}
	same := func(what, a, b string) {
		t.Helper()
		if a != b || unsafe.StringData(a) != unsafe.StringData(b) {
			t.Errorf("%s: want one shared copy, got %q and %q apart", what, a, b)
		}
	}
	sameMap := func(what string, a, b map[string]string) {
		t.Helper()
		if len(a) == 0 || reflect.ValueOf(a).Pointer() != reflect.ValueOf(b).Pointer() {
			t.Errorf("%s: want one shared map, got %v and %v apart", what, a, b)
		}
	}
	b1, b2 := one[0].(*v1.Buckety), two[0].(*v1.Buckety)
	for i := range b1.Status.Conditions {
		c1, c2 := b1.Status.Conditions[i], b2.Status.Conditions[i]
		same("condition type", c1.Type, c2.Type)
		same("condition reason", c1.Reason, c2.Reason)
		same("condition status", string(c1.Status), string(c2.Status))
		if c1.Type != v1.ConditionProvisioned {
			same(c1.Type+" message", c1.Message, c2.Message)
		}
	}
	if n := len(b1.Status.Conditions); cap(b1.Status.Conditions) != n || n != 11 {
		t.Errorf("want 11 conditions in a slice of 11, got %d in %d", n, cap(b1.Status.Conditions))
	}
	same("status.driverBuildVersion", b1.Status.DriverBuildVersion, b2.Status.DriverBuildVersion)
	sameMap("Buckety labels", b1.Labels, b2.Labels)
	sameMap("spec.parameters", b1.Spec.Parameters, b2.Spec.Parameters)
	sameMap("status.parameterDefaults", b1.Status.ParameterDefaults, b2.Status.ParameterDefaults)
	sameMap("status.effectiveParameters", b1.Status.EffectiveParameters, b2.Status.EffectiveParameters)
	same("finalizer", b1.Finalizers[0], b2.Finalizers[0])
	a1, a2 := one[1].(*v1.BucketyAccess), two[1].(*v1.BucketyAccess)
	sameMap("access labels", a1.Labels, a2.Labels)
	same("owner reference kind", a1.OwnerReferences[0].Kind, a2.OwnerReferences[0].Kind)
	same("access ready message", a1.Status.Conditions[5].Message, a2.Status.Conditions[5].Message)
	s1, s2 := one[3], two[3]
	if reflect.ValueOf(s1.GetLabels()).Pointer() == reflect.ValueOf(s2.GetLabels()).Pointer() {
		t.Errorf("Secrets' labels name their access: want a map each, got one shared: %v", s1.GetLabels())
	}
	same("Secret slot label", s1.GetLabels()[shard.SlotLabel], s2.GetLabels()[shard.SlotLabel])
	if v := s1.GetLabels()[v1.AccessLabel]; v != "orders-1" {
		t.Errorf("Secret's access label: want orders-1, got %q", v)
	}
}

// TestCompactTablesAreBounded: distinct values past a table's bound start
// it again rather than grow it.
func TestCompactTablesAreBounded(t *testing.T) {
	c := &compactor{}
	for i := range maxInterned + 100 {
		c.str(fmt.Sprint("v", i))
	}
	for i := range maxSharedMaps + 100 {
		c.strMap(map[string]string{"k": fmt.Sprint(i)})
	}
	if len(c.strs) > maxInterned || len(c.maps) > maxSharedMaps {
		t.Errorf("want at most %d strings and %d maps held, got %d and %d", maxInterned, maxSharedMaps, len(c.strs), len(c.maps))
	}
	if len(c.strs) == 0 || len(c.maps) == 0 {
		t.Errorf("want the tables started again, not emptied: %d strings, %d maps", len(c.strs), len(c.maps))
	}
}

// TestCompactMapsDoNotCollide: maps whose keys and values join to the same
// bytes stay apart; a tenant cannot make its parameters read as another's.
func TestCompactMapsDoNotCollide(t *testing.T) {
	c := &compactor{}
	cases := []map[string]string{
		{"a": "b", "c": "d"},
		{"a": "b\x00c\x00d"},
		{"a": "b\x01\x01c\x01d"},
		{"a\x00b": "c"},
		{"a": "", "b": "c"},
	}
	for _, m := range cases {
		c.strMap(m)
	}
	for _, m := range cases {
		if got := c.strMap(m); !reflect.DeepEqual(got, m) {
			t.Errorf("want %q, got %q", m, got)
		}
	}
}

// BenchmarkCacheBytesPerBuckety reports the heap a shard's cache holds per
// Buckety with its access, claim and Secret, stripped only and compacted
// (issue 54's memory per replica; docs/performance.md).
func BenchmarkCacheBytesPerBuckety(b *testing.B) {
	const n = 4000
	for _, compacted := range []bool{false, true} {
		b.Run(fmt.Sprintf("compacted=%v", compacted), func(b *testing.B) {
			for range b.N {
				raws := make([][][]byte, n)
				for i := range raws {
					raws[i] = encoded(b, cachedSet(i))
				}
				held := make([][]client.Object, n)
				before := heapInUse()
				for i := range raws {
					set := decode(b, raws[i])
					for j := range set {
						set[j] = transformed(b, set[j], compacted)
					}
					held[i] = set
				}
				after := heapInUse()
				b.ReportMetric(float64(after-before)/n, "B/buckety")
				runtime.KeepAlive(held)
				runtime.KeepAlive(raws)
			}
		})
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(m.HeapAlloc)
}
