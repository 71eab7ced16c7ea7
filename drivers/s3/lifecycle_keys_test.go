package s3

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestLifecycleKeysExact: encoding/json matches keys case-insensitively, so
// the portable subset's keys were accepted in any spelling (found by
// FuzzValidateParameters). Only the exact keys pass.
func TestLifecycleKeysExact(t *testing.T) {
	cases := []struct {
		lifecycle, err string
	}{
		{lifecycle: `{"expirationDays": 1}`},
		{lifecycle: `{"ExpirationDays": 1}`, err: `unknown key "ExpirationDays"`},
		{lifecycle: `{"expirationDays": 1, "PREFIX": "a/"}`, err: `unknown key "PREFIX"`},
		{lifecycle: `{"abortincompletemultipartuploaddays": 2}`, err: `unknown key "abortincompletemultipartuploaddays"`},
	}
	for _, c := range cases {
		_, errs := validateParams(field.NewPath("spec", "parameters"), &Config{Implementation: ImplMinIO}, nil, map[string]string{ParamLifecycle: c.lifecycle})
		got := errs.ToAggregate()
		switch {
		case c.err == "" && got != nil:
			t.Errorf("%s: want accepted, got %v", c.lifecycle, got)
		case c.err != "" && (got == nil || !strings.Contains(got.Error(), c.err)):
			t.Errorf("%s: want an error containing %q, got %v", c.lifecycle, c.err, got)
		}
	}
}
