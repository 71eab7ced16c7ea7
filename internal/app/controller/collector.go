package controller

import (
	"context"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

var resourcesDesc = prometheus.NewDesc("buckety_resources",
	"Buckety and BucketyAccess objects by kind, condition type and status.",
	[]string{"kind", "condition", "status"}, nil)

// resourceCollector counts objects by condition from the informer cache at
// scrape time, so the gauge never drifts from what the API holds.
type resourceCollector struct {
	mu     sync.Mutex
	reader client.Reader
}

func newResourceCollector(r client.Reader) *resourceCollector { return &resourceCollector{reader: r} }

func (c *resourceCollector) set(r client.Reader) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader = r
}

func (c *resourceCollector) Describe(ch chan<- *prometheus.Desc) { ch <- resourcesDesc }

func (c *resourceCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	r := c.reader
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	types := []string{v1.ConditionReady, v1.ConditionBackendUnavailable, v1.ConditionDriverVersionIncompatible, v1.ConditionParameterDrift, v1.ConditionBlockedByAccesses, v1.ConditionScopingNotImplemented}
	count := func(kind string, conds [][]metav1.Condition) {
		n := map[[2]string]float64{}
		for _, t := range types {
			for _, s := range []string{"True", "False", "Unknown"} {
				n[[2]string{t, s}] = 0
			}
		}
		for _, cs := range conds {
			for _, t := range types {
				st := "Unknown"
				if c := meta.FindStatusCondition(cs, t); c != nil {
					st = string(c.Status)
				}
				n[[2]string{t, st}]++
			}
		}
		for k, v := range n {
			ch <- prometheus.MustNewConstMetric(resourcesDesc, prometheus.GaugeValue, v, kind, k[0], k[1])
		}
	}
	var bl v1.BucketyList
	if err := r.List(ctx, &bl); err == nil {
		conds := make([][]metav1.Condition, len(bl.Items))
		for i, b := range bl.Items {
			conds[i] = b.Status.Conditions
		}
		count("Buckety", conds)
	}
	var al v1.BucketyAccessList
	if err := r.List(ctx, &al); err == nil {
		conds := make([][]metav1.Condition, len(al.Items))
		for i, a := range al.Items {
			conds[i] = a.Status.Conditions
		}
		count("BucketyAccess", conds)
	}
}
