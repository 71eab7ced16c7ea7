package budget

import (
	"math"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
)

func backend(l config.Limits) *config.Backend {
	return &config.Backend{Name: "kafka", Limits: &l}
}

func TestExceeded(t *testing.T) {
	gi := int64(1 << 30)
	b := backend(config.Limits{Partitions: 10, DiskBytes: drivers.ByteSize{Bytes: 10 * gi}})
	tests := []struct {
		name               string
		others, asked, had v1.Budgeted
		want               []string // substrings; none: fits
	}{
		{name: "fits exactly", others: v1.Budgeted{Partitions: 7}, asked: v1.Budgeted{Partitions: 3}},
		{name: "one partition over", others: v1.Budgeted{Partitions: 8}, asked: v1.Budgeted{Partitions: 3},
			want: []string{"namespace team has no room on backend kafka", "it uses 8 and asks for 3 more, over its budget of 10 partitions (limits.partitions)"}},
		{name: "disk over, in binary units", others: v1.Budgeted{DiskBytes: 9 * gi}, asked: v1.Budgeted{DiskBytes: 2 * gi},
			want: []string{"it uses 9Gi and asks for 2Gi more, over its budget of 10Gi of disk ((retention.bytes + segment.bytes + max.message.bytes set) × partitions) (limits.diskBytes)"}},
		{name: "growth counts from what it had", others: v1.Budgeted{Partitions: 6}, asked: v1.Budgeted{Partitions: 5}, had: v1.Budgeted{Partitions: 3},
			want: []string{"it uses 9 and asks for 2 more"}},
		{name: "over budget but not growing passes", others: v1.Budgeted{Partitions: 20}, asked: v1.Budgeted{Partitions: 3}, had: v1.Budgeted{Partitions: 3}},
		{name: "shrinking passes over budget", others: v1.Budgeted{Partitions: 20, DiskBytes: 20 * gi}, asked: v1.Budgeted{DiskBytes: gi}, had: v1.Budgeted{DiskBytes: 2 * gi}},
		{name: "an unbudgeted dimension never refuses", others: v1.Budgeted{QuotaBytes: 1 << 50}, asked: v1.Budgeted{QuotaBytes: 1 << 50}},
		{name: "both reported", others: v1.Budgeted{Partitions: 10, DiskBytes: 10 * gi}, asked: v1.Budgeted{Partitions: 1, DiskBytes: 1},
			want: []string{"limits.partitions", "limits.diskBytes"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Exceeded(b, "team", tt.others, tt.asked, tt.had)
			if len(tt.want) == 0 && got != "" {
				t.Fatalf("want it to fit, got %q", got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("want %q in %q", w, got)
				}
			}
		})
	}
	if got := Exceeded(&config.Backend{Name: "kafka"}, "team", v1.Budgeted{Partitions: 1 << 40}, v1.Budgeted{Partitions: 1}, v1.Budgeted{}); got != "" {
		t.Errorf("no limits: want no refusal, got %q", got)
	}
}

func TestUnbounded(t *testing.T) {
	p := field.NewPath("spec", "parameters")
	disk := backend(config.Limits{DiskBytes: drivers.ByteSize{Bytes: 1 << 30}})
	if errs := Unbounded(p, disk, drivers.Footprint{Partitions: 3, DiskBytes: -1, DiskUnboundedBy: "config.retention.bytes"}); len(errs) != 1 || errs[0].Field != "spec.parameters[config.retention.bytes]" || !strings.Contains(errs[0].Detail, "limits.diskBytes: 1Gi") {
		t.Errorf("unbounded topic under a disk budget: got %v", errs)
	}
	if errs := Unbounded(p, disk, drivers.Footprint{QuotaBytes: -1}); len(errs) != 0 {
		t.Errorf("a bucket without quota under a disk budget only: want no error, got %v", errs)
	}
	quota := backend(config.Limits{QuotaBytes: drivers.ByteSize{Bytes: 1 << 40}})
	if errs := Unbounded(p, quota, drivers.Footprint{QuotaBytes: -1}); len(errs) != 1 || errs[0].Field != "spec.parameters[quota]" || !strings.Contains(errs[0].Detail, "limits.quotaBytes: 1Ti") {
		t.Errorf("bucket without quota under a quota budget: got %v", errs)
	}
	if errs := Unbounded(p, backend(config.Limits{Partitions: 5}), drivers.Footprint{DiskBytes: -1, QuotaBytes: -1}); len(errs) != 0 {
		t.Errorf("partition budget only: want no error, got %v", errs)
	}
}

