package integration

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certmanagerv1 "github.com/cert-manager/cert-manager/pkg/apis/certmanager/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/release"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/gomod"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/pki"
	"github.com/Yolean/buckety-controller/test/proc"
	"github.com/Yolean/buckety-controller/test/wait"
)

// specChanged is the deployed validating webhooks' match condition: a
// CREATE only without buckety's stamp (the finalizer and slot label: what
// the mutating webhook of the same name, which judges every create, left
// to the schema), an UPDATE only when spec changed or the slot label did,
// its presence or its value (a tenant's edit of the label would take the
// object out of its shard's cache).
const specChanged = "request.operation == 'CREATE' ? !(has(object.metadata.finalizers) && object.metadata.finalizers.exists(f, f == 'buckety.yolean.se/cleanup') && has(object.metadata.labels) && 'buckety.yolean.se/slot' in object.metadata.labels) : !has(object.spec) || !has(oldObject.spec) || object.spec != oldObject.spec || (has(object.metadata.labels) && 'buckety.yolean.se/slot' in object.metadata.labels) != (has(oldObject.metadata.labels) && 'buckety.yolean.se/slot' in oldObject.metadata.labels) || (has(object.metadata.labels) && 'buckety.yolean.se/slot' in object.metadata.labels ? object.metadata.labels['buckety.yolean.se/slot'] : '') != (has(oldObject.metadata.labels) && 'buckety.yolean.se/slot' in oldObject.metadata.labels ? oldObject.metadata.labels['buckety.yolean.se/slot'] : '')"

const testDigest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"

func renderRelease(t *testing.T) string {
	t.Helper()
	ref, err := release.PinnedImage(release.ImageName + "@" + testDigest)
	if err != nil {
		t.Fatal(err)
	}
	files, err := release.Render(filepath.Join(controlplane.RepoRoot(), "deploy", "kustomize", "base"), ref)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "release")
	if err := release.WriteRelease(out, files); err != nil {
		t.Fatal(err)
	}
	return out
}

// certManagerCRDs installs cert-manager's CRDs from its Go module.
func certManagerCRDs(t *testing.T) {
	t.Helper()
	crds, err := gomod.CertManagerCRDs()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := cp.InstallCRDs(ctx, crds); err != nil {
		t.Fatal(err)
	}
}

// objects decodes every document of a rendered file.
func objects(t *testing.T, path string) [][]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var out [][]byte
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(doc, []byte("kind:")) {
			out = append(out, doc)
		}
	}
}

func kindOf(doc []byte) (kind, name string) {
	var m struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal(doc, &m); err != nil {
		return "", ""
	}
	return m.Kind, m.Metadata.Name
}

