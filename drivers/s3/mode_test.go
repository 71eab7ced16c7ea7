package s3

import (
	"context"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

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
			// A shared backend hands out its own keys, unscoped.
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

func TestCredentialsModeValidation(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		errs []string
	}{
		{name: "unknown mode", cfg: Config{Implementation: ImplMinIO, Credentials: &Credentials{Mode: "Scoped"}},
			errs: []string{`config.credentials.mode: Unsupported value: "Scoped": supported values: "PerAccess", "Shared"`}},
		{name: "PerAccess on r2", cfg: Config{Implementation: ImplR2, Credentials: &Credentials{Mode: drivers.PerAccess}},
			errs: []string{`config.credentials.mode: Invalid value: "PerAccess": keys per access are issued on implementation aws, minio, versitygw, seaweedfs, not on "r2"`}},
		{name: "a block on r2", cfg: Config{Implementation: ImplR2, Credentials: &Credentials{}},
			errs: []string{`config.credentials: Invalid value: "{...}": keys per access are issued on implementation aws, minio, versitygw, seaweedfs, not on "r2"`}},
		{name: "Shared on r2", cfg: Config{Implementation: ImplR2, Credentials: &Credentials{Mode: drivers.Shared}}},
		{name: "Shared on minio", cfg: Config{Implementation: ImplMinIO, Credentials: &Credentials{Mode: drivers.Shared}}},
		{name: "Shared with issuer settings", cfg: Config{Implementation: ImplMinIO, Credentials: &Credentials{Mode: drivers.Shared, ParentUser: "p"}},
			errs: []string{`config.credentials.parentUser: Forbidden: credentials.mode is Shared`}},
		{name: "PerAccess with issuer settings", cfg: Config{Implementation: ImplMinIO, Credentials: &Credentials{Mode: drivers.PerAccess, ParentUser: "p"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.cfg.Endpoint, tc.cfg.AccessKeyID, tc.cfg.SecretAccessKey = "https://s3.example", "ak", "sk"
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
