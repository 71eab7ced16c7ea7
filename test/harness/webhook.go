package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	sigsyaml "sigs.k8s.io/yaml"

	appwebhook "github.com/Yolean/buckety-controller/internal/app/webhook"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/pki"
	"github.com/Yolean/buckety-controller/test/proc"
)

// Webhook is buckety-webhook running as a process, serving TLS with a
// certificate the harness issues from its own CA (standing in for
// cert-manager).
type Webhook struct {
	// P is the process.
	P *proc.Process
	// CA signs the serving certificate; it is the caBundle Register sets.
	CA *pki.CA
	// CertDir is the webhook's --cert-dir.
	CertDir string
	// Addr serves admission over TLS; Probe serves /readyz; Metrics serves
	// /metrics (HTTPS, authorized callers).
	Addr, Probe, Metrics string
	// bin, kubeconfig, cfgDir and args start replicas like this one.
	bin, kubeconfig, cfgDir string
	args                    []string
}

// StartWebhook runs the built binary bin with configYAML as its
// buckety-controller.yaml and no environment beyond this process's, files
// under dir, and args added to its command line, and waits until it is
// ready. Register points the API server at it.
func StartWebhook(dir, bin, kubeconfig, configYAML string, args ...string) (*Webhook, error) {
	ca, err := pki.NewCA("buckety-webhook-ca")
	if err != nil {
		return nil, err
	}
	w := &Webhook{CA: ca, CertDir: filepath.Join(dir, "certs")}
	cfgDir := filepath.Join(dir, "config")
	for _, d := range []string{w.CertDir, cfgDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if err := w.Issue(); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(cfgDir, config.Filename), []byte(configYAML), 0o600); err != nil {
		return nil, err
	}
	ports, err := proc.FreePorts(1)
	if err != nil {
		return nil, err
	}
	w.Addr = "127.0.0.1:" + strconv.Itoa(ports[0])
	w.bin, w.kubeconfig, w.cfgDir, w.args = bin, kubeconfig, cfgDir, args
	if err := w.launch(dir); err != nil {
		return nil, err
	}
	return w, nil
}

// Replica starts another buckety-webhook with w's binary, configuration,
// certificate and admission address (its own probe and metrics ports, files
// under dir), as a second replica of the Deployment would be; args
// including --reuse-port let them share the address.
func (w *Webhook) Replica(dir string) (*Webhook, error) {
	r := &Webhook{CA: w.CA, CertDir: w.CertDir, Addr: w.Addr, bin: w.bin, kubeconfig: w.kubeconfig, cfgDir: w.cfgDir, args: w.args}
	if err := r.launch(dir); err != nil {
		return nil, err
	}
	return r, nil
}

// launch starts the process on w.Addr and waits until it is ready.
func (w *Webhook) launch(dir string) error {
	ports, err := proc.FreePorts(2)
	if err != nil {
		return err
	}
	w.Probe = "127.0.0.1:" + strconv.Itoa(ports[0])
	w.Metrics = "127.0.0.1:" + strconv.Itoa(ports[1])
	_, port, err := net.SplitHostPort(w.Addr)
	if err != nil {
		return err
	}
	p, err := proc.Start(dir, "buckety-webhook", w.bin, append([]string{
		"-c", w.cfgDir, "--kubeconfig", w.kubeconfig, "--host", "127.0.0.1", "--port", port,
		"--cert-dir", w.CertDir, "--health-probe-bind-address", w.Probe, "--metrics-bind-address", w.Metrics,
		"--shutdown-delay", "2s",
	}, w.args...), nil, false)
	if err != nil {
		return err
	}
	w.P = p
	if err := waitHTTP200(p, "http://"+w.Probe+"/readyz", 60*time.Second); err != nil {
		return fmt.Errorf("%w (and stop: %v)", err, p.Stop(10*time.Second))
	}
	return nil
}

// Issue writes a new serving certificate signed by the CA, valid for an
// hour, the way the kubelet updates a Secret volume: new files, renamed
// into place.
func (w *Webhook) Issue() error {
	_, err := w.IssueFor(time.Hour)
	return err
}

