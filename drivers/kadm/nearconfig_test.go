package kadm

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestMisspeltTopicConfigIsRefused: a config key two edits or fewer from an
// Apache Kafka topic config was admitted with a warning (the broker then
// refused the create), and a limit on it (limits.parameterMax) loaded and
// bounded nothing. It is refused, naming the config meant; a broker's own
// configs, far from every Apache name, are passed on with the warning as
// before.
func TestMisspeltTopicConfigIsRefused(t *testing.T) {
	d := New()
	p := field.NewPath("spec", "parameters")
	for key, want := range map[string]string{
		"config.retention.byte":       "config.retention.bytes",
		"config.retention_ms":         "config.retention.ms",
		"config.segment.bites":        "config.segment.bytes",
		"config.min.insync.replica":   "config.min.insync.replicas",
		"config.unclean.leader.elect": "",
		"config.redpanda.remote.read": "",
		"config.write.caching":        "",
		"config.flush.bytes":          "",
	} {
		warnings, errs := d.ValidateParameters(p, &Config{}, nil, map[string]string{key: "1"})
		if want == "" {
			if len(errs) != 0 {
				t.Errorf("%s: want it passed on with a warning, got %v", key, errs)
			} else if len(warnings) == 0 {
				t.Errorf("%s: want the not-an-Apache-config warning, got none", key)
			}
			continue
		}
		if len(errs) != 1 || errs[0].Type != field.ErrorTypeNotSupported || errs[0].Field != p.Key(key).String() || !strings.Contains(errs[0].Error(), want) {
			t.Errorf("%s: want it refused as not supported, naming %s, got %v", key, want, errs)
		}
	}
	for c := range apacheTopicConfigs {
		if _, errs := d.ValidateParameters(p, &Config{}, nil, map[string]string{ConfigPrefix + c: "1"}); len(errs) != 0 && errs[0].Type == field.ErrorTypeNotSupported {
			t.Errorf("%s: an Apache topic config refused as unknown: %v", c, errs)
		}
	}
}
