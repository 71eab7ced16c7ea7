package admission

import (
	"context"
	"encoding/json"
	"sort"
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
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
