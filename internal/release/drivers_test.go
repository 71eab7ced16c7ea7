package release_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	"github.com/Yolean/buckety-controller/internal/release"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

// TestDriversFromRegistry: the harness's list of drivers is the registry's,
// with each driver's compiled-in version and package.
func TestDriversFromRegistry(t *testing.T) {
	reg := drivers.NewRegistry(&drivertest.Driver{Named: "zeta", Ver: drivers.Version{Major: 2, Minor: 3, Patch: 4}}, &drivertest.Driver{Named: "alpha"})
	got := release.Drivers(reg)
	want := []release.Driver{
		{Name: "alpha", Version: drivers.Version{Minor: 1}, Package: "github.com/Yolean/buckety-controller/drivers/drivertest"},
		{Name: "zeta", Version: drivers.Version{Major: 2, Minor: 3, Patch: 4}, Package: "github.com/Yolean/buckety-controller/drivers/drivertest"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("want %+v, got %+v", want, got)
	}
	cases := []struct {
		bump release.Bump
		want string
		err  string
	}{
		{bump: release.NextPatch, want: "-X github.com/Yolean/buckety-controller/drivers/drivertest.version=0.1.1 -X github.com/Yolean/buckety-controller/drivers/drivertest.version=2.3.5"},
		{bump: release.NextMajor, want: "-X github.com/Yolean/buckety-controller/drivers/drivertest.version=1.0.0 -X github.com/Yolean/buckety-controller/drivers/drivertest.version=3.0.0"},
		{bump: "next-minor", err: `unknown bump "next-minor"`},
	}
	for _, c := range cases {
		flags, err := release.VersionLDFlags(reg, c.bump)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: want an error containing %q, got %q %v", c.bump, c.err, flags, err)
			}
			continue
		}
		if err != nil || flags != c.want {
			t.Errorf("%s: want %q, got %q %v", c.bump, c.want, flags, err)
		}
	}
}

// TestDriverVersionVariable: every registered driver keeps its version in a
// package variable named version, the name the -ldflags -X arguments of
// VersionLDFlags set (a wrong name would be ignored silently by the linker).
func TestDriverVersionVariable(t *testing.T) {
	for _, d := range release.Drivers(all.Registry()) {
		dir := filepath.Join(controlplane.RepoRoot(), strings.TrimPrefix(d.Package, release.Module+"/"))
		srcs, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(srcs) == 0 {
			t.Fatalf("%s: want Go files in %s, got %v %v", d.Name, dir, srcs, err)
		}
		found := false
		for _, src := range srcs {
			if strings.HasSuffix(src, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), src, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, decl := range f.Decls {
				g, ok := decl.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, spec := range g.Specs {
					vs := spec.(*ast.ValueSpec)
					for i, n := range vs.Names {
						lit, ok := valueAt(vs, i).(*ast.BasicLit)
						if n.Name == "version" && ok && lit.Kind == token.STRING && strings.Trim(lit.Value, `"`) == d.Version.String() {
							found = true
						}
					}
				}
			}
		}
		if !found {
			t.Errorf("%s: want a package variable version = %q in %s", d.Name, d.Version, dir)
		}
	}
}

func valueAt(s *ast.ValueSpec, i int) ast.Expr {
	if i < len(s.Values) {
		return s.Values[i]
	}
	return nil
}

func TestConfigDrivers(t *testing.T) {
	reg := all.Registry()
	cases := []struct {
		name, config string
		want         []string
		err          string
	}{
		{name: "one driver twice", config: "backends:\n- {name: a, driver: s3}\n- {name: b, driver: s3, config: {endpoint: \"@E@\"}}\n", want: []string{"s3"}},
		{name: "two drivers", config: "backends:\n- {name: k, driver: kadm}\n- {name: s, driver: s3}\n", want: []string{"kadm", "s3"}},
		{name: "unknown driver", config: "backends:\n- {name: k, driver: kafka}\n", err: `backends[0] (k): driver "kafka" is not registered (registered: kadm, s3)`},
		{name: "no backends", config: "backends: []\n", err: "no backends"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := release.ConfigDrivers(reg, []byte(c.config))
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("want error %q, got %v %v", c.err, got, err)
				}
				return
			}
			if err != nil || !slices.Equal(got, c.want) {
				t.Fatalf("want %v, got %v %v", c.want, got, err)
			}
		})
	}
}

// TestE2EOverlaysNameRegisteredDrivers: run.sh learns an implementation's
// driver from its overlay's buckety-controller.yaml; every overlay names
// exactly one registered driver.
func TestE2EOverlaysNameRegisteredDrivers(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(controlplane.RepoRoot(), "test", "e2e", "overlays", "*", "buckety-controller.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("want implementation overlays, got %v %v", files, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		names, err := release.ConfigDrivers(all.Registry(), b)
		if err != nil || len(names) != 1 {
			t.Errorf("%s: want one registered driver, got %v %v", f, names, err)
		}
	}
}

