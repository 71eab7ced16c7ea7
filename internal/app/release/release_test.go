package release

import (
	"bytes"
	"strings"
	"testing"
)

// Rendering is not built yet: every command must fail and say so.
func TestMainRefusesToPretend(t *testing.T) {
	for _, args := range [][]string{{"render", "--image", "x@sha256:00"}, {"schemas"}, {"bogus"}, nil} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code == 0 {
			t.Errorf("%v: want a non-zero exit, got 0", args)
		}
		if errb.Len() == 0 {
			t.Errorf("%v: want a message on stderr", args)
		}
		if strings.Contains(errb.String(), "wrote") {
			t.Errorf("%v: must not claim to have written anything: %q", args, errb.String())
		}
	}
}