func TestCounted(t *testing.T) {
	got := Counted(drivers.Footprint{Partitions: 3, DiskBytes: -1, QuotaBytes: 5})
	if got != (v1.Budgeted{Partitions: 3, QuotaBytes: 5}) {
		t.Errorf("got %+v", got)
	}
}

func TestParseBytes(t *testing.T) {
	for in, want := range map[string]int64{"10Gi": 10 << 30, "500M": 500e6, "1048576": 1 << 20, "0": 0,
		// Whole numbers of bytes written with a fraction, which
		// resource.Quantity's AsInt64 refused, and exponents.
		"1.5Gi": 3 << 29, "1.0": 1, "0.5Ki": 512, "1e3": 1000, "7Ei": 7 << 60} {
		got, err := drivers.ParseBytes(in)
		if err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"-1", "1.5", "ten", "1m", "", "10 Gi", "10GB", "+1",
		// Beyond int64, which resource.Quantity clamps to its largest.
		"8Ei", "9223372036854775808", "1e40"} {
		if _, err := drivers.ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q): want an error", in)
		}
	}
}

// TestSumsSaturate (issue 50, 1): a figure near the largest int64 does not
// wrap a namespace's sum to a negative that fits every budget.
func TestSumsSaturate(t *testing.T) {
	const most = int64(math.MaxInt64)
	got := Add(v1.Budgeted{QuotaBytes: 1, DiskBytes: 5, Partitions: 2}, v1.Budgeted{QuotaBytes: most, DiskBytes: most, Partitions: most})
	if got != (v1.Budgeted{QuotaBytes: most, DiskBytes: most, Partitions: most}) {
		t.Errorf("want every dimension saturated at %d, got %+v", most, got)
	}
	quota := backend(config.Limits{QuotaBytes: drivers.ByteSize{Bytes: 2 << 30}})
	for _, c := range []struct {
		name          string
		others, asked v1.Budgeted
	}{
		{"a second figure near the largest", v1.Budgeted{QuotaBytes: 1}, v1.Budgeted{QuotaBytes: most}},
		{"a single figure above the budget", v1.Budgeted{}, v1.Budgeted{QuotaBytes: 3 << 30}},
		{"after a saturated sum", Add(v1.Budgeted{QuotaBytes: most}, v1.Budgeted{QuotaBytes: most}), v1.Budgeted{QuotaBytes: 1}},
	} {
		if msg := Exceeded(quota, "team", c.others, c.asked, v1.Budgeted{}); !strings.Contains(msg, "limits.quotaBytes") {
			t.Errorf("%s: want it refused under a 2Gi quota budget, got %q", c.name, msg)
		}
	}
}

// TestKept (issue 50, 2): a topic's recorded partitions never drop when
// its parameters remove or lower them (the topic keeps them), its disk
// scaled to them; a dimension left unbounded keeps what was recorded.
func TestKept(t *testing.T) {
	for _, c := range []struct {
		name            string
		f               drivers.Footprint
		asked, had, out v1.Budgeted
	}{
		{"growth counts as asked", drivers.Footprint{Partitions: 8, DiskBytes: 80}, v1.Budgeted{Partitions: 8, DiskBytes: 80}, v1.Budgeted{Partitions: 4, DiskBytes: 40}, v1.Budgeted{Partitions: 8, DiskBytes: 80}},
		{"partitions removed keep the count", drivers.Footprint{Partitions: -1, DiskBytes: -1}, v1.Budgeted{}, v1.Budgeted{Partitions: 200, DiskBytes: 2000}, v1.Budgeted{Partitions: 200, DiskBytes: 2000}},
		{"partitions lowered keep the count, disk per partition scaled", drivers.Footprint{Partitions: 1, DiskBytes: 10}, v1.Budgeted{Partitions: 1, DiskBytes: 10}, v1.Budgeted{Partitions: 200, DiskBytes: 2000}, v1.Budgeted{Partitions: 200, DiskBytes: 2000}},
		{"retention lowered shrinks disk", drivers.Footprint{Partitions: 4, DiskBytes: 4}, v1.Budgeted{Partitions: 4, DiskBytes: 4}, v1.Budgeted{Partitions: 4, DiskBytes: 40}, v1.Budgeted{Partitions: 4, DiskBytes: 4}},
		{"a bucket's quota removed keeps it", drivers.Footprint{QuotaBytes: -1}, v1.Budgeted{}, v1.Budgeted{QuotaBytes: 5}, v1.Budgeted{QuotaBytes: 5}},
	} {
		if got := Kept(c.f, c.asked, c.had); got != c.out {
			t.Errorf("%s: want %+v, got %+v", c.name, c.out, got)
		}
	}
}

