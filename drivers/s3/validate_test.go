package s3

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestValidateName(t *testing.T) {
	d := New()
	cases := []struct{ name, err, warn string }{
		{name: "tenant1-orders"},
		{name: "abc"},
		{name: strings.Repeat("a", 63)},
		{name: "ab", err: "3 to 63 characters, this one is 2"},
		{name: strings.Repeat("a", 64), err: "3 to 63 characters, this one is 64"},
		{name: "Tenant1", err: `only lowercase letters, digits, '-' and '.'; found "T"`},
		{name: "ten_ant", err: `found "_"`},
		{name: "-abc", err: "starts with a lowercase letter or digit"},
		{name: "abc-", err: "ends with a lowercase letter or digit"},
		{name: "a..b", err: `no two adjacent periods`},
		{name: "192.168.5.4", err: "not formatted as an IP address"},
		{name: "xn--abc", err: `does not start with "xn--"`},
		{name: "data-s3alias", err: `does not end with "-s3alias"`},
		{name: "logs.tenant1", warn: "contains '.'"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			warn, errs := d.ValidateName(field.NewPath("status", "backendResourceName"), nil, c.name)
			if c.err == "" && len(errs) > 0 {
				t.Fatalf("want valid, got %v", errs)
			}
			if c.err != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), c.err)) {
				t.Fatalf("want error containing %q, got %v", c.err, errs)
			}
			if got := strings.Join(warn, ";"); c.warn != "" && !strings.Contains(got, c.warn) || c.warn == "" && got != "" {
				t.Fatalf("want warning %q, got %q", c.warn, got)
			}
		})
	}
}

