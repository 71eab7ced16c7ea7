// Package shard splits the controller's work across replicas on
// Kubernetes itself, with no coordinator of buckety's own.
//
// Every namespace hashes to one of Slots slots (SlotOf), a number that
// depends on the namespace's name alone and never changes. An
// installation runs a fixed number of shards; shard k serves the slots s
// with s mod shards == k (ShardOfSlot). Changing the number of shards
// moves slots between shards, never a namespace between slots, so what is
// recorded on objects (the slot label) stays true.
//
// Each shard has a Lease. A replica holds at most its share of the shards
// (the shards divided by the live replicas, rounded up; the replicas are
// counted by their own member Leases), takes a shard whose Lease is free
// or expired, and runs it until it stops holding it (Assigner). A shard is
// released only after its work has stopped, and taken only after its
// Lease expired or was released, so no pass is run twice at once; the
// replica that takes a shard lists its objects afresh, so none is lost.
// One shard is today's single leader: its Lease is the one
// controller-runtime's leader election used, so replicas of an older
// release and this one exclude each other.
package shard

import (
	"fmt"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation/field"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// Slots is the number of slots namespaces hash into. It bounds the number
// of shards, and must never change: the slot label on objects records it.
const Slots = 256

// SlotLabel is the label that records an object's slot, for the shards'
// label-selected caches.
const SlotLabel = "buckety.yolean.se/slot"

// SetLabel sets obj's slot label to slot, in memory.
func SetLabel(obj metav1.Object, slot string) {
	l := obj.GetLabels()
	if l == nil {
		l = map[string]string{}
	}
	l[SlotLabel] = slot
	obj.SetLabels(l)
}

// Everywhere is the SlotLabel value of an object every shard reads (a
// Buckety another namespace may use; an access naming a Buckety of
// another namespace). It is still reconciled by one shard, the one of its
// namespace (Home).
const Everywhere = "any"

// SlotOf is namespace ns's slot: FNV-1a of the name, modulo Slots.
func SlotOf(ns string) int {
	h := uint32(2166136261)
	for i := 0; i < len(ns); i++ {
		h ^= uint32(ns[i])
		h *= 16777619
	}
	return int(h % Slots)
}

// SlotValue is the SlotLabel value of namespace ns's objects.
func SlotValue(ns string) string { return strconv.Itoa(SlotOf(ns)) }

// ShardOfSlot is the shard of slot s among shards.
func ShardOfSlot(s, shards int) int {
	if shards <= 1 {
		return 0
	}
	return s % shards
}

// Home is the shard that reconciles namespace ns's objects.
func Home(ns string, shards int) int { return ShardOfSlot(SlotOf(ns), shards) }

// SlotsOf lists shard k's slots among shards.
func SlotsOf(k, shards int) []int {
	if shards <= 1 {
		shards = 1
	}
	var out []int
	for s := k; s < Slots; s += shards {
		out = append(out, s)
	}
	return out
}

// SlotValues are the SlotLabel values shard k's cache selects: its slots,
// and Everywhere.
func SlotValues(k, shards int) []string {
	slots := SlotsOf(k, shards)
	out := make([]string, 0, len(slots)+1)
	for _, s := range slots {
		out = append(out, strconv.Itoa(s))
	}
	return append(out, Everywhere)
}

// Selecting is what shard s's cache selects: by the slot label, its slots
// and Everywhere; nil s (one shard): everything.
func Selecting(s *Serves) (labels.Selector, error) {
	return withSlots(labels.Everything(), s)
}

// Unserved selects the objects no shard's cache holds by their slot label:
// those without it, and those whose value is not a slot nor Everywhere
// (ValidValue; the empty value too). The labeller labels them.
func Unserved() (labels.Selector, error) {
	out, err := labels.NewRequirement(SlotLabel, selection.NotIn, SlotValues(0, 1))
	if err != nil {
		return nil, err
	}
	return labels.NewSelector().Add(*out), nil
}

// Managed selects the objects with buckety's managed-by label: the
// Secrets the controller's cache holds.
func Managed() labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1.ManagedByLabel: v1.ManagedByValue})
}

// ManagedSecrets selects the Secrets shard s's cache holds: Managed, of
// its slots; nil s: every one. Not Everywhere: buckety labels a Secret
// with its namespace's slot only (it is read by the shard of its access's
// namespace), so a Secret labelled Everywhere is a tenant's, which would
// otherwise sit in every shard's cache.
func ManagedSecrets(s *Serves) (labels.Selector, error) {
	if s == nil {
		return Managed(), nil
	}
	values := SlotValues(s.K, s.N)
	return withValues(Managed(), values[:len(values)-1])
}

// withSlots narrows sel to shard s's slots and Everywhere; nil s: sel.
func withSlots(sel labels.Selector, s *Serves) (labels.Selector, error) {
	if s == nil {
		return sel, nil
	}
	return withValues(sel, SlotValues(s.K, s.N))
}

// withValues narrows sel to the slot label values given.
func withValues(sel labels.Selector, values []string) (labels.Selector, error) {
	in, err := labels.NewRequirement(SlotLabel, selection.In, values)
	if err != nil {
		return nil, err
	}
	return sel.Add(*in), nil
}

// BucketyValue is the SlotLabel value of Buckety b: Everywhere when it
// lets other namespaces use it (spec.sharing), so their shards see it.
func BucketyValue(b *v1.Buckety) string {
	if len(b.Spec.Sharing) > 0 {
		return Everywhere
	}
	return SlotValue(b.Namespace)
}

// AccessValue is the SlotLabel value of access a: Everywhere when it names
// a Buckety of another namespace, so that Buckety's shard sees it.
func AccessValue(a *v1.BucketyAccess) string {
	if a.AnyForeign() {
		return Everywhere
	}
	return SlotValue(a.Namespace)
}

// ValidValue reports whether v is a SlotLabel value some shard's cache
// selects: a slot, as SlotValue writes it, or Everywhere. An object with
// any other value (the empty one too) is read by no shard.
func ValidValue(v string) bool {
	if v == Everywhere {
		return true
	}
	s, err := strconv.Atoi(v)
	return err == nil && s >= 0 && s < Slots && strconv.Itoa(s) == v
}

// CheckLabel refuses a SlotLabel value a tenant wrote on an object of
// its namespace, other than want (the value buckety gives the object) or,
// on update, the value it had (old; nil on create) if that is a value a
// shard reads (ValidValue), and on update the label's removal once buckety
// set it. Without it, the object would be read by a shard that does not
// serve it, or by none: its credentials never revoked, its limits never
// counted. An invalid value the object has already (the empty one, written
// past the webhook or before it ran) is not kept: only want replaces it,
// as the labeller does, or its removal, which leaves it to the labeller.
func CheckLabel(labels, old map[string]string, want string) field.ErrorList {
	path := field.NewPath("metadata", "labels").Key(SlotLabel)
	v, ok := labels[SlotLabel]
	was, had := old[SlotLabel]
	switch {
	case !ok && had && ValidValue(was):
		return field.ErrorList{field.Required(path,
			fmt.Sprintf("buckety set this label (to %q), to tell which controller shard serves the object: leave it as buckety set it", was))}
	case !ok, v == want, had && v == was && ValidValue(v):
		return nil
	}
	return field.ErrorList{field.Invalid(path, v,
		fmt.Sprintf("buckety sets this label (to %q on this object), to tell which controller shard serves it: remove it, or leave it as buckety set it", want))}
}