// TestReleaseAppliesWithServerSideDryRun: the rendered release applies
// cleanly against the real API server with cert-manager's CRDs, and its
// Issuer and Certificate decode strictly into cert-manager's API types.
func TestReleaseAppliesWithServerSideDryRun(t *testing.T) {
	needInfra(t)
	certManagerCRDs(t)
	dir := renderRelease(t)
	createOrIgnore(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := cp.Kubectl(ctx, "apply", "--server-side", "--dry-run=server", "--field-manager=buckety-release-test", "-k", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --server-side --dry-run=server -k release: %v\n%s", err, out)
	}
	for _, want := range []string{"deployment.apps/buckety-controller serverside-applied (server dry run)", "deployment.apps/buckety-webhook serverside-applied (server dry run)",
		"certificate.cert-manager.io/buckety-webhook serverside-applied (server dry run)", "certificate.cert-manager.io/buckety-webhook-ca serverside-applied (server dry run)",
		"issuer.cert-manager.io/buckety-ca serverside-applied (server dry run)", "validatingwebhookconfiguration.admissionregistration.k8s.io/buckety-webhook serverside-applied (server dry run)",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/buckety-webhook serverside-applied (server dry run)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("want %q in\n%s", want, out)
		}
	}
	// The CA chain (issue 14.2): selfSigned Issuer -> CA Certificate -> CA
	// Issuer -> serving Certificate, and the caBundle injected from the CA,
	// so renewing the serving certificate never changes the trust anchor.
	issuers := map[string]certmanagerv1.Issuer{}
	certs := map[string]certmanagerv1.Certificate{}
	var inject, injectStamps string
	var webhooks []admissionregistrationv1.ValidatingWebhook
	var stamps []admissionregistrationv1.MutatingWebhook
	for _, doc := range objects(t, filepath.Join(dir, release.ManifestsFile)) {
		switch kind, name := kindOf(doc); kind {
		case "Issuer":
			var i certmanagerv1.Issuer
			if err := yaml.UnmarshalStrict(doc, &i); err != nil {
				t.Errorf("Issuer %s: want a strict decode into cert-manager's type, got %v", name, err)
			}
			issuers[name] = i
		case "Certificate":
			var c certmanagerv1.Certificate
			if err := yaml.UnmarshalStrict(doc, &c); err != nil {
				t.Errorf("Certificate %s: want a strict decode into cert-manager's type, got %v", name, err)
			}
			certs[name] = c
		case "ValidatingWebhookConfiguration":
			var m admissionregistrationv1.ValidatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(doc, &m); err != nil {
				t.Fatalf("ValidatingWebhookConfiguration: want a strict decode, got %v", err)
			}
			inject = m.Annotations["cert-manager.io/inject-ca-from"]
			webhooks = m.Webhooks
		case "MutatingWebhookConfiguration":
			var m admissionregistrationv1.MutatingWebhookConfiguration
			if err := yaml.UnmarshalStrict(doc, &m); err != nil {
				t.Fatalf("MutatingWebhookConfiguration: want a strict decode, got %v", err)
			}
			injectStamps = m.Annotations["cert-manager.io/inject-ca-from"]
			stamps = m.Webhooks
		}
	}
	if len(issuers) != 2 || len(certs) != 2 {
		t.Fatalf("want two Issuers and two Certificates (the CA chain), got %d and %d", len(issuers), len(certs))
	}
	if i := issuers["buckety-selfsigned"]; i.Spec.SelfSigned == nil {
		t.Errorf("Issuer buckety-selfsigned: want selfSigned, got %+v", i.Spec)
	}
	ca := certs["buckety-webhook-ca"]
	if !ca.Spec.IsCA || ca.Spec.IssuerRef.Name != "buckety-selfsigned" || ca.Spec.SecretName != "buckety-webhook-ca" {
		t.Errorf("Certificate buckety-webhook-ca: want isCA, issued by buckety-selfsigned into Secret buckety-webhook-ca, got %+v", ca.Spec)
	}
	if ca.Spec.PrivateKey == nil || ca.Spec.PrivateKey.RotationPolicy != certmanagerv1.RotationPolicyNever {
		t.Errorf("Certificate buckety-webhook-ca: want its key kept across renewals (rotationPolicy Never), got %+v", ca.Spec.PrivateKey)
	}
	if i := issuers["buckety-ca"]; i.Spec.CA == nil || i.Spec.CA.SecretName != "buckety-webhook-ca" {
		t.Errorf("Issuer buckety-ca: want a CA issuer on Secret buckety-webhook-ca, got %+v", i.Spec)
	}
	leaf := certs["buckety-webhook"]
	if leaf.Spec.IsCA || leaf.Spec.IssuerRef.Name != "buckety-ca" || leaf.Spec.SecretName != "buckety-webhook-tls" {
		t.Errorf("Certificate buckety-webhook: want a leaf issued by buckety-ca into Secret buckety-webhook-tls, got %+v", leaf.Spec)
	}
	if want := systemNS + "/buckety-webhook-ca"; inject != want {
		t.Errorf("ValidatingWebhookConfiguration: want cert-manager.io/inject-ca-from %q (the CA, not the leaf), got %q", want, inject)
	}
	if want := systemNS + "/buckety-webhook-ca"; injectStamps != want {
		t.Errorf("MutatingWebhookConfiguration: want cert-manager.io/inject-ca-from %q (the CA, not the leaf), got %q", want, injectStamps)
	}
	// The mutating webhooks (a create's verdict and stamp) are called for
	// every CREATE, of both kinds, and only CREATE, again when another
	// mutating webhook changed the object after them.
	if len(stamps) != 2 {
		t.Fatalf("MutatingWebhookConfiguration: want 2 webhooks, got %d", len(stamps))
	}
	for _, h := range stamps {
		if len(h.Rules) != 1 || !slices.Equal(h.Rules[0].Operations, []admissionregistrationv1.OperationType{admissionregistrationv1.Create}) {
			t.Errorf("stamp %s: want one rule for CREATE only, got %+v", h.Name, h.Rules)
		}
		if len(h.MatchConditions) != 0 || h.ReinvocationPolicy == nil || *h.ReinvocationPolicy != admissionregistrationv1.IfNeededReinvocationPolicy {
			t.Errorf("stamp %s: want no match condition and reinvocationPolicy IfNeeded, got %+v, %v", h.Name, h.MatchConditions, h.ReinvocationPolicy)
		}
	}
	// Metadata-only updates are not sent to the webhook (issue 16): every
	// released webhook calls it for UPDATE only when spec or the slot label
	// changed.
	if len(webhooks) != 2 {
		t.Fatalf("ValidatingWebhookConfiguration: want 2 webhooks, got %d", len(webhooks))
	}
	for _, h := range webhooks {
		var got []string
		for _, mc := range h.MatchConditions {
			got = append(got, mc.Name+": "+mc.Expression)
		}
		if want := "spec-or-slot-changed: " + specChanged; len(got) != 1 || got[0] != want {
			t.Errorf("webhook %s: want matchConditions [%s], got %q", h.Name, want, got)
		}
	}
}

