package integration

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/all"
	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/app/controller/options"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/logdir"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// shared infrastructure, started once by TestMain.
var (
	cp     *controlplane.ControlPlane
	broker *kafka.Broker
	minio  *s3test.Server
	k8s    client.Client
)

func TestMain(m *testing.M) {
	flag.Parse()
	// Each controller a test runs logs through the logger it is given
	// (testWriter); controller-runtime's global one, which nothing here
	// reads, would otherwise print a stack after 30 s that reads like a
	// crash in CI's excerpts.
	ctrllog.SetLogger(logr.Discard())
	if testing.Short() {
		os.Exit(m.Run())
	}
	code, err := runWithInfra(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

func runWithInfra(m *testing.M) (code int, err error) {
	dir, err := os.MkdirTemp("", "bkt-it-")
	if err != nil {
		return 1, err
	}
	keep := false
	defer func() {
		if keep {
			// The logs only: etcd's and the broker's data go.
			if kept, kerr := logdir.KeepLogs(dir); kerr != nil {
				fmt.Fprintf(os.Stderr, "integration: %v\n", kerr)
			} else if kept {
				fmt.Fprintf(os.Stderr, "integration: logs kept in %s\n", dir)
			}
			return
		}
		if rerr := os.RemoveAll(dir); rerr != nil && err == nil {
			err = rerr
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cp, err = controlplane.Start(ctx, controlplane.Options{Dir: filepath.Join(dir, "cp"), ControllerManager: true, CRDDirs: []string{controlplane.CRDDir()}})
	if err != nil {
		return 1, err
	}
	defer func() {
		if serr := cp.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	bin, err := kafka.Binary(dir)
	if err != nil {
		return 1, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "kafka"), 0o755); err != nil {
		return 1, err
	}
	broker, err = kafka.StartIn(filepath.Join(dir, "kafka"), bin, kafka.Options{}, false)
	if err != nil {
		return 1, err
	}
	defer func() {
		if serr := broker.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	// No test of this package reads the shared MinIO's data usage or
	// fills a quota on it (namespace_budgets_test starts its own).
	minio, err = s3test.StartIn(filepath.Join(dir, "minio"), "minio", s3test.Options{DefaultScanner: true}, false)
	if err != nil {
		return 1, err
	}
	defer func() {
		if serr := minio.Stop(); serr != nil && err == nil {
			err = serr
		}
	}()
	scheme, err := appcontroller.Scheme()
	if err != nil {
		return 1, err
	}
	if k8s, err = client.New(cp.RESTConfig, client.Options{Scheme: scheme}); err != nil {
		return 1, err
	}
	code = harness.RunCachingBuilds(m)
	keep = code != 0
	return code, nil
}

// needInfra skips under -short, where TestMain started nothing.
func needInfra(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("integration test: needs the control plane and backends; run without -short (make test)")
	}
}

// configYAML is a controller config for the shared backends; backend names
// can be changed to simulate a maintainer renaming them.
func configYAML(kafkaName, s3Name string) string {
	return harness.ConfigYAML(sharedBackends(kafkaName, s3Name)...)
}

// sharedBackends are configYAML's backends, for a test to add to or change.
func sharedBackends(kafkaName, s3Name string) []config.Backend {
	k := sharedKafka(kafkaName)
	k.Defaults = map[string]string{"zone": "local"}
	s := harness.S3(s3Name, sharedS3())
	s.Defaults = map[string]string{"zone": "local"}
	return []config.Backend{k, s}
}

// sharedKafka is a kadm backend named name on the shared broker.
func sharedKafka(name string) config.Backend {
	return harness.Kadm(name, kadmdriver.Config{SeedBrokers: broker.Addrs, RequestTimeout: harness.Duration(5 * time.Second)})
}

// sharedS3 is the s3 config of the shared MinIO, with the keys from
// s3Env's variables.
func sharedS3() s3driver.Config {
	c := harness.S3Server(s3driver.ImplMinIO, minio.Endpoint, minio.Region, "TEST_S3_ACCESS_KEY", "TEST_S3_SECRET_KEY")
	c.RequestTimeout = harness.Duration(10 * time.Second)
	return c
}

func s3Env() map[string]string {
	return map[string]string{"TEST_S3_ACCESS_KEY": minio.AccessKey, "TEST_S3_SECRET_KEY": minio.SecretKey}
}

// controllerRun is an in-process controller.
type controllerRun struct {
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startController loads yaml as buckety-controller.yaml and runs the
// controller until the test ends (or stop is called).
func startController(t *testing.T, yaml string, reg *drivers.Registry, recheck time.Duration) *controllerRun {
	t.Helper()
	return startControllerREST(t, yaml, reg, recheck, cp.RESTConfig)
}

// startControllerREST is startController reaching the API server through rc.
func startControllerREST(t *testing.T, yaml string, reg *drivers.Registry, recheck time.Duration, rc *rest.Config) *controllerRun {
	t.Helper()
	return startControllerWith(t, yaml, reg, func(o *appcontroller.Options) {
		o.RESTConfig, o.Recheck = rc, recheck
	})
}

// startControllerWith runs an in-process controller with yaml as
// buckety-controller.yaml (reg: nil for every driver), reaching the API
// server as admin, two reconciles per kind, no sweep, after opts has
// changed its options.
func startControllerWith(t *testing.T, yaml string, reg *drivers.Registry, opts func(*appcontroller.Options)) *controllerRun {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	if reg == nil {
		reg = all.Registry()
	}
	env := s3Env()
	cfg, err := config.Load(dir, config.Options{Registry: reg, Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &controllerRun{cancel: cancel, done: make(chan error, 1)}
	var log logr.Logger = zap.New(zap.WriteTo(testWriter{t}), zap.UseDevMode(true))
	o := appcontroller.Options{
		Config: cfg, Registry: reg, RESTConfig: cp.RESTConfig,
		Flags: options.Flags{ConfigDir: dir, MetricsAddr: "0", ProbeAddr: "0", MaxConcurrent: 2},
		Log:   log, SkipNameValidation: true,
	}
	opts(&o)
	go func() { r.done <- appcontroller.Run(ctx, o) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *controllerRun) stop(t *testing.T) {
	t.Helper()
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("controller: %v", err)
			}
			if err != nil && strings.Contains(err.Error(), "grace period") {
				t.Logf("goroutines still in a reconcile or a driver after the grace period:\n%s", reconcileStacks())
			}
		case <-time.After(60 * time.Second):
			t.Errorf("controller did not stop within 60s; goroutines in a reconcile or a driver:\n%s", reconcileStacks())
		}
	})
}

// reconcileStacks returns the stacks of the goroutines in a controller's
// workers, in buckety's code or in a driver: what a shutdown that overruns
// its grace period waits for.
func reconcileStacks() string {
	var all strings.Builder
	if err := pprof.Lookup("goroutine").WriteTo(&all, 2); err != nil {
		return err.Error()
	}
	var out []string
	for _, g := range strings.Split(all.String(), "\n\n") {
		if strings.Contains(g, "controller-runtime/pkg/internal/controller.") || strings.Contains(g, "buckety-controller/drivers/") || strings.Contains(g, "buckety-controller/internal/") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// testWriter sends controller logs to the test log, so a failing test shows
// them and a passing one stays quiet.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var nsCounter struct {
	sync.Mutex
	n int
}

// namespace creates a fresh namespace for one test.
func namespace(t testing.TB) string {
	t.Helper()
	nsCounter.Lock()
	nsCounter.n++
	name := fmt.Sprintf("%s-%d", strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-")), nsCounter.n)
	nsCounter.Unlock()
	if len(name) > 60 {
		name = name[len(name)-60:]
	}
	name = strings.Trim(strings.ReplaceAll(name, "_", "-"), "-")
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatal(err)
	}
	return name
}

// eventually polls cond until it returns true, failing with its last
// description after timeout.
// waitEvent waits until namespace ns holds an event with reason whose note
// contains note.
func waitEvent(t testing.TB, ns, reason, note string) {
	t.Helper()
	wait.For(t, waitTimeout, reason+" event", func() (bool, string) {
		var evs eventsv1.EventList
		if err := k8s.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range evs.Items {
			if e.Reason == reason && strings.Contains(e.Note, note) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events, none %s with %q", len(evs.Items), reason, note)
	})
}

func getBuckety(t *testing.T, ns, name string) *v1.Buckety {
	t.Helper()
	b := &v1.Buckety{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
		t.Fatal(err)
	}
	return b
}

func condString(conds []metav1.Condition) string {
	var parts []string
	for _, c := range conds {
		parts = append(parts, fmt.Sprintf("%s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message))
	}
	return strings.Join(parts, " | ")
}

// waitCondition waits for a condition of a Buckety or BucketyAccess to have
// status (and reason, if given).
func waitCondition(t *testing.T, obj client.Object, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) metav1.Condition {
	t.Helper()
	return waitConditionOn(t, k8s, obj, typ, status, reason, timeout)
}

// waitConditionOn is waitCondition on the API server c reaches.
func waitConditionOn(t *testing.T, c client.Client, obj client.Object, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	wait.For(t, timeout, fmt.Sprintf("%T %s/%s %s=%s %s", obj, obj.GetNamespace(), obj.GetName(), typ, status, reason), func() (bool, string) {
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err.Error()
		}
		var conds []metav1.Condition
		switch o := obj.(type) {
		case *v1.Buckety:
			conds = o.Status.Conditions
		case *v1.BucketyAccess:
			conds = o.Status.Conditions
		}
		c := meta.FindStatusCondition(conds, typ)
		if c == nil {
			return false, condString(conds)
		}
		got = *c
		return c.Status == status && (reason == "" || c.Reason == reason), condString(conds)
	})
	return got
}

// waitIdle waits until the in-process controllers have finished no
// reconcile and run none for a second. (Their queues' depth gauge is no
// guide: a controller stopped with items queued leaves it raised.)
func waitIdle(t *testing.T) {
	t.Helper()
	last, quiet := -1.0, 0
	wait.For(t, waitTimeout, "controllers idle", func() (bool, string) {
		mfs, err := ctrlmetrics.Registry.Gather()
		if err != nil {
			return false, err.Error()
		}
		var done, active float64
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				switch mf.GetName() {
				case "controller_runtime_reconcile_total":
					done += m.GetCounter().GetValue()
				case "controller_runtime_active_workers":
					active += m.GetGauge().GetValue()
				}
			}
		}
		if done != last || active != 0 {
			last, quiet = done, 0
		} else {
			quiet++
		}
		time.Sleep(100 * time.Millisecond)
		return quiet >= 10, fmt.Sprintf("%v reconciles finished, %v running", done, active)
	})
}

// patch merge-patches obj the way `kubectl patch --type merge` does: no
// resourceVersion, so a controller writing status or metadata at the same
// moment cannot make it fail with a conflict (a GET-modify-Update can).
func patch(t testing.TB, obj client.Object, mergePatch string) {
	t.Helper()
	if err := k8s.Patch(context.Background(), obj, client.RawPatch(types.MergePatchType, []byte(mergePatch))); err != nil {
		t.Fatalf("patch %T %s with %s: %v", obj, obj.GetName(), mergePatch, err)
	}
}

func create(t testing.TB, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
}

func secret(t *testing.T, ns, name string) *corev1.Secret {
	t.Helper()
	s := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("get Secret %s/%s: %v", ns, name, err)
	}
	return s
}
