package kafka

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/test/proc"
)

// The broker program is built against kfake with one file replaced:
// kfakepatch/17_sasl_handshake.go.txt, kfake's SaslHandshake handler
// answering, as Kafka does, with the mechanisms it enables on every
// handshake. kafkajs checks that list and refuses to log in without it
// ("SASL SCRAM-SHA-512 mechanism is not supported by the server"); kfake
// lists them only on a refusal. The pinned kfake module is copied from the
// module cache, the file replaced, and the broker built in a workspace
// that replaces kfake with the copy: nothing else changes, and the pin in
// go.mod stays the version built. Drop this once kfake lists them itself.
//
//go:embed kfakepatch/17_sasl_handshake.go.txt
var saslHandshakePatch []byte

// kfakeModule is the module the patch applies to.
const kfakeModule = "github.com/twmb/franz-go/pkg/kfake"

// BuildBroker builds the broker program into out, with kfake patched. It
// runs the go command in the module's root (root).
func BuildBroker(root, out string) error {
	work, err := os.MkdirTemp("", "kfake-build-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	// go mod download, not go list -m: on an empty module cache (a
	// newcomer's machine) the module is not there yet, and go list -m
	// prints no Dir for it.
	dl := exec.Command("go", "mod", "download", "-json", kfakeModule)
	dl.Dir = root
	b, err := dl.Output()
	if err != nil {
		return fmt.Errorf("go mod download %s: %w", kfakeModule, err)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(b, &mod); err != nil || mod.Dir == "" {
		return fmt.Errorf("go mod download %s: no directory (%v %s)", kfakeModule, err, mod.Error)
	}
	dst := filepath.Join(work, "kfake")
	if err := proc.CopyTree(mod.Dir, dst); err != nil {
		return fmt.Errorf("copy %s: %w", kfakeModule, err)
	}
	if err := os.WriteFile(filepath.Join(dst, "17_sasl_handshake.go"), saslHandshakePatch, 0o644); err != nil {
		return err
	}
	goVersion, err := exec.Command("go", "env", "GOVERSION").Output()
	if err != nil {
		return fmt.Errorf("go env GOVERSION: %w", err)
	}
	absRoot, err := filepath.Abs(root)
	if err != nil {
		return err
	}
	gowork := filepath.Join(work, "go.work")
	ws := fmt.Sprintf("go %s\n\nuse %s\n\nreplace %s => %s\n", strings.TrimPrefix(strings.TrimSpace(string(goVersion)), "go"), absRoot, kfakeModule, dst)
	if err := os.WriteFile(gowork, []byte(ws), 0o644); err != nil {
		return err
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", absOut, Package)
	cmd.Dir = absRoot
	cmd.Env = append(os.Environ(), "GOWORK="+gowork)
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("go build %s (kfake patched): %v\n%s", Package, err, b)
	}
	return nil
}

// Binary returns the broker program: the file BinaryEnv names when set
// (make builds it once and sets it), else a fresh build into dir.
func Binary(dir string) (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("%s=%s: %w", BinaryEnv, p, err)
		}
		return abs, nil
	}
	root, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}").Output()
	if err != nil {
		return "", fmt.Errorf("go list -m: %w", err)
	}
	out := filepath.Join(dir, "kfake-broker")
	return out, BuildBroker(strings.TrimSpace(string(root)), out)
}

// TestBinary is Binary into a test temp dir.
func TestBinary(t testing.TB) string {
	t.Helper()
	p, err := Binary(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return p
}
