package webhook

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/Yolean/buckety-controller/internal/app/webhook/options"
	"github.com/Yolean/buckety-controller/internal/config"
)

// TestRateLimitFlags: the webhook takes the same client rate-limit flags
// as the controller and refuses a bad value before anything else.
func TestRateLimitFlags(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--kube-api-qps", "0"}, 2, "buckety-webhook: --kube-api-qps 0: want a positive number of requests per second, or -1"},
		{[]string{"--kube-api-qps", "20", "--kube-api-burst", "-2"}, 2, "buckety-webhook: --kube-api-burst -2"},
		{[]string{"--kube-api-qps", "20", "--kube-api-burst", "40", "--version"}, 0, ""},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := Main(c.args, &out, &errb)
		if code != c.code || c.want != "" && !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: want exit %d and %q, got %d %q", c.args, c.code, c.want, code, errb.String())
		}
	}
}

// TestClientFlagsReachTheRESTConfig: the webhook's client gets the rate
// limit and the compression setting its flags say (no gzip by default).
func TestClientFlagsReachTheRESTConfig(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:6443\"}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		qps  float32
		gzip bool
	}{
		{nil, -1, false},
		{[]string{"--kube-api-qps", "30", "--kube-api-compression"}, 30, true},
	} {
		var f options.Flags
		fs := options.NewFlagSet(io.Discard, &f)
		if err := fs.Parse(append([]string{"--kubeconfig", kc}, c.args...)); err != nil {
			t.Fatal(err)
		}
		rc, err := restConfig(f)
		if err != nil {
			t.Fatal(err)
		}
		if rc.QPS != c.qps || rc.DisableCompression == c.gzip {
			t.Errorf("%v: want QPS %v and gzip asked for = %v, got QPS %v DisableCompression %v", c.args, c.qps, c.gzip, rc.QPS, rc.DisableCompression)
		}
	}
}

// TestStartupNotices: the webhook logs, once at startup, each setting a
// backend's config infers (here an s3 backend's credentials.mode), before
// it needs the cluster.
func TestStartupNotices(t *testing.T) {
	dir := t.TempDir()
	body := "backends:\n- {name: blobs, driver: s3, config: {endpoint: 'http://minio:9000', accessKeyID: '${K}', secretAccessKey: '${S}'}}\n"
	if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := Main([]string{"-c", dir, "--kubeconfig", filepath.Join(dir, "missing")}, &out, &errb)
	want := "backend blobs: credentials.mode is not set; Shared, as before (no credentials block): set credentials.mode: Shared to say so"
	if code != 1 || strings.Count(errb.String(), want) != 1 {
		t.Errorf("want exit 1 (no kubeconfig) after the notice %q once, got %d %q", want, code, errb.String())
	}
}
