package release_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers/all"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/release"
)

// TestConditionTable: the table renders from the declarations: Ready first,
// each type once, which kinds carry it and what True means.
func TestConditionTable(t *testing.T) {
	bky := []v1.ConditionDecl{
		{Type: "Broken", Polarity: v1.Negative, TrueMeans: "it | broke"},
		{Type: "Ready", Polarity: v1.Positive, TrueMeans: "all\n  good"},
	}
	acc := []v1.ConditionDecl{
		{Type: "Broken", Polarity: v1.Negative, TrueMeans: "it | broke", AlwaysFalse: true},
		{Type: "Ready", Polarity: v1.Positive, TrueMeans: "all good"},
		{Type: "Lonely", Polarity: v1.Negative, TrueMeans: "only accesses"},
	}
	want := "| condition | polarity | Buckety | BucketyAccess | True means |\n" +
		"| --- | --- | --- | --- | --- |\n" +
		"| `Ready` | Positive | yes | yes | all good |\n" +
		"| `Broken` | Negative | yes | yes (always False) | it \\| broke |\n" +
		"| `Lonely` | Negative | no | yes | only accesses |\n"
	if got := release.ConditionTable(bky, acc); got != want {
		t.Errorf("want\n%s\ngot\n%s", want, got)
	}
	// The real declarations: every type of either kind is a row.
	got := release.ConditionTable(v1.BucketyConditions, v1.BucketyAccessConditions)
	for _, d := range append(v1.BucketyConditions, v1.BucketyAccessConditions...) {
		if !strings.Contains(got, "| `"+d.Type+"` | "+string(d.Polarity)+" |") {
			t.Errorf("want a row for %s, got\n%s", d.Type, got)
		}
	}
}

// TestSecretKeyTable: one row per declared key of every driver.
func TestSecretKeyTable(t *testing.T) {
	reg := all.Registry()
	got := release.SecretKeyTable(reg)
	n := 0
	for _, name := range reg.Names() {
		d, _ := reg.Get(name)
		for _, k := range d.SecretKeys() {
			n++
			always := "yes"
			if k.Optional {
				always = "no"
			}
			if want := "| " + name + " | `" + k.Name + "` | " + always + " | "; !strings.Contains(got, want) {
				t.Errorf("want a row starting %q, got\n%s", want, got)
			}
		}
	}
	if rows := strings.Count(got, "\n") - 2; rows != n {
		t.Errorf("want %d rows, got %d", n, rows)
	}
}

const rules = `apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
spec:
  groups:
  - name: g
    rules:
    - record: not_an_alert
      expr: up
    - alert: DiskFull
      for: 5m
      labels: {severity: critical}
      annotations:
        summary: "Disk {{ $labels.device }} is full."
        runbook_url: https://github.com/Yolean/buckety-controller/blob/main/README.md#runbook-diskfull
`

