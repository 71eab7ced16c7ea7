package drivers

import (
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"regexp"
	"strconv"

	"github.com/invopop/jsonschema"
	"k8s.io/apimachinery/pkg/api/resource"
)

// BytesPattern is the syntax of a byte count: Kubernetes quantity syntax
// for a whole, non-negative number of bytes: digits, optionally a
// fraction, and a suffix k, M, G, T, P, E (powers of 1000), Ki, Mi, Gi,
// Ti, Pi, Ei (powers of 1024) or an exponent (1e9). Signs and the
// sub-unit suffixes (m, u, n) never name a size in bytes. The published
// schemas use the same pattern.
const BytesPattern = `^[0-9]+(\.[0-9]+)?([kMGTPE]|[KMGTPE]i|[eE][0-9]+)?$`

var bytesRE = regexp.MustCompile(BytesPattern)

// bytesSuffixes are the quantity suffixes as base and exponent.
var bytesSuffixes = map[string][2]int64{
	"": {10, 0}, "k": {10, 3}, "M": {10, 6}, "G": {10, 9}, "T": {10, 12}, "P": {10, 15}, "E": {10, 18},
	"Ki": {2, 10}, "Mi": {2, 20}, "Gi": {2, 30}, "Ti": {2, 40}, "Pi": {2, 50}, "Ei": {2, 60},
}

// ParseBytes reads a byte count written as a Kubernetes quantity ("10Gi",
// "1.5Gi", "500M", "1048576"): a whole, non-negative number of bytes,
// computed exactly. Not through resource.Quantity: its AsInt64 refuses any
// quantity written with a fraction (1.5Gi, 1.0), and it clamps sizes
// beyond int64 (8Ei) to its largest.
func ParseBytes(s string) (int64, error) {
	m := bytesRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("want a byte count such as 10Gi, 500M or 1048576 (digits, optionally a fraction, and a suffix k, M, G, T, P, E or Ki, Mi, Gi, Ti, Pi, Ei), got %q", s)
	}
	num := s[:len(s)-len(m[2])]
	n, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("want a byte count such as 10Gi, 500M or 1048576, got %q", s)
	}
	p, isSuffix := bytesSuffixes[m[2]]
	if !isSuffix {
		// An exponent: e or E and digits.
		e, err := strconv.ParseInt(m[2][1:], 10, 64)
		if err != nil || e > 30 {
			return 0, fmt.Errorf("%s is more bytes than the largest size, %d", s, int64(math.MaxInt64))
		}
		p = [2]int64{10, e}
	}
	n.Mul(n, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(p[0]), big.NewInt(p[1]), nil)))
	switch {
	case !n.IsInt():
		return 0, fmt.Errorf("%s is %s bytes, not a whole number of bytes", s, n.FloatString(3))
	case !n.Num().IsInt64():
		return 0, fmt.Errorf("%s is more bytes than the largest size, %d", s, int64(math.MaxInt64))
	}
	return n.Num().Int64(), nil
}

// FormatBytes writes n bytes for people: binary units where they are
// exact (10Gi), the plain number otherwise.
func FormatBytes(n int64) string {
	return resource.NewQuantity(n, resource.BinarySI).String()
}

// ByteSize is a byte count in options, written as a quantity string
// ("10Gi") or a plain integer.
type ByteSize struct {
	Bytes int64
}

// UnmarshalJSON accepts a quantity string or an integer.
func (b *ByteSize) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		var n int64
		if err := json.Unmarshal(data, &n); err != nil {
			return fmt.Errorf("want a byte count such as \"10Gi\" or 1048576, got %s", data)
		}
		s = strconv.FormatInt(n, 10)
	}
	n, err := ParseBytes(s)
	if err != nil {
		return err
	}
	b.Bytes = n
	return nil
}

// MarshalJSON writes the quantity string.
func (b ByteSize) MarshalJSON() ([]byte, error) { return json.Marshal(FormatBytes(b.Bytes)) }

// IsZero lets omitzero leave an unset size out.
func (b ByteSize) IsZero() bool { return b.Bytes == 0 }

// JSONSchema describes ByteSize in generated schemas.
func (ByteSize) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		OneOf: []*jsonschema.Schema{
			{Type: "string", Pattern: BytesPattern},
			{Type: "integer", Minimum: json.Number("0")},
		},
		Description: "A byte count: a Kubernetes quantity such as 10Gi or 500M, or a plain integer.",
	}
}

// AddSaturating is a + b for non-negative figures, the largest int64
// where the sum would not fit: a sum of budget figures never wraps to a
// negative that fits every budget.
func AddSaturating(a, b int64) int64 {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}
