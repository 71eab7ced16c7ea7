// Package budget holds what a namespace's budget on a backend counts
// (config limits: partitions, diskBytes, quotaBytes) and the one check the
// admission webhook and the controller both make: the webhook from its
// cache of Bucketies, the controller again from the claims it writes,
// since the webhook's cache may lag a burst of creates.
package budget

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
)

// Footprint is what parameters make a resource of backend b count: the
// driver's FootprintMeasurer, or nothing for a driver without one.
func Footprint(b *config.Backend, params map[string]string) drivers.Footprint {
	m, ok := b.DriverImpl().(drivers.FootprintMeasurer)
	if !ok {
		return drivers.Footprint{}
	}
	return m.Footprint(b.Options(), params)
}

// Counted is what a footprint counts against a budget: the unbounded
// (-1) counts as nothing, since admission refuses it wherever a budget
// would count it.
func Counted(f drivers.Footprint) v1.Budgeted {
	return v1.Budgeted{Partitions: max(f.Partitions, 0), DiskBytes: max(f.DiskBytes, 0), QuotaBytes: max(f.QuotaBytes, 0)}
}

// Add sums two uses.
func Add(a, b v1.Budgeted) v1.Budgeted {
	return v1.Budgeted{Partitions: a.Partitions + b.Partitions, DiskBytes: a.DiskBytes + b.DiskBytes, QuotaBytes: a.QuotaBytes + b.QuotaBytes}
}

// Unbounded refuses a resource whose footprint has no bound in a dimension
// the backend budgets: a topic without retention.bytes under a disk
// budget, a bucket without a quota under a quota budget.
func Unbounded(p *field.Path, b *config.Backend, f drivers.Footprint) field.ErrorList {
	l := b.Limits
	var errs field.ErrorList
	if l != nil && l.DiskBytes.Bytes > 0 && f.DiskBytes < 0 {
		errs = append(errs, field.Required(p.Key("config.retention.bytes"), fmt.Sprintf("backend %s gives each namespace a disk budget (limits.diskBytes: %s in buckety-controller.yaml), and a topic counts retention.bytes × partitions against it: set config.retention.bytes to a byte count, with a cleanup.policy that deletes (unbounded retention and compaction alone, which Kafka never trims by size, are refused)", b.Name, drivers.FormatBytes(l.DiskBytes.Bytes))))
	}
	if l != nil && l.QuotaBytes.Bytes > 0 && f.QuotaBytes < 0 {
		errs = append(errs, field.Required(p.Key("quota"), fmt.Sprintf("backend %s gives each namespace a bucket quota budget (limits.quotaBytes: %s in buckety-controller.yaml), and a bucket counts its quota against it: set quota to a byte count", b.Name, drivers.FormatBytes(l.QuotaBytes.Bytes))))
	}
	return errs
}

// dimension is one budgeted figure.
type dimension struct {
	key, unit string
	budget    int64
	get       func(v1.Budgeted) int64
	format    func(int64) string
}

func dimensions(l *config.Limits) []dimension {
	plain := func(n int64) string { return fmt.Sprint(n) }
	return []dimension{
		{"partitions", "partitions", l.Partitions, func(u v1.Budgeted) int64 { return u.Partitions }, plain},
		{"diskBytes", "of disk (retention.bytes × partitions)", l.DiskBytes.Bytes, func(u v1.Budgeted) int64 { return u.DiskBytes }, drivers.FormatBytes},
		{"quotaBytes", "of bucket quota", l.QuotaBytes.Bytes, func(u v1.Budgeted) int64 { return u.QuotaBytes }, drivers.FormatBytes},
	}
}

// Exceeded says why the namespace ns has no room on backend b for a
// resource that asks for asked, where others is what the namespace's other
// resources use and had is what this resource counted until now (zero for
// a new one). Only growth is refused: a dimension that does not grow
// passes even when the namespace is over its budget (a budget lowered
// below use blocks growth and never takes anything away). "" when it fits.
func Exceeded(b *config.Backend, ns string, others, asked, had v1.Budgeted) string {
	l := b.Limits
	if !l.HasByteBudget() {
		return ""
	}
	var over []string
	for _, d := range dimensions(l) {
		if d.budget <= 0 || d.get(asked) <= d.get(had) || d.get(others)+d.get(asked) <= d.budget {
			continue
		}
		over = append(over, fmt.Sprintf("it uses %s and asks for %s more, over its budget of %s %s (limits.%s)",
			d.format(d.get(others)+d.get(had)), d.format(d.get(asked)-d.get(had)), d.format(d.budget), d.unit, d.key))
	}
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf("namespace %s has no room on backend %s: %s in buckety-controller.yaml; delete or shrink another resource, or ask the cluster maintainer", ns, b.Name, strings.Join(over, "; "))
}
