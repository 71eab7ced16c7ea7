package s3_test

import (
	"context"
	"encoding/json"
	"math/big"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	"github.com/Yolean/buckety-controller/drivers/s3"
	"github.com/Yolean/buckety-controller/test/fuzzinput"
)

// The fuzz targets below check the s3 driver's admission-facing checks and
// its Secret payload against properties stated independently of the code
// under test: the S3 bucket-naming rules, the documented parameter keys and
// the documented Secret keys. Every target is seeded from examples/.

func s3Seeds(f *testing.F) fuzzinput.Specs {
	f.Helper()
	s, err := fuzzinput.ExampleSpecs("../../examples/s3/*/*.yaml", "../../examples/s3/*/*/*.yaml", "../../examples/quickstart/*.yaml")
	if err != nil {
		f.Fatal(err)
	}
	if len(s.Parameters) == 0 || len(s.Names) == 0 {
		f.Fatalf("want seed parameters and names from examples/s3, got %d and %d", len(s.Parameters), len(s.Names))
	}
	return s
}

// implementations indexes the implementation a fuzzed config declares.
var implementations = append([]string{""}, s3.Implementations...)

func impl(i uint8) string { return implementations[int(i)%len(implementations)] }

// plainBucket is a name every S3 implementation accepts, unless it uses a
// reserved prefix or suffix.
var plainBucket = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)

var reserved = regexp.MustCompile(`^(xn--|sthree-|amzn-s3-demo-)|(-s3alias|--ol-s3|\.mrap|--x-s3|--table-s3)$`)

// FuzzValidateName: an accepted name follows the S3 rules (3 to 63 of
// [a-z0-9.-], alphanumeric at both ends, no "..", no '-' next to a '.',
// not four dot-separated numbers, which MinIO refuses), and every plain
// lowercase-and-dashes name of a legal length is accepted.
func FuzzValidateName(f *testing.F) {
	for _, n := range s3Seeds(f).Names {
		f.Add(n)
	}
	for _, n := range []string{"", "ab", "a..b", "192.168.5.4", "10.0.0.01", "999.1.1.1", "ab-.cd", "ab.-cd", "xn--a", "a-s3alias", "logs.v1", strings.Repeat("a", 64), "Upper"} {
		f.Add(n)
	}
	d := s3.New()
	f.Fuzz(func(t *testing.T, name string) {
		_, errs := d.ValidateName(field.NewPath("spec", "name"), &s3.Config{}, name)
		drivertest.CheckPaths(t, errs, "spec.name")
		if len(errs) == 0 {
			ok := len(name) >= 3 && len(name) <= 63 && !strings.Contains(name, "..") &&
				regexp.MustCompile(`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`).MatchString(name) && !reserved.MatchString(name) &&
				!strings.Contains(name, ".-") && !strings.Contains(name, "-.") && !regexp.MustCompile(`^(\d+\.){3}\d+$`).MatchString(name)
			if !ok {
				t.Fatalf("accepted bucket name %q, which breaks the S3 naming rules", name)
			}
		}
		if plainBucket.MatchString(name) && !reserved.MatchString(name) && len(errs) > 0 {
			t.Fatalf("rejected the plain bucket name %q: %v", name, errs)
		}
	})
}

// wholeBytes is the fuzz model of a byte size: a Kubernetes quantity whose
// exact value is a whole number more than 0, computed by resource.Quantity,
// not by the driver's own parser.
func wholeBytes(v string) (*big.Rat, bool) {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(q.AsDec().String())
	if !ok || !r.IsInt() || r.Sign() <= 0 {
		return nil, false
	}
	return r, true
}

