// Package budget holds what a namespace's budget on a backend counts
// (config limits: partitions, diskBytes, quotaBytes) and the one check the
// admission webhook and the controller both make: the webhook from its
// cache of Bucketies, the controller again from the claims it writes,
// since the webhook's cache may lag a burst of creates.
package budget

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

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

// Add sums two uses, each dimension saturating at the largest int64: a
// figure a tenant sets near it must not wrap the sum to a negative that
// fits every budget.
func Add(a, b v1.Budgeted) v1.Budgeted {
	return v1.Budgeted{
		Partitions: drivers.AddSaturating(a.Partitions, b.Partitions),
		DiskBytes:  drivers.AddSaturating(a.DiskBytes, b.DiskBytes),
		QuotaBytes: drivers.AddSaturating(a.QuotaBytes, b.QuotaBytes),
	}
}

// Kept is what a resource that counted had counts now that its parameters
// ask for asked, where f is the footprint asked came from: a topic's
// partitions never shrink (Kafka cannot remove them, so a partitions
// parameter removed or lowered leaves the topic as it was), so it counts
// at least the partitions it had, with its disk per partition scaled to
// them; and a dimension the parameters leave unbounded (left to the
// broker's default: admission refuses that on a new resource) keeps
// counting what was recorded.
func Kept(f drivers.Footprint, asked, had v1.Budgeted) v1.Budgeted {
	out := asked
	if f.Partitions < 0 || out.Partitions < had.Partitions {
		out.Partitions = max(out.Partitions, had.Partitions)
		if asked.Partitions > 0 && asked.DiskBytes > 0 {
			perPartition := asked.DiskBytes / asked.Partitions
			if perPartition > math.MaxInt64/out.Partitions {
				out.DiskBytes = math.MaxInt64
			} else {
				out.DiskBytes = perPartition * out.Partitions
			}
		}
	}
	if f.DiskBytes < 0 {
		out.DiskBytes = max(out.DiskBytes, had.DiskBytes)
	}
	if f.QuotaBytes < 0 {
		out.QuotaBytes = max(out.QuotaBytes, had.QuotaBytes)
	}
	return out
}

// AtLeastUsed is asked with a lowered bucket quota counted as at least
// what the bucket was last measured to hold (status.usage), up to what it
// counted before (had): a quota lowered below the data already stored
// takes nothing away on the server (MinIO and SeaweedFS keep what is over
// it), so counting the lowered quota let a tenant fill a bucket, lower its
// quota, and fill another under the same budget, without end. Where what
// the bucket holds is not known (u nil: not measured yet, a Buckety made
// again over the bucket after its finalizer was stripped, a measurement
// too old or one the service could not give), it counts what it counted
// before. It never counts more than before, so it never refuses anything:
// a bucket whose data runs past a quota it kept is not made to look like
// growth. The other dimensions are as asked: a topic's retention lowered
// deletes what is over it.
func AtLeastUsed(asked, had v1.Budgeted, u *v1.Usage) v1.Budgeted {
	if asked.QuotaBytes > 0 && asked.QuotaBytes < had.QuotaBytes {
		used := had.QuotaBytes
		if u != nil {
			used = u.Bytes
		}
		asked.QuotaBytes = min(had.QuotaBytes, max(asked.QuotaBytes, used))
	}
	return asked
}

// FreshUsage is u when it was measured at most maxAge before now, nil
// otherwise (and always when maxAge is 0: usage is not measured). A
// measurement the refresh could not renew (a bucket listed past its cap)
// stays in the status with its time, and must not count for what the
// bucket holds now.
func FreshUsage(u *v1.Usage, maxAge time.Duration, now time.Time) *v1.Usage {
	if u == nil || maxAge <= 0 || now.Sub(u.MeasuredAt.Time) > maxAge {
		return nil
	}
	return u
}

// Unbounded refuses a resource whose footprint has no bound in a dimension
// the backend budgets: a topic that leaves its partitions to the broker
// under a partition or disk budget; a topic without retention.bytes or
// segment.bytes, or compacted only, under a disk budget, or one setting
// what holds disk uncounted (Footprint.DiskRefused); a bucket without a
// quota under a quota budget.
func Unbounded(p *field.Path, b *config.Backend, f drivers.Footprint) field.ErrorList {
	l := b.Limits
	if l == nil {
		return nil
	}
	var errs field.ErrorList
	disk := l.DiskBytes.Bytes > 0
	if (l.Partitions > 0 || disk) && f.Partitions < 0 {
		which := fmt.Sprintf("a partition budget (%s: %d", b.LimitsKey("partitions"), l.Partitions)
		if l.Partitions == 0 {
			which = fmt.Sprintf("a disk budget (%s: %s", b.LimitsKey("diskBytes"), drivers.FormatBytes(l.DiskBytes.Bytes))
		}
		errs = append(errs, field.Required(p.Key("partitions"), fmt.Sprintf("backend %s gives each namespace %s in buckety-controller.yaml), and a topic that leaves its partition count to the broker's default could take any number: set partitions", b.Name, which)))
	}
	if disk && f.DiskBytes < 0 && f.DiskUnboundedBy != "" && f.DiskUnboundedBy != "partitions" {
		errs = append(errs, field.Required(p.Key(f.DiskUnboundedBy), fmt.Sprintf("backend %s gives each namespace a disk budget (%s: %s in buckety-controller.yaml), and a topic counts (retention.bytes + segment.bytes + the max.message.bytes it sets) × partitions against it, since Kafka keeps each partition's active segment beyond retention.bytes: set config.retention.bytes and config.segment.bytes to byte counts, with a cleanup.policy that deletes (unbounded retention, the broker's default segment size and compaction alone, which Kafka never trims by size, are refused)", b.Name, b.LimitsKey("diskBytes"), drivers.FormatBytes(l.DiskBytes.Bytes))))
	}
	if disk {
		keys := make([]string, 0, len(f.DiskRefused))
		for k := range f.DiskRefused {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			errs = append(errs, field.Forbidden(p.Key(k), fmt.Sprintf("%s (backend %s, %s: %s in buckety-controller.yaml)", f.DiskRefused[k], b.Name, b.LimitsKey("diskBytes"), drivers.FormatBytes(l.DiskBytes.Bytes))))
		}
	}
	if l.QuotaBytes.Bytes > 0 && f.QuotaBytes < 0 {
		errs = append(errs, field.Required(p.Key("quota"), fmt.Sprintf("backend %s gives each namespace a bucket quota budget (%s: %s in buckety-controller.yaml), and a bucket counts its quota against it: set quota to a byte count", b.Name, b.LimitsKey("quotaBytes"), drivers.FormatBytes(l.QuotaBytes.Bytes))))
	}
	return errs
}

