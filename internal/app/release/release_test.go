package release

import (
	"bytes"
	"strings"
	"testing"
)

// Rendering is not built yet: it must fail and say so, never pretend.
func TestRenderRefusesToPretend(t *testing.T) {
	for _, args := range [][]string{{"render", "--image", "x@sha256:00"}, {"bogus"}, nil} {
		var out, errb bytes.Buffer
		if code := Main(args, &out, &errb); code == 0 {
			t.Errorf("%v: want a non-zero exit, got 0", args)
		}
		if errb.Len() == 0 || strings.Contains(errb.String(), "wrote") {
			t.Errorf("%v: want an honest message on stderr, got %q", args, errb.String())
		}
	}
}

func TestSchemasNeedsTheRepositoryRoot(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"schemas", "--root", t.TempDir()}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "is not the repository root") {
		t.Errorf("want exit 2 naming the problem, got %d %q", code, errb.String())
	}
}
