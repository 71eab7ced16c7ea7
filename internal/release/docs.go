package release

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
)

// Tables in the documentation that restate something declared in Go or in
// a shipped manifest are generated from that declaration (`make generate`,
// `buckety-release docs`), so they cannot drift from it: `make verify`
// regenerates them and fails on any difference. Each such table is a
// region of a markdown file between two marker lines:
//
//	<!-- BEGIN GENERATED: NAME (make generate) -->
//	<!-- END GENERATED: NAME -->
//
// Everything outside the markers is written by hand.

// AlertRulesPath is the monitoring component's PrometheusRule, the source of
// the alert table.
const AlertRulesPath = "deploy/kustomize/components/monitoring/prometheusrule.yaml"

// BlobBase is where the repository's files are read on GitHub; each alert's
// runbook_url is BlobBase, the file holding the alert table, and the
// alert's runbook anchor.
const BlobBase = "https://github.com/Yolean/buckety-controller/blob/main/"

// BeginMarker is the line that opens the generated region name.
func BeginMarker(name string) string {
	return "<!-- BEGIN GENERATED: " + name + " (make generate) -->"
}

// EndMarker is the line that closes the generated region name.
func EndMarker(name string) string { return "<!-- END GENERATED: " + name + " -->" }

// DocRegion is one generated region of a markdown file.
type DocRegion struct {
	// File is the repository-relative markdown file holding the region.
	File string
	// Name is the region's name in its markers.
	Name string
	// Body is what goes between the markers, ending in a newline.
	Body string
	// Check, when set, checks the whole file once its regions are written
	// (that the anchors the region links to exist, for example).
	Check func(doc string) error
}

// DocRegions renders every generated region of the documentation: the
// condition table from the API's declarations, the Secret keys and config
// references from the registered drivers and the config types (through the
// same JSON schemas `buckety-release schemas` publishes), and the alert
// table from the monitoring component. It reads Go doc comments, so it runs
// with the working directory at the repository root.
func DocRegions(reg *drivers.Registry) ([]DocRegion, error) {
	ctl, err := controllerConfigSchema(reg.Names())
	if err != nil {
		return nil, err
	}
	backends, _ := ctl.Properties.Get("backends")
	regions := []DocRegion{
		{File: "docs/reference.md", Name: "conditions", Body: ConditionTable(v1.BucketyConditions, v1.BucketyAccessConditions)},
		{File: "docs/reference.md", Name: "secret-keys", Body: SecretKeyTable(reg)},
		{File: "docs/configuration.md", Name: "config", Body: ConfigTable(backends.Items, reflect.TypeFor[config.Backend]())},
	}
	for _, name := range reg.Names() {
		d, _ := reg.Get(name)
		s, err := configSchema(d)
		if err != nil {
			return nil, err
		}
		regions = append(regions, DocRegion{File: "drivers/" + name + "/README.md", Name: "config-" + name, Body: ConfigTable(s, reflect.TypeOf(d.NewConfig()))})
		if len(drivers.Formats(d)) > 0 {
			regions = append(regions, DocRegion{File: "drivers/" + name + "/README.md", Name: "secret-formats-" + name, Body: SecretFormatTable(d)})
		}
	}
	b, err := os.ReadFile(AlertRulesPath)
	if err != nil {
		return nil, err
	}
	alerts, err := ReadAlerts(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AlertRulesPath, err)
	}
	body, err := AlertTable(alerts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", AlertRulesPath, err)
	}
	const alertsFile = "docs/operations.md"
	regions = append(regions, DocRegion{File: alertsFile, Name: "alerts", Body: body, Check: func(doc string) error {
		return CheckRunbooks(alertsFile, doc, alerts)
	}})
	return regions, nil
}

// DocFiles lists the markdown files under root that may hold generated
// regions: README.md, docs/*.md and drivers/*/README.md, repository-relative.
func DocFiles(root string) ([]string, error) {
	out := []string{"README.md"}
	for _, pattern := range []string{"docs/*.md", "drivers/*/README.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			return nil, err
		}
		for _, f := range m {
			rel, err := filepath.Rel(root, f)
			if err != nil {
				return nil, err
			}
			out = append(out, filepath.ToSlash(rel))
		}
	}
	sort.Strings(out[1:])
	return out, nil
}