// TestUnboundedTopics (issue 50, 2 and 6): under a partition or disk
// budget a topic names its partitions; under a disk budget it names its
// segment size, and what holds disk uncounted is refused by name.
func TestUnboundedTopics(t *testing.T) {
	p := field.NewPath("spec", "parameters")
	parts := backend(config.Limits{Partitions: 10})
	if errs := Unbounded(p, parts, drivers.Footprint{Partitions: -1, DiskBytes: -1, DiskUnboundedBy: "partitions"}); len(errs) != 1 || errs[0].Field != "spec.parameters[partitions]" || !strings.Contains(errs[0].Detail, "limits.partitions: 10") {
		t.Errorf("broker's partitions under a partition budget: want partitions required, got %v", errs)
	}
	disk := backend(config.Limits{DiskBytes: drivers.ByteSize{Bytes: 1 << 30}})
	if errs := Unbounded(p, disk, drivers.Footprint{Partitions: 3, DiskBytes: -1, DiskUnboundedBy: "config.segment.bytes"}); len(errs) != 1 || errs[0].Field != "spec.parameters[config.segment.bytes]" {
		t.Errorf("no segment.bytes under a disk budget: want it required, got %v", errs)
	}
	refused := drivers.Footprint{Partitions: 1, DiskBytes: 10, DiskRefused: map[string]string{"config.file.delete.delay.ms": "must be at most 60000", "config.segment.index.bytes": "must be at most 10485760"}}
	errs := Unbounded(p, disk, refused)
	if len(errs) != 2 || errs[0].Field != "spec.parameters[config.file.delete.delay.ms]" || errs[1].Field != "spec.parameters[config.segment.index.bytes]" || !strings.Contains(errs[0].Detail, "limits.diskBytes: 1Gi") {
		t.Errorf("configs holding disk uncounted: want both refused by name, got %v", errs)
	}
	if errs := Unbounded(p, parts, refused); len(errs) != 0 {
		t.Errorf("without a disk budget: want nothing refused, got %v", errs)
	}
}

