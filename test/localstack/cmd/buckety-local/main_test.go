package main

import (
	"errors"
	"strings"
	"testing"
)

// TestResumeHint: a failed up names the command that gets the user going
// again, and the one that removes everything, for make run's directory and
// for any other.
func TestResumeHint(t *testing.T) {
	for _, tc := range []struct{ dir, again, stop string }{
		{".run/local", "`make run`", "`make stop`"},
		{".run/local/", "`make run`", "`make stop`"},
		{".run/e2e", "`go run ./test/localstack/cmd/buckety-local up --dir .run/e2e`", "`go run ./test/localstack/cmd/buckety-local down --dir .run/e2e`"},
	} {
		err := resumeHint(errors.New("deploy release + local overlay: boom"), tc.dir)
		msg := err.Error()
		for _, want := range []string{"deploy release + local overlay: boom", tc.again + " again", tc.stop + " removes everything"} {
			if !strings.Contains(msg, want) {
				t.Errorf("dir %s: want %q in the message, got %q", tc.dir, want, msg)
			}
		}
	}
}
