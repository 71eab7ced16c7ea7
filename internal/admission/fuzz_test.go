package admission

import (
	"context"
	"net/http"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/fuzzinput"
)

// The admission fuzz targets send arbitrary JSON as the object and the old
// object, with every operation, through the same handler the webhook
// registers (admission.WithValidator), with panic recovery off so a panic
// fails the target. Properties: the handler answers every request; a denial
// carries a status code from {400, 403, 422} and a message (never 500, an
// internal error); a 422 names fields under spec; and the same request gets
// the same verdict twice.

var operations = []admissionv1.Operation{admissionv1.Create, admissionv1.Update, admissionv1.Delete, admissionv1.Connect}

func seedObjects(f *testing.F, kind string) [][]byte {
	f.Helper()
	objs, err := fuzzinput.Objects([]string{kind}, "../../examples/*/*/*.yaml", "../../examples/*/*/*/*.yaml", "../../examples/quickstart/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	if len(objs) == 0 {
		f.Fatalf("want %s examples as seeds, got none", kind)
	}
	return objs
}

func fuzzHandler(f *testing.F, kind string, h *admission.Webhook) {
	objs := seedObjects(f, kind)
	for i, o := range objs {
		f.Add(uint8(0), string(o), "")
		f.Add(uint8(1), string(o), string(objs[(i+1)%len(objs)]))
		f.Add(uint8(1), string(o), string(o))
		f.Add(uint8(2), "", string(o))
	}
	f.Add(uint8(0), `{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"`+kind+`","metadata":{"name":"x"},"spec":{"parameters":{"partitions":"-1"}}}`, "")
	f.Add(uint8(1), `{}`, `null`)
	h.RecoverPanic = new(bool) // a panic fails the fuzz target
	f.Fuzz(func(t *testing.T, op uint8, obj, old string) {
		req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
			UID: "fuzz", Operation: operations[int(op)%len(operations)], Namespace: "tenant1", Name: "orders",
			Object: runtime.RawExtension{Raw: []byte(obj)}, OldObject: runtime.RawExtension{Raw: []byte(old)},
		}}
		resp := h.Handle(context.Background(), req)
		if !resp.Allowed {
			if resp.Result == nil {
				t.Fatal("a denial without a status")
			}
			switch resp.Result.Code {
			case http.StatusBadRequest, http.StatusForbidden, http.StatusUnprocessableEntity:
			default:
				t.Fatalf("want a denial with 400, 403 or 422, got %d: %s", resp.Result.Code, resp.Result.Message)
			}
			if resp.Result.Message == "" {
				t.Fatalf("want a message with the %d denial, got none", resp.Result.Code)
			}
			if resp.Result.Code == http.StatusUnprocessableEntity && resp.Result.Details != nil {
				for _, c := range resp.Result.Details.Causes {
					if !strings.HasPrefix(c.Field, "spec.") && c.Field != "spec" {
						t.Fatalf("want every cause under spec, got %q: %s", c.Field, c.Message)
					}
				}
			}
		}
		again := h.Handle(context.Background(), req)
		if again.Allowed != resp.Allowed || (resp.Result != nil) != (again.Result != nil) || resp.Result != nil && resp.Result.Code != again.Result.Code {
			t.Fatalf("the same request got two verdicts: %v then %v", resp.Result, again.Result)
		}
	})
}

func fuzzScheme(f *testing.F) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		f.Fatal(err)
	}
	return s
}

// FuzzBucketyAdmission drives the Buckety validator through its handler.
func FuzzBucketyAdmission(f *testing.F) {
	fuzzHandler(f, "Buckety", admission.WithValidator[*v1.Buckety](fuzzScheme(f), BucketyValidator{validators(f)}))
}

// FuzzAccessAdmission drives the BucketyAccess validator through its
// handler, with Bucketies on both drivers known to the lookup, so that
// access parameters reach each driver.
func FuzzAccessAdmission(f *testing.F) {
	known := []*v1.Buckety{bky("kafka", "", nil, nil), bky("s3", "", nil, nil), bky("gone", "", nil, nil)}
	known[1].Name, known[2].Name = "logs", "stale"
	fuzzHandler(f, "BucketyAccess", admission.WithValidator[*v1.BucketyAccess](fuzzScheme(f), AccessValidator{validators(f, known...)}))
}
