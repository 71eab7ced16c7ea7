package drivertest

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
)

// Validation: the checks admission runs with no credentials and no network.
// A case lists substrings of the errors and warnings it wants, one per error
// and one per warning; the answer must have exactly that many of each, and
// every error must be at the path of the field it is about.

// NameCase is a resolved resource name for ValidateName, which gets the
// path status.backendResourceName; every error must be at that path.
type NameCase struct {
	Name string
	// Config is the backend's config; nil is allowed.
	Config drivers.Config
	// Errs and Warns: substrings of the errors and warnings, one each
	// (empty: accepted without warning). NumErrs, when set, is the number
	// of errors instead, for cases whose Errs are several substrings of one.
	Errs, Warns []string
	NumErrs     int
}

// ParametersCase is a Buckety's parameters for ValidateParameters, which gets
// the path spec.parameters; every error must name a key of Old or New
// (spec.parameters[partitions]).
type ParametersCase struct {
	// Name names the subtest.
	Name string
	// Config is the backend's config; nil is allowed.
	Config drivers.Config
	// Old is nil on create.
	Old, New map[string]string
	// Errs, Warns and NumErrs are as in NameCase.
	Errs, Warns []string
	NumErrs     int
}

// AccessCase is a BucketyAccess role and parameters for ValidateAccess,
// which gets the path spec.parameters; every error must name a key of
// Params.
type AccessCase struct {
	// Name names the subtest.
	Name string
	// Config is the backend's config; nil is allowed.
	Config drivers.Config
	Role   drivers.Role
	Params map[string]string
	// Errs, Warns and NumErrs are as in NameCase.
	Errs, Warns []string
	NumErrs     int
}

// ConfigCase is a backend's `config:` block, validated at the path config;
// every error must be under it.
type ConfigCase struct {
	// Name names the subtest.
	Name   string
	Config drivers.Config
	// Errs and NumErrs are as in NameCase.
	Errs    []string
	NumErrs int
}

// RunValidation runs the validation cases, as subtests of t.
func (s *Suite) RunValidation(t *testing.T) {
	d := s.Driver
	run := func(kind string, n int, each func(t *testing.T, i int)) {
		t.Run(kind, func(t *testing.T) {
			if n == 0 {
				t.Skipf("the suite declares no %s cases", kind)
			}
			for i := 0; i < n; i++ {
				each(t, i)
			}
		})
	}
	run("names", len(s.Names), func(t *testing.T, i int) {
		c := s.Names[i]
		t.Run(c.Name, func(t *testing.T) {
			p := field.NewPath("status", "backendResourceName")
			warns, errs := d.ValidateName(p, c.Config, c.Name)
			for _, e := range errs {
				if e.Field != p.String() {
					t.Errorf("want every error at %s, got one at %q: %v", p, e.Field, e)
				}
			}
			checkAnswer(t, warns, errs, c.Errs, c.NumErrs, c.Warns)
		})
	})
	run("parameters", len(s.Parameters), func(t *testing.T, i int) {
		c := s.Parameters[i]
		t.Run(c.Name, func(t *testing.T) {
			p := field.NewPath("spec", "parameters")
			warns, errs := d.ValidateParameters(p, c.Config, c.Old, c.New)
			checkKeyPaths(t, p, errs, c.Old, c.New)
			checkAnswer(t, warns, errs, c.Errs, c.NumErrs, c.Warns)
		})
	})
	run("accesses", len(s.Accesses), func(t *testing.T, i int) {
		c := s.Accesses[i]
		t.Run(c.Name, func(t *testing.T) {
			p := field.NewPath("spec", "parameters")
			warns, errs := d.ValidateAccess(p, c.Config, c.Role, c.Params)
			checkKeyPaths(t, p, errs, c.Params)
			checkAnswer(t, warns, errs, c.Errs, c.NumErrs, c.Warns)
		})
	})
	run("configs", len(s.Configs), func(t *testing.T, i int) {
		c := s.Configs[i]
		t.Run(c.Name, func(t *testing.T) {
			errs := c.Config.Validate(field.NewPath("config"))
			CheckPaths(t, errs, "config")
			checkAnswer(t, nil, errs, c.Errs, c.NumErrs, nil)
		})
	})
}

// CheckPaths fails t when an error is not at prefix or under it, or has no
// explanation.
func CheckPaths(t testing.TB, errs field.ErrorList, prefix string) {
	t.Helper()
	for _, e := range errs {
		if e.Field != prefix && !strings.HasPrefix(e.Field, prefix+"[") && !strings.HasPrefix(e.Field, prefix+".") {
			t.Fatalf("want every error under %s, got %q", prefix, e.Field)
		}
		if e.ErrorBody() == "" {
			t.Fatalf("want an explanation for %s, got none", e.Field)
		}
	}
}

// checkKeyPaths: every error names one of the keys of the maps, as
// p.Key(key), and explains itself.
func checkKeyPaths(t *testing.T, p *field.Path, errs field.ErrorList, maps ...map[string]string) {
	t.Helper()
	for _, e := range errs {
		named := false
		for _, m := range maps {
			for k := range m {
				named = named || e.Field == p.Key(k).String()
			}
		}
		if !named {
			t.Errorf("want every error to name a parameter, as %s[key], got one at %q: %v", p, e.Field, e)
		}
		if e.ErrorBody() == "" {
			t.Errorf("want an explanation for %s, got none", e.Field)
		}
	}
}

// checkAnswer compares a validation's answer with a case's.
func checkAnswer(t *testing.T, warns []string, errs field.ErrorList, wantErrs []string, numErrs int, wantWarns []string) {
	t.Helper()
	if numErrs == 0 {
		numErrs = len(wantErrs)
	}
	if len(errs) != numErrs {
		t.Errorf("want %d errors %q, got %d: %v", numErrs, wantErrs, len(errs), errs)
	}
	all := ""
	if agg := errs.ToAggregate(); agg != nil {
		all = agg.Error()
	}
	for _, w := range wantErrs {
		if !strings.Contains(all, w) {
			t.Errorf("want an error containing %q, got %v", w, errs)
		}
	}
	if len(warns) != len(wantWarns) {
		t.Errorf("want %d warnings %q, got %d: %q", len(wantWarns), wantWarns, len(warns), warns)
	}
	joined := strings.Join(warns, "\n")
	for _, w := range wantWarns {
		if !strings.Contains(joined, w) {
			t.Errorf("want a warning containing %q, got %q", w, warns)
		}
	}
}
