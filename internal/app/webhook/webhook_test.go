package webhook

import (
	"bytes"
	"strings"
	"testing"
)

// The webhook server is not built yet: the binary must say so and fail,
// never pretend to serve.
func TestMainRefusesToPretend(t *testing.T) {
	var out, errb bytes.Buffer
	if code := Main([]string{"-c", "/cfg"}, &out, &errb); code == 0 {
		t.Fatalf("want a non-zero exit, got 0")
	}
	if !strings.Contains(errb.String(), "not in this build yet") {
		t.Errorf("want an honest message, got %q", errb.String())
	}
}
