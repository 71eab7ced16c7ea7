package drivers

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"

	"github.com/invopop/jsonschema"
	"k8s.io/apimachinery/pkg/api/resource"
)

// ParseBytes reads a byte count written as a Kubernetes quantity ("10Gi",
// "500M", "1048576"): a whole, non-negative number of bytes.
func ParseBytes(s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return 0, fmt.Errorf("want a byte count such as 10Gi, 500M or 1048576: %v", err)
	}
	n, ok := q.AsInt64()
	if !ok || q.Sign() < 0 {
		return 0, fmt.Errorf("want a whole, non-negative number of bytes, got %s", s)
	}
	return n, nil
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
			{Type: "string", Pattern: `^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$`},
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
