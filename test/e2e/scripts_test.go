// Package e2e holds the end-to-end scenarios (shell, run by run.sh); its
// Go test checks the scripts themselves.
package e2e

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// quietGrepInPipe is a pipeline ending in grep -q: grep exits at its first
// match, the command before it is killed by SIGPIPE when it writes more
// (its output past the pipe's first write, 4 KiB for bash's echo), and
// under pipefail, which lib.sh sets, the whole test reads as no match. A
// refused client's long error output turned the rclone check red that way.
var quietGrepInPipe = regexp.MustCompile(`\|\s*grep\s+(-[a-zA-Z]+\s+)*-[a-zA-Z]*q`)

// TestNoQuietGrepAtAPipesEnd: no e2e script or example assertion ends a
// pipeline in grep -q; they match a captured output (grep -q P <<<"$out").
func TestNoQuietGrepAtAPipesEnd(t *testing.T) {
	var found []string
	checked := 0
	for _, root := range []string{".", filepath.Join("..", "..", "examples")} {
		err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".sh") {
				return err
			}
			f, err := os.Open(path)
			if err != nil {
				return err
			}
			defer f.Close()
			checked++
			s := bufio.NewScanner(f)
			for n := 1; s.Scan(); n++ {
				line := strings.TrimSpace(s.Text())
				if !strings.HasPrefix(line, "#") && quietGrepInPipe.MatchString(line) {
					found = append(found, fmt.Sprintf("%s:%d: %s", path, n, line))
				}
			}
			return s.Err()
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d scripts: want the e2e scripts and the examples' assertions", checked)
	}
	if len(found) > 0 {
		t.Errorf("a pipeline ending in grep -q fails under pipefail when its writer gets SIGPIPE; match a captured output instead (grep -q P <<<\"$out\"):\n%s", strings.Join(found, "\n"))
	}
}
