package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/drivers/kadm"
	"github.com/Yolean/buckety-controller/drivers/s3"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/configfile"
	"github.com/Yolean/buckety-controller/test/fuzzinput"
)

// FuzzLoad feeds arbitrary YAML and environment through the whole loader
// (strict decode, envsubst, every driver's options and checks) with the
// real driver registrations. Properties: Load never panics; a failure is a
// configfile or validation error with a message; a loaded config has unique
// backends, each with its driver and options; a config the controller can
// load, the webhook (which loads without credentials) can load too, and
// then holds no credential.
func FuzzLoad(f *testing.F) {
	files, err := fuzzinput.Documents("../../examples/install/buckety-controller.yaml", "../../examples/*/misconfigured-startup/configs/*.yaml",
		"../../test/e2e/overlays/*/buckety-controller.yaml")
	if err != nil {
		f.Fatal(err)
	}
	if len(files) < 5 {
		f.Fatalf("want the example and e2e configs as seeds, got %d", len(files))
	}
	const env = "S3_ACCESS_KEY_ID=ak\nS3_SECRET_ACCESS_KEY=sk\nKAFKA_BOOTSTRAP=127.0.0.1:9092"
	for _, d := range files {
		f.Add(string(d), env)
		f.Add(string(d), "")
	}
	f.Add(good, "TEST_TOKEN=x")
	reg := all.Registry()
	f.Fuzz(func(t *testing.T, yaml, envS string) {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		m := fuzzinput.Map(envS)
		lookup := func(k string) (string, bool) { v, ok := m[k]; return v, ok }
		c, err := config.Load(dir, config.Options{Registry: reg, Lookup: lookup})
		wc, werr := config.Load(dir, config.Options{Registry: reg, Lookup: lookup, WithoutCredentials: true})
		for _, e := range []error{err, werr} {
			if e == nil {
				continue
			}
			var ce *configfile.Error
			var ve *config.ValidationError
			if !errors.As(e, &ce) && !errors.As(e, &ve) {
				t.Fatalf("want a configfile or validation error, got %T: %v", e, e)
			}
			if e.Error() == "" {
				t.Fatal("want an error message, got none")
			}
		}
		if err == nil {
			check(t, c)
			if werr != nil {
				t.Fatalf("the controller loads this config, but the webhook (without credentials) fails: %v", werr)
			}
		}
		if werr == nil {
			check(t, wc)
			for _, b := range wc.Backends {
				switch o := b.Options().(type) {
				case *s3.Config:
					if o.AccessKeyID != "" || o.SecretAccessKey != "" {
						t.Fatalf("backend %s: loaded without credentials, but holds S3 keys", b.Name)
					}
				case *kadm.Config:
					if o.SASL != nil && o.SASL.Password != "" || o.TLS != nil && o.TLS.Key != "" {
						t.Fatalf("backend %s: loaded without credentials, but holds a SASL password or TLS key", b.Name)
					}
				}
			}
		}
	})
}

func check(t *testing.T, c *config.Config) {
	t.Helper()
	if len(c.Backends) == 0 || len(c.BackendNames()) != len(c.Backends) {
		t.Fatalf("want at least one backend and unique names, got %d backends named %v", len(c.Backends), c.BackendNames())
	}
	for _, n := range c.BackendNames() {
		b, ok := c.Backend(n)
		if !ok || b.DriverImpl() == nil || b.Options() == nil {
			t.Fatalf("backend %s: want its driver and options, got %v %v", n, b.DriverImpl(), b.Options())
		}
		if b.DriverImpl().Name() != b.Driver {
			t.Fatalf("backend %s: want driver %s, got %s", n, b.Driver, b.DriverImpl().Name())
		}
	}
}
