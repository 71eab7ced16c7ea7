package release

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/invopop/jsonschema"
	"sigs.k8s.io/yaml"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

// cell makes text fit in one markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

func table(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for range header {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// ConditionTable renders the condition types of both kinds: Ready first
// (what kstatus and `kubectl wait` read), then the rest in the Buckety's
// order, then the types only an access carries.
func ConditionTable(bucketies, accesses []v1.ConditionDecl) string {
	type row struct {
		decl            v1.ConditionDecl
		buckety, access string
	}
	var rows []*row
	byType := map[string]*row{}
	add := func(d v1.ConditionDecl) *row {
		if r, ok := byType[d.Type]; ok {
			return r
		}
		r := &row{decl: d, buckety: "no", access: "no"}
		byType[d.Type] = r
		rows = append(rows, r)
		return r
	}
	for _, d := range bucketies {
		add(d).buckety = carried(d)
	}
	for _, d := range accesses {
		add(d).access = carried(d)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		return rows[i].decl.Type == v1.ConditionReady && rows[j].decl.Type != v1.ConditionReady
	})
	var out [][]string
	for _, r := range rows {
		out = append(out, []string{"`" + r.decl.Type + "`", string(r.decl.Polarity), r.buckety, r.access, cell(r.decl.TrueMeans)})
	}
	return table([]string{"condition", "polarity", "Buckety", "BucketyAccess", "True means"}, out)
}

func carried(d v1.ConditionDecl) string {
	if d.AlwaysFalse {
		return "yes (always False)"
	}
	return "yes"
}

// SecretKeyTable renders every registered driver's default Secret keys,
// as each declares them (Driver.SecretKeys).
func SecretKeyTable(reg *drivers.Registry) string {
	var rows [][]string
	for _, name := range reg.Names() {
		d, _ := reg.Get(name)
		for _, k := range d.SecretKeys() {
			always := "yes"
			if k.Optional {
				always = "no"
			}
			rows = append(rows, []string{name, "`" + keyName(k) + "`", always, cell(k.Description)})
		}
	}
	return table([]string{"driver", "key", "always", "meaning"}, rows)
}

// SecretFormatTable renders a driver's secret formats (SecretFormatter):
// a row per format, then a row per key it adds.
func SecretFormatTable(d drivers.Driver) string {
	var rows [][]string
	for _, f := range drivers.Formats(d) {
		rows = append(rows, []string{"`" + f.Name + "`", "", cell(f.Description)})
		for _, k := range f.Keys {
			key := "`" + k.Name + "`"
			if k.Optional {
				key += " (not always)"
			}
			rows = append(rows, []string{"", key, cell(k.Description)})
		}
	}
	return table([]string{"spec.secretFormats", "adds key", "meaning"}, rows)
}

// ConfigTable renders the fields of a config object schema, nested objects
// flattened to dotted paths (list items as `[]`), with their type, whether
// they are required (a nested field: whenever its parent is given), how
// the loader treats them (from goType's tags) and their description (the
// Go doc comment, with the Go names of the object's fields turned into
// their YAML names).
func ConfigTable(s *jsonschema.Schema, goType reflect.Type) string {
	fields := configFields{notes: map[string]string{}, names: map[string]map[string]string{}}
	fields.read(goType, "")
	var rows [][]string
	var walk func(s *jsonschema.Schema, prefix, parent string)
	walk = func(s *jsonschema.Schema, prefix, parent string) {
		if s == nil || s.Properties == nil {
			return
		}
		for p := s.Properties.Oldest(); p != nil; p = p.Next() {
			path, sub := prefix+p.Key, p.Value
			required := "no"
			if slices.Contains(s.Required, p.Key) {
				required = "yes"
				if parent != "" {
					required = "yes, in `" + parent + "`"
				}
			}
			rows = append(rows, []string{"`" + path + "`", schemaType(sub), required, fields.notes[path], cell(describe(p.Key, sub.Description, fields.names[prefix]))})
			switch {
			case sub.Type == "object":
				walk(sub, path+".", path)
			case sub.Type == "array" && sub.Items != nil && sub.Items.Type == "object":
				walk(sub.Items, path+"[].", path+"[]")
			}
		}
	}
	walk(s, "", "")
	return table([]string{"field", "type", "required", "loading", "description"}, rows)
}

// durationPattern is how the schemas spell a Go duration (drivers.Duration).
const durationPattern = "(ns|us|µs|ms|s|m|h)"

func schemaType(s *jsonschema.Schema) string {
	if len(s.Enum) > 0 {
		var vals []string
		for _, v := range s.Enum {
			vals = append(vals, fmt.Sprintf("`%v`", v))
		}
		return "one of " + strings.Join(vals, ", ")
	}
	switch s.Type {
	case "string":
		if strings.Contains(s.Pattern, durationPattern) {
			return "duration"
		}
	case "array":
		if s.Items != nil {
			return "list of " + schemaType(s.Items) + "s"
		}
	case "object":
		if s.AdditionalProperties != nil && s.AdditionalProperties.Type != "" {
			return "map of " + schemaType(s.AdditionalProperties) + "s"
		}
	}
	return s.Type
}

// goIdent matches a word that could be a Go field name.
var goIdent = regexp.MustCompile(`\b[A-Z][A-Za-z0-9]*\b`)

// describe turns a Go doc comment into a description a YAML writer reads:
// one line; the field's YAML name where the comment starts with its Go
// name; and the YAML name of every sibling field the comment names by a Go
// name of two words or more (CertFile, AccessKeyID; not CA, which is also
// a word).
func describe(key, desc string, siblings map[string]string) string {
	desc = strings.Join(strings.Fields(desc), " ")
	first, rest, _ := strings.Cut(desc, " ")
	if strings.EqualFold(first, key) {
		desc = "`" + key + "` " + rest
	}
	return goIdent.ReplaceAllStringFunc(desc, func(w string) string {
		if json, ok := siblings[w]; ok && len(humps.FindAllString(w, -1)) > 1 {
			return "`" + json + "`"
		}
		return w
	})
}

// humps matches the words of a Go name: an upper-case letter and what
// follows it up to the next word.
var humps = regexp.MustCompile(`[A-Z]+[a-z0-9]+|[A-Z]+$`)

// configFields is what a config type's Go declaration says beyond its
// schema, by the dotted path of JSON names.
type configFields struct {
	// notes says how the config loader treats each field: `${VAR}`
	// substitution (envsubst tag), a credential the webhook never loads, a
	// file only the controller reads.
	notes map[string]string
	// names maps, per path prefix of an object, its fields' Go names to
	// their JSON names.
	names map[string]map[string]string
}

func (c configFields) read(t reflect.Type, prefix string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		path := prefix + name
		if c.names[prefix] == nil {
			c.names[prefix] = map[string]string{}
		}
		c.names[prefix][f.Name] = name
		var n []string
		if f.Tag.Get("envsubst") == "true" {
			n = append(n, "`${VAR}`")
		}
		if f.Tag.Get("credential") == "true" {
			n = append(n, "credential")
		}
		if f.Tag.Get("file") == "true" {
			n = append(n, "file")
		}
		c.notes[path] = strings.Join(n, ", ")
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice {
			c.read(ft.Elem(), path+"[].")
		} else {
			c.read(ft, path+".")
		}
	}
}

