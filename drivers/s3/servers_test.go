package s3

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestServersTable: every implementation value has exactly one entry, and
// each entry is consistent with itself, so that adding a server type is
// one entry (and its test server).
func TestServersTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range servers {
		if s.impl == "" || seen[s.impl] {
			t.Errorf("entry %q: empty or repeated", s.impl)
		}
		seen[s.impl] = true
		if !slices.Contains(Implementations, s.impl) {
			t.Errorf("entry %q is not in Implementations, the config's allowed values", s.impl)
		}
		for _, k := range s.capabilities {
			if _, gated := capabilityGated[k]; !gated {
				t.Errorf("%s: capability %s is not a gated parameter", s.impl, k)
			}
			if s.lacks[k] != "" {
				t.Errorf("%s: says why it lacks %s, which it has", s.impl, k)
			}
		}
		if (s.issuer != nil) != (len(s.credentialFields) > 0) || (s.iamKeys && s.issuer == nil) {
			t.Errorf("%s: an issuer reads credential fields, and only an issuer's keys can be IAM's", s.impl)
		}
		if s.rclone == "" {
			t.Errorf("%s: no rclone provider", s.impl)
		}
	}
	for _, impl := range Implementations {
		if !seen[impl] {
			t.Errorf("implementation %q has no entry in servers", impl)
		}
	}
	if generic.issuer != nil || len(generic.capabilities) > 0 || serverOf("") != &generic || serverOf("unknown") != &generic {
		t.Error("a backend without implementation must be plain S3: no issuer, nothing gated allowed")
	}
}

// TestServersDecideTheConfig: what the config accepts per implementation
// follows the table (issuer settings, endpoint, anonymous read,
// jurisdictions), and the messages name the implementations that have it.
func TestServersDecideTheConfig(t *testing.T) {
	p := field.NewPath("config")
	for _, c := range []struct {
		name string
		cfg  Config
		want string // substring of the errors; "" = valid
	}{
		{"iam endpoint on seaweedfs", Config{Implementation: ImplSeaweedFS, Endpoint: "http://s:8333", Credentials: &Credentials{IAMEndpoint: "http://s:8111"}}, ""},
		{"iam endpoint on minio", Config{Implementation: ImplMinIO, Endpoint: "http://m:9000", Credentials: &Credentials{IAMEndpoint: "http://s:8111"}}, "config.credentials.iamEndpoint: Forbidden: only implementation aws, seaweedfs reads it"},
		{"bad iam endpoint", Config{Implementation: ImplAWS, Credentials: &Credentials{IAMEndpoint: "iam"}}, "config.credentials.iamEndpoint: Invalid value"},
		{"sweep users on aws", Config{Implementation: ImplAWS, Credentials: &Credentials{SweepUsers: 20}}, ""},
		{"sweep users on minio", Config{Implementation: ImplMinIO, Endpoint: "http://m:9000", Credentials: &Credentials{SweepUsers: 20}}, "config.credentials.sweepUsers: Forbidden: only implementation aws, seaweedfs reads it"},
		{"negative sweep users", Config{Implementation: ImplSeaweedFS, Endpoint: "http://s:8333", Credentials: &Credentials{SweepUsers: -1}}, "config.credentials.sweepUsers: Invalid value: -1: want a positive number"},
		{"sweep users with shared keys", Config{Implementation: ImplSeaweedFS, Endpoint: "http://s:8333", Credentials: &Credentials{Mode: "Shared", SweepUsers: 5}}, "config.credentials.sweepUsers: Forbidden: credentials.mode is Shared"},
		{"admin endpoint on versitygw", Config{Implementation: ImplVersityGW, Endpoint: "http://v:7070", Credentials: &Credentials{AdminEndpoint: "http://v:7071"}}, ""},
		{"admin endpoint on aws", Config{Implementation: ImplAWS, Credentials: &Credentials{AdminEndpoint: "http://v:7071"}}, "config.credentials.adminEndpoint: Forbidden: only implementation versitygw reads it"},
		{"parent user on versitygw", Config{Implementation: ImplVersityGW, Endpoint: "http://v:7070", Credentials: &Credentials{ParentUser: "p"}}, "config.credentials.parentUser: Forbidden: only implementation minio reads it"},
		{"parent user root", Config{Implementation: ImplMinIO, Endpoint: "http://m:9000", Credentials: &Credentials{ParentUser: "root"}}, "must not be the root user"},
		{"keys on r2", Config{Implementation: ImplR2, Endpoint: "https://a.r2", Credentials: &Credentials{}}, "keys per access are issued on implementation aws, minio, versitygw, seaweedfs, not on \"r2\""},
		{"no endpoint on aws", Config{Implementation: ImplAWS}, ""},
		{"no endpoint on minio", Config{Implementation: ImplMinIO}, "may be omitted only with implementation: aws"},
		{"anonymous read on r2", Config{Implementation: ImplR2, Endpoint: "https://a.r2", AllowAnonymousRead: true}, "on implementation minio, versitygw, seaweedfs only, not on r2"},
		{"jurisdictions on minio", Config{Implementation: ImplMinIO, Endpoint: "http://m:9000", JurisdictionEndpoints: map[string]string{"eu": "https://eu.r2"}}, "set implementation: r2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.AccessKeyID, c.cfg.SecretAccessKey = "root", "secret"
			got := c.cfg.Validate(p).ToAggregate()
			switch {
			case c.want == "" && got != nil:
				t.Fatalf("want valid, got %v", got)
			case c.want != "" && (got == nil || !strings.Contains(got.Error(), c.want)):
				t.Fatalf("want %q, got %v", c.want, got)
			}
		})
	}
}