func TestValidateParameters(t *testing.T) {
	d := New()
	r2 := &Config{Implementation: ImplR2}
	minio := &Config{Implementation: ImplMinIO}
	versitygw := &Config{Implementation: ImplVersityGW}
	aws := &Config{Implementation: ImplAWS}
	none := &Config{}
	lc := `{"expirationDays": 30}`
	cases := []struct {
		name     string
		cfg      *Config
		old, new map[string]string
		errs     []string
		warn     string
	}{
		{name: "all common", cfg: minio, new: map[string]string{"region": "eu-north-1", "versioning": "true", "lifecycle": `{"expirationDays": 30, "prefix": "logs/", "abortIncompleteMultipartUploadDays": 7}`}},
		{name: "bad versioning", cfg: minio, new: map[string]string{"versioning": "yes"}, errs: []string{`spec.parameters[versioning]: Unsupported value: "yes": supported values: "true", "false"`}},
		{name: "bad region", cfg: minio, new: map[string]string{"region": "EU North"}, errs: []string{`spec.parameters[region]: Invalid value: "EU North"`}},
		{name: "lifecycle outside the subset", cfg: minio, new: map[string]string{"lifecycle": `{"expirationDays": 3, "transitions": [{"days": 1, "storageClass": "GLACIER"}]}`}, errs: []string{`spec.parameters[lifecycle]`, `unknown field "transitions"`, "anything else is not supported"}},
		{name: "lifecycle not json", cfg: minio, new: map[string]string{"lifecycle": `expire=30`}, errs: []string{`spec.parameters[lifecycle]`}},
		{name: "lifecycle empty", cfg: minio, new: map[string]string{"lifecycle": `{"prefix": "x/"}`}, errs: []string{"set expirationDays and/or abortIncompleteMultipartUploadDays"}},
		{name: "lifecycle negative", cfg: minio, new: map[string]string{"lifecycle": `{"expirationDays": -1}`}, errs: []string{"days must be positive"}},
		{name: "unknown key", cfg: minio, new: map[string]string{"acl": "public-read"}, errs: []string{`spec.parameters[acl]: Unsupported value: "acl": supported values: "jurisdiction", "lifecycle", "region", "versioning"`}},
		{name: "jurisdiction on r2", cfg: r2, new: map[string]string{"jurisdiction": "eu"}},
		{name: "bad jurisdiction on r2", cfg: r2, new: map[string]string{"jurisdiction": "us"}, errs: []string{`spec.parameters[jurisdiction]: Unsupported value: "us": supported values: "eu", "fedramp"`}},
		{name: "jurisdiction on minio", cfg: minio, new: map[string]string{"jurisdiction": "eu"}, errs: []string{`spec.parameters[jurisdiction]: Forbidden: jurisdiction is only supported for implementation r2, and the backend's implementation is minio`}},
		{name: "jurisdiction without implementation", cfg: none, new: map[string]string{"jurisdiction": "eu"}, errs: []string{`jurisdiction is only supported for implementation r2, and the backend sets no implementation`}},
		{name: "region immutable", cfg: minio, old: map[string]string{"region": "eu-north-1"}, new: map[string]string{"region": "us-east-1"}, errs: []string{`spec.parameters[region]: Forbidden: is immutable after creation (was eu-north-1, now us-east-1)`}},
		{name: "region added", cfg: minio, old: map[string]string{}, new: map[string]string{"region": "us-east-1"}, errs: []string{`(was unset, now us-east-1)`}},
		{name: "jurisdiction immutable", cfg: r2, old: map[string]string{"jurisdiction": "eu"}, new: map[string]string{}, errs: []string{`spec.parameters[jurisdiction]: Forbidden: is immutable after creation (was eu, now unset)`}},
		{name: "versioning off warns", cfg: minio, old: map[string]string{"versioning": "true"}, new: map[string]string{"versioning": "false"}, warn: "S3 cannot turn versioning off; it is suspended"},
		{name: "lifecycle mutable", cfg: minio, old: map[string]string{"lifecycle": `{"expirationDays": 1}`}, new: map[string]string{"lifecycle": `{"expirationDays": 2}`}},
		// Capability gating of what some services answer NotImplemented for.
		{name: "lifecycle on aws", cfg: aws, new: map[string]string{"lifecycle": lc}},
		{name: "lifecycle on r2", cfg: r2, new: map[string]string{"lifecycle": lc}},
		{name: "lifecycle on versitygw", cfg: versitygw, new: map[string]string{"lifecycle": lc},
			errs: []string{"spec.parameters[lifecycle]: Forbidden: lifecycle is only supported for implementation aws, minio, r2, and the backend's implementation is versitygw, which does not implement bucket lifecycle: remove lifecycle, or use a backend whose implementation is aws, minio, r2"}},
		{name: "lifecycle without implementation", cfg: none, new: map[string]string{"lifecycle": lc},
			errs: []string{"lifecycle is only supported for implementation aws, minio, r2, and the backend sets no implementation: remove lifecycle, or ask the platform team to set implementation: (aws, minio, r2) in the backend's config if its service implements bucket lifecycle"}},
		{name: "lifecycle added on versitygw", cfg: versitygw, old: map[string]string{}, new: map[string]string{"lifecycle": lc}, errs: []string{"the backend's implementation is versitygw"}},
		{name: "lifecycle changed on versitygw", cfg: versitygw, old: map[string]string{"lifecycle": `{"expirationDays": 1}`}, new: map[string]string{"lifecycle": lc}, errs: []string{"the backend's implementation is versitygw"}},
		{name: "lifecycle kept on versitygw ratchets", cfg: versitygw, old: map[string]string{"lifecycle": lc}, new: map[string]string{"lifecycle": lc, "versioning": "true"},
			warn: "spec.parameters[lifecycle]: kept because it is unchanged, but lifecycle is only supported for implementation aws, minio, r2"},
		{name: "versioning on versitygw", cfg: versitygw, new: map[string]string{"versioning": "true"}},
		{name: "versioning on aws", cfg: aws, new: map[string]string{"versioning": "false"}},
		{name: "versioning on r2", cfg: r2, new: map[string]string{"versioning": "true"},
			errs: []string{"spec.parameters[versioning]: Forbidden: versioning is only supported for implementation aws, minio, versitygw, and the backend's implementation is r2, which does not implement bucket versioning"}},
		{name: "versioning without implementation", cfg: none, new: map[string]string{"versioning": "true"}, errs: []string{"versioning is only supported for implementation aws, minio, versitygw, and the backend sets no implementation"}},
		{name: "region is common", cfg: none, new: map[string]string{"region": "eu-north-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			warn, errs := d.ValidateParameters(field.NewPath("spec", "parameters"), c.cfg, c.old, c.new)
			if (len(errs) == 0) != (len(c.errs) == 0) {
				t.Fatalf("want errors %q, got %v", c.errs, errs)
			}
			for _, e := range c.errs {
				if !strings.Contains(errs.ToAggregate().Error(), e) {
					t.Errorf("want %q in %v", e, errs)
				}
			}
			if got := strings.Join(warn, ";"); c.warn != "" && !strings.Contains(got, c.warn) || c.warn == "" && got != "" {
				t.Errorf("want warning %q, got %q", c.warn, got)
			}
		})
	}
}

