// Package localstack is `make run`: the local node, the backends as
// loopback processes (a Kafka-protocol broker, VersityGW, MinIO, and
// SeaweedFS when asked for), the buckety image built with contain and
// imported into the node, and buckety deployed from the rendered release
// base plus a local overlay, with the harness standing in for cert-manager.
package localstack

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/Yolean/buckety-controller/internal/release"
	"github.com/Yolean/buckety-controller/test/cluster"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/gomod"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/pki"
	"github.com/Yolean/buckety-controller/test/proc"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/seaweedfs"
)

// ProbeImage is the consumer image built from test/probe.
const ProbeImage = "registry.local/buckety/probe:v1"

// Stack is a running local stack.
type Stack struct {
	Dir        string
	Kubeconfig string
	Cluster    *cluster.Cluster
	Image      string
	KubectlBin string
	// Backends, by name in buckety-controller.yaml.
	Broker *kafka.Broker
	// KafkaPassword is the password of the broker's superuser,
	// KafkaSuperuser.
	KafkaPassword string
	VersityGW     *s3test.Server
	MinIO         *s3test.Server
	// SeaweedFS runs only when Options.SeaweedFS asked for it (nil
	// otherwise).
	SeaweedFS *seaweedfs.Server
	// Twins are the outage twins (nil unless Options.OutageTwins).
	Twins          *Twins
	WebhookAddr    string
	ControllerAddr string // probe address of the controller
	// Reused names what an earlier run left running that this one carried
	// on with ("node", "backends"); the rest it started.
	Reused []string
}

// Twins are a second process of each backend, with the same credentials,
// that a scenario may hang (Options.OutageTwins).
type Twins struct {
	Kafka     []string      `json:"kafka"`
	VersityGW s3test.Server `json:"versitygw"`
	MinIO     s3test.Server `json:"minio"`
	// SeaweedFS is set when SeaweedFS runs.
	SeaweedFS *seaweedfs.Server `json:"seaweedfs,omitempty"`
}

// KafkaSuperuser is the broker's superuser: buckety's admin login.
const KafkaSuperuser = "buckety"

// randomHex is n random bytes, hex-encoded.
func randomHex(n int) (string, error) {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return hex.EncodeToString(b), nil
}

// Step logs one line per step with its duration.
type Step func(string)

func timed(log Step, what string, f func() error) error {
	start := time.Now()
	if err := f(); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	log(fmt.Sprintf("%-34s %s", what, time.Since(start).Round(100*time.Millisecond)))
	return nil
}

// Options choose what the stack runs beyond the node and the default
// backends.
type Options struct {
	// SeaweedFS also starts a SeaweedFS (S3 and IAM on one port): opt-in,
	// as its binary takes minutes to build cold, and the e2e harness
	// needs it only for implementation seaweedfs.
	SeaweedFS bool
	// OutageTwins also starts a second process of each backend (a twin,
	// with the same credentials), for the e2e claims-and-outage scenario
	// to hang: the other scenarios keep their backend, so it runs beside
	// them rather than alone. make run does not ask for them.
	OutageTwins bool
}

// Up brings the whole stack up in dir. Everything it starts is detached and
// tracked by pid files under dir, so Down stops exactly it.
func Up(ctx context.Context, dir string, opts Options, log Step) (*Stack, error) {
	s, err := Prepare(ctx, dir, opts, log)
	if err != nil {
		return nil, err
	}
	if err := timed(log, "deploy release + local overlay", func() error { return s.deploy(ctx) }); err != nil {
		return nil, err
	}
	return s, nil
}

