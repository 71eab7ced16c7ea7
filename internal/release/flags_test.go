package release_test

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/internal/release"
)

// TestFlagTable: every flag is a row, in name order, with its kind, its
// default and its usage on one line with pipes escaped.
func TestFlagTable(t *testing.T) {
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.String("c", "/etc/x", "config `dir`")
	fs.Duration("interval", 30*time.Second, "how often\n(a | b)")
	fs.Bool("on", true, "turn it on")
	fs.String("empty", "", "no default")
	got := release.FlagTable(fs)
	want := "| flag | default | meaning |\n| --- | --- | --- |\n" +
		"| `-c dir` | `/etc/x` | config dir |\n" +
		"| `--empty string` | — | no default |\n" +
		"| `--interval duration` | `30s` | how often (a \\| b) |\n" +
		"| `--on` | `true` | turn it on |\n"
	if got != want {
		t.Errorf("want\n%s\ngot\n%s", want, got)
	}
	if strings.Count(got, "\n") != 6 {
		t.Errorf("want 6 lines, got %q", got)
	}
}