// UpdateDocs writes regions into their files under root and returns the
// files it wrote. Every file of DocFiles is read: a marker naming a region
// that is not rendered for that file is an error, and so is a region whose
// file lacks its markers. Nothing is written unless every file is right.
func UpdateDocs(root string, regions []DocRegion) ([]string, error) {
	files, err := DocFiles(root)
	if err != nil {
		return nil, err
	}
	byFile := map[string][]DocRegion{}
	for _, r := range regions {
		if !slices.Contains(files, r.File) {
			files = append(files, r.File)
		}
		byFile[r.File] = append(byFile[r.File], r)
	}
	out := map[string]string{}
	var errs []error
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (it holds the generated regions %s)", f, err, regionNames(byFile[f])))
			continue
		}
		bodies := map[string]string{}
		for _, r := range byFile[f] {
			bodies[r.Name] = r.Body
		}
		doc, err := ReplaceRegions(f, string(b), bodies)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range byFile[f] {
			if r.Check != nil {
				if err := r.Check(doc); err != nil {
					errs = append(errs, err)
				}
			}
		}
		out[f] = doc
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	var written []string
	for _, f := range files {
		if len(byFile[f]) == 0 {
			continue
		}
		if err := os.WriteFile(filepath.Join(root, f), []byte(out[f]), 0o644); err != nil {
			return written, err
		}
		written = append(written, f)
	}
	return written, nil
}

func regionNames(rs []DocRegion) string {
	var names []string
	for _, r := range rs {
		names = append(names, r.Name)
	}
	return strings.Join(names, ", ")
}

// markerLine matches a line that opens or closes a generated region.
var markerLine = regexp.MustCompile(`^<!-- (BEGIN|END) GENERATED: ([a-z0-9-]+)( \(make generate\))? -->$`)

// ReplaceRegions returns doc (the content of file) with the body of every
// region in bodies replaced. Marker lines inside fenced code blocks are
// text. It is an error, naming the file, when a region of bodies has no
// markers, when a marker names a region not in bodies, or when markers are
// malformed, unbalanced or repeated.
func ReplaceRegions(file, doc string, bodies map[string]string) (string, error) {
	lines := strings.SplitAfter(doc, "\n")
	var out strings.Builder
	var errs []error
	seen := map[string]bool{}
	open, openLine := "", 0
	fence := false
	for i, line := range lines {
		text := strings.TrimRight(line, "\n")
		if open == "" && strings.HasPrefix(strings.TrimSpace(text), "```") {
			fence = !fence
		}
		if fence || !strings.HasPrefix(text, "<!-- BEGIN GENERATED") && !strings.HasPrefix(text, "<!-- END GENERATED") {
			if open == "" {
				out.WriteString(line)
			}
			continue
		}
		m := markerLine.FindStringSubmatch(text)
		switch {
		case m == nil || m[1] == "BEGIN" && text != BeginMarker(m[2]) || m[1] == "END" && text != EndMarker(m[2]):
			errs = append(errs, fmt.Errorf("%s:%d: malformed marker %q: want %q or %q", file, i+1, text, BeginMarker("NAME"), EndMarker("NAME")))
		case m[1] == "BEGIN" && open != "":
			errs = append(errs, fmt.Errorf("%s:%d: region %s begins inside region %s (line %d)", file, i+1, m[2], open, openLine))
		case m[1] == "BEGIN":
			body, ok := bodies[m[2]]
			if !ok {
				holds := "none"
				if len(bodies) > 0 {
					holds = strings.Join(sortedNames(bodies), ", ")
				}
				errs = append(errs, fmt.Errorf("%s:%d: no generated region %q belongs in this file (it holds: %s)", file, i+1, m[2], holds))
			}
			if seen[m[2]] {
				errs = append(errs, fmt.Errorf("%s:%d: region %s appears twice", file, i+1, m[2]))
			}
			seen[m[2]] = true
			open, openLine = m[2], i+1
			out.WriteString(line)
			out.WriteString(body)
		case open != m[2]:
			errs = append(errs, fmt.Errorf("%s:%d: %q closes no open region", file, i+1, text))
		default:
			open = ""
			out.WriteString(line)
		}
	}
	if open != "" {
		errs = append(errs, fmt.Errorf("%s:%d: region %s has no end marker %q", file, openLine, open, EndMarker(open)))
	}
	for _, name := range sortedNames(bodies) {
		if !seen[name] {
			errs = append(errs, fmt.Errorf("%s: no generated region %s: add the lines %q and %q where it belongs", file, name, BeginMarker(name), EndMarker(name)))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return "", err
	}
	return out.String(), nil
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
