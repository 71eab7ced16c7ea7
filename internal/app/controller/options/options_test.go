package options

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

func TestFlagWiring(t *testing.T) {
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kc, []byte("apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: \"https://127.0.0.1:6443\"}\nusers:\n- name: u\n  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		args        []string
		concurrency int
		qps         float32
		burst       int
		gzip        bool
	}{
		{name: "defaults", args: nil, concurrency: 16, qps: -1, burst: 0},
		{name: "set", args: []string{"--max-concurrent-reconciles", "32", "--kube-api-qps", "100", "--kube-api-burst", "300", "--kube-api-compression"}, concurrency: 32, qps: 100, burst: 300, gzip: true},
		{name: "burst defaults to twice qps", args: []string{"--kube-api-qps", "40"}, concurrency: 16, qps: 40, burst: 80},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var o Flags
			fs := NewFlagSet("run", io.Discard, &o)
			if err := fs.Parse(append([]string{"--kubeconfig", kc}, c.args...)); err != nil {
				t.Fatal(err)
			}
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if o.MaxConcurrent != c.concurrency {
				t.Errorf("max concurrent reconciles: want %d, got %d", c.concurrency, o.MaxConcurrent)
			}
			rc, err := o.LoadRESTConfig()
			if err != nil {
				t.Fatal(err)
			}
			if rc.QPS != c.qps || rc.Burst != c.burst {
				t.Errorf("REST config: want QPS %v burst %d, got QPS %v burst %d", c.qps, c.burst, rc.QPS, rc.Burst)
			}
			if rc.DisableCompression == c.gzip {
				t.Errorf("REST config: want compression asked for = %v, got DisableCompression %v", c.gzip, rc.DisableCompression)
			}
		})
	}
}

// TestPprofFlag: profiling is off unless asked for, since its endpoints are
// unauthenticated.
func TestPprofFlag(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{name: "off by default", args: nil, want: "0"},
		{name: "set", args: []string{"--pprof-bind-address", "127.0.0.1:6060"}, want: "127.0.0.1:6060"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var o Flags
			fs := NewFlagSet("run", io.Discard, &o)
			if err := fs.Parse(c.args); err != nil {
				t.Fatal(err)
			}
			if o.PprofAddr != c.want {
				t.Errorf("pprof address: want %q, got %q", c.want, o.PprofAddr)
			}
		})
	}
}
