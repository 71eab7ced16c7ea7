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
	count := func(kind string, decls []v1.ConditionDecl, conds [][]metav1.Condition) {
		n := map[[2]string]float64{}
		for _, d := range decls {
			for _, s := range []string{"True", "False", "Unknown"} {
				n[[2]string{d.Type, s}] = 0
			}
		}
		for _, cs := range conds {
			for _, d := range decls {
				st := "Unknown"
				if c := meta.FindStatusCondition(cs, d.Type); c != nil {
					st = string(c.Status)
				}
				n[[2]string{d.Type, st}]++
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
		count("Buckety", v1.BucketyConditions, conds)
	}
	var al v1.BucketyAccessList
	if err := r.List(ctx, &al); err == nil {
		conds := make([][]metav1.Condition, len(al.Items))
		for i, a := range al.Items {
			conds[i] = a.Status.Conditions
		}
		count("BucketyAccess", v1.BucketyAccessConditions, conds)
	}
}
