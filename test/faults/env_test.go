package faults

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/logdir"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

const (
	// wireLogEnv is the broker program's wire-log variable
	// (test/kafka/broker/wirelog.go).
	wireLogEnv = "BUCKETY_KFAKE_WIRE_LOG"
	// superuserPassword is the broker's superuser buckety: the broker
	// runs with SASL/SCRAM and ACLs enforced, as the local node does, so
	// every access gets a user of its own and the runs count them.
	superuserPassword = "faults-superuser"
)

// env is one set of real parts shared by the runs: a control plane with
// kube-controller-manager (garbage collection of owned Secrets), a broker
// on a data dir, the S3 server (FAULTS_S3), and the controller binary.
type env struct {
	t          *testing.T
	dir        string
	cp         *controlplane.ControlPlane
	broker     *kafka.Broker
	wireLog    string
	s3         *s3test.Server
	k8s        client.Client
	s3c        *s3.Client
	ctrlBin    string
	kubeconfig string
	configDir  string
	ctrl       *harness.Controller
}

func newEnv(t *testing.T, p params) *env {
	t.Helper()
	if testing.Short() {
		t.Skip("fault harness: needs the control plane, the broker and an S3 server; run without -short (make test, make faults)")
	}
	dir := logdir.TempDir(t, "bkt-faults-", "fault harness")
	// In a logs directory: kept when the run fails (logdir).
	e := &env{t: t, dir: dir, wireLog: filepath.Join(dir, logdir.Dir, "kafka-wire.jsonl")}
	if err := os.MkdirAll(filepath.Dir(e.wireLog), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	e.cp = harness.ControlPlane(ctx, t, dir, true)
	bin, err := kafka.Binary(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "kafka", "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The broker inherits the variable and appends every CreateTopics and
	// DeleteTopics topic to the wire log, across restarts.
	t.Setenv(wireLogEnv, e.wireLog)
	if e.broker, err = kafka.StartIn(filepath.Join(dir, "kafka"), bin, kafka.Options{DataDir: filepath.Join(dir, "kafka", "data"),
		SASL: []string{"SCRAM-SHA-512:buckety:" + superuserPassword}, ACLs: true}, false); err != nil {
		t.Fatal(err)
	}
	harness.StopAtCleanup(t, "broker", e.broker.Stop)
	if e.s3, err = s3test.StartIn(filepath.Join(dir, p.S3), p.S3, s3test.Options{IAM: true}, false); err != nil {
		t.Fatal(err)
	}
	harness.StopAtCleanup(t, p.S3, e.s3.Stop)
	scheme, err := appcontroller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	if e.k8s, err = client.New(e.cp.RESTConfig, client.Options{Scheme: scheme}); err != nil {
		t.Fatal(err)
	}
	e.s3c = s3.New(s3.Options{Region: e.s3.Region, BaseEndpoint: aws.String(e.s3.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(e.s3.AccessKey, e.s3.SecretKey, "")})
	e.kubeconfig, e.configDir = harness.ControllerFiles(ctx, t, e.cp, e.k8s, dir, e.configYAML(p))
	e.ctrlBin = filepath.Join(dir, "buckety-controller")
	if err := harness.Build(harness.ControllerPackage, e.ctrlBin, ""); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.stopController)
	return e
}

// configYAML names the two backends; deleteSlice is small so that a
// recursive delete takes many passes, each reporting progress.
func (e *env) configYAML(p params) string {
	k := harness.Kadm("kafka", kadmdriver.Config{SeedBrokers: e.broker.Addrs, RequestTimeout: harness.Duration(5 * time.Second),
		SASL: &kadmdriver.SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "${FAULTS_KAFKA_PASSWORD}"}})
	// A churned Buckety re-created over the resource its previous
	// incarnation retained asks to adopt and converge it (churn_test.go).
	k = harness.Tenancy(k, "$${namespace}.", true)
	c := harness.S3Server(p.S3, e.s3.Endpoint, e.s3.Region, "FAULTS_S3_ACCESS_KEY", "FAULTS_S3_SECRET_KEY")
	c.RequestTimeout = harness.Duration(10 * time.Second)
	c.DeleteSlice = min(max(p.Objects/15, 10), 1000)
	// A key of its own per access (counted by credentialFigures), through
	// the server's admin API (VersityGW's own port; MinIO serves it on its
	// S3 port, and SeaweedFS the IAM API).
	c.Credentials = &s3driver.Credentials{AdminEndpoint: e.s3.AdminEndpoint}
	return harness.ConfigYAML(k, harness.Tenancy(harness.S3("s3", c), "", true))
}

// startController runs the built binary as its ServiceAccount. Leader
// election is off: one replica runs, and a crashed process's Lease would
// only add its 15 s expiry to every restart without exercising anything
// else.
func (e *env) startController() {
	e.t.Helper()
	if e.ctrl != nil {
		return
	}
	c, err := harness.StartController(harness.ControllerOptions{
		Dir: e.dir, Bin: e.ctrlBin, Kubeconfig: e.kubeconfig, ConfigDir: e.configDir,
		Args: []string{"--leader-elect=false"},
		Env:  e.controllerEnv(),
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.ctrl = c
}

// crashController SIGKILLs the controller and starts it again at once, as
// a kubelet restarting a crashed container would (without its backoff).
func (e *env) crashController() {
	e.t.Helper()
	if err := e.ctrl.Restart(); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) stopController() {
	if e.ctrl == nil {
		return
	}
	if err := e.ctrl.P.Stop(30 * time.Second); err != nil {
		e.t.Errorf("stop controller: %v", err)
	}
	e.ctrl = nil
}

func (e *env) namespace(name string) string {
	e.t.Helper()
	if err := harness.CreateOrIgnore(context.Background(), e.k8s, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		e.t.Fatal(err)
	}
	return name
}

// controllerEnv is what the controller's config refers to.
func (e *env) controllerEnv() []string {
	return []string{"FAULTS_S3_ACCESS_KEY=" + e.s3.AccessKey, "FAULTS_S3_SECRET_KEY=" + e.s3.SecretKey, "FAULTS_KAFKA_PASSWORD=" + superuserPassword}
}

// superuser is the harness's own client options: the broker's superuser.
func (e *env) superuser() []kgo.Opt {
	return []kgo.Opt{kgo.SeedBrokers(e.broker.Addrs...), kgo.SASL(scram.Auth{User: "buckety", Pass: superuserPassword}.AsSha512Mechanism())}
}

// topics lists the broker's topics (harness.Topics).
func (e *env) topics(ctx context.Context) (map[string]bool, error) {
	return harness.Topics(ctx, e.broker.Addrs, e.superuser()[1:]...)
}

// buckets lists the S3 server's buckets.
func (e *env) buckets(ctx context.Context) (map[string]bool, error) {
	out, err := e.s3c.ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		return nil, err
	}
	m := map[string]bool{}
	for _, b := range out.Buckets {
		m[aws.ToString(b.Name)] = true
	}
	return m, nil
}

// wireCreates counts non-validate-only CreateTopics per topic name in the
// broker's wire log, and the duplicates among them: creates of a topic the
// broker already had at the time (created earlier in the same broker run,
// or loaded from its data dir at start). A create after a kill, of a topic
// the restarted broker had lost, is a re-create, not a duplicate.
func (e *env) wireCreates() (creates, dups map[string]int, err error) {
	creates, dups = map[string]int{}, map[string]int{}
	f, err := os.Open(e.wireLog)
	if os.IsNotExist(err) {
		return creates, dups, nil
	}
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	has := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r struct {
			API          string `json:"api"`
			Topic        string `json:"topic"`
			ValidateOnly bool   `json:"validateOnly"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, nil, fmt.Errorf("wire log line %q: %w", sc.Text(), err)
		}
		switch {
		case r.API == "Start":
			has = map[string]bool{}
		case r.API == "Loaded":
			has[r.Topic] = true
		case r.API == "DeleteTopics":
			delete(has, r.Topic)
		case r.API == "CreateTopics" && !r.ValidateOnly:
			creates[r.Topic]++
			if has[r.Topic] {
				dups[r.Topic]++
			}
			has[r.Topic] = true
		}
	}
	return creates, dups, sc.Err()
}

// sortedKeys lists a set, sorted, for messages.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
