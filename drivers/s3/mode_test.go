package s3

import (
	"context"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
)

// TestCredentialsModeInferred checks every row of the migration: with
// credentials.mode not set, a backend does what it did before the mode
// existed, and says so.
func TestCredentialsModeInferred(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cr     *Credentials
		mode   drivers.CredentialsMode
		notice string
	}{
		{name: "no credentials block", mode: drivers.Shared,
			notice: "credentials.mode is not set; Shared, as before (no credentials block): set credentials.mode: Shared to say so"},
		{name: "a credentials block", cr: &Credentials{ParentUser: "p"}, mode: drivers.PerAccess,
			notice: "credentials.mode is not set; PerAccess, as before (a credentials block): set credentials.mode: PerAccess to say so"},
		{name: "PerAccess", cr: &Credentials{Mode: drivers.PerAccess}, mode: drivers.PerAccess},
		{name: "Shared", cr: &Credentials{Mode: drivers.Shared}, mode: drivers.Shared},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := &Config{Implementation: ImplMinIO, Endpoint: "http://m:9000", AccessKeyID: "ak", SecretAccessKey: "sk", Credentials: tc.cr}
			if got := cfg.mode(); got != tc.mode {
				t.Errorf("mode() = %q, want %q", got, tc.mode)
			}
			if got := strings.Join(cfg.Notices(), "\n"); got != tc.notice {
				t.Errorf("Notices() = %q, want %q", got, tc.notice)
			}
			if shared := cfg.sharedReason("s3") != ""; shared != (tc.mode == drivers.Shared) {
				t.Errorf("sharedReason: shared %v for mode %q", shared, tc.mode)
			}
			if tc.mode != drivers.Shared {
				return
			}
			// A shared backend hands out its own keys.
			g, err := (&Backend{name: "s3", cfg: cfg}).Grant(context.Background(), drivers.Access{Resource: "b"})
			if err != nil {
				t.Fatal(err)
			}
			if string(g.Data[SecretAccessKeyID]) != "ak" || g.PerAccess || g.Reason == "" {
				t.Errorf("want the backend's own key, not per access, with a reason; got %q, PerAccess %v, Reason %q", g.Data[SecretAccessKeyID], g.PerAccess, g.Reason)
			}
		})
	}
}