// FuzzValidateParameters: errors name a parameter; accepted parameters use
// only the documented keys with well-formed values; jurisdiction passes
// only on implementation r2, quota only on minio and seaweedfs, a new
// anonymousRead only where the backend allows it (never, here); an accepted update keeps region and
// jurisdiction; re-applying an accepted object unchanged is accepted.
func FuzzValidateParameters(f *testing.F) {
	s := s3Seeds(f)
	for _, p := range s.Parameters {
		f.Add(uint8(0), false, "", fuzzinput.Encode(p))
		f.Add(uint8(3), true, fuzzinput.Encode(p), fuzzinput.Encode(p))
	}
	f.Add(uint8(2), false, "", "jurisdiction=eu\nregion=auto")
	f.Add(uint8(3), true, "versioning=true\nregion=eu-north-1", "versioning=false\nregion=eu-west-1")
	f.Add(uint8(4), false, "", `lifecycle={"expirationDays":1,"prefix":"a/"} {}`)
	// A whole number of bytes written with a fraction is a size: 1.0 is
	// one byte, 1.5Ki is 1536 (a CI fuzz run once took "1.0" for a bad one).
	for i := range implementations {
		f.Add(uint8(i), false, "", "quota=1.0\nsoftQuota=1.5Ki")
		f.Add(uint8(i), false, "", "quota=1.5\nsoftQuota=0.5Ki")
	}
	d := s3.New()
	f.Fuzz(func(t *testing.T, implIdx uint8, hasOld bool, oldS, newS string) {
		cfg := &s3.Config{Implementation: impl(implIdx)}
		var old map[string]string
		if hasOld {
			old = fuzzinput.Map(oldS)
		}
		nw := fuzzinput.Map(newS)
		p := field.NewPath("spec", "parameters")
		_, errs := d.ValidateParameters(p, cfg, old, nw)
		drivertest.CheckPaths(t, errs, "spec.parameters")
		if len(errs) > 0 {
			return
		}
		for k, v := range nw {
			switch k {
			case s3.ParamRegion:
				if !regexp.MustCompile(`^[a-z0-9-]{1,64}$`).MatchString(v) {
					t.Fatalf("accepted region %q", v)
				}
			case s3.ParamVersioning:
				if v != "true" && v != "false" {
					t.Fatalf("accepted versioning %q, want true or false", v)
				}
				// Capability-gated: new or changed only where the service has it.
				if (old == nil || old[k] != v) && cfg.Implementation != s3.ImplAWS && cfg.Implementation != s3.ImplMinIO && cfg.Implementation != s3.ImplVersityGW && cfg.Implementation != s3.ImplSeaweedFS {
					t.Fatalf("accepted new versioning on implementation %q", cfg.Implementation)
				}
			case s3.ParamLifecycle:
				if (old == nil || old[k] != v) && cfg.Implementation != s3.ImplAWS && cfg.Implementation != s3.ImplMinIO && cfg.Implementation != s3.ImplR2 {
					t.Fatalf("accepted new lifecycle on implementation %q", cfg.Implementation)
				}
				var l map[string]any
				if err := json.Unmarshal([]byte(v), &l); err != nil {
					t.Fatalf("accepted lifecycle %q, which is not one JSON object: %v", v, err)
				}
				for lk := range l {
					if lk != "expirationDays" && lk != "prefix" && lk != "abortIncompleteMultipartUploadDays" {
						t.Fatalf("accepted lifecycle key %q outside the portable subset", lk)
					}
				}
			case s3.ParamJurisdiction:
				if cfg.Implementation != s3.ImplR2 {
					t.Fatalf("accepted jurisdiction on implementation %q, want r2 only", cfg.Implementation)
				}
				if v != "eu" && v != "fedramp" {
					t.Fatalf("accepted jurisdiction %q", v)
				}
			case s3.ParamQuota, s3.ParamSoftQuota:
				n, ok := wholeBytes(v)
				if !ok {
					t.Fatalf("accepted %s %q, want a quantity that is a whole number of bytes, more than 0", k, v)
				}
				if k == s3.ParamQuota && (old == nil || old[k] != v) && cfg.Implementation != s3.ImplMinIO && cfg.Implementation != s3.ImplSeaweedFS {
					t.Fatalf("accepted a new quota on implementation %q, want minio or seaweedfs only", cfg.Implementation)
				}
				if hard, ok := nw[s3.ParamQuota]; ok && k == s3.ParamSoftQuota {
					if h, ok := wholeBytes(hard); ok && n.Cmp(h) > 0 {
						t.Fatalf("accepted softQuota %q above quota %q", v, hard)
					}
				}
			case s3.ParamAnonymousRead:
				if v != "true" && v != "false" {
					t.Fatalf("accepted anonymousRead %q, want true or false", v)
				}
				// The fuzzed config never sets allowAnonymousRead.
				if old == nil || old[k] != v {
					t.Fatalf("accepted a new anonymousRead %q on a backend without allowAnonymousRead", v)
				}
			default:
				t.Fatalf("accepted key %q, want region, versioning, lifecycle, jurisdiction, quota, softQuota or anonymousRead", k)
			}
		}
		if old != nil {
			for _, k := range []string{s3.ParamRegion, s3.ParamJurisdiction} {
				if old[k] != nw[k] {
					t.Fatalf("accepted a %s change %q -> %q", k, old[k], nw[k])
				}
			}
		}
		if _, errs := d.ValidateParameters(p, cfg, nw, nw); len(errs) > 0 {
			t.Fatalf("accepted %v, but re-applying it unchanged is rejected: %v", nw, errs)
		}
	})
}

