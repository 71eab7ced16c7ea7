package monitoring

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resource"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/Yolean/buckety-controller/internal/release"
	"github.com/Yolean/buckety-controller/test/gomod"
)

const component = "deploy/kustomize/components/monitoring"

// root is the repository root (go test runs in the package directory).
var root = filepath.Join("..", "..")

// rule is one entry of a PrometheusRule group.
type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type group struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []rule `json:"rules"`
}

// prometheusRule reads the component's PrometheusRule.
func prometheusRule(t *testing.T) []group {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, component, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var pr struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Metadata   struct {
			Name   string            `json:"name"`
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
		Spec struct {
			Groups []group `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.UnmarshalStrict(b, &pr); err != nil {
		t.Fatalf("prometheusrule.yaml: %v", err)
	}
	if pr.APIVersion != "monitoring.coreos.com/v1" || pr.Kind != "PrometheusRule" {
		t.Fatalf("prometheusrule.yaml: want monitoring.coreos.com/v1 PrometheusRule, got %s %s", pr.APIVersion, pr.Kind)
	}
	if len(pr.Spec.Groups) == 0 {
		t.Fatal("prometheusrule.yaml: no rule groups")
	}
	return pr.Spec.Groups
}

// alertNames is the sorted set of alert names (an alert may have one rule
// per severity).
func alertNames(groups []group) []string {
	set := map[string]bool{}
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				set[r.Alert] = true
			}
		}
	}
	var out []string
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// promtool is the path of Debian's promtool, which make test passes in
// BUCKETY_PROMTOOL (test/tools/install.sh promtool).
func promtool(t *testing.T) string {
	t.Helper()
	p := os.Getenv("BUCKETY_PROMTOOL")
	if p == "" {
		if testing.Short() {
			t.Skip("needs promtool: BUCKETY_PROMTOOL unset (make test sets it)")
		}
		t.Fatal("BUCKETY_PROMTOOL is unset: run through make test, or set it to $(test/tools/install.sh promtool)")
	}
	return p
}

// TestRulesPromtool runs the rule groups through `promtool check rules` and
// the unit tests in testdata/rules_test.yaml through `promtool test rules`,
// and checks that those tests give every alert a case where it fires and
// one where it does not.
func TestRulesPromtool(t *testing.T) {
	groups := prometheusRule(t)
	bin := promtool(t)
	dir := t.TempDir()
	rb, err := yaml.Marshal(map[string][]group{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rb, 0o644); err != nil {
		t.Fatal(err)
	}
	tb, err := os.ReadFile(filepath.Join("testdata", "rules_test.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "rules_test.yaml"), tb, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "rules_test.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}

	var tests struct {
		RuleFiles []string `json:"rule_files"`
		Tests     []struct {
			Name          string `json:"name"`
			AlertRuleTest []struct {
				AlertName string            `json:"alertname"`
				ExpAlerts []json.RawMessage `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	if err := yaml.Unmarshal(tb, &tests); err != nil {
		t.Fatal(err)
	}
	if strings.Join(tests.RuleFiles, ",") != "rules.yaml" {
		t.Errorf("rules_test.yaml: want rule_files [rules.yaml] (the file this test writes), got %v", tests.RuleFiles)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, c := range tests.Tests {
		for _, a := range c.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.AlertName] = true
			} else {
				quiet[a.AlertName] = true
			}
		}
	}
	for _, n := range alertNames(groups) {
		if !fires[n] {
			t.Errorf("alert %s: want a promtool case in which it fires, got none", n)
		}
		if !quiet[n] {
			t.Errorf("alert %s: want a promtool case in which it does not fire, got none", n)
		}
	}
}

