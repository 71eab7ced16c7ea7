package s3

import (
	"reflect"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestFootprint: a bucket's quota and soft quota from its parameters
// alone, the soft one defaulting to 90% of the quota.
func TestFootprint(t *testing.T) {
	for _, c := range []struct {
		name   string
		params map[string]string
		want   drivers.Footprint
	}{
		{"nothing", nil, drivers.Footprint{QuotaBytes: -1}},
		{"quota: soft at 90%", map[string]string{ParamQuota: "10Gi"}, drivers.Footprint{QuotaBytes: 10 << 30, SoftQuotaBytes: 9 * (10 << 30) / 10}},
		{"quota and softQuota", map[string]string{ParamQuota: "10Gi", ParamSoftQuota: "5Gi"}, drivers.Footprint{QuotaBytes: 10 << 30, SoftQuotaBytes: 5 << 30}},
		{"softQuota alone", map[string]string{ParamSoftQuota: "1G"}, drivers.Footprint{QuotaBytes: -1, SoftQuotaBytes: 1_000_000_000}},
		{"90% rounds down", map[string]string{ParamQuota: "15"}, drivers.Footprint{QuotaBytes: 15, SoftQuotaBytes: 13}},
		{"90% of the largest does not overflow", map[string]string{ParamQuota: "9223372036854775807"}, drivers.Footprint{QuotaBytes: 1<<63 - 1, SoftQuotaBytes: 8301034833169298226}},
		{"other parameters count nothing", map[string]string{ParamVersioning: "true", ParamAnonymousRead: "true"}, drivers.Footprint{QuotaBytes: -1}},
	} {
		if got := New().Footprint(&Config{}, c.params); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: want %+v, got %+v", c.name, c.want, got)
		}
	}
}