// BecameUnbounded is Unbounded for a resource that counted had: the
// dimensions it counted bounded then (had's figure above 0) and leaves
// unbounded now. A dimension that was unbounded when the figure was
// recorded (a topic that left its partitions to the broker before the
// rule) is not refused again: that resource keeps its other edits, as at
// admission. What would hold disk uncounted (Footprint.DiskRefused) is
// left to the check of a changed figure: a claim does not say whether it
// was recorded under a disk budget, and a setting made before one must
// not strand its resource.
func BecameUnbounded(p *field.Path, b *config.Backend, f drivers.Footprint, had v1.Budgeted) field.ErrorList {
	f.DiskRefused = nil
	if had.Partitions == 0 && f.Partitions < 0 {
		f.Partitions = 0
	}
	if had.DiskBytes == 0 && f.DiskBytes < 0 {
		f.DiskBytes, f.DiskUnboundedBy = 0, ""
	}
	if had.QuotaBytes == 0 && f.QuotaBytes < 0 {
		f.QuotaBytes = 0
	}
	return Unbounded(p, b, f)
}

// EffectiveParameters are the parameters of Buckety o on backend b that
// the driver gets and budgets count: its spec.parameters merged over the
// backend defaults in effect for it (config.Backend.DefaultsFor).
func EffectiveParameters(b *config.Backend, o *v1.Buckety) map[string]string {
	return config.Effective(o.Spec.Parameters, Defaults(b, o))
}

// Defaults are the backend defaults in effect for o, as
// status.parameterDefaults records them.
func Defaults(b *config.Backend, o *v1.Buckety) map[string]string {
	return b.DefaultsFor(o.Status.ParameterDefaults, o.Status.Provenance != "")
}

// ExceededParameter names the parameter a refusal of Exceeded is about:
// the first budgeted dimension over its budget, as the parameter that
// sets it (partitions; quota; for disk, the first of its parameters that
// grew from old, and config.retention.bytes on create, old nil). "" when
// nothing is over.
func ExceededParameter(b *config.Backend, others, asked, had v1.Budgeted, old, new map[string]string) string {
	l := b.Limits
	if !l.HasByteBudget() {
		return ""
	}
	for _, d := range dimensions(l) {
		if !d.over(others, asked, had) {
			continue
		}
		switch d.key {
		case "partitions":
			return "partitions"
		case "quotaBytes":
			return "quota"
		}
		if old != nil {
			for _, k := range []string{"partitions", "config.retention.bytes", "config.segment.bytes", "config.max.message.bytes"} {
				if grew(old[k], new[k]) {
					return k
				}
			}
		}
		return "config.retention.bytes"
	}
	return ""
}

// grew reports whether a byte or count parameter went from was to is
// upwards (or was set where it was not).
func grew(was, is string) bool {
	if is == "" || is == was {
		return false
	}
	n, err := strconv.ParseInt(is, 10, 64)
	if err != nil {
		return false
	}
	if was == "" {
		return true
	}
	o, err := strconv.ParseInt(was, 10, 64)
	return err != nil || n > o
}

// over reports whether asked grows past had in dimension d and, with
// others, past its budget.
func (d dimension) over(others, asked, had v1.Budgeted) bool {
	return d.budget > 0 && d.get(asked) > d.get(had) && drivers.AddSaturating(d.get(others), d.get(asked)) > d.budget
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
		{"diskBytes", "of disk ((retention.bytes + segment.bytes + max.message.bytes set) × partitions)", l.DiskBytes.Bytes, func(u v1.Budgeted) int64 { return u.DiskBytes }, drivers.FormatBytes},
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
		if !d.over(others, asked, had) {
			continue
		}
		over = append(over, fmt.Sprintf("it uses %s and asks for %s more, over its budget of %s %s (%s)",
			d.format(drivers.AddSaturating(d.get(others), d.get(had))), d.format(d.get(asked)-d.get(had)), d.format(d.budget), d.unit, b.LimitsKey(d.key)))
	}
	if len(over) == 0 {
		return ""
	}
	return fmt.Sprintf("namespace %s has no room on backend %s: %s in buckety-controller.yaml; delete or shrink another resource, or ask the cluster maintainer", ns, b.Name, strings.Join(over, "; "))
}
