package drivers_test

import (
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
)

func TestRegistry(t *testing.T) {
	r := drivers.NewRegistry(&drivertest.Driver{Named: "beta"}, &drivertest.Driver{Named: "alpha"})
	if got := strings.Join(r.Names(), ","); got != "alpha,beta" {
		t.Fatalf("want names alpha,beta, got %s", got)
	}
	d, ok := r.Get("beta")
	if !ok || d.Name() != "beta" {
		t.Fatalf("want driver beta, got %v %v", d, ok)
	}
	if _, ok := r.Get("gamma"); ok {
		t.Fatalf("want gamma unknown")
	}
}

func TestRegistryPanics(t *testing.T) {
	cases := map[string]func(r *drivers.Registry){
		`driver "dup" registered twice`: func(r *drivers.Registry) {
			r.Register(&drivertest.Driver{Named: "dup"})
			r.Register(&drivertest.Driver{Named: "dup"})
		},
		"nil driver": func(r *drivers.Registry) { r.Register(nil) },
		`driver name "Bad_Name" must be lowercase`: func(r *drivers.Registry) { r.Register(&drivertest.Driver{Named: "Bad_Name"}) },
		`secret key "a-b" must be an environment variable name`: func(r *drivers.Registry) {
			r.Register(&drivertest.Driver{Named: "k", Keys: []drivers.SecretKey{{Name: "a-b", Description: "x"}}})
		},
		`secret key "a" declared twice`: func(r *drivers.Registry) {
			r.Register(&drivertest.Driver{Named: "k", Keys: []drivers.SecretKey{{Name: "a", Description: "x"}, {Name: "a", Description: "y"}}})
		},
		`secret key "t" declared twice`: func(r *drivers.Registry) {
			r.Register(&drivertest.Driver{Named: "k", Keys: []drivers.SecretKey{{Name: "a", Description: "x"},
				{Name: "t", Description: "x", Optional: true, PerResource: true}, {Name: "t", Description: "y", Optional: true, PerResource: true}}})
		},
		`secret key "t" is per resource, so not in every Secret: it must be optional`: func(r *drivers.Registry) {
			r.Register(&drivertest.Driver{Named: "k", Keys: []drivers.SecretKey{{Name: "a", Description: "x"}, {Name: "t", Description: "x", PerResource: true}}})
		},
		`secret key "a" has no description`: func(r *drivers.Registry) {
			r.Register(&drivertest.Driver{Named: "k", Keys: []drivers.SecretKey{{Name: "a"}}})
		},
		"declares no secret key that every Secret has": func(r *drivers.Registry) {
			r.Register(&drivertest.Driver{Named: "k", Keys: []drivers.SecretKey{{Name: "a", Description: "x", Optional: true}}})
		},
	}
	for want, f := range cases {
		t.Run(want, func(t *testing.T) {
			defer func() {
				got := recover()
				if got == nil || !strings.Contains(got.(string), want) {
					t.Fatalf("want panic containing %q, got %v", want, got)
				}
			}()
			f(drivers.NewRegistry())
		})
	}
}

func TestParseVersion(t *testing.T) {
	cases := []struct {
		in, want, schemaDir, err string
	}{
		{in: "0.1.0", want: "0.1.0", schemaDir: "v0.1"},
		{in: "v1.2.3", want: "1.2.3", schemaDir: "v1.2"},
		{in: "2.0.1-rc.1", want: "2.0.1-rc.1", schemaDir: "v2.0"},
		{in: "1.2", err: "want major.minor.patch"},
		{in: "1.02.3", err: `"02" is not a non-negative integer`},
		{in: "1.x.3", err: `"x" is not`},
		{in: "", err: "want major.minor.patch"},
	}
	for _, c := range cases {
		v, err := drivers.ParseVersion(c.in)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: want error %q, got %v", c.in, c.err, err)
			}
			continue
		}
		if err != nil || v.String() != c.want || v.SchemaDir() != c.schemaDir {
			t.Errorf("%q: want %s (%s), got %s (%s) err %v", c.in, c.want, c.schemaDir, v, v.SchemaDir(), err)
		}
	}
}

func TestTypedErrors(t *testing.T) {
	err := error(&drivers.UnavailableError{Backend: "kafka", Err: errString("dial tcp 127.0.0.1:1: connection refused")})
	if !drivers.IsUnavailable(err) {
		t.Fatalf("want IsUnavailable")
	}
	if drivers.IsUnavailable(&drivers.DriftError{}) {
		t.Fatalf("want drift not to be unavailability")
	}
	d := &drivers.DriftError{Parameter: "partitions", Current: "12", Desired: "6", Reason: "partitions cannot shrink"}
	if want := "parameter partitions: service has 12, spec wants 6: partitions cannot shrink"; d.Error() != want {
		t.Fatalf("want %q, got %q", want, d.Error())
	}
}

type errString string

func (e errString) Error() string { return string(e) }

func TestCheckSecretData(t *testing.T) {
	keys := []drivers.SecretKey{{Name: "a", Description: "x"}, {Name: "b", Description: "y", Optional: true}}
	cases := []struct {
		name string
		data map[string][]byte
		err  string
	}{
		{name: "required only", data: map[string][]byte{"a": []byte("1")}},
		{name: "with optional", data: map[string][]byte{"a": []byte("1"), "b": []byte("2")}},
		{name: "required missing", data: map[string][]byte{"b": []byte("2")}, err: `required key "a" missing or empty`},
		{name: "required empty", data: map[string][]byte{"a": nil}, err: `required key "a" missing or empty`},
		{name: "undeclared", data: map[string][]byte{"a": []byte("1"), "z": []byte("3"), "c": []byte("4")}, err: `key "c" is not declared; key "z" is not declared`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := drivers.CheckSecretData(keys, c.data)
			if c.err == "" && err != nil {
				t.Fatalf("want no error, got %v", err)
			}
			if c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
				t.Fatalf("want an error containing %q, got %v", c.err, err)
			}
		})
	}
}
