package drivers

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/invopop/jsonschema"
)

// Duration is a time.Duration written as a Go duration string ("10s",
// "1m30s") in driver options.
type Duration struct {
	time.Duration
}

// UnmarshalJSON accepts a duration string.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("want a duration string such as \"10s\", got %s", b)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration string such as \"10s\": %v", err)
	}
	d.Duration = v
	return nil
}

// MarshalJSON writes a duration string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// JSONSchema describes Duration in generated schemas.
func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`,
		Description: "A Go duration such as 10s, 500ms or 1m30s.",
	}
}