// TestRenderedDeploymentsRun runs buckety-controller and buckety-webhook with
// the exact command, args, env and mounted files of the rendered
// Deployments, as processes bound to loopback: mount paths become temp
// directories, listen addresses become free 127.0.0.1 ports, and each runs
// as its own ServiceAccount under the release's RBAC.
func TestRenderedDeploymentsRun(t *testing.T) {
	needInfra(t)
	dir := renderRelease(t)
	deployments := map[string]appsv1.Deployment{}
	for _, doc := range objects(t, filepath.Join(dir, release.ManifestsFile)) {
		kind, name := kindOf(doc)
		var obj client.Object
		switch kind {
		case "Deployment":
			var d appsv1.Deployment
			if err := yaml.UnmarshalStrict(doc, &d); err != nil {
				t.Fatal(err)
			}
			deployments[name] = d
			continue
		case "ServiceAccount":
			obj = &corev1.ServiceAccount{}
		case "ClusterRole":
			obj = &rbacv1.ClusterRole{}
		case "ClusterRoleBinding":
			obj = &rbacv1.ClusterRoleBinding{}
		case "Role":
			obj = &rbacv1.Role{}
		case "RoleBinding":
			obj = &rbacv1.RoleBinding{}
		case "Namespace":
			obj = &corev1.Namespace{}
		default:
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			t.Fatalf("%s %s: %v", kind, name, err)
		}
		createOrIgnore(t, obj)
	}
	cfgDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(cfgDir, config.Filename), []byte(configYAML("kafka", "s3")), 0o600); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.NewCA("release-webhook-ca")
	if err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	crt, key, err := ca.Issue("buckety-webhook", nil, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for n, b := range map[string][]byte{"tls.crt": crt, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(certDir, n), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mounts := map[string]string{"config": cfgDir, "certs": certDir}
	secrets := map[string]map[string]string{"buckety-controller-credentials": s3Env()}
	ready := map[string]string{}
	for _, name := range []string{"buckety-controller", "buckety-webhook"} {
		d, ok := deployments[name]
		if !ok {
			t.Fatalf("no Deployment %s in the release", name)
		}
		spec := d.Spec.Template.Spec
		if len(spec.Containers) != 1 {
			t.Fatalf("%s: want one container", name)
		}
		c := spec.Containers[0]
		if c.Image != release.ImageName+"@"+testDigest {
			t.Errorf("%s: want the pinned image, got %s", name, c.Image)
		}
		sc := c.SecurityContext
		if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation ||
			len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || spec.SecurityContext.RunAsNonRoot == nil || !*spec.SecurityContext.RunAsNonRoot {
			t.Errorf("%s: want non-root, read-only root, no privilege escalation, all capabilities dropped", name)
		}
		bin := filepath.Join(t.TempDir(), filepath.Base(c.Command[0]))
		if err := harness.Build("github.com/Yolean/buckety-controller/cmd"+c.Command[0], bin, ""); err != nil {
			t.Fatalf("build %s: %v", c.Command[0], err)
		}
		// Volume mounts become temp directories.
		paths := map[string]string{}
		for _, m := range c.VolumeMounts {
			var src string
			for _, v := range spec.Volumes {
				if v.Name == m.Name {
					src = mounts[v.Name]
					if v.Secret != nil && v.Secret.SecretName != "buckety-webhook-tls" || v.ConfigMap != nil && v.ConfigMap.Name != "buckety-controller-config" {
						t.Errorf("%s: unexpected volume source %+v", name, v)
					}
				}
			}
			if src == "" {
				t.Fatalf("%s: no test directory for volume %s", name, m.Name)
			}
			paths[m.MountPath] = src
		}
		ports, err := proc.FreePorts(3)
		if err != nil {
			t.Fatal(err)
		}
		var args []string
		for _, a := range c.Args {
			for mp, dir := range paths {
				a = strings.Replace(a, "="+mp, "="+dir, 1)
			}
			switch {
			case strings.HasPrefix(a, "--metrics-bind-address="):
				a = fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", ports[0])
			case strings.HasPrefix(a, "--health-probe-bind-address="):
				a = fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", ports[1])
				ready[name] = fmt.Sprintf("127.0.0.1:%d", ports[1])
			case strings.HasPrefix(a, "--port="):
				a = fmt.Sprintf("--port=%d", ports[2])
				args = append(args, "--host=127.0.0.1")
				ready[name+"-tls"] = fmt.Sprintf("127.0.0.1:%d", ports[2])
			}
			args = append(args, a)
		}
		env := []string{"KUBECONFIG=" + saKubeconfig(t, spec.ServiceAccountName)}
		for _, e := range c.Env {
			switch {
			case e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
				env = append(env, e.Name+"="+systemNS)
			case e.ValueFrom == nil:
				env = append(env, e.Name+"="+e.Value)
			case e.ValueFrom.ResourceFieldRef != nil && e.ValueFrom.ResourceFieldRef.Resource == "limits.memory":
				// As the kubelet resolves it (divisor 1: bytes).
				lim, ok := c.Resources.Limits[corev1.ResourceMemory]
				if !ok {
					t.Fatalf("%s: %s reads limits.memory, but the container sets no memory limit", name, e.Name)
				}
				env = append(env, fmt.Sprintf("%s=%d", e.Name, lim.Value()))
			default:
				t.Fatalf("%s: unsupported env source %+v", name, e)
			}
		}
		for _, ef := range c.EnvFrom {
			vals, ok := secrets[ef.SecretRef.Name]
			if !ok {
				t.Fatalf("%s: envFrom an unknown Secret %s", name, ef.SecretRef.Name)
			}
			for k, v := range vals {
				env = append(env, k+"="+v)
			}
		}
		if name == "buckety-webhook" && (len(c.EnvFrom) != 0 || slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name != "GOMEMLIMIT" })) {
			t.Errorf("the webhook must get no credential env, got env %v envFrom %v", c.Env, c.EnvFrom)
		}
		for _, want := range []string{"GOMEMLIMIT"} {
			if !slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == want }) {
				t.Errorf("%s: want %s from the container's memory limit, got env %v", name, want, c.Env)
			}
		}
		p := startWithEnv(t, name, bin, args, env)
		probe := ready[name]
		wait.For(t, waitTimeout, name+" ready with the rendered arguments", func() (bool, string) {
			if done, err := p.Exited(); done {
				t.Fatalf("%s exited: %v\n%s", name, err, p.Tail(30))
			}
			resp, err := http.Get("http://" + probe + "/readyz")
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			return resp.StatusCode == 200, resp.Status
		})
	}
	conn, err := tls.Dial("tcp", ready["buckety-webhook-tls"], &tls.Config{InsecureSkipVerify: true}) //nolint:gosec // only checks that TLS is served
	if err != nil {
		t.Fatalf("webhook TLS: %v", err)
	}
	if err := conn.Close(); err != nil {
		t.Error(err)
	}
	ns := namespace(t)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "rendered", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.rendered"}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
}

// startWithEnv starts bin with exactly env (plus PATH), stopped at test end.
func startWithEnv(t *testing.T, name, bin string, args, env []string) *proc.Process {
	t.Helper()
	// proc.Start adds the test's environment; clear the variables that
	// must not leak into the process under test.
	for _, k := range []string{"KUBECONFIG", "TEST_S3_ACCESS_KEY", "TEST_S3_SECRET_KEY", "POD_NAMESPACE"} {
		if _, set := os.LookupEnv(k); set {
			t.Fatalf("%s must not be set in the test process", k)
		}
	}
	p, err := proc.Start(t.TempDir(), name, bin, args, env, false)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	})
	return p
}

// saKubeconfig is a kubeconfig acting as a ServiceAccount of buckety-system.
func saKubeconfig(t *testing.T, sa string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := harness.ImpersonatingKubeconfig(cp, path, systemNS, sa); err != nil {
		t.Fatal(err)
	}
	return path
}
