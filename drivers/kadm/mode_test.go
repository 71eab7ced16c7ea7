package kadm

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestCredentialsModeInferred checks every row of the migration: with
// credentials.mode not set, a backend does what it did before the mode
// existed, and says so.
func TestCredentialsModeInferred(t *testing.T) {
	sasl := &SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}
	for _, tc := range []struct {
		name   string
		cfg    Config
		mode   drivers.CredentialsMode
		notice string
	}{
		{name: "sasl", cfg: Config{SASL: sasl}, mode: drivers.PerAccess,
			notice: "credentials.mode is not set; PerAccess, as before (sasl without shareCredentials): set credentials.mode: PerAccess to say so"},
		{name: "sasl with a credentials block", cfg: Config{SASL: sasl, Credentials: &Credentials{Mechanism: "SCRAM-SHA-256"}}, mode: drivers.PerAccess,
			notice: "credentials.mode is not set; PerAccess, as before (sasl without shareCredentials): set credentials.mode: PerAccess to say so"},
		{name: "shareCredentials", cfg: Config{SASL: sasl, ShareCredentials: true}, mode: drivers.Shared,
			notice: "credentials.mode is not set; Shared, as before (shareCredentials: true): set credentials.mode: Shared to say so"},
		{name: "no sasl", cfg: Config{}, mode: ""},
		{name: "PerAccess", cfg: Config{SASL: sasl, Credentials: &Credentials{Mode: drivers.PerAccess}}, mode: drivers.PerAccess},
		{name: "Shared", cfg: Config{SASL: sasl, Credentials: &Credentials{Mode: drivers.Shared}}, mode: drivers.Shared},
		{name: "Shared and shareCredentials", cfg: Config{SASL: sasl, ShareCredentials: true, Credentials: &Credentials{Mode: drivers.Shared}}, mode: drivers.Shared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.cfg.mode(); got != tc.mode {
				t.Errorf("mode() = %q, want %q", got, tc.mode)
			}
			got := strings.Join(tc.cfg.Notices(), "\n")
			if got != tc.notice {
				t.Errorf("Notices() = %q, want %q", got, tc.notice)
			}
			if shared := tc.cfg.sharedReason("k") != ""; shared != (tc.mode != drivers.PerAccess) {
				t.Errorf("sharedReason: shared %v for mode %q", shared, tc.mode)
			}
		})
	}
}

func TestCredentialsModeValidation(t *testing.T) {
	sasl := &SASL{Mechanism: "PLAIN", Username: "u", Password: "p"}
	for _, tc := range []struct {
		name string
		cfg  Config
		errs []string
	}{
		{name: "unknown mode", cfg: Config{SASL: sasl, Credentials: &Credentials{Mode: "Scoped"}},
			errs: []string{`config.credentials.mode: Unsupported value: "Scoped": supported values: "PerAccess", "Shared"`}},
		{name: "PerAccess with shareCredentials", cfg: Config{SASL: sasl, ShareCredentials: true, Credentials: &Credentials{Mode: drivers.PerAccess}},
			errs: []string{`config.credentials.mode: Invalid value: "PerAccess": shareCredentials: true means credentials.mode: Shared`}},
		{name: "PerAccess without sasl", cfg: Config{Credentials: &Credentials{Mode: drivers.PerAccess}},
			errs: []string{`config.credentials.mode: Invalid value: "PerAccess": needs sasl`}},
		{name: "Shared without sasl", cfg: Config{Credentials: &Credentials{Mode: drivers.Shared}},
			errs: []string{`config.credentials.mode: Invalid value: "Shared": needs sasl`}},
		{name: "Shared with a mechanism", cfg: Config{SASL: sasl, Credentials: &Credentials{Mode: drivers.Shared, Mechanism: "SCRAM-SHA-256"}},
			errs: []string{`config.credentials.mechanism: Forbidden: with credentials.mode Shared`}},
		{name: "shareCredentials with a mechanism", cfg: Config{SASL: sasl, ShareCredentials: true, Credentials: &Credentials{Mechanism: "SCRAM-SHA-256"}},
			errs: []string{`config.credentials.mechanism: Forbidden: with credentials.mode Shared (or shareCredentials)`}},
		{name: "PerAccess with a mechanism", cfg: Config{SASL: sasl, Credentials: &Credentials{Mode: drivers.PerAccess, Mechanism: "SCRAM-SHA-256"}}},
		{name: "Shared and shareCredentials", cfg: Config{SASL: sasl, ShareCredentials: true, Credentials: &Credentials{Mode: drivers.Shared}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.SeedBrokers = []string{"k0:9092"}
			got := tc.cfg.Validate(field.NewPath("config"))
			if len(got) != len(tc.errs) {
				t.Fatalf("Validate() = %v, want %d error(s) %q", got, len(tc.errs), tc.errs)
			}
			for i, e := range got {
				if !strings.HasPrefix(e.Error(), tc.errs[i]) {
					t.Errorf("error %d = %q, want prefix %q", i, e.Error(), tc.errs[i])
				}
			}
		})
	}
}
