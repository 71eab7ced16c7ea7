package localstack

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers/all"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/cluster"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/proc"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/seaweedfs"
)

// TestReusable: an earlier run's backends are carried on with only when
// every backend this run wants runs, and the state recorded what it
// needs; a SeaweedFS nobody asked for is no reason to start over.
func TestReusable(t *testing.T) {
	full := backendsState{KafkaPassword: "p", VersityGW: s3test.Server{AdminEndpoint: "http://127.0.0.1:2"}}
	withSW := full
	withSW.SeaweedFS = &seaweedfs.Server{Endpoint: "http://127.0.0.1:3", AccessKey: "a", SecretKey: "s"}
	withTwins := full
	withTwins.Twins = &Twins{Kafka: []string{"127.0.0.1:4"}}
	withSWAndTwins := withSW
	withSWAndTwins.Twins = withTwins.Twins
	cases := []struct {
		name    string
		st      backendsState
		opts    Options
		running int
		want    bool
	}{
		{"three run, three wanted", full, Options{}, 3, true},
		{"two of three run", full, Options{}, 2, false},
		{"no Kafka password recorded", backendsState{VersityGW: full.VersityGW}, Options{}, 3, false},
		{"no VersityGW admin endpoint recorded", backendsState{KafkaPassword: "p"}, Options{}, 3, false},
		{"SeaweedFS runs, not wanted", withSW, Options{}, 3, true},
		{"SeaweedFS wanted and runs", withSW, Options{SeaweedFS: true}, 4, true},
		{"SeaweedFS wanted, not running", withSW, Options{SeaweedFS: true}, 3, false},
		{"SeaweedFS wanted, never recorded", full, Options{SeaweedFS: true}, 4, false},
		{"twins wanted and run", withTwins, Options{OutageTwins: true}, 6, true},
		{"twins wanted, never recorded", full, Options{OutageTwins: true}, 6, false},
		{"twins wanted, one stopped", withTwins, Options{OutageTwins: true}, 5, false},
		{"twins and SeaweedFS wanted, no SeaweedFS twin recorded", withSWAndTwins, Options{SeaweedFS: true, OutageTwins: true}, 8, false},
		{"twins run, not wanted", withTwins, Options{}, 3, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := reusable(c.st, c.opts, c.running); got != c.want {
				t.Errorf("want %v, got %v", c.want, got)
			}
		})
	}
	if got := len(wanted(Options{SeaweedFS: true})); got != 4 {
		t.Errorf("want four backends with SeaweedFS, got %d", got)
	}
	if got := len(wanted(Options{})); got != 3 || len(backendProcs) != 3 {
		t.Errorf("want three backends without SeaweedFS (and backendProcs unchanged), got %d of %d", got, len(backendProcs))
	}
	if got := len(wanted(Options{SeaweedFS: true, OutageTwins: true})); got != 8 {
		t.Errorf("want eight processes with SeaweedFS and the twins, got %d", got)
	}
}

