package versityadmin

import (
	"strings"
	"testing"
)

func TestValidKey(t *testing.T) {
	for key, ok := range map[string]bool{
		"bkt-test-access-a":      true,
		"ABCDEFGHIJ0123456789":   true,
		"under_score_key_0001":   true,
		strings.Repeat("k", 16):  true,
		strings.Repeat("k", 15):  false,
		strings.Repeat("k", 128): true,
		strings.Repeat("k", 129): false,
		"*":                      false,
		"has/slash-0000000000":   false,
		"has,comma-0000000000":   false,
		"has=equals-000000000":   false,
		"has space-0000000000":   false,
		"arn:aws:iam::0000000":   false,
		"nön-ascii-0000000000":   false,
	} {
		if err := ValidKey(key); (err == nil) != ok {
			t.Errorf("ValidKey(%q): want ok=%v, got %v", key, ok, err)
		}
	}
}