// FuzzValidateAccess: errors name a parameter; no access parameter is ever
// accepted (the driver has none in v1alpha1).
func FuzzValidateAccess(f *testing.F) {
	s := s3Seeds(f)
	for _, r := range append(s.Roles, "", "ReadOnly") {
		f.Add(r, "")
	}
	for _, p := range s.AccessParameters {
		f.Add("ReadWrite", fuzzinput.Encode(p))
	}
	f.Add("WriteOnly", "prefix=x")
	d := s3.New()
	f.Fuzz(func(t *testing.T, role, params string) {
		m := fuzzinput.Map(params)
		_, errs := d.ValidateAccess(field.NewPath("spec", "parameters"), &s3.Config{}, drivers.Role(role), m)
		drivertest.CheckPaths(t, errs, "spec.parameters")
		if len(errs) == 0 && len(m) > 0 {
			t.Fatalf("accepted access parameters %v, want none accepted", m)
		}
	})
}

// FuzzGrant: for any access and any valid backend config, the Secret payload
// holds only the declared flat keys (SecretKeys), always the required ones; bucket is the resource name; region comes from the Buckety, else
// from the backend, else is absent; endpoint is the consumer endpoint (in
// the jurisdiction, for R2); and the grant is never reported per access.
func FuzzGrant(f *testing.F) {
	s := s3Seeds(f)
	for _, p := range s.Parameters {
		for _, n := range s.Names {
			f.Add(n, "tenant1", "ReadWrite", fuzzinput.Encode(p), uint8(4), "http://127.0.0.1:7070", "", "", "ak", "sk")
		}
	}
	f.Add("logs", "ns", "ReadOnly", "jurisdiction=eu", uint8(2), "https://acct.r2.cloudflarestorage.com", "", "auto", "ak", "sk")
	f.Add("logs", "ns", "", "region=eu-north-1", uint8(1), "", "https://public.example:443/", "us-east-1", "ak", "sk")
	d := s3.New()
	f.Fuzz(func(t *testing.T, resource, ns, role, resourceParams string, implIdx uint8, endpoint, consumer, region, ak, sk string) {
		cfg := &s3.Config{Implementation: impl(implIdx), Endpoint: endpoint, ConsumerEndpoint: consumer, Region: region, AccessKeyID: ak, SecretAccessKey: sk}
		if len(cfg.Validate(field.NewPath("config"))) > 0 {
			return // Open is only ever called with a validated config
		}
		be, err := d.Open(context.Background(), "s3", cfg)
		if err != nil {
			t.Fatalf("open with a valid config: %v", err)
		}
		defer func() {
			if err := be.Close(); err != nil {
				t.Errorf("close: %v", err)
			}
		}()
		rp := fuzzinput.Map(resourceParams)
		g, err := be.Grant(context.Background(), drivers.Access{Resource: resource, Namespace: ns, Name: "a", Role: drivers.Role(role), ResourceParameters: rp})
		if resource == "" {
			if err == nil {
				t.Fatalf("grant without a bucket: want an error, got Secret keys %v", g.Data)
			}
			return
		}
		if err != nil {
			if rp[s3.ParamJurisdiction] == "" {
				t.Fatalf("grant without a jurisdiction failed: %v", err)
			}
			return
		}
		drivertest.CheckGrant(t, d.SecretKeys(), g)
		if got := string(g.Data["bucket"]); got != resource {
			t.Fatalf("want bucket %q, got %q", resource, got)
		}
		if string(g.Data["accessKeyID"]) != ak || string(g.Data["secretAccessKey"]) != sk {
			t.Fatal("want the backend's keys in the Secret")
		}
		wantRegion, hasRegion := rp[s3.ParamRegion], true
		if wantRegion == "" {
			wantRegion = region
		}
		if wantRegion == "" {
			hasRegion = false
		}
		if got, ok := g.Data["region"]; ok != hasRegion || string(got) != wantRegion {
			t.Fatalf("want region %q (present %v), got %q (present %v)", wantRegion, hasRegion, got, ok)
		}
		ep := string(g.Data["endpoint"])
		if j := rp[s3.ParamJurisdiction]; j != "" {
			u, err := url.Parse(ep)
			if err != nil || !strings.HasSuffix(u.Hostname(), "."+j+".r2.cloudflarestorage.com") {
				t.Fatalf("jurisdiction %s: want an endpoint in the jurisdiction, got %q", j, ep)
			}
		} else {
			want := consumer
			if want == "" {
				want = endpoint
			}
			if want == "" {
				want = "https://s3." + cfg.Region + ".amazonaws.com"
				if cfg.Region == "" {
					want = "https://s3.us-east-1.amazonaws.com"
				}
			}
			if ep != strings.TrimSuffix(want, "/") {
				t.Fatalf("want endpoint %q, got %q", strings.TrimSuffix(want, "/"), ep)
			}
		}
		if g.PerAccess {
			t.Fatal("an s3 grant hands the backend's keys, so it must never be reported scoped")
		}
	})
}