// TestPublishedSecretKeys: each registered driver's published secret schema
// reads back as its SecretKeys declaration.
func TestPublishedSecretKeys(t *testing.T) {
	reg := all.Registry()
	for _, name := range reg.Names() {
		d, _ := reg.Get(name)
		b, err := os.ReadFile(filepath.Join(controlplane.RepoRoot(), release.SecretSchemaPath(d)))
		if err != nil {
			t.Fatalf("%s: %v (run make generate)", name, err)
		}
		got, err := release.SecretKeysFromSchema(b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := publishedOrder(drivers.AllSecretKeys(d)); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: published %+v, declared %+v (run make generate)", name, got, want)
		}
	}
}

// publishedOrder is the order SecretKeysFromSchema reads keys back in: the
// declared order, with the per-resource keys (patternProperties) last,
// sorted by name.
func publishedOrder(keys []drivers.SecretKey) []drivers.SecretKey {
	var plain, per []drivers.SecretKey
	for _, k := range keys {
		if k.PerResource {
			per = append(per, k)
			continue
		}
		plain = append(plain, k)
	}
	slices.SortStableFunc(per, func(a, b drivers.SecretKey) int { return strings.Compare(a.Name, b.Name) })
	return append(plain, per...)
}

// TestSecretSchemaPerResourceRoundTrip: a plain key and a per-resource key
// of the same name (topic of one, topic.<key> of several) are both
// published, as a property and a patternProperties key, and both read
// back.
func TestSecretSchemaPerResourceRoundTrip(t *testing.T) {
	t.Chdir(controlplane.RepoRoot()) // Schemas reads doc comments
	keys := []drivers.SecretKey{
		{Name: "bootstrap", Description: "b"},
		{Name: "topic", Description: "one", Optional: true},
		{Name: "topics", Description: "several", Optional: true},
		{Name: "zone", Description: "each zone", Optional: true, PerResource: true},
		{Name: "topic", Description: "each of several", Optional: true, PerResource: true},
	}
	d := &drivertest.Driver{Named: "several", Keys: keys}
	files, err := release.Schemas(drivers.NewRegistry(d))
	if err != nil {
		t.Fatal(err)
	}
	b := files[release.SecretSchemaPath(d)]
	for _, w := range []string{`"topic": {`, `"^topic\\.[-._a-zA-Z0-9]+$": {`, `"^zone\\.[-._a-zA-Z0-9]+$": {`} {
		if !strings.Contains(string(b), w) {
			t.Errorf("want the secret schema to hold %s, got\n%s", w, b)
		}
	}
	got, err := release.SecretKeysFromSchema(b)
	if err != nil {
		t.Fatal(err)
	}
	if want := publishedOrder(keys); !reflect.DeepEqual(got, want) {
		t.Errorf("want %+v read back, got %+v", want, got)
	}
}

func TestExpectedSecretKeys(t *testing.T) {
	keys := []drivers.SecretKey{{Name: "z", Description: "z"}, {Name: "b", Description: "b", Optional: true}, {Name: "a", Description: "a"},
		{Name: "b", Description: "b of each", Optional: true, PerResource: true}}
	cases := []struct {
		optional []string
		want     string
		err      string
	}{
		{want: "a,z"},
		{optional: []string{"b"}, want: "a,b,z"},
		{optional: []string{"b.x", "b.y_z"}, want: "a,b.x,b.y_z,z"},
		{optional: []string{"b", "b.x"}, want: "a,b,b.x,z"},
		{optional: []string{"a"}, err: `"a" is not an optional key (optional: [b b.<buckety>])`},
		{optional: []string{"b."}, err: `"b." is not an optional key`},
		{optional: []string{"a.x"}, err: `"a.x" is not an optional key`},
		{optional: []string{"c"}, err: `"c" is not an optional key`},
	}
	for _, c := range cases {
		got, err := release.ExpectedSecretKeys(keys, c.optional)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%v: want an error containing %q, got %v %v", c.optional, c.err, got, err)
			}
			continue
		}
		if err != nil || strings.Join(got, ",") != c.want {
			t.Errorf("%v: want %s, got %v %v", c.optional, c.want, got, err)
		}
	}
}

// TestScenariosReadSecretKeys: no scenario spells out a driver's Secret key
// list; they ask lib.sh (expect_secret_keys), which reads the published
// schema.
func TestScenariosReadSecretKeys(t *testing.T) {
	reg := all.Registry()
	var lists []string
	for _, name := range reg.Names() {
		d, _ := reg.Get(name)
		var all []string
		for _, k := range d.SecretKeys() {
			all = append(all, k.Name)
		}
		slices.Sort(all)
		req := drivers.RequiredSecretKeys(d.SecretKeys())
		slices.Sort(req)
		lists = append(lists, strings.Join(all, ","))
		if len(req) < len(all) {
			lists = append(lists, strings.Join(req, ","))
		}
	}
	files, err := filepath.Glob(filepath.Join(controlplane.RepoRoot(), "examples", "*", "*", "assert.sh"))
	if err != nil || len(files) == 0 {
		t.Fatalf("want scenarios, got %v %v", files, err)
	}
	more, _ := filepath.Glob(filepath.Join(controlplane.RepoRoot(), "examples", "*", "*", "*", "assert.sh"))
	for _, f := range append(files, more...) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range lists {
			if strings.Contains(string(b), `"`+l+`"`) {
				t.Errorf("%s: spells out the Secret keys %q; use expect_secret_keys", f, l)
			}
		}
	}
}