// IssueFor is Issue with a certificate valid for d; it returns the
// certificate's NotAfter.
func (w *Webhook) IssueFor(d time.Duration) (time.Time, error) {
	cert, key, err := w.CA.Issue("buckety-webhook", nil, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")}, d)
	if err != nil {
		return time.Time{}, err
	}
	blk, _ := pem.Decode(cert)
	if blk == nil {
		return time.Time{}, errors.New("issued certificate: no PEM block")
	}
	parsed, err := x509.ParseCertificate(blk.Bytes)
	if err != nil {
		return time.Time{}, err
	}
	for name, b := range map[string][]byte{"tls.key": key, "tls.crt": cert} {
		tmp := filepath.Join(w.CertDir, "."+name+".tmp")
		if err := os.WriteFile(tmp, b, 0o600); err != nil {
			return time.Time{}, err
		}
		if err := os.Rename(tmp, filepath.Join(w.CertDir, name)); err != nil {
			return time.Time{}, err
		}
	}
	return parsed.NotAfter, nil
}

// ServedSerial is the serial of the certificate the webhook presents, or
// "dial: ..." when it does not answer.
func (w *Webhook) ServedSerial() string {
	pool := x509.NewCertPool()
	pool.AddCert(w.CA.Cert)
	conn, err := tls.Dial("tcp", w.Addr, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"})
	if err != nil {
		return "dial: " + err.Error()
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
}

// WebhookConfigFile is the deployed ValidatingWebhookConfiguration, the one
// source of the validating webhooks' rules and matchConditions.
func WebhookConfigFile() string {
	return filepath.Join(controlplane.RepoRoot(), "deploy", "kustomize", "base", "webhook", "validatingwebhookconfiguration.yaml")
}

// MutatingConfigFile is the deployed MutatingWebhookConfiguration (the
// stamps), the one source of the mutating webhooks' rules.
func MutatingConfigFile() string {
	return filepath.Join(controlplane.RepoRoot(), "deploy", "kustomize", "base", "webhook", "mutatingwebhookconfiguration.yaml")
}

// DeployedWebhooks decodes the webhooks of WebhookConfigFile (strictly, so
// a field this API version does not know fails here rather than being
// dropped).
func DeployedWebhooks() ([]admissionregistrationv1.ValidatingWebhook, error) {
	var vwc admissionregistrationv1.ValidatingWebhookConfiguration
	if err := decodeStrict(WebhookConfigFile(), &vwc); err != nil {
		return nil, err
	}
	if len(vwc.Webhooks) == 0 {
		return nil, fmt.Errorf("%s: no webhooks", WebhookConfigFile())
	}
	return vwc.Webhooks, nil
}

// DeployedStamps decodes the webhooks of MutatingConfigFile, strictly.
func DeployedStamps() ([]admissionregistrationv1.MutatingWebhook, error) {
	var mwc admissionregistrationv1.MutatingWebhookConfiguration
	if err := decodeStrict(MutatingConfigFile(), &mwc); err != nil {
		return nil, err
	}
	if len(mwc.Webhooks) == 0 {
		return nil, fmt.Errorf("%s: no webhooks", MutatingConfigFile())
	}
	return mwc.Webhooks, nil
}

func decodeStrict(file string, into any) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if err := sigsyaml.UnmarshalStrict(b, into); err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	return nil
}

// Registration is what Register created: the deployed validating and
// mutating webhook configurations, pointed at one webhook process.
type Registration struct {
	Validating *admissionregistrationv1.ValidatingWebhookConfiguration
	Mutating   *admissionregistrationv1.MutatingWebhookConfiguration
}

// Delete deletes both configurations.
func (r *Registration) Delete(ctx context.Context, c client.Client) error {
	return errors.Join(c.Delete(ctx, r.Validating), c.Delete(ctx, r.Mutating))
}

// Register creates a ValidatingWebhookConfiguration and a
// MutatingWebhookConfiguration named name with the deployed webhooks
// (DeployedWebhooks, DeployedStamps: rules, matchConditions, failure
// policy, timeouts, exactly as installed), each pointed at this process by
// URL with the service's path, and the CA as caBundle (as cert-manager's CA
// injector would). The caller deletes them (Registration.Delete).
func (w *Webhook) Register(ctx context.Context, c client.Client, name string) (*Registration, error) {
	hooks, err := DeployedWebhooks()
	if err != nil {
		return nil, err
	}
	stamps, err := DeployedStamps()
	if err != nil {
		return nil, err
	}
	for i := range hooks {
		h := &hooks[i]
		if h.ClientConfig, err = w.clientConfig(WebhookConfigFile(), h.Name, h.ClientConfig, appwebhook.PathBuckety, appwebhook.PathAccess); err != nil {
			return nil, err
		}
	}
	for i := range stamps {
		h := &stamps[i]
		if h.ClientConfig, err = w.clientConfig(MutatingConfigFile(), h.Name, h.ClientConfig, appwebhook.PathAdmitBuckety, appwebhook.PathAdmitAccess); err != nil {
			return nil, err
		}
	}
	r := &Registration{
		Validating: &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: hooks},
		Mutating:   &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: name}, Webhooks: stamps},
	}
	if err := c.Create(ctx, r.Mutating); err != nil {
		return nil, fmt.Errorf("create MutatingWebhookConfiguration %s: %w", name, err)
	}
	if err := c.Create(ctx, r.Validating); err != nil {
		return nil, errors.Join(fmt.Errorf("create ValidatingWebhookConfiguration %s: %w", name, err), c.Delete(ctx, r.Mutating))
	}
	return r, nil
}

// clientConfig is cc of webhook name (in file) pointed at this process:
// the service's path, which must be one of paths, by URL, with the CA.
func (w *Webhook) clientConfig(file, name string, cc admissionregistrationv1.WebhookClientConfig, paths ...string) (admissionregistrationv1.WebhookClientConfig, error) {
	svc := cc.Service
	if svc == nil || svc.Path == nil {
		return cc, fmt.Errorf("%s: webhook %s: want clientConfig.service with a path, got %+v", file, name, cc)
	}
	if !slices.Contains(paths, *svc.Path) {
		return cc, fmt.Errorf("%s: webhook %s: path %q is not served by buckety-webhook (want one of %v)", file, name, *svc.Path, paths)
	}
	url := "https://" + w.Addr + *svc.Path
	return admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: w.CA.CertPEM}, nil
}