// TestAlertAnnotations: every alert is warning or critical and has a
// summary and a description that points at its runbook. The runbooks
// themselves (one per alert, where each runbook_url points) are checked by
// `make generate`, which renders docs/operations.md's alert table from these rules
// (internal/release CheckRunbooks).
func TestAlertAnnotations(t *testing.T) {
	for _, g := range prometheusRule(t) {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			for _, a := range []string{"summary", "description", "runbook_url"} {
				if r.Annotations[a] == "" {
					t.Errorf("alert %s: want a %s annotation", r.Alert, a)
				}
			}
			if !strings.Contains(r.Annotations["description"], "runbook") {
				t.Errorf("alert %s: want the description to point at the runbook, got %q", r.Alert, r.Annotations["description"])
			}
			if s := r.Labels["severity"]; s != "warning" && s != "critical" {
				t.Errorf("alert %s: want severity warning or critical, got %q", r.Alert, s)
			}
		}
	}
}

// dashboard reads the component's Grafana dashboard.
type dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

func readDashboard(t *testing.T) (dashboard, []byte) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, component, "buckety.json"))
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("buckety.json: %v", err)
	}
	return d, b
}

// TestDashboard: the dashboard is JSON Grafana can import, every query
// panel reads the dashboard's data source variable, and panel ids are
// unique.
func TestDashboard(t *testing.T) {
	d, _ := readDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("want a uid and a title, got %q %q", d.UID, d.Title)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		vars[v.Name] = v.Type
	}
	if vars["datasource"] != "datasource" {
		t.Errorf("want a datasource variable, got %v", vars)
	}
	ids := map[int]string{}
	var queries int
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if other, dup := ids[p.ID]; dup {
				t.Errorf("panel id %d used by %q and %q", p.ID, other, p.Title)
			}
			ids[p.ID] = p.Title
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %q: want datasource ${datasource}, got %+v", p.Title, p.Datasource)
			}
			if len(p.Targets) == 0 {
				t.Errorf("panel %q: no queries", p.Title)
			}
			for _, q := range p.Targets {
				queries++
				if strings.TrimSpace(q.Expr) == "" {
					t.Errorf("panel %q query %s: empty expr", p.Title, q.RefID)
				}
			}
		}
	}
	walk(d.Panels)
	if queries == 0 {
		t.Error("want queries in the dashboard, got none")
	}
}

// metricDefinition finds the metric names a Go file registers: a Name in
// metric options, or the first argument of prometheus.NewDesc.
var metricDefinition = regexp.MustCompile(`(?:\bName:\s*|prometheus\.NewDesc\(\s*)"([a-zA-Z_:][a-zA-Z0-9_:]*)"`)

// registeredMetrics scans the non-test Go files under dirs for metric
// definitions.
func registeredMetrics(t *testing.T, dirs ...string) map[string]bool {
	t.Helper()
	names := map[string]bool{}
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
				return err
			}
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range metricDefinition.FindAllStringSubmatch(string(b), -1) {
				names[m[1]] = true
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return names
}