// TestAlertTableAndRunbooks: the alert table renders from the rules, and
// the runbooks its links point at are checked in the file holding it.
func TestAlertTableAndRunbooks(t *testing.T) {
	alerts, err := release.ReadAlerts([]byte(rules))
	if err != nil {
		t.Fatal(err)
	}
	got, err := release.AlertTable(alerts)
	want := "| alert | severity | for | fires when | runbook |\n| --- | --- | --- | --- | --- |\n" +
		"| `DiskFull` | critical | 5m | Disk `<device>` is full. | [runbook](#runbook-diskfull) |\n"
	if err != nil || got != want {
		t.Errorf("want\n%s\ngot\n%s %v", want, got, err)
	}
	bad := alerts[0]
	bad.Summary = "{{ $value }} disks"
	if _, err := release.AlertTable([]release.Alert{bad}); err == nil || !strings.Contains(err.Error(), "{{ $value }}") {
		t.Errorf("want a template the docs cannot show refused, got %v", err)
	}
	cases := []struct {
		file, doc, err string
	}{
		{file: "README.md", doc: "- <a id=\"runbook-diskfull\"></a>**DiskFull**: look.\n"},
		{file: "README.md", doc: "nothing\n", err: `README.md: no runbook for an alert: want a line starting <a id="runbook-diskfull"></a>`},
		{file: "README.md", doc: "<a id=\"runbook-diskfull\"></a> <a id=\"runbook-gone\"></a>\n", err: "runbook anchor runbook-gone is no alert's"},
		{file: "README.md", doc: "<a id=\"runbook-diskfull\"></a> <a id=\"runbook-diskfull\"></a>\n", err: "2 anchors runbook-diskfull"},
		{file: "docs/operations.md", doc: "<a id=\"runbook-diskfull\"></a>\n", err: "want runbook_url https://github.com/Yolean/buckety-controller/blob/main/docs/operations.md#runbook-diskfull"},
	}
	for _, c := range cases {
		err := release.CheckRunbooks(c.file, c.doc, alerts)
		if c.err == "" && err != nil || c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%s %q: want error containing %q, got %v", c.file, c.doc, c.err, err)
		}
	}
}

// TestReplaceRegions: bodies replace what is between the markers and
// nothing else, regenerating is idempotent, and every marker problem is an
// error naming the file.
func TestReplaceRegions(t *testing.T) {
	doc := "# T\n\nhand\n" + release.BeginMarker("a") + "\nold\nold\n" + release.EndMarker("a") + "\nmore hand\n" +
		"```\n" + release.BeginMarker("quoted") + "\n```\n" +
		release.BeginMarker("b") + "\n" + release.EndMarker("b") + "\n"
	bodies := map[string]string{"a": "new\n", "b": "| x |\n"}
	want := "# T\n\nhand\n" + release.BeginMarker("a") + "\nnew\n" + release.EndMarker("a") + "\nmore hand\n" +
		"```\n" + release.BeginMarker("quoted") + "\n```\n" +
		release.BeginMarker("b") + "\n| x |\n" + release.EndMarker("b") + "\n"
	got, err := release.ReplaceRegions("x.md", doc, bodies)
	if err != nil || got != want {
		t.Fatalf("want\n%s\ngot\n%s %v", want, got, err)
	}
	again, err := release.ReplaceRegions("x.md", got, bodies)
	if err != nil || again != got {
		t.Errorf("want regenerating to change nothing, got\n%s %v", again, err)
	}
	cases := []struct{ doc, err string }{
		{"# T\n", `x.md: no generated region a: add the lines "` + release.BeginMarker("a") + `" and "` + release.EndMarker("a") + `"`},
		{release.BeginMarker("a") + "\n", "x.md:1: region a has no end marker"},
		{release.BeginMarker("a") + "\n" + release.EndMarker("a") + "\n" + release.BeginMarker("a") + "\n" + release.EndMarker("a") + "\n", "x.md:3: region a appears twice"},
		{release.BeginMarker("a") + "\n" + release.EndMarker("a") + "\n" + release.BeginMarker("c") + "\n" + release.EndMarker("c") + "\n", `x.md:3: no generated region "c" belongs in this file`},
		{"<!-- BEGIN GENERATED: a -->\n", "x.md:1: malformed marker"},
		{release.EndMarker("a") + "\n", "x.md:1: \"" + release.EndMarker("a") + "\" closes no open region"},
		{release.BeginMarker("a") + "\n" + release.BeginMarker("b") + "\n", "x.md:2: region b begins inside region a"},
	}
	for _, c := range cases {
		_, err := release.ReplaceRegions("x.md", c.doc, map[string]string{"a": "new\n"})
		if err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%q: want an error containing %q, got %v", c.doc, c.err, err)
		}
	}
}