// TestLocalConfigAndEnv: the controller config `make run` deploys loads
// with its credentials, with and without SeaweedFS, and backends.env names
// SeaweedFS (endpoint, region, keys and the pid file lib.sh hang_backend
// stops) only when it runs.
func TestLocalConfigAndEnv(t *testing.T) {
	swVars := []string{"SEAWEEDFS_ENDPOINT=", "SEAWEEDFS_REGION=", "SEAWEEDFS_ACCESS_KEY=", "SEAWEEDFS_SECRET_KEY=", "SEAWEEDFS_PIDFILE="}
	for _, withSW := range []bool{false, true} {
		s := &Stack{
			Dir:           "/state",
			Cluster:       &cluster.Cluster{Containerd: "/state/containerd.sock"},
			Broker:        &kafka.Broker{Addrs: []string{"127.0.0.1:1"}},
			KafkaPassword: "kp",
			VersityGW:     &s3test.Server{Endpoint: "http://127.0.0.1:2", AdminEndpoint: "http://127.0.0.1:3", Region: "us-east-1", AccessKey: "va", SecretKey: "vs"},
			MinIO:         &s3test.Server{Endpoint: "http://127.0.0.1:4", Region: "us-east-1", AccessKey: "ma", SecretKey: "ms"},
		}
		if withSW {
			s.SeaweedFS = &seaweedfs.Server{Endpoint: "http://127.0.0.1:5", AccessKey: "sa", SecretKey: "ss"}
		}
		env := map[string]string{}
		for _, l := range strings.Split(strings.TrimSpace(s.credentials()), "\n") {
			k, v, _ := strings.Cut(l, "=")
			env[k] = v
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, config.Filename), []byte(s.ControllerConfig()), 0o644); err != nil {
			t.Fatal(err)
		}
		cfg, err := config.Load(dir, config.Options{Registry: all.Registry(), Lookup: func(k string) (string, bool) { v, ok := env[k]; return v, ok }})
		if err != nil {
			t.Fatalf("seaweedfs %v: %v\n%s", withSW, err, s.ControllerConfig())
		}
		var names []string
		for _, b := range cfg.Backends {
			names = append(names, b.Name)
		}
		want := "kafka,s3,s3-minio"
		if withSW {
			want += ",s3-seaweedfs"
		}
		if got := strings.Join(names, ","); got != want {
			t.Errorf("seaweedfs %v: want backends %s, got %s", withSW, want, got)
		}
		be := s.BackendsEnv()
		for _, v := range swVars {
			if got := strings.Contains(be, "\n"+v) || strings.HasPrefix(be, v); got != withSW {
				t.Errorf("seaweedfs %v: want %s in backends.env %v, got\n%s", withSW, v, withSW, be)
			}
		}
		if withSW && !strings.Contains(be, "SEAWEEDFS_PIDFILE=/state/backends/seaweedfs/pids/seaweedfs.pid\n") {
			t.Errorf("want the pid file SeaweedFS records in its state directory, got\n%s", be)
		}
		if strings.Contains(be, "OUTAGE") {
			t.Errorf("seaweedfs %v: want no outage twin in backends.env when none runs, got\n%s", withSW, be)
		}
	}
}

// TestTwinsEnv: with the outage twins, backends.env names each twin's
// address and the pid file hang_backend pauses, in the twin's own state
// directory, not the one of the backend it twins.
func TestTwinsEnv(t *testing.T) {
	s := &Stack{
		Dir:       "/state",
		Cluster:   &cluster.Cluster{Containerd: "/state/containerd.sock"},
		Broker:    &kafka.Broker{Addrs: []string{"127.0.0.1:1"}},
		VersityGW: &s3test.Server{Endpoint: "http://127.0.0.1:2", AdminEndpoint: "http://127.0.0.1:3"},
		MinIO:     &s3test.Server{Endpoint: "http://127.0.0.1:4"},
		SeaweedFS: &seaweedfs.Server{Endpoint: "http://127.0.0.1:5"},
		Twins: &Twins{Kafka: []string{"127.0.0.1:11"}, VersityGW: s3test.Server{Endpoint: "http://127.0.0.1:12", AdminEndpoint: "http://127.0.0.1:13"},
			MinIO: s3test.Server{Endpoint: "http://127.0.0.1:14"}, SeaweedFS: &seaweedfs.Server{Endpoint: "http://127.0.0.1:15"}},
	}
	be := s.BackendsEnv()
	for _, want := range []string{
		"OUTAGE_KAFKA_BOOTSTRAP=127.0.0.1:11\n", "OUTAGE_VERSITYGW_ENDPOINT=http://127.0.0.1:12\n", "OUTAGE_VERSITYGW_ADMIN_ENDPOINT=http://127.0.0.1:13\n",
		"OUTAGE_MINIO_ENDPOINT=http://127.0.0.1:14\n", "OUTAGE_SEAWEEDFS_ENDPOINT=http://127.0.0.1:15\n",
		"KFAKE_OUTAGE_PIDFILE=/state/backends/kafka-outage/pids/broker.pid\n", "VERSITYGW_OUTAGE_PIDFILE=/state/backends/versitygw-outage/pids/versitygw.pid\n",
		"MINIO_OUTAGE_PIDFILE=/state/backends/minio-outage/pids/minio.pid\n", "SEAWEEDFS_OUTAGE_PIDFILE=/state/backends/seaweedfs-outage/pids/seaweedfs.pid\n",
		"KAFKA_BOOTSTRAP=127.0.0.1:1\n", "KFAKE_PIDFILE=/state/backends/kafka/pids/broker.pid\n",
	} {
		if !strings.Contains(be, want) {
			t.Errorf("want %q in backends.env, got\n%s", want, be)
		}
	}
}