// Prepare is Up without deploying buckety: the node, the backends, and the
// buckety and probe images imported. The e2e harness deploys from there.
func Prepare(ctx context.Context, dir string, opts Options, log Step) (s *Stack, err error) {
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	binDir, err := controlplane.ResolveBinDir("")
	if err != nil {
		return nil, err
	}
	s = &Stack{Dir: dir, KubectlBin: filepath.Join(binDir, "kubectl")}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n(logs: %s)", err, filepath.Join(dir, "*", "logs"))
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if err := timed(log, "node", func() error { return s.node(ctx, binDir, log) }); err != nil {
		return nil, err
	}
	what := "backends (broker, versitygw, minio)"
	if opts.SeaweedFS {
		what = "backends (+ seaweedfs)"
	}
	if opts.OutageTwins {
		what += " and their outage twins"
	}
	if err := timed(log, what, func() error { return s.backends(opts, log) }); err != nil {
		return nil, err
	}
	if err := timed(log, "buckety image (contain)", func() error { return s.buildImage() }); err != nil {
		return nil, err
	}
	if err := timed(log, "probe image", func() error {
		tarPath := filepath.Join(dir, "probe.tar")
		if err := cluster.GoImage("github.com/Yolean/buckety-controller/test/probe", ProbeImage, tarPath, 65532); err != nil {
			return err
		}
		return s.Cluster.ImportImage(tarPath)
	}); err != nil {
		return nil, err
	}
	return s, os.WriteFile(filepath.Join(dir, "backends.env"), []byte(s.BackendsEnv()), 0o600)
}

// BackendsEnv describes the loopback backends as environment variables, for
// the e2e overlays (kfake, versitygw, minio, and seaweedfs when it runs).
func (s *Stack) BackendsEnv() string {
	bdir := filepath.Join(s.Dir, "backends")
	sw := ""
	if s.SeaweedFS != nil {
		sw = fmt.Sprintf("SEAWEEDFS_ENDPOINT=%s\nSEAWEEDFS_REGION=%s\nSEAWEEDFS_PIDFILE=%s\n",
			s.SeaweedFS.Endpoint, seaweedfs.Region, proc.PidFile(filepath.Join(bdir, "seaweedfs"), seaweedfs.PidName))
	}
	return sw + fmt.Sprintf("KAFKA_BOOTSTRAP=%s\nVERSITYGW_ENDPOINT=%s\nVERSITYGW_ADMIN_ENDPOINT=%s\nVERSITYGW_REGION=%s\n%sMINIO_ENDPOINT=%s\nMINIO_REGION=%s\n", strings.Join(s.Broker.Addrs, ","), s.VersityGW.Endpoint, s.VersityGW.AdminEndpoint, s.VersityGW.Region, s.credentials(), s.MinIO.Endpoint, s.MinIO.Region) +
		// Process IDs, for scenarios that hang a backend (lib.sh hang_backend).
		fmt.Sprintf("KFAKE_PIDFILE=%s\nVERSITYGW_PIDFILE=%s\nMINIO_PIDFILE=%s\n",
			proc.PidFile(filepath.Join(bdir, "kafka"), "broker"), proc.PidFile(filepath.Join(bdir, "versitygw"), "versitygw"), proc.PidFile(filepath.Join(bdir, "minio"), "minio")) +
		s.twinsEnv(bdir) +
		// The node's containerd, for scenarios that SIGKILL the
		// controller's process (lib.sh kill_controller).
		fmt.Sprintf("CONTAINERD_ADDRESS=%s\n", s.Cluster.Containerd)
}

// twinsEnv describes the outage twins, when they run: OUTAGE_* addresses
// for the overlays, *_OUTAGE_PIDFILE for lib.sh hang_backend.
func (s *Stack) twinsEnv(bdir string) string {
	t := s.Twins
	if t == nil {
		return ""
	}
	env := fmt.Sprintf("OUTAGE_KAFKA_BOOTSTRAP=%s\nOUTAGE_VERSITYGW_ENDPOINT=%s\nOUTAGE_VERSITYGW_ADMIN_ENDPOINT=%s\nOUTAGE_MINIO_ENDPOINT=%s\nKFAKE_OUTAGE_PIDFILE=%s\nVERSITYGW_OUTAGE_PIDFILE=%s\nMINIO_OUTAGE_PIDFILE=%s\n",
		strings.Join(t.Kafka, ","), t.VersityGW.Endpoint, t.VersityGW.AdminEndpoint, t.MinIO.Endpoint,
		proc.PidFile(filepath.Join(bdir, twinProcs[0].dir), twinProcs[0].name), proc.PidFile(filepath.Join(bdir, twinProcs[1].dir), twinProcs[1].name), proc.PidFile(filepath.Join(bdir, twinProcs[2].dir), twinProcs[2].name))
	if t.SeaweedFS != nil {
		env += fmt.Sprintf("OUTAGE_SEAWEEDFS_ENDPOINT=%s\nSEAWEEDFS_OUTAGE_PIDFILE=%s\n", t.SeaweedFS.Endpoint, proc.PidFile(filepath.Join(bdir, seaweedfsTwin.dir), seaweedfsTwin.name))
	}
	return env
}