// moduleDir is where the Go toolchain keeps a dependency's source.
func moduleDir(t *testing.T, mod string) string {
	t.Helper()
	dir, err := gomod.Dir(mod)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

var (
	// promqlNoise is what metricNames removes before looking for
	// identifiers: strings, label matchers, range and subquery brackets,
	// and the label lists of grouping and matching modifiers.
	promqlNoise = []*regexp.Regexp{
		regexp.MustCompile(`"(?:[^"\\]|\\.)*"`),
		regexp.MustCompile(`\{[^}]*\}`),
		regexp.MustCompile(`\[[^\]]*\]`),
		regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`),
	}
	promqlIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true, "inf": true, "nan": true}
)

// metricNames returns the metric names a PromQL expression reads: every
// identifier that is not a function call, a keyword or a label.
func metricNames(expr string) []string {
	for _, re := range promqlNoise {
		expr = re.ReplaceAllString(expr, " ")
	}
	var out []string
	for _, m := range promqlIdent.FindAllStringIndex(expr, -1) {
		// Part of a number (1e3, 0.5) or of a $variable.
		if m[0] > 0 && strings.ContainsAny(expr[m[0]-1:m[0]], "0123456789.$") {
			continue
		}
		name := expr[m[0]:m[1]]
		call := strings.HasPrefix(strings.TrimLeft(expr[m[1]:], " \t\n"), "(")
		if call || promqlKeywords[strings.ToLower(name)] {
			continue
		}
		out = append(out, name)
	}
	return out
}

func TestMetricNames(t *testing.T) {
	for _, c := range []struct {
		expr string
		want string
	}{
		{`sum by (backend) (rate(foo_total{a="b", c=~"x|y"}[5m])) / bar > 0.1`, "foo_total bar"},
		{`time() - min by (kind) (since{k="v"}) > 15 * 60 and on (x) baz unless qux offset 5m`, "since baz qux"},
		{`histogram_quantile(0.99, sum by (le) (rate(h_bucket[$__rate_interval]))) > 1e3`, "h_bucket"},
		{`label_replace(absent(m), "binary", "c", "", "")`, "m"},
	} {
		if got := strings.Join(metricNames(c.expr), " "); got != c.want {
			t.Errorf("metricNames(%s): want %q, got %q", c.expr, c.want, got)
		}
	}
}

// TestMetricsExist: every metric the rules and the dashboard read is one
// the code registers: buckety's own (internal/), controller-runtime's
// (from its source in the module cache), or the API server's admission
// webhook metric (from k8s.io/apiserver's source), so a renamed or
// misspelt metric fails here rather than leaving an alert silently blind.
func TestMetricsExist(t *testing.T) {
	known := registeredMetrics(t, filepath.Join(root, "internal"), filepath.Join(root, "drivers"), moduleDir(t, "sigs.k8s.io/controller-runtime"))
	for _, n := range []string{"buckety_resources", "buckety_not_ready_since_timestamp_seconds", "buckety_admission_requests_total",
		"buckety_webhook_certificate_expiration_timestamp_seconds", "controller_runtime_reconcile_errors_total"} {
		if !known[n] {
			t.Fatalf("the scan of registered metrics missed %s: fix metricDefinition", n)
		}
	}
	// kube-apiserver's metric is defined as namespace + subsystem + name.
	apiserver := filepath.Join(moduleDir(t, "k8s.io/apiserver"), "pkg", "admission", "metrics", "metrics.go")
	src, err := os.ReadFile(apiserver)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`namespace = "apiserver"`, `subsystem = "admission"`, `Name:           "webhook_rejection_count"`, `"calling_webhook_error"`, `"no_error"`} {
		if !strings.Contains(string(src), s) {
			t.Errorf("%s: want %s (apiserver_admission_webhook_rejection_count and its error_type values)", apiserver, s)
		}
	}
	known["apiserver_admission_webhook_rejection_count"] = true

	exists := func(n string) bool {
		if known[n] {
			return true
		}
		for _, suffix := range []string{"_bucket", "_count", "_sum"} {
			if base, ok := strings.CutSuffix(n, suffix); ok && known[base] {
				return true
			}
		}
		return false
	}
	check := func(where, expr string) {
		names := metricNames(expr)
		if len(names) == 0 {
			t.Errorf("%s: reads no metric: %s", where, expr)
		}
		for _, n := range names {
			if !exists(n) {
				t.Errorf("%s: metric %s is not registered by buckety, controller-runtime or the API server", where, n)
			}
		}
	}
	for _, g := range prometheusRule(t) {
		for _, r := range g.Rules {
			check("alert "+r.Alert+r.Record, r.Expr)
		}
	}
	d, _ := readDashboard(t)
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, q := range p.Targets {
				check(fmt.Sprintf("dashboard panel %q query %s", p.Title, q.RefID), q.Expr)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		var q struct {
			Query string `json:"query"`
		}
		if v.Type != "query" {
			continue
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("dashboard variable %s: %v", v.Name, err)
		}
		// Grafana's label_values(series, label) reads the series.
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("dashboard variable %s: want a label_values(metric, label) query, got %q", v.Name, q.Query)
			continue
		}
		check("dashboard variable "+v.Name, m[1])
	}
}

// strict decodes a rendered object into an API type, refusing unknown
// fields.
func strict(t *testing.T, r *resource.Resource, into any) {
	t.Helper()
	b, err := r.AsYAML()
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, into); err != nil {
		t.Errorf("%s/%s: want a strict decode into the Prometheus Operator's type, got %v", r.GetKind(), r.GetName(), err)
	}
}

// labelValues is a Grafana variable query listing a label's values.
var labelValues = regexp.MustCompile(`^label_values\((.+),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// TestComponentRendersWithRelease renders the release base (as buckety-release
// render does) into a directory, then an install overlay of it with the
// monitoring component, and checks what the component adds: the rules, the
// dashboard ConfigMap the Grafana sidecar picks up, and ServiceMonitors that
// reach a metrics port of each binary's Pods.
func TestComponentRendersWithRelease(t *testing.T) {
	ref, err := release.PinnedImage("ghcr.io/yolean/buckety-controller@sha256:" + strings.Repeat("ab", 32))
	if err != nil {
		t.Fatal(err)
	}
	files, err := release.Render(filepath.Join(root, "deploy", "kustomize", "base"), ref)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	rel := filepath.Join(dir, "buckety", "release")
	if err := os.MkdirAll(rel, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(rel, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	comp, err := filepath.Abs(filepath.Join(root, component))
	if err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(dir, "overlay")
	if err := os.MkdirAll(overlay, 0o755); err != nil {
		t.Fatal(err)
	}
	compRel, err := filepath.Rel(overlay, comp)
	if err != nil {
		t.Fatal(err)
	}
	k := fmt.Sprintf("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nnamespace: buckety-system\nresources:\n- ../buckety/release\ncomponents:\n- %s\n", compRel)
	if err := os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(k), 0o644); err != nil {
		t.Fatal(err)
	}
	build := func(path string) []*resource.Resource {
		t.Helper()
		opts := krusty.MakeDefaultOptions()
		opts.LoadRestrictions = types.LoadRestrictionsNone
		m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), path)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", path, err)
		}
		return m.Resources()
	}
	without := build(rel)
	with := build(overlay)

	id := func(r *resource.Resource) string { return r.GetKind() + "/" + r.GetName() }
	base := map[string]bool{}
	for _, r := range without {
		base[id(r)] = true
	}
	var added []string
	byID := map[string]*resource.Resource{}
	for _, r := range with {
		byID[id(r)] = r
		if !base[id(r)] {
			added = append(added, id(r))
			if ns := r.GetNamespace(); ns != "buckety-system" {
				t.Errorf("%s: want namespace buckety-system (the overlay's), got %q", id(r), ns)
			}
		}
	}
	sort.Strings(added)
	want := "ConfigMap/buckety-dashboard PrometheusRule/buckety Service/buckety-webhook-metrics ServiceMonitor/buckety-controller ServiceMonitor/buckety-webhook"
	if got := strings.Join(added, " "); got != want {
		t.Errorf("component adds: want %s, got %s", want, got)
	}
	if len(with) != len(without)+5 {
		t.Errorf("want the release's %d objects plus 5, got %d", len(without), len(with))
	}

	// The operator's objects decode strictly into its API types: a
	// misspelt field would otherwise be dropped silently.
	if r := byID["PrometheusRule/buckety"]; r != nil {
		var pr monitoringv1.PrometheusRule
		strict(t, r, &pr)
		if n := len(pr.Spec.Groups); n == 0 {
			t.Error("PrometheusRule: no groups")
		}
	}

	if cm := byID["ConfigMap/buckety-dashboard"]; cm != nil {
		if cm.GetLabels()["grafana_dashboard"] != "1" {
			t.Errorf("dashboard ConfigMap: want label grafana_dashboard=1, got %v", cm.GetLabels())
		}
		_, raw := readDashboard(t)
		if got := cm.GetDataMap()["buckety.json"]; got != string(raw) {
			t.Error("dashboard ConfigMap: want buckety.json as is")
		}
	}

	// Each ServiceMonitor endpoint port must be a port of a Service it
	// selects, whose targetPort is a named container port of the Pods that
	// Service selects.
	type svc struct {
		labels, selector map[string]string
		ports            map[string]string // name -> targetPort
	}
	services := map[string]svc{}
	podPorts := map[string][]map[string]string{} // container port name -> pod label sets
	for _, r := range with {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		switch r.GetKind() {
		case "Service":
			var s struct {
				Spec struct {
					Selector map[string]string `json:"selector"`
					Ports    []struct {
						Name       string `json:"name"`
						TargetPort any    `json:"targetPort"`
					} `json:"ports"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(b, &s); err != nil {
				t.Fatal(err)
			}
			v := svc{labels: r.GetLabels(), selector: s.Spec.Selector, ports: map[string]string{}}
			for _, p := range s.Spec.Ports {
				v.ports[p.Name] = fmt.Sprint(p.TargetPort)
			}
			services[r.GetName()] = v
		case "Deployment":
			var d struct {
				Spec struct {
					Template struct {
						Metadata struct {
							Labels map[string]string `json:"labels"`
						} `json:"metadata"`
						Spec struct {
							Containers []struct {
								Ports []struct {
									Name string `json:"name"`
								} `json:"ports"`
							} `json:"containers"`
						} `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			}
			if err := json.Unmarshal(b, &d); err != nil {
				t.Fatal(err)
			}
			for _, c := range d.Spec.Template.Spec.Containers {
				for _, p := range c.Ports {
					podPorts[p.Name] = append(podPorts[p.Name], d.Spec.Template.Metadata.Labels)
				}
			}
		}
	}
	matches := func(sel, labels map[string]string) bool {
		if len(sel) == 0 {
			return false
		}
		for k, v := range sel {
			if labels[k] != v {
				return false
			}
		}
		return true
	}
	for _, name := range []string{"buckety-controller", "buckety-webhook"} {
		r := byID["ServiceMonitor/"+name]
		if r == nil {
			continue
		}
		var sm monitoringv1.ServiceMonitor
		strict(t, r, &sm)
		if len(sm.Spec.Endpoints) == 0 {
			t.Errorf("ServiceMonitor %s: no endpoints", name)
		}
		for _, ep := range sm.Spec.Endpoints {
			if ep.Scheme == nil || !strings.EqualFold(string(*ep.Scheme), string(monitoringv1.SchemeHTTPS)) {
				t.Errorf("ServiceMonitor %s: want scheme https (metrics are served over TLS), got %v", name, ep.Scheme.String())
			}
			//lint:ignore SA1019 deprecated in favour of authorization, which needs a token Secret; the component sends Prometheus' own ServiceAccount token (servicemonitors.yaml says why).
			if ep.BearerTokenFile == "" {
				t.Errorf("ServiceMonitor %s: want Prometheus' ServiceAccount token sent (metrics need an authorized caller)", name)
			}
			if !ep.HonorLabels {
				t.Errorf("ServiceMonitor %s: want honorLabels (the metrics' namespace label is the tenant's; the target's would overwrite it)", name)
			}
			var reached []string
			for sname, s := range services {
				target, ok := s.ports[ep.Port]
				if !matches(sm.Spec.Selector.MatchLabels, s.labels) || !ok {
					continue
				}
				for _, pod := range podPorts[target] {
					if matches(s.selector, pod) && pod["app.kubernetes.io/name"] == name {
						reached = append(reached, sname)
					}
				}
			}
			if len(reached) != 1 {
				t.Errorf("ServiceMonitor %s port %s: want exactly one Service reaching %s Pods' %s port, got %v", name, ep.Port, name, ep.Port, reached)
			}
		}
	}
}
