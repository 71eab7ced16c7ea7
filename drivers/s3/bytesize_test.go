package s3

import (
	"strings"
	"testing"
)

func TestParseByteSize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
		err  string
	}{
		{in: "1", want: 1},
		{in: "1048576", want: 1 << 20},
		{in: "10Gi", want: 10 << 30},
		{in: "500M", want: 500_000_000},
		{in: "2k", want: 2000},
		{in: "1e9", want: 1_000_000_000},
		{in: "1.5Ki", want: 1536},
		{in: "0.5Ki", want: 512},
		{in: "7Ei", want: 7 << 60},
		{in: "8Ei", err: "more bytes than the largest size"},
		{in: "9223372036854775808", err: "more bytes than the largest size"},
		{in: "1.5", err: "1.500 bytes, not a whole number"},
		{in: "0", err: "want a byte size"},
		{in: "0.0Ki", err: "want a byte size"},
		{in: "", err: "want a byte size"},
		{in: "-1Gi", err: "want a byte size"},
		{in: "100m", err: "want a byte size"},
		{in: "10 Gi", err: "want a byte size"},
		{in: "10GB", err: "want a byte size"},
		{in: "10K", err: "want a byte size"},
	} {
		got, err := parseByteSize(c.in)
		switch {
		case c.err == "" && (err != nil || got != c.want):
			t.Errorf("parseByteSize(%q): want %d, got %d (%v)", c.in, c.want, got, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("parseByteSize(%q): want an error with %q, got %d (%v)", c.in, c.err, got, err)
		}
	}
}
