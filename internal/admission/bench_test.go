package admission

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// BenchmarkHandler measures the admission handler for a Buckety create, the
// whole hot path after TLS: decoding, template resolution, name rules, the
// schema, CEL and the driver's checks. It reports p50 and p99.
func BenchmarkHandler(b *testing.B) {
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	h := admission.WithValidator[*v1.Buckety](s, BucketyValidator{validators(b)})
	obj := &v1.Buckety{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "Buckety"},
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "tenant1", Labels: map[string]string{"yolean.se/generation": "003"}},
		Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}.v${label['yolean.se/generation']}",
			Parameters: map[string]string{"partitions": "12", "replicationFactor": "3", "config.retention.ms": "604800000", "config.cleanup.policy": "delete"}},
	}
	raw, err := json.Marshal(obj)
	if err != nil {
		b.Fatal(err)
	}
	req := admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{UID: "x", Operation: admissionv1.Create, Namespace: "tenant1", Name: "orders", Object: runtime.RawExtension{Raw: raw}}}
	admitLatency(b, h, req)
}

// reviewBody is the AdmissionReview the API server sends for a dry-run
// create of a Buckety (as read off the wire from kube-apiserver 1.36): the
// object with its managedFields, the user, the create options.
const reviewBody = `{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"4b8fbc5e-3f0e-4f7e-9a52-0c3f6f0d1a11",` +
	`"kind":{"group":"buckety.yolean.se","version":"v1alpha1","kind":"Buckety"},"resource":{"group":"buckety.yolean.se","version":"v1alpha1","resource":"bucketies"},` +
	`"requestKind":{"group":"buckety.yolean.se","version":"v1alpha1","kind":"Buckety"},"requestResource":{"group":"buckety.yolean.se","version":"v1alpha1","resource":"bucketies"},` +
	`"name":"orders","namespace":"tenant1","operation":"CREATE","userInfo":{"username":"system:admin","uid":"9e0f1c9d-1b1e-4d0c-8f39-2f0b8f6b5c10","groups":["system:masters","system:authenticated"]},` +
	`"object":{"apiVersion":"buckety.yolean.se/v1alpha1","kind":"Buckety","metadata":{"creationTimestamp":"2026-11-29T08:30:00Z","labels":{"yolean.se/generation":"003"},` +
	`"managedFields":[{"apiVersion":"buckety.yolean.se/v1alpha1","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:labels":{".":{},"f:yolean.se/generation":{}}},` +
	`"f:spec":{".":{},"f:backend":{},"f:name":{},"f:parameters":{".":{},"f:config.cleanup.policy":{},"f:config.retention.ms":{},"f:partitions":{},"f:replicationFactor":{}}}},` +
	`"manager":"integration.test","operation":"Update","time":"2026-11-29T08:30:00Z"}],"name":"orders","namespace":"tenant1","uid":"0a4f7a55-8c1e-4d53-b9a9-54f1d4f0c2d7"},` +
	`"spec":{"backend":"kafka","name":"${namespace}.${name}.v${label['yolean.se/generation']}",` +
	`"parameters":{"config.cleanup.policy":"delete","config.retention.ms":"604800000","partitions":"12","replicationFactor":"3"}}},` +
	`"oldObject":null,"dryRun":true,"options":{"kind":"CreateOptions","apiVersion":"meta.k8s.io/v1","dryRun":["All"],"fieldManager":"integration.test"}}}`

// BenchmarkServeHTTP is BenchmarkHandler from the AdmissionReview's bytes
// to the response's: decoding both the review and the object, validating,
// encoding the answer. It reports p50 and p99, and allocations with
// -benchmem.
func BenchmarkServeHTTP(b *testing.B) {
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		b.Fatal(err)
	}
	h := admission.WithValidator[*v1.Buckety](s, BucketyValidator{validators(b)})
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		r := httptest.NewRequestWithContext(ctx, http.MethodPost, "/validate", strings.NewReader(reviewBody))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		start := time.Now()
		h.ServeHTTP(w, r)
		lat = append(lat, time.Since(start))
		if !strings.Contains(w.Body.String(), `"allowed":true`) {
			b.Fatalf("want allowed, got %d %s", w.Code, w.Body)
		}
	}
	reportLatency(b, lat)
}

// admitLatency runs req through h, which must admit it, and reports the
// p50 and p99 of its latency.
func admitLatency(b *testing.B, h admission.Handler, req admission.Request) {
	ctx := context.Background()
	var lat []time.Duration
	for b.Loop() {
		start := time.Now()
		resp := h.Handle(ctx, req)
		lat = append(lat, time.Since(start))
		if !resp.Allowed {
			b.Fatalf("want allowed, got %v", resp.Result)
		}
	}
	reportLatency(b, lat)
}

// reportLatency reports the p50 and p99 of lat.
func reportLatency(b *testing.B, lat []time.Duration) {
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