// TestUpdateDocs: regions are written into their files under the root,
// a second run changes nothing, and a file missing its markers (or a
// marker no region claims, in any of the doc files) fails the whole run
// without writing anything.
func TestUpdateDocs(t *testing.T) {
	root := t.TempDir()
	write := func(rel, content string) {
		t.Helper()
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := func(rel string) string {
		t.Helper()
		b, err := os.ReadFile(filepath.Join(root, rel))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	region := func(name string) string { return release.BeginMarker(name) + "\n" + release.EndMarker(name) + "\n" }
	write("README.md", "# R\n"+region("one"))
	write("drivers/x/README.md", "# X\n"+region("two"))
	write("docs/notes.md", "# no regions\n")
	regions := []release.DocRegion{
		{File: "README.md", Name: "one", Body: "1\n"},
		{File: "drivers/x/README.md", Name: "two", Body: "2\n", Check: func(doc string) error { return nil }},
	}
	files, err := release.UpdateDocs(root, regions)
	if err != nil || strings.Join(files, " ") != "README.md drivers/x/README.md" {
		t.Fatalf("want README.md and drivers/x/README.md written, got %v %v", files, err)
	}
	first := read("README.md") + read("drivers/x/README.md")
	if !strings.Contains(first, "\n1\n") || !strings.Contains(first, "\n2\n") {
		t.Fatalf("want both bodies written, got\n%s", first)
	}
	if _, err := release.UpdateDocs(root, regions); err != nil || read("README.md")+read("drivers/x/README.md") != first {
		t.Errorf("want a second run to change nothing, got %v", err)
	}

	write("docs/notes.md", "# stray\n"+region("three"))
	write("drivers/x/README.md", "# X, markers lost\n")
	regions[0].Body = "changed\n"
	_, err = release.UpdateDocs(root, regions)
	for _, want := range []string{`docs/notes.md:2: no generated region "three" belongs in this file`, "drivers/x/README.md: no generated region two"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("want an error containing %q, got %v", want, err)
		}
	}
	if strings.Contains(read("README.md"), "changed") {
		t.Error("want nothing written when a file is wrong, got README.md rewritten")
	}
}

// TestDocRegions renders the repository's own regions: each has a body,
// and the config references carry the schemas' descriptions and the
// loader's treatment of each field.
func TestDocRegions(t *testing.T) {
	t.Chdir(filepath.Join("..", ".."))
	regions, err := release.DocRegions(all.Registry())
	if err != nil {
		t.Fatal(err)
	}
	body := map[string]string{}
	for _, r := range regions {
		if !strings.HasPrefix(r.Body, "| ") {
			t.Errorf("%s %s: want a table, got %q", r.File, r.Name, r.Body)
		}
		body[r.File+" "+r.Name] = r.Body
	}
	for key, want := range map[string][]string{
		"docs/configuration.md config": {
			"| `name` | string | yes |  | `name` is what Buckety.spec.backend refers to",
			"| `driver` | one of `kadm`, `s3` | yes |",
			"| `namePolicy.prefix` | string | yes, in `namePolicy` | `${VAR}` |",
			"| `defaults` | map of strings | no |",
		},
		"drivers/kadm/README.md config-kadm": {
			"| `seedBrokers` | list of strings | yes | `${VAR}` |",
			"| `requestTimeout` | duration | no |",
			"| `tls.caFile` | string | no | file |",
			"| `sasl.password` | string | yes, in `sasl` | `${VAR}`, credential |",
		},
		"drivers/s3/README.md config-s3": {
			"| `accessKeyID` | string | yes | `${VAR}`, credential |",
		},
		"docs/operations.md alerts":     {"[runbook](#runbook-bucketybackendunavailable)"},
		"docs/reference.md conditions":  {"| `Ready` | Positive | yes | yes |"},
		"docs/reference.md secret-keys": {"| kadm | `bootstrap` | yes |", "| kadm | `topic` | no |", "| kadm | `topic.<buckety>` | no |"},
	} {
		for _, w := range want {
			if !strings.Contains(body[key], w) {
				t.Errorf("%s: want %q, got\n%s", key, w, body[key])
			}
		}
	}
}