// Alert is one alerting rule of the monitoring component.
type Alert struct {
	Name, Severity, For, Summary, RunbookURL string
}

// ReadAlerts reads the alerting rules of a PrometheusRule, in file order.
func ReadAlerts(b []byte) ([]Alert, error) {
	var pr struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert       string            `json:"alert"`
					For         string            `json:"for"`
					Labels      map[string]string `json:"labels"`
					Annotations map[string]string `json:"annotations"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(b, &pr); err != nil {
		return nil, err
	}
	var out []Alert
	for _, g := range pr.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert != "" {
				out = append(out, Alert{Name: r.Alert, Severity: r.Labels["severity"], For: r.For, Summary: r.Annotations["summary"], RunbookURL: r.Annotations["runbook_url"]})
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no alerting rules")
	}
	return out, nil
}

// RunbookAnchor is the id of an alert's runbook in the file holding the
// alert table.
func RunbookAnchor(alert string) string { return "runbook-" + strings.ToLower(alert) }

var (
	labelTemplate = regexp.MustCompile(`\{\{\s*\$labels\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}`)
	anyTemplate   = regexp.MustCompile(`\{\{.*?\}\}`)
)

// AlertTable renders one row per alerting rule: its name, severity, how
// long its condition must hold, its summary (label templates shown as
// `<label>`) and a link to its runbook.
func AlertTable(alerts []Alert) (string, error) {
	var rows [][]string
	for _, a := range alerts {
		summary := labelTemplate.ReplaceAllString(a.Summary, "`<$1>`")
		if t := anyTemplate.FindString(summary); t != "" {
			return "", fmt.Errorf("alert %s: summary template %s: the docs can show only {{ $labels.NAME }}", a.Name, t)
		}
		if a.Severity == "" || summary == "" {
			return "", fmt.Errorf("alert %s: want a severity label and a summary annotation", a.Name)
		}
		rows = append(rows, []string{"`" + a.Name + "`", a.Severity, a.For, cell(summary), "[runbook](#" + RunbookAnchor(a.Name) + ")"})
	}
	return table([]string{"alert", "severity", "for", "fires when", "runbook"}, rows), nil
}

// runbookAnchor matches a runbook anchor in a markdown file.
var runbookAnchor = regexp.MustCompile(`<a id="(runbook-[^"]*)"></a>`)

// CheckRunbooks checks doc, the content of file, against the alerts: every
// alert's runbook_url points at its anchor in file, every alert has that
// anchor in doc, and every runbook anchor in doc is an alert's.
func CheckRunbooks(file, doc string, alerts []Alert) error {
	anchors := map[string]int{}
	for _, m := range runbookAnchor.FindAllStringSubmatch(doc, -1) {
		anchors[m[1]]++
	}
	var errs []error
	want := map[string]bool{}
	for _, a := range alerts {
		id := RunbookAnchor(a.Name)
		want[id] = true
		if url := BlobBase + file + "#" + id; a.RunbookURL != url {
			errs = append(errs, fmt.Errorf("%s: alert %s: want runbook_url %s (its runbook in %s), got %q", AlertRulesPath, a.Name, url, file, a.RunbookURL))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(want)) {
		switch anchors[id] {
		case 0:
			errs = append(errs, fmt.Errorf("%s: no runbook for an alert: want a line starting <a id=%q></a>", file, id))
		case 1:
		default:
			errs = append(errs, fmt.Errorf("%s: %d anchors %s, want one", file, anchors[id], id))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(anchors)) {
		if !want[id] {
			errs = append(errs, fmt.Errorf("%s: runbook anchor %s is no alert's in %s", file, id, AlertRulesPath))
		}
	}
	return errors.Join(errs...)
}