func TestValidateAccess(t *testing.T) {
	w, errs := New().ValidateAccess(field.NewPath("spec", "parameters"), nil, "ReadOnly", map[string]string{"prefix": "x"})
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "spec.parameters[prefix]: Invalid value: \"prefix\": the s3 driver has no access parameters") {
		t.Errorf("want the access parameter rejected, got %v", errs)
	}
	if len(w) != 2 || !strings.Contains(w[1], "role ReadOnly is not enforced") {
		t.Errorf("want two warnings, got %q", w)
	}
}

func TestConfigValidate(t *testing.T) {
	keys := func(c Config) Config { c.AccessKeyID, c.SecretAccessKey = "a", "s"; return c }
	cases := []struct {
		name string
		cfg  Config
		errs []string
	}{
		{name: "minimal", cfg: keys(Config{Endpoint: "http://s3:9000"})},
		{name: "aws needs no endpoint", cfg: keys(Config{Implementation: "aws", Region: "eu-north-1"})},
		{name: "unknown implementation", cfg: keys(Config{Implementation: "ceph", Endpoint: "http://s3:9000"}), errs: []string{`config.implementation: Unsupported value: "ceph": supported values: "aws", "r2", "minio", "versitygw"`}},
		{name: "no endpoint", cfg: keys(Config{}), errs: []string{"config.endpoint: Required value"}},
		{name: "endpoint without scheme", cfg: keys(Config{Endpoint: "s3:9000"}), errs: []string{`config.endpoint: Invalid value: "s3:9000": want an http:// or https:// URL`}},
		{name: "endpoint with path", cfg: keys(Config{Endpoint: "http://s3:9000/bucket"}), errs: []string{"want the endpoint without a path"}},
		{name: "no keys", cfg: Config{Endpoint: "http://s3:9000"}, errs: []string{"config.accessKeyID: Required value", "config.secretAccessKey: Required value"}},
		{name: "bad region", cfg: keys(Config{Endpoint: "http://s3:9000", Region: "EU"}), errs: []string{`config.region: Invalid value: "EU"`}},
		{name: "bad slice", cfg: keys(Config{Endpoint: "http://s3:9000", DeleteSlice: 5000}), errs: []string{"config.deleteSlice: Invalid value: 5000: must be 1 to 1000"}},
		{name: "jurisdiction endpoints on r2", cfg: keys(Config{Implementation: "r2", Endpoint: "https://acct.r2.cloudflarestorage.com", JurisdictionEndpoints: map[string]string{"eu": "https://eu.example:9000"}})},
		{name: "jurisdiction endpoints elsewhere", cfg: keys(Config{Implementation: "minio", Endpoint: "http://s3:9000", JurisdictionEndpoints: map[string]string{"eu": "http://eu:9000"}}), errs: []string{"config.jurisdictionEndpoints: Forbidden: jurisdictions are Cloudflare R2's: set implementation: r2, or remove jurisdictionEndpoints (implementation is minio)"}},
		{name: "unknown jurisdiction endpoint", cfg: keys(Config{Implementation: "r2", Endpoint: "https://acct.r2.cloudflarestorage.com", JurisdictionEndpoints: map[string]string{"us": "https://us.example", "eu": "eu.example"}}),
			errs: []string{`config.jurisdictionEndpoints[eu]: Invalid value: "eu.example": want an http:// or https:// URL`, `config.jurisdictionEndpoints[us]: Unsupported value: "us": supported values: "eu", "fedramp"`}},
		{name: "bad ca", cfg: keys(Config{Endpoint: "https://s3:9000", CA: "nope"}), errs: []string{"config.caFile: Invalid value: no PEM certificate found"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			errs := c.cfg.Validate(field.NewPath("config"))
			if len(errs) != len(c.errs) {
				t.Fatalf("want %d errors %q, got %v", len(c.errs), c.errs, errs)
			}
			for _, e := range c.errs {
				if !strings.Contains(errs.ToAggregate().Error(), e) {
					t.Errorf("want %q in %v", e, errs)
				}
			}
		})
	}
}

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
