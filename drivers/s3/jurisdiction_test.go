package s3

import (
	"strings"
	"testing"
)

func TestJurisdictionEndpointOverride(t *testing.T) {
	c := &Config{Implementation: ImplR2, Endpoint: "https://acct.r2.cloudflarestorage.com", ConsumerEndpoint: "https://acct.r2.cloudflarestorage.com",
		JurisdictionEndpoints: map[string]string{"eu": "http://127.0.0.1:9100/"}}
	for _, c := range []struct{ what, got, want string }{
		{"eu, controller", must(c.jurisdictionEndpoint("eu")), "http://127.0.0.1:9100"},
		{"eu, Secrets", must(c.consumerJurisdictionEndpoint("eu")), "http://127.0.0.1:9100"},
		{"fedramp, derived", must(c.jurisdictionEndpoint("fedramp")), "https://acct.fedramp.r2.cloudflarestorage.com"},
	} {
		if c.got != c.want {
			t.Errorf("%s: want %s, got %s", c.what, c.want, c.got)
		}
	}
}

func must(s string, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return s
}

func TestJurisdictionEndpoint(t *testing.T) {
	cases := []struct{ in, j, want, err string }{
		{in: "https://abc123.r2.cloudflarestorage.com", j: "eu", want: "https://abc123.eu.r2.cloudflarestorage.com"},
		{in: "https://abc123.eu.r2.cloudflarestorage.com", j: "eu", want: "https://abc123.eu.r2.cloudflarestorage.com"},
		{in: "https://abc123.eu.r2.cloudflarestorage.com", j: "fedramp", err: "already in jurisdiction eu"},
		{in: "http://minio:9000", j: "eu", err: "needs an R2 endpoint"},
	}
	for _, c := range cases {
		got, err := jurisdictionEndpoint(c.in, c.j)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s %s: want error %q, got %q %v", c.in, c.j, c.err, got, err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s %s: want %s, got %s %v", c.in, c.j, c.want, got, err)
		}
	}
}
