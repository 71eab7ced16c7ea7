package options

import (
	"fmt"
	"time"
)

// The usage refresh measures every provisioned resource of a backend once
// per interval, in one driver call (DescribeLogDirs and ListOffsets for a
// whole Kafka cluster, one data usage report for MinIO). Five minutes keeps
// status.usage and QuotaWarning within minutes of the service while a
// thousand Bucketies cost a few requests per interval; a status write
// happens only where a figure changed (or hourly, see
// buckety.UsageRewrite).
const (
	DefaultUsageInterval = 5 * time.Minute
	// minUsageInterval keeps a typo from measuring in a hot loop.
	minUsageInterval = time.Second
)

// validateUsage checks --usage-interval.
func (f *Flags) validateUsage() error {
	if f.Usage != 0 && f.Usage < minUsageInterval {
		return fmt.Errorf("--usage-interval %s: want 0 (no usage refresh) or at least %s", f.Usage, minUsageInterval)
	}
	return nil
}
