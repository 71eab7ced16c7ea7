package integration

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// BenchmarkAdmissionThroughAPIServer measures a server-side dry-run create of
// a Buckety through the real API server, with buckety-webhook in the path
// (TLS, AdmissionReview, validation), and reports p50 and p99.
func BenchmarkAdmissionThroughAPIServer(b *testing.B) {
	needInfra(b)
	startWebhook(b)
	ns := namespace(b)
	c := newWarningClient(b)
	ctx := context.Background()
	mk := func(i int) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("b%d", i), Namespace: ns, Labels: map[string]string{"yolean.se/generation": "003"}},
			Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}.v${label['yolean.se/generation']}", Parameters: map[string]string{"partitions": "3"}}}
	}
	wait.For(b, waitTimeout, "webhook in effect", func() (bool, string) {
		bad := mk(0)
		bad.Spec.Backend = "nope"
		err := c.Create(ctx, bad, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "no such backend"), fmt.Sprint(err)
	})
	var lat []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		if err := c.Create(ctx, mk(i), client.DryRunAll); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
		i++
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