// node reuses the node an earlier run left running when all of it works
// (cluster.Attach), and otherwise clears whatever part of one is left and
// starts it.
func (s *Stack) node(ctx context.Context, binDir string, log Step) error {
	dir := filepath.Join(s.Dir, "cluster")
	c, err := cluster.Attach(ctx, dir)
	if err == nil {
		log("  reusing the running node")
		s.Reused = append(s.Reused, "node")
	} else {
		if other, held := cluster.HeldElsewhere(dir); held {
			return fmt.Errorf("start the node: %w", cluster.ErrHeld(other))
		}
		if _, serr := os.Stat(dir); serr == nil {
			log("  starting the node again (" + err.Error() + ")")
		}
		if err := cluster.Down(dir); err != nil {
			return fmt.Errorf("clear what is left of an earlier node: %w", err)
		}
		if c, err = cluster.Up(ctx, dir, binDir, func(l string) { log("  " + l) }); err != nil {
			return err
		}
	}
	s.Cluster, s.Kubeconfig = c, c.Kubeconfig
	return nil
}

// backendProc is a backend's state directory under DIR/backends and its
// process name.
type backendProc struct{ dir, name string }

// backendProcs are the backends that always run.
var backendProcs = []backendProc{{"kafka", "broker"}, {"versitygw", "versitygw"}, {"minio", "minio"}}

// seaweedfsProc is SeaweedFS, which runs when asked for.
var seaweedfsProc = backendProc{"seaweedfs", seaweedfs.PidName}

// twinProcs are the outage twins of backendProcs, in the same order, and
// seaweedfsTwin SeaweedFS's (Options.OutageTwins).
var (
	twinProcs     = []backendProc{{"kafka-outage", "broker"}, {"versitygw-outage", "versitygw"}, {"minio-outage", "minio"}}
	seaweedfsTwin = backendProc{"seaweedfs-outage", seaweedfs.PidName}
)

// wanted are the backends a run with opts needs running.
func wanted(opts Options) []backendProc {
	w := slices.Clone(backendProcs)
	if opts.SeaweedFS {
		w = append(w, seaweedfsProc)
	}
	if opts.OutageTwins {
		w = append(w, twinProcs...)
		if opts.SeaweedFS {
			w = append(w, seaweedfsTwin)
		}
	}
	return w
}

// backendsState is what a later run needs to reuse the backends: their
// addresses and credentials (the processes are found by their pid files).
type backendsState struct {
	Kafka []string `json:"kafka"`
	// KafkaPassword is the broker superuser's (buckety's) password: the
	// broker enforces SASL/SCRAM and ACLs, so every access gets a user of
	// its own. The broker's data dir keeps the users, so the password is
	// kept with it.
	KafkaPassword string        `json:"kafkaPassword"`
	VersityGW     s3test.Server `json:"versitygw"`
	MinIO         s3test.Server `json:"minio"`
	// SeaweedFS is set when a run asked for it.
	SeaweedFS *seaweedfs.Server `json:"seaweedfs,omitempty"`
	// Twins are set when a run asked for them.
	Twins *Twins `json:"twins,omitempty"`
}

// reusable reports whether what an earlier run recorded in st, with
// running of the backends opts wants running, can be carried on with:
// all of them run, and were started by a version of this code that
// records everything a run needs. A SeaweedFS that runs but was not asked
// for does not matter: it is kept, and stopped by Down.
func reusable(st backendsState, opts Options, running int) bool {
	if running != len(wanted(opts)) || st.KafkaPassword == "" || st.VersityGW.AdminEndpoint == "" {
		return false
	}
	if opts.OutageTwins && (st.Twins == nil || (opts.SeaweedFS && st.Twins.SeaweedFS == nil)) {
		return false
	}
	return !opts.SeaweedFS || (st.SeaweedFS != nil && st.SeaweedFS.Endpoint != "" && st.SeaweedFS.AccessKey != "")
}

