package config_test

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/envsubst"
	"github.com/Yolean/buckety-controller/internal/naming"
)

func registry() *drivers.Registry {
	return drivers.NewRegistry(&drivertest.Driver{Named: "test"}, &drivertest.Driver{Named: "other"})
}

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

func lookup(m map[string]string) envsubst.LookupFunc {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

const good = `
backends:
- name: cluster-a
  driver: test
  config:
    endpoint: a.example:1
    token: ${TEST_TOKEN}
  defaults:
    zone: local
- name: cluster-b
  driver: other
  config:
    endpoint: b.example:1
    token: ${TEST_TOKEN_B:-fallback}
`

func TestLoad(t *testing.T) {
	c, err := config.Load(writeConfig(t, good), config.Options{Registry: registry(), Lookup: lookup(map[string]string{"TEST_TOKEN": "s3cr3t"})})
	if err != nil {
		t.Fatalf("want no error, got %v", err)
	}
	if got := strings.Join(c.BackendNames(), ","); got != "cluster-a,cluster-b" {
		t.Fatalf("want backends cluster-a,cluster-b, got %s", got)
	}
	b, ok := c.Backend("cluster-a")
	if !ok {
		t.Fatal("want backend cluster-a")
	}
	opts := b.Options().(*drivertest.Config)
	if opts.Endpoint != "a.example:1" || opts.Token != "s3cr3t" {
		t.Errorf("want endpoint a.example:1 and token s3cr3t, got %+v", opts)
	}
	if b.DriverImpl().Name() != "test" || b.Defaults["zone"] != "local" {
		t.Errorf("want driver test with zone local, got %s %v", b.DriverImpl().Name(), b.Defaults)
	}
	if got := c.Backends[1].Options().(*drivertest.Config).Token; got != "fallback" {
		t.Errorf("want token fallback, got %q", got)
	}
	if _, ok := c.Backend("nope"); ok {
		t.Error("want no backend nope")
	}
}

func TestLoadWithoutCredentials(t *testing.T) {
	// The webhook has no credential env: loading must succeed and the
	// credential must not be in memory.
	c, err := config.Load(writeConfig(t, good), config.Options{Registry: registry(), WithoutCredentials: true, Lookup: lookup(nil)})
	if err != nil {
		t.Fatalf("want no error without credentials, got %v", err)
	}
	if got := c.Backends[0].Options().(*drivertest.Config).Token; got != "" {
		t.Errorf("want the credential cleared, got %q", got)
	}
	// Everything else is still checked.
	_, err = config.Load(writeConfig(t, "backends:\n- name: a\n  driver: test\n  config: {token: '${X}'}\n"), config.Options{Registry: registry(), WithoutCredentials: true, Lookup: lookup(nil)})
	if err == nil || !strings.Contains(err.Error(), "backends[0].config.endpoint: Required value") {
		t.Errorf("want the required endpoint reported without credentials too, got %v", err)
	}
}

// TestMisconfigured covers spec scenario 10: each broken file is rejected with
// the file, the field path and the fix.
func TestMisconfigured(t *testing.T) {
	cases := []struct {
		name, body string
		want       []string
	}{
		{"strict decode, top level", "backend:\n- name: a\n", []string{`backend: unknown field "backend"; remove it or fix its spelling (allowed here: backends, formerInstallations, installation)`}},
		{"strict decode, backend", "backends:\n- name: a\n  drvier: test\n", []string{`backends[0].drvier: unknown field "drvier"`, "allowed here: adoption, config, convergeParameters, credentials, defaults, drain, driver, limits, name, namePolicy, ownership, parameters, reservedNames, service"}},
		{"strict decode, driver options", "backends:\n- name: a\n  driver: test\n  config:\n    endpoint: x\n    endpiont: y\n", []string{`backends[0].config.endpiont: Invalid value: unknown field "endpiont"`, "allowed here: endpoint, limit, token"}},
		{"wrong type in driver options", "backends:\n- name: a\n  driver: test\n  config: {endpoint: x, limit: lots}\n", []string{`backends[0].config.limit: Invalid value: want a whole number, got "lots"`}},
		{"undefined variable without default", "backends:\n- name: a\n  driver: test\n  config: {endpoint: x, token: '${UNSET_TOKEN}'}\n", []string{`backends[0].config.token: Invalid value: environment variable UNSET_TOKEN is not set: set it, or write ${UNSET_TOKEN:-default}`}},
		{"substitution in an untagged driver field", "backends:\n- name: a\n  driver: test\n  config: {endpoint: '${HOST}'}\n", []string{`backends[0].config.endpoint: Invalid value: contains ${...} but this field does not support environment substitution`}},
		{"substitution in an untagged top-level field", "backends:\n- name: ${NAME}\n  driver: test\n", []string{`backends[0].name: contains ${...}`}},
		{"unknown driver", "backends:\n- name: a\n  driver: kafka\n", []string{`backends[0].driver: Invalid value: "kafka": unknown driver; this build has: other, test`}},
		{"missing driver", "backends:\n- name: a\n", []string{`backends[0].driver: Required value: one of: other, test`}},
		{"duplicate backend names", "backends:\n- {name: a, driver: test, config: {endpoint: x}}\n- {name: a, driver: test, config: {endpoint: y}}\n", []string{`backends[1].name: Duplicate value: "a (also backends[0].name); backend names must be unique"`}},
		{"missing required driver field", "backends:\n- name: a\n  driver: test\n", []string{`backends[0].config.endpoint: Required value: the test service's address`}},
		{"driver field check", "backends:\n- name: a\n  driver: test\n  config: {endpoint: x, limit: -1}\n", []string{`backends[0].config.limit: Invalid value: -1: must be >= 0`}},
		{"bad backend name", "backends:\n- name: Cluster_A\n  driver: test\n  config: {endpoint: x}\n", []string{`backends[0].name: Invalid value: "Cluster_A": a lowercase RFC 1123 label`}},
		{"bad defaults key", "backends:\n- name: a\n  driver: test\n  config: {endpoint: x}\n  defaults: {my.zone: z}\n", []string{`backends[0].defaults[my.zone]: Invalid value: "my.zone": key must be letters`}},
		{"no backends", "backends: []\n", []string{`backends: Required value: define at least one backend`}},
		{"bad name policy", "backends:\n- name: a\n  driver: test\n  config: {endpoint: x}\n  namePolicy: {prefix: '$$bad'}\n", []string{`backends[0].namePolicy.prefix: Invalid value: "$bad": template "$bad", column 1`}},
		{"unescaped name policy", "backends:\n- name: a\n  driver: test\n  config: {endpoint: x}\n  namePolicy: {prefix: '${namespace}.'}\n", []string{`backends[0].namePolicy.prefix: environment variable namespace is not set: set it, or write ${namespace:-default} to make it optional, or $${namespace} for a literal ${namespace}`}},
		{"misspelled adoption key", "backends:\n- name: a\n  driver: test\n  config: {endpoint: x}\n  adoption: {alow: true}\n", []string{`backends[0].adoption.alow: unknown field "alow"`, "allowed here: allow, deleteAdopted"}},
		{"adoption value of the wrong type", "backends:\n- name: a\n  driver: test\n  config: {endpoint: x}\n  adoption: {allow: yes-please}\n", []string{`backends[0].adoption.allow: want true or false, got "yes-please"`}},
		{"deleteAdopted without allow", "backends:\n- name: a\n  driver: test\n  config: {endpoint: x}\n  adoption: {deleteAdopted: true}\n", []string{`backends[0].adoption.deleteAdopted: Invalid value: true: applies only to adopted resources; set adoption.allow: true as well`}},
		{"two claim spaces on one service", "backends:\n- {name: a, driver: test, config: {endpoint: x:1}}\n- {name: b, driver: test, config: {endpoint: x:1}}\n", []string{`backends[1].service: Invalid value: "": backends[0] (a) and backends[1] (b) reach the same service (x:1) in two claim spaces, so one resource could get an owner through each; give both the same service, as ` + "`service: a`"}},
		{"one service, two drivers", "backends:\n- {name: a, driver: test, service: s, config: {endpoint: x:1}}\n- {name: b, driver: other, service: s, config: {endpoint: y:1}}\n", []string{`backends[1].service: Invalid value: "s": is also the service of backends[0] (a), whose driver is test, not other`}},
		{"bad service name", "backends:\n- {name: a, driver: test, service: Main_Kafka, config: {endpoint: x}}\n", []string{`backends[0].service: Invalid value: "Main_Kafka": a lowercase RFC 1123 label`}},
		{"bad reserved name", "backends:\n- {name: a, driver: test, reservedNames: ['[a-'], config: {endpoint: x}}\n", []string{`backends[0].reservedNames[0]: Invalid value: "[a-": a name or a glob`}},
		{"bad credentials", "backends:\n- {name: a, driver: test, credentials: {maxAge: 1h, rotationGrace: 2h}, config: {endpoint: x}}\n- {name: b, driver: test, credentials: {maxAge: -1s}, config: {endpoint: y}}\n", []string{`backends[0].credentials.rotationGrace: Invalid value: "2h0m0s": must be shorter than maxAge`, `backends[1].credentials.maxAge: Invalid value: "-1s": must not be negative`}},
		// Values of types that decode themselves (durations, sizes) are
		// refused with their path: the whole file's decode named none.
		{"a duration that is not one", "backends:\n- {name: a, driver: test, credentials: {maxAge: 1}, config: {endpoint: x}}\n", []string{`backends[0].credentials.maxAge`, `want a duration string such as "10s", got 1`}},
		{"a size that is not one", "backends:\n- {name: a, driver: test, limits: {namespaces: [{names: [t], diskBytes: 10 GB}]}, config: {endpoint: x}}\n", []string{`backends[0].limits.namespaces[0].diskBytes`}},
		{"bad limits", "backends:\n- {name: a, driver: test, limits: {perNamespace: -1, parameterMax: {partitions: 0}}, config: {endpoint: x}}\n", []string{`backends[0].limits.perNamespace: Invalid value: -1: must be at least 0`, `backends[0].limits.parameterMax[partitions]: Invalid value: 0: must be at least 1`}},
		{"floor above ceiling", "backends:\n- {name: a, driver: test, limits: {parameterMax: {size: 4}, parameterMin: {size: 8}}, config: {endpoint: x}}\n", []string{`backends[0].limits.parameterMin[size]: Invalid value: 8: is above limits.parameterMax.size (4): no value could pass both`}},
		{"limits on keys the driver does not have", "backends:\n- {name: a, driver: test, limits: {parameterMin: {sise: 1}, parameterMax: {size: 5, colour: 3}, deniedParameters: [flavour, 'f*']}, config: {endpoint: x}}\n", []string{`backends[0].limits.parameterMin[sise]: Invalid value: "sise": is not a parameter of driver test (supported values: "size")`, `backends[0].limits.parameterMax[colour]: Invalid value: "colour": is not a parameter of driver test`, `backends[0].limits.deniedParameters[0]: Invalid value: "flavour": is not a parameter of driver test`}},
		{"bad denied parameter", "backends:\n- {name: a, driver: test, limits: {deniedParameters: ['[a-']}, config: {endpoint: x}}\n", []string{`backends[0].limits.deniedParameters[0]: Invalid value: "[a-": a parameter key or a glob`}},
		{"namespace limits for no one", "backends:\n- {name: a, driver: test, limits: {namespaces: [{partitions: 10}]}, config: {endpoint: x}}\n", []string{`backends[0].limits.namespaces[0]: Required value: names or a selector`}},
		{"bad namespace selector", "backends:\n- {name: a, driver: test, limits: {namespaces: [{selector: {matchExpressions: [{key: tier, operator: Near}]}}]}, config: {endpoint: x}}\n", []string{`backends[0].limits.namespaces[0].selector: Invalid value`, `"Near" is not a valid label selector operator`}},
		{"default above the ceiling", "backends:\n- {name: a, driver: test, parameters: {size: '64'}, limits: {parameterMax: {size: 12}}, config: {endpoint: x}}\n", []string{`backends[0].parameters[size]: Invalid value: "64": backend a allows at most 12 (limits.parameterMax.size in buckety-controller.yaml)`}},
		{"bad drain block", "backends:\n- {name: a, driver: test, drain: {interval: 10ms, stuckAfter: -1s}, config: {endpoint: x}}\n", []string{`backends[0].drain.interval: Invalid value: "10ms": must be at least 1s (absent: 10s)`, `backends[0].drain.stuckAfter: Invalid value: "-1s": must be positive (absent: 30m0s)`}},
		{"slow drain intervals out of range", "backends:\n- {name: a, driver: test, drain: {interval: 3m, slowInterval: 1m}, config: {endpoint: x}}\n- {name: b, driver: test, drain: {slowInterval: 5s}, config: {endpoint: y}}\n- {name: c, driver: test, drain: {slowInterval: -1s}, config: {endpoint: z}}\n", []string{`backends[0].drain.slowInterval: Invalid value: "1m0s": must not be shorter than the interval it slows from (3m0s: drain.interval)`, `backends[1].drain.slowInterval: Invalid value: "5s": must not be shorter than the interval it slows from (10s: the default drain.interval)`, `backends[2].drain.slowInterval: Invalid value: "-1s": must be positive (absent: 6 times the interval)`}},
		{"drain allowed on a driver that cannot drain", "backends:\n- {name: a, driver: test, drain: {allow: true}, config: {endpoint: x}}\n", []string{`backends[0].drain.allow: Invalid value: true: driver test cannot empty a resource; remove drain.allow`}},
		{"several problems at once", "backends:\n- name: a\n  driver: test\n- name: a\n  driver: nope\n", []string{"3 problems:", "backends[0].config.endpoint: Required value", "backends[1].name: Duplicate value", `backends[1].driver: Invalid value: "nope"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeConfig(t, c.body)
			_, err := config.Load(dir, config.Options{Registry: registry(), Lookup: lookup(nil)})
			if err == nil {
				t.Fatalf("want an error, got none")
			}
			file := filepath.Join(dir, config.Filename)
			if !strings.HasPrefix(err.Error(), file+": ") {
				t.Errorf("want the error to start with %s, got %q", file, err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("want error containing %q, got %q", w, err)
				}
			}
		})
	}
}

// TestMisspeltLimitKeyOnKadm: a limit on a misspelt Kafka topic config
// loaded (the driver only warned of the key) and bounded nothing: a
// tenant's config.retention.bytes passed parameterMax
// config.retention.byte. It is refused at load, naming the key meant.
func TestMisspeltLimitKeyOnKadm(t *testing.T) {
	body := "backends:\n- name: a\n  driver: kadm\n  config: {seedBrokers: ['k:9092']}\n  limits: {parameterMax: {config.retention.byte: 1000}, deniedParameters: [config.unclean.leader.election.enabled]}\n"
	_, err := config.Load(writeConfig(t, body), config.Options{Registry: all.Registry(), Lookup: lookup(nil)})
	for _, want := range []string{
		`backends[0].limits.parameterMax[config.retention.byte]: Invalid value: "config.retention.byte": is not a parameter of driver kadm (supported values: "config.retention.bytes")`,
		`backends[0].limits.deniedParameters[0]: Invalid value: "config.unclean.leader.election.enabled": is not a parameter of driver kadm (supported values: "config.unclean.leader.election.enable")`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want %q, got %v", want, err)
		}
	}
}

// TestLargestByteCountLoads: a byte count written as the largest int64
// loads. The check of values that decode themselves re-encoded a float64
// of it, 9223372036854775808, and refused what the operator never wrote.
func TestLargestByteCountLoads(t *testing.T) {
	body := "backends:\n- {name: a, driver: test, limits: {namespaces: [{names: [t], diskBytes: 9223372036854775807}]}, config: {endpoint: x}}\n"
	c, err := config.Load(writeConfig(t, body), config.Options{Registry: registry(), Lookup: lookup(nil)})
	if err != nil {
		t.Fatalf("want the largest byte count to load, got %v", err)
	}
	if b, _ := c.Backend("a"); b.Limits.Namespaces[0].DiskBytes.Bytes != math.MaxInt64 {
		t.Errorf("want diskBytes %d, got %+v", int64(math.MaxInt64), b.Limits.Namespaces[0].DiskBytes)
	}
}

// TestReservedSpellings: on kadm a reserved pattern reserves the other
// spellings Kafka takes for the same topic ('.' and '_'), at admission
// and provisioning (CheckName); before a deletion (CheckNameToDelete)
// only the spelling written counts, since a topic of another spelling is
// never the reserved one: a Buckety that took such a name before it was
// reserved is deleted as its retentionPolicy says, not kept for good.
func TestReservedSpellings(t *testing.T) {
	body := "backends:\n- name: a\n  driver: kadm\n  config: {seedBrokers: ['k:9092']}\n  reservedNames: ['ops_*']\n"
	c, err := config.Load(writeConfig(t, body), config.Options{Registry: all.Registry(), Lookup: lookup(nil)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Backend("a")
	src := naming.Source{Name: "n", Namespace: "team"}
	for _, x := range []struct {
		name             string
		create, toDelete bool
	}{
		{"ops_metrics", false, false},
		{"ops.metrics", false, true},
		{"_schemas", false, false},
		{".schemas", false, true},
		{"__consumer_offsets", false, false},
		{"_.orders", false, true},
		{"team.orders", true, true},
	} {
		if got := b.CheckName(src, x.name) == nil; got != x.create {
			t.Errorf("CheckName(%q): want allowed=%v, got %v", x.name, x.create, got)
		}
		if got := b.CheckNameToDelete(src, x.name) == nil; got != x.toDelete {
			t.Errorf("CheckNameToDelete(%q): want allowed=%v, got %v", x.name, x.toDelete, got)
		}
	}
}

func TestNamePolicy(t *testing.T) {
	c, err := config.Load(writeConfig(t, "backends:\n- name: a\n  driver: kadm\n  config: {seedBrokers: ['k:9092']}\n  defaults: {zone: eu}\n  namePolicy: {prefix: '$${backend.zone}-$${namespace}.'}\n"), config.Options{Registry: all.Registry(), Lookup: lookup(nil)})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := c.Backend("a")
	src := naming.Source{Name: "orders", Namespace: "tenant1"}
	if err := b.CheckName(src, "eu-tenant1.orders"); err != nil {
		t.Errorf("want allowed, got %v", err)
	}
	err = b.CheckName(src, "eu-tenant2.orders")
	if want := `resolves to "eu-tenant2.orders", but backend a only allows names starting with ${backend.zone}-${namespace}. (here "eu-tenant1.")`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("want %q, got %v", want, err)
	}
}

// TestNamePolicyUnambiguous (issue 14.3): a policy under which one
// namespace's prefix can start another's, or that reads a source the
// tenant controls, is rejected at load with why and what to write instead.
func TestNamePolicyUnambiguous(t *testing.T) {
	cases := []struct {
		name, driver, prefix string
		want                 []string // empty: accepted
	}{
		{"kadm: dot separator", "kadm", "$${namespace}.", nil},
		{"kadm: underscore separator", "kadm", "$${namespace}_", nil},
		{"kadm: zone then namespace", "kadm", "$${backend.zone}-$${namespace}.", nil},
		{"kadm: separator from a default", "kadm", "$${namespace}$${backend.sep}", nil},
		{"s3: dot separator", "s3", "$${namespace}.", nil},
		{"kadm: dash", "kadm", "$${namespace}-", []string{`is ambiguous: ${namespace} is followed by "-"`, "namespace team could claim team-x-orders", `as "$${namespace}." (a "." cannot occur in a namespace name)`}},
		{"kadm: digit", "kadm", "$${namespace}1.", []string{`${namespace} is followed by "1"`}},
		{"kadm: nothing after the namespace", "kadm", "p-$${namespace}", []string{"${namespace} is followed by nothing"}},
		{"kadm: dash from a default", "kadm", "$${namespace}$${backend.zone}", []string{`${namespace} is followed by "e"`}},
		{"s3: underscore is no bucket name", "s3", "$${namespace}_", []string{"no name under it is valid for driver s3", `"team_orders"`, `as "$${namespace}."`}},
		{"s3: dash", "s3", "$${namespace}-", []string{"is ambiguous", `as "$${namespace}."`}},
		{"label", "kadm", "$${label['team']}.", []string{"references ${label['team']}, which the tenant controls"}},
		{"label after namespace", "kadm", "$${namespace}.$${label['team']}.", []string{"references ${label['team']}, which the tenant controls"}},
		{"name", "kadm", "$${namespace}.$${name}", []string{"references ${name}, which the tenant chooses"}},
		{"no namespace", "kadm", "$${backend.zone}.", []string{"does not reference ${namespace}, so every namespace gets the same prefix"}},
		{"missing default", "kadm", "$${namespace}$${backend.nope}", []string{`backend "a" has no defaults.nope`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := "{seedBrokers: ['k:9092']}"
			if c.driver == "s3" {
				cfg = "{endpoint: 'http://s3:9000', accessKeyID: x, secretAccessKey: y}"
			}
			body := fmt.Sprintf("backends:\n- name: a\n  driver: %s\n  config: %s\n  defaults: {zone: eu, sep: '.'}\n  namePolicy: {prefix: %q}\n", c.driver, cfg, c.prefix)
			for _, withoutEnv := range []bool{false, true} {
				_, err := config.Load(writeConfig(t, body), config.Options{Registry: all.Registry(), Lookup: lookup(nil), WithoutCredentials: withoutEnv})
				if len(c.want) == 0 {
					if err != nil {
						t.Errorf("webhook=%v: want accepted, got %v", withoutEnv, err)
					}
					continue
				}
				if err == nil {
					t.Fatalf("webhook=%v: want rejected, got accepted", withoutEnv)
				}
				for _, w := range append([]string{"backends[0].namePolicy.prefix: Invalid value"}, c.want...) {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("webhook=%v: want the error to contain %q, got %v", withoutEnv, w, err)
					}
				}
			}
		})
	}
}

// TestServicesReservedNamesAndLimits: backends reaching one service share a
// claim space when they say so; reserved names and parameter limits apply.
func TestServicesReservedNamesAndLimits(t *testing.T) {
	body := `backends:
- {name: a, driver: test, config: {endpoint: x:1}}
- name: b
  driver: test
  service: a
  config: {endpoint: x:1}
  reservedNames: ["_schemas", "connect-*"]
  limits: {perNamespace: 3, parameterMax: {size: 8}}
- {name: c, driver: test, config: {endpoint: y:1}}
`
	c, err := config.Load(writeConfig(t, body), config.Options{Registry: registry(), Lookup: lookup(nil)})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := c.Backend("a")
	b, _ := c.Backend("b")
	cb, _ := c.Backend("c")
	if a.ClaimScope() != "a" || b.ClaimScope() != "a" || cb.ClaimScope() != "c" {
		t.Errorf("want claim scopes a, a, c, got %s, %s, %s", a.ClaimScope(), b.ClaimScope(), cb.ClaimScope())
	}
	if got := strings.Join(c.ScopeMembers("a"), ","); got != "a,b" {
		t.Errorf("want scope a shared by a,b, got %s", got)
	}
	for name, want := range map[string]bool{"_schemas": true, "connect-offsets": true, "connect": false, "orders": false} {
		if _, got := b.Reserved(name); got != want {
			t.Errorf("b: %s reserved: want %v, got %v", name, want, got)
		}
		if _, got := a.Reserved(name); got {
			t.Errorf("a reserves nothing, but %s is reserved", name)
		}
	}
	src := naming.Source{Name: "n", Namespace: "team"}
	if err := b.CheckName(src, "_schemas"); err == nil || !strings.Contains(err.Error(), `which backend b reserves ("_schemas")`) {
		t.Errorf("want the reserved name refused, naming the backend and pattern, got %v", err)
	}
	p := field.NewPath("spec", "parameters")
	if errs := b.CheckParameterLimits(p, map[string]string{"size": "8"}); len(errs) != 0 {
		t.Errorf("want size 8 allowed, got %v", errs)
	}
	for _, v := range []string{"9", "2147483647", "many", "-1"} {
		errs := b.CheckParameterLimits(p, map[string]string{"size": v})
		if len(errs) != 1 || errs[0].Field != "spec.parameters[size]" || !strings.Contains(errs[0].Error(), "backend b allows at most 8 (limits.parameterMax.size in buckety-controller.yaml)") {
			t.Errorf("size %s: want one error at spec.parameters[size] naming the limit, got %v", v, errs)
		}
	}
	if errs := a.CheckParameterLimits(p, map[string]string{"size": "9999"}); len(errs) != 0 {
		t.Errorf("a has no limits, got %v", errs)
	}
}

// TestNamespaceLimitsAndDefaults (#52): limits.namespaces entries apply
// in file order, by name or label, replacing only the figures they set
// and naming themselves in messages; defaults are the backend's until a
// Buckety is provisioned, then what it recorded unless the backend
// converges them; the spec's keys win over them.
func TestNamespaceLimitsAndDefaults(t *testing.T) {
	dir := writeConfig(t, `backends:
- name: a
  driver: test
  config: {endpoint: x}
  parameters: {size: "10"}
  limits:
    perNamespace: 3
    partitions: 10
    namespaces:
    - names: [gold]
      partitions: 100
    - selector: {matchLabels: {tier: gold}}
      perNamespace: 30
    - names: [gold, silver]
      partitions: 50
- name: b
  driver: test
  convergeParameters: true
  parameters: {size: "20"}
  config: {endpoint: y}
`)
	cfg, err := config.Load(dir, config.Options{Registry: registry(), Lookup: lookup(nil)})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := cfg.Backend("a")
	for _, c := range []struct {
		ns                   string
		labels               map[string]string
		perNamespace         int
		partitions           int64
		partitionsKey, pnKey string
	}{
		{"team", nil, 3, 10, "limits.partitions", "limits.perNamespace"},
		{"gold", map[string]string{"tier": "gold"}, 3, 100, "limits.namespaces[0].partitions", "limits.perNamespace"},
		{"labelled", map[string]string{"tier": "gold"}, 30, 10, "limits.partitions", "limits.namespaces[1].perNamespace"},
		{"silver", nil, 3, 50, "limits.namespaces[2].partitions", "limits.perNamespace"},
	} {
		got := a.ForNamespace(c.ns, c.labels)
		if got.Limits.PerNamespace != c.perNamespace || got.Limits.Partitions != c.partitions {
			t.Errorf("%s: want perNamespace %d and partitions %d, got %d and %d", c.ns, c.perNamespace, c.partitions, got.Limits.PerNamespace, got.Limits.Partitions)
		}
		if k := got.LimitsKey("partitions"); k != c.partitionsKey {
			t.Errorf("%s: partitions set at %q, want %q", c.ns, k, c.partitionsKey)
		}
		if k := got.LimitsKey("perNamespace"); k != c.pnKey {
			t.Errorf("%s: perNamespace set at %q, want %q", c.ns, k, c.pnKey)
		}
	}
	if a.ForNamespace("team", nil) != a {
		t.Errorf("a namespace no entry matches must see the backend itself")
	}

	if got := a.DefaultsFor(nil, false); got["size"] != "10" {
		t.Errorf("new Buckety: want the backend's defaults, got %v", got)
	}
	spec := map[string]string{"size": "7"}
	recorded := map[string]string{"size": "1"}
	if got := a.DefaultsFor(recorded, true); got["size"] != "1" {
		t.Errorf("provisioned, not converging: want the recorded defaults, got %v", got)
	}
	if got := a.DefaultsFor(nil, true); len(got) != 0 {
		t.Errorf("provisioned before defaults existed, not converging: want none, got %v", got)
	}
	b, _ := cfg.Backend("b")
	if got := b.DefaultsFor(recorded, true); got["size"] != "20" {
		t.Errorf("converging backend: want the current default, got %v", got)
	}
	if got := config.Effective(spec, a.DefaultsFor(nil, false)); got["size"] != "7" {
		t.Errorf("effective: want the spec over the defaults, got %v", got)
	}
}

// TestDrainBlock: a backend's drain block gives the pace of its drains:
// StorageGrid's pair of intervals (3 min, then 15 min after the first
// hour) loads as written; a block without slowInterval leaves it to the
// interval (0 here: six times the interval, resolved by the controller).
func TestDrainBlock(t *testing.T) {
	body := "backends:\n- {name: a, driver: test, drain: {interval: 3m, slowInterval: 15m, stuckAfter: 3h}, config: {endpoint: x}}\n- {name: b, driver: test, drain: {interval: 3m}, config: {endpoint: y}}\n- {name: c, driver: test, drain: {slowInterval: 10s}, config: {endpoint: z}}\n"
	c, err := config.Load(writeConfig(t, body), config.Options{Registry: registry(), Lookup: lookup(nil)})
	if err != nil {
		t.Fatalf("want no error, got %v", err)
	}
	for _, w := range []struct {
		name                  string
		interval, slow, stuck time.Duration
	}{
		{"a", 3 * time.Minute, 15 * time.Minute, 3 * time.Hour},
		{"b", 3 * time.Minute, 0, config.DefaultDrainStuckAfter},
		{"c", config.DefaultDrainInterval, 10 * time.Second, config.DefaultDrainStuckAfter},
	} {
		b, ok := c.Backend(w.name)
		if !ok {
			t.Fatalf("want backend %s", w.name)
		}
		if b.DrainInterval() != w.interval || b.DrainSlowInterval() != w.slow || b.DrainStuckAfter() != w.stuck {
			t.Errorf("backend %s: want interval %s, slowInterval %s, stuckAfter %s; got %s, %s, %s", w.name, w.interval, w.slow, w.stuck, b.DrainInterval(), b.DrainSlowInterval(), b.DrainStuckAfter())
		}
	}
}
