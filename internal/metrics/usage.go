package metrics

import (
	"sort"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// UsageRow is one Buckety's measured usage and quotas, for the usage
// metrics.
type UsageRow struct {
	Namespace, Buckety string
	// Known: the backend measured it; Bytes is then its usage.
	Known bool
	Bytes int64
	// HardQuota and SoftQuota in bytes; 0: none.
	HardQuota, SoftQuota int64
}

// BudgetRow is what one namespace uses of one of its budgets on a backend.
type BudgetRow struct {
	Namespace string
	// Budget: bucketies, accesses, partitions, diskBytes or quotaBytes.
	Budget string
	Used   int64
	// Limit is the budget; 0: none.
	Limit int64
}

var (
	descResourceUsage = prometheus.NewDesc("buckety_resource_usage_bytes",
		"Bytes a Buckety's backend resource holds, as its service last reported (status.usage).",
		[]string{"backend", "namespace", "buckety"}, nil)
	descResourceQuota = prometheus.NewDesc("buckety_resource_quota_bytes",
		"A Buckety's quota in bytes, by kind: hard (enforced by the service) or soft (QuotaWarning only).",
		[]string{"backend", "namespace", "buckety", "kind"}, nil)
	descNamespaceUsage = prometheus.NewDesc("buckety_namespace_usage_bytes",
		"Bytes a namespace's measured resources hold on a backend.",
		[]string{"backend", "namespace"}, nil)
	descBudgetUsed = prometheus.NewDesc("buckety_namespace_budget_used",
		"What a namespace uses of a budget on a backend: bucketies and accesses counted, partitions summed, diskBytes and quotaBytes in bytes.",
		[]string{"backend", "namespace", "budget"}, nil)
	descBudgetLimit = prometheus.NewDesc("buckety_namespace_budget_limit",
		"A namespace's budget on a backend (config limits), for the budgets that are set.",
		[]string{"backend", "namespace", "budget"}, nil)

	// UsageRefreshes counts usage refreshes per backend by result: ok, or
	// error (nothing was measured).
	UsageRefreshes = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "buckety_usage_refreshes_total",
		Help: "Usage refreshes of a backend, by result (ok or error).",
	}, []string{"backend", "result"})

	usage = &usageCollector{rows: map[string][]UsageRow{}, budgets: map[string][]BudgetRow{}}
)

// SetUsage replaces what the usage metrics say of backend's resources.
func SetUsage(backend string, rows []UsageRow) {
	usage.mu.Lock()
	defer usage.mu.Unlock()
	usage.rows[backend] = rows
}

// SetBudgets replaces what the budget metrics say of backend's namespaces.
func SetBudgets(backend string, rows []BudgetRow) {
	usage.mu.Lock()
	defer usage.mu.Unlock()
	usage.budgets[backend] = rows
}

// usageCollector serves the last refresh of each backend as it was: a
// Buckety deleted since leaves no stale series behind.
type usageCollector struct {
	mu      sync.Mutex
	rows    map[string][]UsageRow
	budgets map[string][]BudgetRow
}

func (c *usageCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descResourceUsage, descResourceQuota, descNamespaceUsage, descBudgetUsed, descBudgetLimit} {
		ch <- d
	}
}

func (c *usageCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for backend, rows := range c.rows {
		perNS := map[string]int64{}
		for _, r := range rows {
			if r.Known {
				ch <- prometheus.MustNewConstMetric(descResourceUsage, prometheus.GaugeValue, float64(r.Bytes), backend, r.Namespace, r.Buckety)
				perNS[r.Namespace] += r.Bytes
			}
			if r.HardQuota > 0 {
				ch <- prometheus.MustNewConstMetric(descResourceQuota, prometheus.GaugeValue, float64(r.HardQuota), backend, r.Namespace, r.Buckety, "hard")
			}
			if r.SoftQuota > 0 {
				ch <- prometheus.MustNewConstMetric(descResourceQuota, prometheus.GaugeValue, float64(r.SoftQuota), backend, r.Namespace, r.Buckety, "soft")
			}
		}
		namespaces := make([]string, 0, len(perNS))
		for ns := range perNS {
			namespaces = append(namespaces, ns)
		}
		sort.Strings(namespaces)
		for _, ns := range namespaces {
			ch <- prometheus.MustNewConstMetric(descNamespaceUsage, prometheus.GaugeValue, float64(perNS[ns]), backend, ns)
		}
	}
	for backend, rows := range c.budgets {
		for _, r := range rows {
			ch <- prometheus.MustNewConstMetric(descBudgetUsed, prometheus.GaugeValue, float64(r.Used), backend, r.Namespace, r.Budget)
			if r.Limit > 0 {
				ch <- prometheus.MustNewConstMetric(descBudgetLimit, prometheus.GaugeValue, float64(r.Limit), backend, r.Namespace, r.Budget)
			}
		}
	}
}

func init() {
	ctrlmetrics.Registry.MustRegister(usage, UsageRefreshes)
}
