package admission

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// MaxSpecEntries is the most entries any list or map in a Buckety's or
// BucketyAccess's spec may hold under the CRDs' schemas (spec.bucketyRefs,
// 128; TestMaxSpecEntriesBoundsTheSchemas reads the generated CRDs). Admit
// judges only objects within it: its verdict's cost then has a bound, where
// the schema, which would refuse a longer list, only runs after the
// mutating webhooks.
const MaxSpecEntries = 128

// MaxSpecString is the longest string any field of a Buckety's or
// BucketyAccess's spec may hold under the CRDs' schemas (a parameter's
// value, 4096; TestMaxSpecEntriesBoundsTheSchemas).
const MaxSpecString = 4096

// Admit is the one admission call of a new Buckety or BucketyAccess: it
// judges the object as the validating webhook does (the kind's
// ValidateCreate) and, when it is admitted, stamps it (StampPatches: the
// finalizer and the slot label), in one answer of the mutating webhook.
// Before, a create cost the API server two webhook calls, the stamp's and
// the validator's, and a webhook call is most of what admission costs a
// create (docs/performance.md, "One call a create").
//
// The validating webhooks are then called for a CREATE only when the
// object reaches them without buckety's stamp (their match condition):
// what Admit leaves, unjudged, to the API server's own checks, which run
// after the mutating webhooks. That is an object the typed kind cannot
// hold (a drain interval that does not parse: the schema's error names the
// field, the decoder's does not); one with a list or map in spec longer
// than MaxSpecEntries or a string longer than MaxSpecString, which the
// schema refuses; one whose name or labels the API server's validation of
// metadata refuses (the verdict's cost grows with them: a naming template
// repeats them); and a create by generateName, which is named only after
// the mutating webhooks (the validating webhook judges it under its name).
// Admit takes buckety's finalizer and slot label off such an object, so a
// stamp its author wrote in (a manifest copied from `kubectl get -o yaml`)
// cannot pass for Admit's, and the validating webhook judges it if the API
// server admits it. The mutating webhooks are registered with
// reinvocationPolicy IfNeeded, so an object another mutating webhook
// changes after Admit's answer is judged again as it then is (once: the
// API server reinvokes a webhook at most once).
type Admit[T client.Object] struct {
	// Kind is Buckety or BucketyAccess.
	Kind    string
	Decoder admission.Decoder
	// New returns an empty object of the kind.
	New func() T
	// Slot is the object's slot label value (shard.BucketyValue,
	// shard.AccessValue).
	Slot func(T) string
	// Validate is the validating webhook's verdict on a create.
	Validate func(context.Context, T) (admission.Warnings, error)
}

// Handle implements admission.Handler.
func (a Admit[T]) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create {
		return admission.Allowed("")
	}
	ctx = admission.NewContextWithRequest(ctx, req)
	var raw struct {
		Metadata struct {
			Name       string            `json:"name"`
			Labels     map[string]string `json:"labels"`
			Finalizers []string          `json:"finalizers"`
		} `json:"metadata"`
		Spec any `json:"spec"`
	}
	if err := json.Unmarshal(req.Object.Raw, &raw); err != nil {
		return admission.Errored(http.StatusBadRequest, fmt.Errorf("the %s does not decode: %w", a.Kind, err))
	}
	if !bounded(raw.Spec) || !judgeable(raw.Metadata.Name, raw.Metadata.Labels) {
		return unstamped(raw.Metadata.Finalizers, raw.Metadata.Labels)
	}
	obj := a.New()
	if err := a.Decoder.DecodeRaw(req.Object, obj); err != nil {
		return unstamped(raw.Metadata.Finalizers, raw.Metadata.Labels)
	}
	if obj.GetNamespace() == "" {
		obj.SetNamespace(req.Namespace)
	}
	slot := a.Slot(obj)
	ops := StampPatches(obj, slot)
	// Judged as it will be stored: a slot label the tenant wrote is the
	// object's once stamped, as the validating webhook saw it after the
	// stamp's own call.
	controllerutil.AddFinalizer(obj, v1.Finalizer)
	shard.SetLabel(obj, slot)
	warnings, err := a.Validate(ctx, obj)
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			s := status.Status()
			return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{Allowed: false, Result: &s}}.WithWarnings(warnings...)
		}
		return admission.Denied(err.Error()).WithWarnings(warnings...)
	}
	return admission.Patched("", ops...).WithWarnings(warnings...)
}

// unstamped admits an object Admit leaves to the schema and the validating
// webhook, taking buckety's finalizer off it if its author wrote it in: one
// operation however often it is listed (a remove per copy costs the API
// server a copy of the list each). A slot label its author wrote goes too,
// as Admit's stamp would have set it to the object's own: the controller
// labels the object once it is stored (internal/controller/labeller).
func unstamped(finalizers []string, labels map[string]string) admission.Response {
	var ops []jsonpatch.JsonPatchOperation
	if slices.Contains(finalizers, v1.Finalizer) {
		kept := slices.DeleteFunc(slices.Clone(finalizers), func(f string) bool { return f == v1.Finalizer })
		if len(kept) == 0 {
			ops = append(ops, jsonpatch.NewOperation("remove", "/metadata/finalizers", nil))
		} else {
			ops = append(ops, jsonpatch.NewOperation("replace", "/metadata/finalizers", kept))
		}
	}
	if _, ok := labels[shard.SlotLabel]; ok {
		ops = append(ops, jsonpatch.NewOperation("remove", "/metadata/labels/"+pointerEscape(shard.SlotLabel), nil))
	}
	if len(ops) == 0 {
		return admission.Allowed("")
	}
	return admission.Patched("", ops...)
}

// judgeable reports whether the object's name and labels are ones the API
// server's validation of metadata, which runs after the mutating webhooks,
// admits, and the name is set: a create with generateName gets its name
// only after them, and the validating webhook judges it under that name.
// The verdict resolves the naming template from both, so their length
// bounds its cost.
func judgeable(name string, labels map[string]string) bool {
	if name == "" || len(name) > validation.DNS1123SubdomainMaxLength {
		return false
	}
	for k, v := range labels {
		if len(validation.IsQualifiedName(k)) > 0 || len(validation.IsValidLabelValue(v)) > 0 {
			return false
		}
	}
	return true
}

// bounded reports whether every list and map in v holds at most
// MaxSpecEntries entries and every string at most MaxSpecString bytes.
func bounded(v any) bool {
	switch v := v.(type) {
	case string:
		return len(v) <= MaxSpecString
	case []any:
		if len(v) > MaxSpecEntries {
			return false
		}
		for _, e := range v {
			if !bounded(e) {
				return false
			}
		}
	case map[string]any:
		if len(v) > MaxSpecEntries {
			return false
		}
		for k, e := range v {
			if len(k) > MaxSpecString || !bounded(e) {
				return false
			}
		}
	}
	return true
}
