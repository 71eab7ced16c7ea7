package admission

import (
	"context"
	"net/http"
	"slices"
	"strings"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// Stamp is the mutating admission handler of a new Buckety or
// BucketyAccess: it gives the object, as the API server stores it,
// buckety's finalizer and its shard slot label (shard.BucketyValue,
// shard.AccessValue), which the controller's first pass would otherwise
// write in a request of its own (objects.AddFinalizer). One write fewer per
// object is a sixth of what provisioning a Buckety with its default access
// costs the API server (docs/performance.md, "The finalizer at
// admission").
//
// It only adds: finalizers already on the object stay, and a slot label
// other than the object's is set to the object's, as the controller's
// write would (the validating webhook refuses a slot label a tenant wrote,
// shard.CheckLabel, and now sees the stamped one). Nothing else is
// judged here: the validating webhook, which runs after every mutating
// one, does that. Without this webhook (an installation that left it out,
// a create it did not see) the controller writes both on its first pass,
// as before.
type Stamp struct {
	// Kind is the kind the handler is registered for: Buckety or
	// BucketyAccess.
	Kind    string
	Decoder admission.Decoder
}

// Handle implements admission.Handler.
func (s Stamp) Handle(_ context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	var obj client.Object
	var slot func() string
	switch s.Kind {
	case "Buckety":
		b := &v1.Buckety{}
		obj, slot = b, func() string { return shard.BucketyValue(b) }
	case "BucketyAccess":
		a := &v1.BucketyAccess{}
		obj, slot = a, func() string { return shard.AccessValue(a) }
	default:
		return admission.Errored(http.StatusInternalServerError, errUnknownKind(s.Kind))
	}
	if err := s.Decoder.DecodeRaw(req.Object, obj); err != nil {
		// Stamped nothing: the API server's schema validation, which
		// runs after the mutating webhooks, names the field a tenant got
		// wrong (a duration that does not parse), where the decoder's
		// error names none; what it admits the validating webhook
		// decodes, and refuses, as it does an object without the stamp.
		return admission.Allowed("")
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(req.Namespace)
	}
	return admission.Patched("", StampPatches(obj, slot())...)
}

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

type errUnknownKind string

func (e errUnknownKind) Error() string { return "stamp: no such kind " + string(e) }