// TestBackendsWithSeaweedFS: the backends as make run and make e2e start
// them, without a node. Asked for, SeaweedFS runs beside the three and is
// recorded; a later run reuses all four, and one not asking for it reuses
// the three and leaves it be; once it has died, a run asking for it starts
// everything again and SeaweedFS keeps its admin keys; Down stops it by its
// pid file and leaves none of its sockets in /tmp.
func TestBackendsWithSeaweedFS(t *testing.T) {
	if testing.Short() {
		t.Skip("integration test: runs the backends as processes; run without -short (make test)")
	}
	dir := t.TempDir()
	t.Cleanup(func() {
		if err := Down(dir); err != nil {
			t.Errorf("down: %v", err)
		}
	})
	log := func(l string) { t.Log(l) }
	sw := Options{SeaweedFS: true}
	swDir := filepath.Join(dir, "backends", seaweedfsProc.dir)

	first := &Stack{Dir: dir}
	if err := first.backends(sw, log); err != nil {
		t.Fatal(err)
	}
	if first.SeaweedFS == nil || first.SeaweedFS.Endpoint == "" {
		t.Fatalf("want SeaweedFS started, got %+v", first.SeaweedFS)
	}
	if up, _ := proc.Running(swDir, seaweedfsProc.name); !up {
		t.Fatal("want SeaweedFS running detached, recorded by its pid file")
	}

	again := &Stack{Dir: dir}
	if err := again.backends(sw, log); err != nil {
		t.Fatal(err)
	}
	if strings.Join(again.Reused, ",") != "backends" || again.SeaweedFS == nil || again.SeaweedFS.Endpoint != first.SeaweedFS.Endpoint || again.SeaweedFS.AccessKey != first.SeaweedFS.AccessKey {
		t.Errorf("want the four backends reused, SeaweedFS as recorded (%+v), got reused %v and %+v", first.SeaweedFS, again.Reused, again.SeaweedFS)
	}
	without := &Stack{Dir: dir}
	if err := without.backends(Options{}, log); err != nil {
		t.Fatal(err)
	}
	if strings.Join(without.Reused, ",") != "backends" || without.SeaweedFS != nil {
		t.Errorf("want the three reused and no SeaweedFS in a run not asking for it, got reused %v and %+v", without.Reused, without.SeaweedFS)
	}
	if up, _ := proc.Running(swDir, seaweedfsProc.name); !up {
		t.Error("want the SeaweedFS nobody asked for left running (Down stops it)")
	}

	if err := seaweedfs.StopDetached(swDir, 15*time.Second); err != nil {
		t.Fatal(err)
	}
	restarted := &Stack{Dir: dir}
	if err := restarted.backends(sw, log); err != nil {
		t.Fatal(err)
	}
	if len(restarted.Reused) != 0 || restarted.SeaweedFS == nil {
		t.Fatalf("want everything started again once SeaweedFS died, got reused %v and %+v", restarted.Reused, restarted.SeaweedFS)
	}
	if restarted.SeaweedFS.AccessKey != first.SeaweedFS.AccessKey || restarted.SeaweedFS.SecretKey != first.SeaweedFS.SecretKey {
		t.Error("want SeaweedFS started again with the admin keys it had")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := restarted.SeaweedFS.IAM().ListUsers(ctx, ""); err != nil {
		t.Errorf("want the restarted SeaweedFS to answer its admin: %v", err)
	}
	socks, err := os.ReadFile(filepath.Join(swDir, "grpc-sockets"))
	if err != nil {
		t.Fatal(err)
	}

	if err := Down(dir); err != nil {
		t.Fatal(err)
	}
	if _, recorded := proc.Running(swDir, seaweedfsProc.name); recorded {
		t.Error("want no pid file of SeaweedFS after Down")
	}
	for _, sock := range strings.Fields(string(socks)) {
		if _, err := os.Stat(sock); err == nil {
			t.Errorf("want %s removed by Down", sock)
		}
	}
}
