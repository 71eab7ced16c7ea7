package s3

import "github.com/Yolean/buckety-controller/drivers"

var _ drivers.FootprintMeasurer = (*Driver)(nil)

// Footprint implements drivers.FootprintMeasurer: a bucket counts its
// hard quota (-1 without one) against byte budgets, and warns above its
// softQuota, or without one above 90% of its quota.
func (*Driver) Footprint(_ drivers.Config, params map[string]string) drivers.Footprint {
	p := parseParams(params)
	f := drivers.Footprint{QuotaBytes: -1, SoftQuotaBytes: p.softQuota}
	if p.quota > 0 {
		f.QuotaBytes = p.quota
		if f.SoftQuotaBytes == 0 {
			f.SoftQuotaBytes = p.quota/10*9 + p.quota%10*9/10
		}
	}
	return f
}
