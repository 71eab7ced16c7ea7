package localstack

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/Yolean/buckety-controller/internal/config"
)

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

// EnvLocalDir is the e2e harness's local-node overlay, which `make run`
// deploys with too: host-network Pods reaching the API server and the
// backends on 127.0.0.1, every listener on a free loopback port, probes on
// 127.0.0.1, one webhook replica (two would collide on the host network),
// and the webhook called by URL (no kube-proxy here). Its listeners are
// placeholders its prepare.sh fills: @P0@ controller metrics, @P1@
// controller probes, @P2@ webhook, @P3@ webhook metrics, @P4@ webhook
// probes; @API_PORT@ is the API server's port.
func EnvLocalDir(root string) string {
	return filepath.Join(root, "test", "e2e", "overlays", "env-local")
}

// The ports of env-local's placeholders that Stack records.
const (
	portControllerProbes = 1
	portWebhook          = 2
)

var placeholderRE = regexp.MustCompile(`@([A-Z0-9_]+)@`)

// fillEnvLocal returns env-local's kustomization.yaml with its placeholders
// filled, as its prepare.sh does: @P<i>@ with ports[i], @API_PORT@ with
// apiPort. A placeholder it does not know, or a port it lacks, is an error,
// so a change to the overlay cannot deploy half-filled.
func fillEnvLocal(kustomization, apiPort string, ports []int) (string, error) {
	var errs []string
	out := placeholderRE.ReplaceAllStringFunc(kustomization, func(m string) string {
		name := strings.Trim(m, "@")
		if name == "API_PORT" {
			return apiPort
		}
		if i, err := strconv.Atoi(strings.TrimPrefix(name, "P")); err == nil && strings.HasPrefix(name, "P") && i < len(ports) {
			return strconv.Itoa(ports[i])
		}
		errs = append(errs, m)
		return m
	})
	if len(errs) > 0 {
		return "", fmt.Errorf("env-local overlay: cannot fill %s (have %d ports and @API_PORT@)", strings.Join(errs, ", "), len(ports))
	}
	return out, nil
}

// envLocalPorts is how many @P<i>@ ports env-local's kustomization.yaml
// uses.
func envLocalPorts(kustomization string) int {
	n := 0
	for _, m := range placeholderRE.FindAllStringSubmatch(kustomization, -1) {
		if i, err := strconv.Atoi(strings.TrimPrefix(m[1], "P")); err == nil && strings.HasPrefix(m[1], "P") && i+1 > n {
			n = i + 1
		}
	}
	return n
}

// runOverlay is `make run`'s own layer over env-local: the config and
// credentials of the local backends, and the controller's default drift
// re-check (the e2e environment shortens it to 10s so scenarios see a
// re-check within seconds; the JSON patch's test op fails the deploy if
// env-local's args move).
const runOverlay = `apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: buckety-system
resources:
- ../env
configMapGenerator:
- name: buckety-controller-config
  files:
  - buckety-controller.yaml
secretGenerator:
- name: buckety-controller-credentials
  envs:
  - credentials.env
patches:
- target: {kind: Deployment, name: buckety-controller}
  patch: |
    - op: test
      path: /spec/template/spec/containers/0/args/2
      value: --recheck-interval=10s
    - op: remove
      path: /spec/template/spec/containers/0/args/2
`

// writeOverlays writes dir/env (env-local, filled) and dir/overlay (the
// run layer with config and credentials) beside dir/release, and returns
// the ports it filled in.
func writeOverlays(root, dir, apiPort string, freePorts func(int) ([]int, error), cfg, credentials string) ([]int, error) {
	b, err := os.ReadFile(filepath.Join(EnvLocalDir(root), "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(envLocalPorts(string(b)))
	if err != nil {
		return nil, err
	}
	env, err := fillEnvLocal(string(b), apiPort, ports)
	if err != nil {
		return nil, err
	}
	if len(ports) <= portWebhook {
		return nil, fmt.Errorf("env-local overlay: want ports up to @P%d@, it uses %d", portWebhook, len(ports))
	}
	files := map[string]string{
		filepath.Join("env", "kustomization.yaml"):     env,
		filepath.Join("overlay", "kustomization.yaml"): runOverlay,
		filepath.Join("overlay", config.Filename):      cfg,
		filepath.Join("overlay", "credentials.env"):    credentials,
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	return ports, nil
}
