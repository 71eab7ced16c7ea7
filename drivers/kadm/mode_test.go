package kadm

import (
	"strings"
	"testing"

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