// TestAtLeastUsed: a bucket quota lowered below what the bucket holds
// counts what it holds, up to what it counted before; a quota kept or
// raised, or lowered above the data, counts as asked; so does a bucket not
// yet measured, and the other dimensions.
func TestAtLeastUsed(t *testing.T) {
	const ti = int64(1) << 40
	used := func(b int64) *v1.Usage { return &v1.Usage{Bytes: b} }
	q := func(b int64) v1.Budgeted { return v1.Budgeted{QuotaBytes: b} }
	for _, c := range []struct {
		name       string
		asked, had v1.Budgeted
		u          *v1.Usage
		want       int64
	}{
		{"filled, then lowered to a byte", q(1), q(ti), used(ti), ti},
		{"half filled, then lowered to a byte", q(1), q(ti), used(ti / 2), ti / 2},
		{"lowered above what it holds", q(ti / 2), q(ti), used(ti / 4), ti / 2},
		{"holding more than it counted before", q(1), q(ti), used(2 * ti), ti},
		{"kept, holding more (MinIO's quota is checked late)", q(ti), q(ti), used(2 * ti), ti},
		{"raised", q(2 * ti), q(ti), used(ti), 2 * ti},
		{"not measured yet, or made again over the bucket", q(1), q(ti), nil, ti},
		{"lowered, not measured, above nothing", q(ti / 2), q(ti), nil, ti},
		{"a new bucket", q(1), v1.Budgeted{}, used(ti), 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := AtLeastUsed(c.asked, c.had, c.u); got.QuotaBytes != c.want {
				t.Errorf("want %d quota bytes counted, got %d", c.want, got.QuotaBytes)
			}
		})
	}
	now := time.Now()
	at := func(d time.Duration) *v1.Usage { return &v1.Usage{Bytes: 1, MeasuredAt: metav1.NewTime(now.Add(-d))} }
	if FreshUsage(at(time.Minute), 15*time.Minute, now) == nil || FreshUsage(at(time.Hour), 15*time.Minute, now) != nil ||
		FreshUsage(at(0), 0, now) != nil || FreshUsage(nil, time.Hour, now) != nil {
		t.Error("want a measurement counted only within its age, and never when usage is not measured")
	}
	topic := v1.Budgeted{Partitions: 3, DiskBytes: 1000}
	if got := AtLeastUsed(topic, v1.Budgeted{Partitions: 3, DiskBytes: 9000}, used(9000)); got != topic {
		t.Errorf("a topic's retention lowered deletes data: want it counted as asked, got %+v", got)
	}
}

// TestBecameUnbounded: the controller's check on a counted resource
// refuses only the dimensions it counted bounded and now leaves unbounded;
// a dimension unbounded when its figure was recorded is not refused again.
func TestBecameUnbounded(t *testing.T) {
	gi := int64(1 << 30)
	b := backend(config.Limits{Partitions: 10, DiskBytes: drivers.ByteSize{Bytes: 10 * gi}, QuotaBytes: drivers.ByteSize{Bytes: gi}})
	p := field.NewPath("spec", "parameters")
	tests := []struct {
		name string
		f    drivers.Footprint
		had  v1.Budgeted
		want string // the field refused; "": none
	}{
		{"bounded stays bounded", drivers.Footprint{Partitions: 3, DiskBytes: gi}, v1.Budgeted{Partitions: 3, DiskBytes: gi}, ""},
		{"retention removed from a counted topic", drivers.Footprint{Partitions: 3, DiskBytes: -1, DiskUnboundedBy: "config.retention.bytes"}, v1.Budgeted{Partitions: 3, DiskBytes: gi}, "spec.parameters[config.retention.bytes]"},
		{"partitions removed from a counted topic", drivers.Footprint{Partitions: -1, DiskBytes: -1, DiskUnboundedBy: "partitions"}, v1.Budgeted{Partitions: 3, DiskBytes: gi}, "spec.parameters[partitions]"},
		{"quota removed from a counted bucket", drivers.Footprint{QuotaBytes: -1}, v1.Budgeted{QuotaBytes: gi}, "spec.parameters[quota]"},
		{"disk held uncounted is left to the check of a changed figure", drivers.Footprint{Partitions: 3, DiskBytes: gi, DiskRefused: map[string]string{"config.file.delete.delay.ms": "keeps deleted segments"}}, v1.Budgeted{Partitions: 3, DiskBytes: gi}, ""},
		{"unbounded when recorded, unbounded now", drivers.Footprint{Partitions: -1, DiskBytes: -1, DiskUnboundedBy: "partitions"}, v1.Budgeted{}, ""},
		{"retention unbounded when recorded", drivers.Footprint{Partitions: 3, DiskBytes: -1, DiskUnboundedBy: "config.segment.bytes"}, v1.Budgeted{Partitions: 3}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := BecameUnbounded(p, b, tt.f, tt.had)
			if tt.want == "" {
				if len(errs) > 0 {
					t.Fatalf("want nothing refused, got %v", errs)
				}
				return
			}
			if len(errs) == 0 || errs[0].Field != tt.want {
				t.Fatalf("want %s refused first, got %v", tt.want, errs)
			}
		})
	}
}
