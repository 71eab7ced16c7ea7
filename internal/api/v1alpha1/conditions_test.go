package v1alpha1

import (
	"os"
	"strings"
	"testing"
)

// TestREADMEConditions checks README's condition table against the declared
// condition sets: every type of either kind, its polarity, and which kinds
// carry it.
func TestREADMEConditions(t *testing.T) {
	data, err := os.ReadFile("../../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "<!-- conditions table")
	if !ok {
		t.Fatal("README has no conditions table marker")
	}
	type row struct{ polarity, buckety, access string }
	rows := map[string]row{}
	for _, line := range strings.Split(table, "\n")[3:] {
		if !strings.HasPrefix(line, "| `") {
			break
		}
		cells := strings.Split(line, "|")
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		rows[name] = row{strings.TrimSpace(cells[2]), strings.TrimSpace(cells[3]), strings.TrimSpace(cells[4])}
	}
	declared := map[string]row{}
	for _, d := range BucketyConditions {
		declared[d.Type] = row{string(d.Polarity), "yes", "no"}
	}
	for _, d := range BucketyAccessConditions {
		r, ok := declared[d.Type]
		if !ok {
			r = row{string(d.Polarity), "no", ""}
		} else if r.polarity != string(d.Polarity) {
			t.Errorf("%s: declared with two polarities", d.Type)
		}
		r.access = "yes"
		declared[d.Type] = r
	}
	for typ, want := range declared {
		got, ok := rows[typ]
		if !ok {
			t.Errorf("README's condition table lacks %s", typ)
			continue
		}
		if got.polarity != want.polarity || got.buckety != want.buckety || !strings.HasPrefix(got.access, want.access) {
			t.Errorf("%s: want polarity %s, Buckety %s, BucketyAccess %s; README says %s, %s, %s", typ, want.polarity, want.buckety, want.access, got.polarity, got.buckety, got.access)
		}
	}
	for typ := range rows {
		if _, ok := declared[typ]; !ok {
			t.Errorf("README's condition table lists %s, which neither kind declares", typ)
		}
	}
}
