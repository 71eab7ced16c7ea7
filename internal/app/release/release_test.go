package release

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/internal/release"
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

func TestSchemasAndDocsNeedTheRepositoryRoot(t *testing.T) {
	for _, cmd := range []string{"schemas", "docs"} {
		var out, errb bytes.Buffer
		if code := Main([]string{cmd, "--root", t.TempDir()}, &out, &errb); code != 2 || !strings.Contains(errb.String(), "is not the repository root") {
			t.Errorf("%s: want exit 2 naming the problem, got %d %q", cmd, code, errb.String())
		}
	}
}

// TestDriversAndSecretKeys: the commands run.sh, local.sh and lib.sh call,
// with what they print and how they fail.
func TestDriversAndSecretKeys(t *testing.T) {
	dir := t.TempDir()
	cfg := dir + "/buckety-controller.yaml"
	if err := os.WriteFile(cfg, []byte("backends:\n- {name: kafka, driver: kadm, config: {seedBrokers: [\"@KAFKA_BOOTSTRAP@\"]}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bad := dir + "/bad.yaml"
	if err := os.WriteFile(bad, []byte("backends:\n- {name: kafka, driver: kafka}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// What the registry holds, as the commands must print it.
	var listing, majors string
	for _, d := range release.Drivers(all.Registry()) {
		listing += d.Name + " " + d.Version.String() + " " + d.Package + "\n"
		majors += fmt.Sprintf(" -X %s.version=%d.0.0", d.Package, d.Version.Major+1)
	}
	majors = strings.TrimPrefix(majors, " ") + "\n"
	if !strings.Contains(listing, "kadm ") || !strings.Contains(listing, "s3 ") {
		t.Fatalf("want kadm and s3 registered, got %q", listing)
	}
	cases := []struct {
		args   []string
		code   int
		stdout string // all it prints, when set
		stderr string
	}{
		{args: []string{"drivers"}, stdout: listing},
		{args: []string{"drivers", "--ldflags", "next-major"}, stdout: majors},
		{args: []string{"drivers", "--ldflags", "next"}, code: 2, stderr: `unknown bump "next"`},
		{args: []string{"drivers", "--config", cfg}, stdout: "kadm\n"},
		{args: []string{"drivers", "--config", bad}, code: 1, stderr: `driver "kafka" is not registered`},
		{args: []string{"drivers", "--config", cfg, "--ldflags", "next-patch"}, code: 2, stderr: "not both"},
		{args: []string{"secret-keys", "--root", "../../..", "s3", "region"}, stdout: "accessKeyID,endpoint,region,secretAccessKey\n"},
		{args: []string{"secret-keys", "--root", "../../..", "s3", "bucket", "region"}, stdout: "accessKeyID,bucket,endpoint,region,secretAccessKey\n"},
		{args: []string{"secret-keys", "--root", "../../..", "s3", "buckets", "bucket.orders", "region.payments_orders"}, stdout: "accessKeyID,bucket.orders,buckets,endpoint,region.payments_orders,secretAccessKey\n"},
		{args: []string{"secret-keys", "--root", "../../..", "kadm"}, stdout: "bootstrap\n"},
		{args: []string{"secret-keys", "--root", "../../..", "kadm", "topic"}, stdout: "bootstrap,topic\n"},
		{args: []string{"secret-keys", "--root", "../../..", "kadm", "topics", "topic.orders", "topic.payments_orders"}, stdout: "bootstrap,topic.orders,topic.payments_orders,topics\n"},
		{args: []string{"secret-keys", "--root", "../../..", "s3", "endpoint"}, code: 2, stderr: `"endpoint" is not an optional key`},
		{args: []string{"secret-keys", "--root", "../../..", "nope"}, code: 2, stderr: `no driver "nope"`},
		{args: []string{"secret-keys", "--root", dir, "kadm"}, code: 1, stderr: "secret.schema.json: no such file"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := Main(c.args, &out, &errb)
		if code != c.code || (c.stdout != "" && out.String() != c.stdout) || !strings.Contains(errb.String(), c.stderr) {
			t.Errorf("%v: want exit %d, stdout %q, stderr containing %q; got %d %q %q", c.args, c.code, c.stdout, c.stderr, code, out.String(), errb.String())
		}
	}
}