// backends reuses the backends an earlier run started when all it wants
// (three, or four with SeaweedFS) still run; otherwise it stops any that
// survive and starts them again on new ports, with the same data
// directories and S3 credentials, so what an earlier run stored stays
// readable.
func (s *Stack) backends(opts Options, log Step) error {
	bdir := filepath.Join(s.Dir, "backends")
	stateFile := filepath.Join(bdir, "state.json")
	var st backendsState
	b, err := os.ReadFile(stateFile)
	switch {
	case err == nil:
		if err := json.Unmarshal(b, &st); err != nil {
			return fmt.Errorf("%s: %w", stateFile, err)
		}
		running := 0
		for _, p := range wanted(opts) {
			if up, _ := proc.Running(filepath.Join(bdir, p.dir), p.name); up {
				running++
			}
		}
		// Backends started before the broker enforced SASL, or before
		// VersityGW had an IAM store, are started again.
		if reusable(st, opts, running) {
			log("  reusing the running backends")
			s.Reused = append(s.Reused, "backends")
			s.Broker, s.VersityGW, s.MinIO = &kafka.Broker{Addrs: st.Kafka}, &st.VersityGW, &st.MinIO
			s.KafkaPassword = st.KafkaPassword
			if opts.SeaweedFS {
				s.SeaweedFS = st.SeaweedFS
			}
			if opts.OutageTwins {
				s.Twins = st.Twins
			}
			return nil
		}
		log(fmt.Sprintf("  %d of %d backends run: starting all again", running, len(wanted(opts))))
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	// Everything an earlier run left is stopped, whether or not this one
	// wants it: all start again together, and one not asked for would run
	// on unrecorded.
	if err := stopBackends(bdir); err != nil {
		return err
	}
	for _, p := range slices.Concat(backendProcs, twinProcs) {
		if err := os.MkdirAll(filepath.Join(bdir, p.dir), 0o755); err != nil {
			return err
		}
	}
	bin, err := kafka.Binary(bdir)
	if err != nil {
		return err
	}
	if s.KafkaPassword = st.KafkaPassword; s.KafkaPassword == "" {
		if s.KafkaPassword, err = randomHex(16); err != nil {
			return err
		}
	}
	kopts := kafka.Options{DataDir: filepath.Join(bdir, "kafka", "data"), SASL: []string{"SCRAM-SHA-512:" + KafkaSuperuser + ":" + s.KafkaPassword}, ACLs: true}
	if s.Broker, err = kafka.StartIn(filepath.Join(bdir, "kafka"), bin, kopts, true); err != nil {
		return err
	}
	if s.VersityGW, err = s3test.StartIn(filepath.Join(bdir, "versitygw"), "versitygw", s3test.Options{AccessKey: st.VersityGW.AccessKey, SecretKey: st.VersityGW.SecretKey, IAM: true}, true); err != nil {
		return err
	}
	if s.MinIO, err = s3test.StartIn(filepath.Join(bdir, "minio"), "minio", s3test.Options{AccessKey: st.MinIO.AccessKey, SecretKey: st.MinIO.SecretKey}, true); err != nil {
		return err
	}
	if opts.SeaweedFS {
		var sw seaweedfs.Options
		if st.SeaweedFS != nil {
			sw.AccessKey, sw.SecretKey = st.SeaweedFS.AccessKey, st.SeaweedFS.SecretKey
		}
		if s.SeaweedFS, err = seaweedfs.StartIn(filepath.Join(bdir, seaweedfsProc.dir), sw, true); err != nil {
			return err
		}
	}
	if opts.OutageTwins {
		if s.Twins, err = s.startTwins(bdir, bin, kopts); err != nil {
			return err
		}
	}
	b, err = json.Marshal(backendsState{Kafka: s.Broker.Addrs, KafkaPassword: s.KafkaPassword, VersityGW: *s.VersityGW, MinIO: *s.MinIO, SeaweedFS: s.SeaweedFS, Twins: s.Twins})
	if err != nil {
		return err
	}
	return os.WriteFile(stateFile, b, 0o600)
}

// startTwins starts the outage twins: a broker, a VersityGW, a MinIO and
// (when SeaweedFS runs) a SeaweedFS, each with the credentials of the one
// it twins, so the overlays' credentials serve both.
func (s *Stack) startTwins(bdir, bin string, kopts kafka.Options) (*Twins, error) {
	t := &Twins{}
	kopts.DataDir = filepath.Join(bdir, twinProcs[0].dir, "data")
	broker, err := kafka.StartIn(filepath.Join(bdir, twinProcs[0].dir), bin, kopts, true)
	if err != nil {
		return nil, err
	}
	t.Kafka = broker.Addrs
	vgw, err := s3test.StartIn(filepath.Join(bdir, twinProcs[1].dir), "versitygw", s3test.Options{AccessKey: s.VersityGW.AccessKey, SecretKey: s.VersityGW.SecretKey, IAM: true}, true)
	if err != nil {
		return nil, err
	}
	minio, err := s3test.StartIn(filepath.Join(bdir, twinProcs[2].dir), "minio", s3test.Options{AccessKey: s.MinIO.AccessKey, SecretKey: s.MinIO.SecretKey}, true)
	if err != nil {
		return nil, err
	}
	t.VersityGW, t.MinIO = *vgw, *minio
	if s.SeaweedFS != nil {
		if t.SeaweedFS, err = seaweedfs.StartIn(filepath.Join(bdir, seaweedfsTwin.dir), seaweedfs.Options{AccessKey: s.SeaweedFS.AccessKey, SecretKey: s.SeaweedFS.SecretKey}, true); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// stopBackends stops every backend process a run may have started under
// bdir (twins included) by its pid file.
func stopBackends(bdir string) error {
	var errs []error
	for _, p := range slices.Concat(backendProcs, twinProcs) {
		if err := proc.StopDetached(filepath.Join(bdir, p.dir), p.name, 15*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	for _, p := range []backendProc{seaweedfsProc, seaweedfsTwin} {
		if err := seaweedfs.StopDetached(filepath.Join(bdir, p.dir), 15*time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func (s *Stack) buildImage() error {
	out := filepath.Join(s.Dir, "oci")
	cmd := exec.Command("hack/with-local-base.sh", "hack/image.sh")
	cmd.Dir = controlplane.RepoRoot()
	// Only the node's platform: the local run never needs the other one
	// (releases build both).
	cmd.Env = append(os.Environ(), "OUT="+out, "PLATFORMS=linux/"+runtime.GOARCH)
	b, err := cmd.Output()
	if err != nil {
		msg := err.Error()
		if ee, ok := err.(*exec.ExitError); ok {
			msg += "\n" + string(ee.Stderr)
		}
		return fmt.Errorf("hack/image.sh: %s", msg)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	built := lines[len(lines)-1] // repo:tag@sha256:...
	tagged, digest, ok := strings.Cut(built, "@")
	if !ok {
		return fmt.Errorf("hack/image.sh printed %q, want a reference with an @sha256 digest", built)
	}
	ref, err := release.ImageFromOCILayout(out, release.ImageName)
	if err != nil {
		return err
	}
	if ref.DigestStr() != digest {
		return fmt.Errorf("layout digest %s differs from the build's %s", ref.DigestStr(), digest)
	}
	s.Image = ref.String()
	return s.Cluster.ImportOCILayout(out, tagged, s.Image)
}

// ControllerConfig is buckety-controller.yaml for the local backends. The
// backend names are the driver types (kafka, s3), as the examples use;
// s3-minio is a second S3 backend, and s3-seaweedfs a third when SeaweedFS
// runs.
func (s *Stack) ControllerConfig() string {
	sw := ""
	if s.SeaweedFS != nil {
		sw = fmt.Sprintf(`- name: s3-seaweedfs
  driver: s3
  config:
    implementation: seaweedfs
    endpoint: %s
    region: %s
    forcePathStyle: true
    accessKeyID: ${SEAWEEDFS_ACCESS_KEY}
    secretAccessKey: ${SEAWEEDFS_SECRET_KEY}
    # An IAM user of its own per access, with a key IAM issues.
    credentials: {}
  defaults:
    zone: local
`, s.SeaweedFS.Endpoint, seaweedfs.Region)
	}
	return fmt.Sprintf(`# yaml-language-server: $schema=%s%s
backends:
- name: kafka
  driver: kadm
  config:
    seedBrokers: [%s]
    requestTimeout: 10s
    # The broker enforces SASL/SCRAM and ACLs: buckety is its superuser
    # and gives every access a user of its own.
    sasl:
      mechanism: SCRAM-SHA-512
      username: %s
      password: ${KAFKA_PASSWORD}
  defaults:
    zone: local
- name: s3
  driver: s3
  config:
    implementation: versitygw
    endpoint: %s
    region: %s
    forcePathStyle: true
    accessKeyID: ${VERSITYGW_ACCESS_KEY}
    secretAccessKey: ${VERSITYGW_SECRET_KEY}
    # A user of its own per access, granted in the bucket's policy.
    credentials: {adminEndpoint: %s}
  defaults:
    zone: local
- name: s3-minio
  driver: s3
  config:
    implementation: minio
    endpoint: %s
    region: %s
    forcePathStyle: true
    accessKeyID: ${MINIO_ACCESS_KEY}
    secretAccessKey: ${MINIO_SECRET_KEY}
    # A service account of its own per access, under buckety-tenants.
    credentials: {}
  defaults:
    zone: local
`, release.RawBase, release.ControllerSchemaPath, strings.Join(s.Broker.Addrs, ", "), KafkaSuperuser, s.VersityGW.Endpoint, s.VersityGW.Region, s.VersityGW.AdminEndpoint, s.MinIO.Endpoint, s.MinIO.Region) + sw
}

func (s *Stack) credentials() string {
	c := fmt.Sprintf("KAFKA_PASSWORD=%s\nVERSITYGW_ACCESS_KEY=%s\nVERSITYGW_SECRET_KEY=%s\nMINIO_ACCESS_KEY=%s\nMINIO_SECRET_KEY=%s\n",
		s.KafkaPassword, s.VersityGW.AccessKey, s.VersityGW.SecretKey, s.MinIO.AccessKey, s.MinIO.SecretKey)
	if s.SeaweedFS != nil {
		c += fmt.Sprintf("SEAWEEDFS_ACCESS_KEY=%s\nSEAWEEDFS_SECRET_KEY=%s\n", s.SeaweedFS.AccessKey, s.SeaweedFS.SecretKey)
	}
	return c
}

// deploy renders the release and applies it with the e2e harness's
// local-node overlay (env-local) and the run layer over it.
func (s *Stack) deploy(ctx context.Context) error {
	ref, err := release.PinnedImage(s.Image)
	if err != nil {
		return err
	}
	files, err := release.Render(filepath.Join(controlplane.RepoRoot(), "deploy", "kustomize", "base"), ref)
	if err != nil {
		return err
	}
	if err := release.WriteRelease(filepath.Join(s.Dir, "release"), files); err != nil {
		return err
	}
	apiPort := strings.TrimPrefix(s.Cluster.CP.URL, "https://127.0.0.1:")
	ports, err := writeOverlays(controlplane.RepoRoot(), s.Dir, apiPort, proc.FreePorts, s.ControllerConfig(), s.credentials())
	if err != nil {
		return err
	}
	s.WebhookAddr = fmt.Sprintf("127.0.0.1:%d", ports[portWebhook])
	s.ControllerAddr = fmt.Sprintf("127.0.0.1:%d", ports[portControllerProbes])
	overlay := filepath.Join(s.Dir, "overlay")
	cs, err := kubernetes.NewForConfig(s.Cluster.CP.RESTConfig)
	if err != nil {
		return err
	}
	// cert-manager's CRDs, so the release's Issuer and Certificate apply;
	// no cert-manager controller runs here: the harness issues the
	// CA and the serving certificate it signs into the chain's two Secrets,
	// and injects the CA, as cert-manager and its CA injector would.
	crds, err := gomod.CertManagerCRDs()
	if err != nil {
		return err
	}
	if err := s.Cluster.CP.InstallCRDs(ctx, crds); err != nil {
		return err
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "buckety-system"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	caPEM, err := webhookCertificates(ctx, cs)
	if err != nil {
		return err
	}
	if out, err := s.Kubectl(ctx, "apply", "--server-side", "-k", overlay); err != nil {
		return fmt.Errorf("kubectl apply -k %s: %v\n%s", overlay, err, out)
	}
	patch := fmt.Sprintf(`[{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":%q},{"op":"add","path":"/webhooks/1/clientConfig/caBundle","value":%q}]`, b64(caPEM), b64(caPEM))
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Patch(ctx, "buckety-webhook", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("inject the webhook CA: %w", err)
	}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Patch(ctx, "buckety-webhook", types.JSONPatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("inject the webhook CA (stamps): %w", err)
	}
	for _, d := range []string{"buckety-webhook", "buckety-controller"} {
		if out, err := s.Kubectl(ctx, "-n", "buckety-system", "rollout", "status", "deploy/"+d, "--timeout=120s"); err != nil {
			events, _ := s.Kubectl(ctx, "-n", "buckety-system", "get", "events", "--field-selector=type=Warning", "--sort-by=.lastTimestamp")
			return fmt.Errorf("rollout of %s: %v\n%s\nrecent warnings:\n%s", d, err, out, events)
		}
	}
	return nil
}

// webhookCertificates stands in for cert-manager: it writes the two Secrets
// of the release's certificate chain, the CA (Certificate
// buckety-webhook-ca, which the CA Issuer signs with) and the serving leaf
// it signed (Certificate buckety-webhook), and returns the CA to inject as
// the webhook's caBundle. A chain an earlier run wrote is kept (the running
// webhook serves it); a half-written or mismatched one is replaced.
func webhookCertificates(ctx context.Context, cs kubernetes.Interface) ([]byte, error) {
	secrets := cs.CoreV1().Secrets("buckety-system")
	caSec, caErr := secrets.Get(ctx, "buckety-webhook-ca", metav1.GetOptions{})
	leafSec, leafErr := secrets.Get(ctx, "buckety-webhook-tls", metav1.GetOptions{})
	for _, err := range []error{caErr, leafErr} {
		if err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	if caErr == nil && leafErr == nil && len(caSec.Data["tls.crt"]) > 0 && bytes.Equal(leafSec.Data["ca.crt"], caSec.Data["tls.crt"]) {
		return caSec.Data["tls.crt"], nil
	}
	ca, err := pki.NewCA("buckety-webhook-local-ca")
	if err != nil {
		return nil, err
	}
	crt, key, err := ca.Issue("buckety-webhook", nil, []string{"localhost", "buckety-webhook.buckety-system.svc"}, []net.IP{net.ParseIP("127.0.0.1")}, 30*24*time.Hour)
	if err != nil {
		return nil, err
	}
	caKey, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	for _, sec := range []*corev1.Secret{
		{ObjectMeta: metav1.ObjectMeta{Name: "buckety-webhook-ca", Namespace: "buckety-system"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": ca.CertPEM, "tls.key": caKey, "ca.crt": ca.CertPEM}},
		{ObjectMeta: metav1.ObjectMeta{Name: "buckety-webhook-tls", Namespace: "buckety-system"}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"tls.crt": crt, "tls.key": key, "ca.crt": ca.CertPEM}},
	} {
		_, err := secrets.Create(ctx, sec, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
		}
		if err != nil {
			return nil, fmt.Errorf("write Secret buckety-system/%s: %w", sec.Name, err)
		}
	}
	return ca.CertPEM, nil
}

// Kubectl runs the pinned kubectl against the stack.
func (s *Stack) Kubectl(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, s.KubectlBin, append([]string{"--kubeconfig=" + s.Kubeconfig}, args...)...)
	return cmd.CombinedOutput()
}

// Down stops everything Up started in dir.
func Down(dir string) error {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var errs []string
	if err := cluster.Down(filepath.Join(dir, "cluster")); err != nil {
		errs = append(errs, err.Error())
	}
	if err := stopBackends(filepath.Join(dir, "backends")); err != nil {
		errs = append(errs, err.Error())
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, err.Error())
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return nil
}
