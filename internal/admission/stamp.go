package admission

import (
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// StampPatches are the JSON patch operations that give obj buckety's
// finalizer and the slot label slot, none when it has both.
func StampPatches(obj client.Object, slot string) []jsonpatch.JsonPatchOperation {
	var ops []jsonpatch.JsonPatchOperation
	switch f := obj.GetFinalizers(); {
	case len(f) == 0:
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/finalizers", []string{v1.Finalizer}))
	case !slices.Contains(f, v1.Finalizer):
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/finalizers/-", v1.Finalizer))
	}
	switch l := obj.GetLabels(); {
	case l == nil:
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/labels", map[string]string{shard.SlotLabel: slot}))
	case l[shard.SlotLabel] != slot:
		ops = append(ops, jsonpatch.NewOperation("add", "/metadata/labels/"+pointerEscape(shard.SlotLabel), slot))
	}
	return ops
}

// pointerEscape escapes a JSON pointer reference token (RFC 6901).
func pointerEscape(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
