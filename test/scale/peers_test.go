package scale

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/harness"
)

// peersParams size `make bench-peers` (issue 36). The defaults are the
// smoke `make test` runs (buckety alone, no peer source needed);
// BENCH_PEERS_FULL=1 (`make bench-peers`) selects the comparison's sizes
// and requires PEER_SRC; each knob can be set on its own:
//
//	PEER_SRC                 a provider-kafka source tree (docs/performance.md says which commit and how to get
//	                         it); built on a copy, never written. Required with BENCH_PEERS_FULL=1
//	PEER_COMMIT              the peer's commit, when PEER_SRC is not a git checkout (default: git rev-parse)
//	PEER_APIS_VERSION        the version github.com/crossplane/crossplane/apis/v2 is replaced by (v2.3.1)
//	BENCH_PEERS_N            topics per run, each with its access and Secret (3; full 1000)
//	BENCH_PEERS_REPS         repetitions of every variant, interleaved (1; full 3)
//	BENCH_PEERS_PEER_ARGS    the peer's variants, separated by ";", each its flags ("" is as shipped)
//	                         (";--max-reconcile-rate=100")
//	BENCH_PEERS_BUCKETY_ARGS extra flags of buckety-controller (none: as shipped)
//	BENCH_PEERS_IDLE_BUSY    the machine counts as idle at a run's start when at most this percentage of its CPU
//	                         was busy over 3 s (15; the environment's own idle processes count: about 4)
//	BENCH_PEERS_IDLE_WAIT    how long a run waits for that before it starts anyway and says so in the table
//	                         (5s; full 5m)
//	BENCH_PEERS_TABLE        also write the table to this file
type peersParams struct {
	N, Reps      int
	PeerSrc      string
	APIsVersion  string
	PeerVariants [][]string
	BucketyArgs  []string
	IdleBusy     float64
	IdleWait     time.Duration
	Table        string
	Full         bool
}

func loadPeersParams(t *testing.T) peersParams {
	t.Helper()
	p := peersParams{N: 3, Reps: 1, APIsVersion: "v2.3.1", IdleWait: 5 * time.Second,
		PeerVariants: [][]string{nil, {"--max-reconcile-rate=100"}}}
	if os.Getenv("BENCH_PEERS_FULL") == "1" {
		p.Full, p.N, p.Reps, p.IdleWait = true, 1000, 3, 5*time.Minute
	}
	busy := 15
	harness.EnvInts(t, 1, map[string]*int{"BENCH_PEERS_N": &p.N, "BENCH_PEERS_REPS": &p.Reps})
	harness.EnvInts(t, 0, map[string]*int{"BENCH_PEERS_IDLE_BUSY": &busy})
	harness.EnvDurations(t, map[string]*time.Duration{"BENCH_PEERS_IDLE_WAIT": &p.IdleWait})
	p.IdleBusy = float64(busy) / 100
	p.PeerSrc = os.Getenv("PEER_SRC")
	if v := os.Getenv("PEER_APIS_VERSION"); v != "" {
		p.APIsVersion = v
	}
	if v, ok := os.LookupEnv("BENCH_PEERS_PEER_ARGS"); ok {
		p.PeerVariants = nil
		for _, s := range strings.Split(v, ";") {
			p.PeerVariants = append(p.PeerVariants, strings.Fields(s))
		}
	}
	p.BucketyArgs = strings.Fields(os.Getenv("BENCH_PEERS_BUCKETY_ARGS"))
	p.Table = os.Getenv("BENCH_PEERS_TABLE")
	if p.Full && p.PeerSrc == "" {
		t.Fatal(peerSrcHelp)
	}
	return p
}

// peerSrcHelp says how to get the peer's source.
const peerSrcHelp = `bench-peers: PEER_SRC is not set. It is a checkout of crossplane-contrib/provider-kafka
(the module proxy refuses the module), at the commit docs/performance.md names ("Against provider-kafka"), e.g.:
  git clone https://github.com/crossplane-contrib/provider-kafka /tmp/provider-kafka
  git -C /tmp/provider-kafka checkout ead84f9
  make bench-peers PEER_SRC=/tmp/provider-kafka`

// variant is one controller under comparison.
type variant struct {
	// name labels the variant in the table; short in names of its objects.
	name, short string
	// peer is the peer's flags; nil for buckety.
	peer   []string
	isPeer bool
}

// peerRun is what one run of one variant measured.
type peerRun struct {
	total, p50, first time.Duration
	// created is when the last of the harness's creates was answered.
	created time.Duration
	kafka   counts
	writes  counts
	// reads are the requests to the same resources that are not writes
	// (GET, LIST, WATCH): reads past a controller's cache.
	reads        counts
	reconciles   float64
	reconcilesBy string // per topic, by controller and result
	rss          int64
	cpu          float64
	// busy is the machine's busy fraction when the run started, idle
	// whether it was at most the threshold.
	busy float64
	idle bool
	// secretKeys are the keys of the access Secrets.
	secretKeys string
}

// peerWriteResources are the resources whose writes are either
// controller's work: buckety's (writeResources) and the peer's (its kinds,
// its usage tracking, Secrets, events). One controller runs at a time.
var peerWriteResources = func() map[string]bool {
	m := map[string]bool{"topics": true, "accesscontrollists": true, "providerconfigusages": true, "clusterproviderconfigusages": true,
		"providerconfigs": true, "clusterproviderconfigs": true}
	for k := range writeResources {
		m[k] = true
	}
	return m
}()

// TestPeers compares buckety with crossplane-contrib/provider-kafka on one
// control plane and one counting broker: N topics, each with an access and
// its Secret, provisioned by each variant in turn, every variant Reps
// times, interleaved (the order reversed every other repetition), each run
// starting on an idle machine and removing what it made before the next.
// It prints per-run figures and one table of medians and ratios; with
// BENCH_PEERS_TABLE set it also writes it there.
func TestPeers(t *testing.T) {
	if testing.Short() {
		t.Skip("peer comparison: needs the control plane and the broker; run without -short (make test runs its smoke, make bench-peers the comparison)")
	}
	log.SetLogger(logr.Discard())
	p := loadPeersParams(t)
	binDir := t.TempDir()
	b := buildBins(t, binDir)
	variants := []variant{{name: "buckety", short: "b"}}
	var pr *peer
	if p.PeerSrc != "" {
		pr = buildPeer(t, p.PeerSrc, binDir, p.APIsVersion)
		for i, args := range p.PeerVariants {
			name := "provider-kafka as shipped"
			if len(args) > 0 {
				name = "provider-kafka " + strings.Join(args, " ")
			}
			variants = append(variants, variant{name: name, short: fmt.Sprintf("p%d", i), peer: args, isPeer: true})
		}
	} else {
		t.Log("PEER_SRC not set: buckety alone (the harness's smoke); make bench-peers needs it")
	}
	header := fmt.Sprintf("bench-peers: buckety %s, peer %s; N=%d, %d repetitions, buckety args %q, idle ≤ %.0f%% busy (wait ≤ %s)",
		treeCommit(), peerCommit(pr, p.APIsVersion), p.N, p.Reps, p.BucketyArgs, p.IdleBusy*100, p.IdleWait)
	fmt.Println(header)

	e := newEnvWith(t, b, "peers", envParts{kcm: true})
	e.startWebhook()
	var peerKubeconfig string
	if pr != nil {
		peerKubeconfig = e.installPeer(pr)
	}
	results := map[string][]peerRun{}
	t.Cleanup(func() {
		out := header + "\n\n" + peersTable(variants, results, p.N, false)
		fmt.Print("\n" + out)
		if p.Table != "" {
			if err := os.MkdirAll(filepath.Dir(p.Table), 0o755); err != nil {
				t.Error(err)
			}
			if err := os.WriteFile(p.Table, []byte(out+"\n"+peersTable(variants, results, p.N, true)), 0o644); err != nil {
				t.Errorf("write %s: %v", p.Table, err)
			}
		}
	})
	for rep := 0; rep < p.Reps; rep++ {
		order := append([]variant{}, variants...)
		if rep%2 == 1 {
			for i, j := 0, len(order)-1; i < j; i, j = i+1, j-1 {
				order[i], order[j] = order[j], order[i]
			}
		}
		for _, v := range order {
			r := runVariant(t, e, p, v, rep, pr, peerKubeconfig)
			results[v.name] = append(results[v.name], r)
			fmt.Printf("bench-peers: %s run %d: all Ready %s, p50 %s, first %s, all created %s; Kafka %s; API writes %.2f/topic = %s; other API requests %s; reconciles %.2f/topic (%s); RSS %.1f MiB; CPU %.1f s; machine %.0f%% busy at start; Secret keys %s\n",
				v.name, rep+1, secs(r.total), secs(r.p50), secs(r.first), secs(r.created), r.kafka, float64(r.writes.total())/float64(p.N), r.writes, r.reads,
				r.reconciles/float64(p.N), r.reconcilesBy, float64(r.rss)/(1<<20), r.cpu, r.busy*100, r.secretKeys)
			if t.Failed() {
				return
			}
		}
	}
}

// runVariant provisions N topics with v on a fresh controller process in
// a namespace of its own, measures, checks, and removes them again.
func runVariant(t *testing.T, e *env, p peersParams, v variant, rep int, pr *peer, peerKubeconfig string) peerRun {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var r peerRun
	var err error
	if r.busy, r.idle, err = harness.WaitIdle(p.IdleBusy, p.IdleWait); err != nil {
		t.Fatal(err)
	}
	if !r.idle {
		t.Logf("%s run %d: machine still %.0f%% busy after %s; starting anyway", v.name, rep+1, r.busy*100, p.IdleWait)
	}
	var (
		metrics string
		pid     int
		stop    func()
		tail    func() string
	)
	if v.isPeer {
		pp := e.startPeer(pr.bin, peerKubeconfig, v.peer)
		metrics, pid, stop, tail = pp.metrics, pp.p.PID(), func() { e.stopPeer(pp) }, func() string { return pp.p.Tail(20) }
	} else {
		e.startController(p.BucketyArgs)
		metrics, pid, stop, tail = e.ctrl.Metrics, e.ctrl.P.PID(), e.stopController, func() string { return e.ctrl.P.Tail(20) }
	}
	defer stop()

	ns := fmt.Sprintf("peers-r%d-%s", rep+1, v.short)
	if err := e.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	names := make([]string, p.N)
	for i := range names {
		names[i] = fmt.Sprintf("r%d%s-t%05d", rep+1, v.short, i)
	}
	var w *readyWatch
	if v.isPeer {
		w = e.watchReadyOf(ctx, ns, peerTopicList, crossplaneReady)
	} else {
		w = e.watchReady(ctx, ns)
	}
	kc := e.kafkaStart()
	writes0, reads0 := e.apiRequestsOf(peerWriteResources)
	rec0, recBy0 := e.reconciles(metrics)
	cpu0, err := harness.CPUSeconds(pid)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := parallel(len(names), workers, func(i int) error {
		if v.isPeer {
			return e.k8s.Create(ctx, peerTopic(ns, names[i], names[i]+"-creds"))
		}
		return e.k8s.Create(ctx, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: names[i], Namespace: ns},
			Spec: v1.BucketySpec{Backend: "kafka", Parameters: map[string]string{"partitions": "1", "config.retention.ms": retention},
				// Delete, as the peer's default deletionPolicy: removing a
				// run's objects removes its topics before the next run.
				RetentionPolicy: v1.RetentionDelete,
				DefaultAccess:   &v1.DefaultAccess{CredentialsSecretName: names[i] + "-creds"}}})
	}); err != nil {
		t.Fatalf("%s: create: %v", v.name, err)
	}
	r.created = time.Since(start)
	timeout := 5*time.Minute + time.Duration(p.N)*time.Second
	times, missing := w.wait(len(names), timeout)
	if len(times) < len(names) {
		t.Fatalf("%s: %d of %d Ready after %s; not Ready, e.g.: %s\nlog:\n%s", v.name, len(times), len(names), timeout, missing, tail())
	}
	r.total, r.p50, r.first = times[len(times)-1].Sub(start), times[(len(times)-1)/2].Sub(start), times[0].Sub(start)
	e.quietAt(metrics, 15*time.Second)
	r.kafka = kc.since()
	writes1, reads1 := e.apiRequestsOf(peerWriteResources)
	r.writes, r.reads = writes1.minus(writes0), reads1.minus(reads0)
	created := "POST bucketies"
	if v.isPeer {
		created = "POST topics"
	}
	r.writes[created] -= int64(len(names)) // the harness's own creates
	if r.writes[created] == 0 {
		delete(r.writes, created)
	}
	rec1, recBy1 := e.reconciles(metrics)
	r.reconciles, r.reconcilesBy = rec1-rec0, perObject(recBy0, recBy1, len(names))
	cpu1, err := harness.CPUSeconds(pid)
	if err != nil {
		t.Fatal(err)
	}
	r.cpu = cpu1 - cpu0
	if r.rss, err = harness.RSS(pid); err != nil {
		t.Fatal(err)
	}
	if v.isPeer {
		r.secretKeys = checkPeer(t, e, ns, names)
	} else {
		checkKafka(t, e, ns, names)
		checkSecrets(t, e, ns, names)
		r.secretKeys = "bootstrap,topic"
	}
	removeRun(t, e, ns, v, names)
	return r
}

// reconciles is the total of controller_runtime_reconcile_total over every
// controller of the process serving metrics on addr, and the count of
// each controller and result ("buckety/success").
func (e *env) reconciles(addr string) (float64, map[string]float64) {
	e.t.Helper()
	total, by := 0.0, map[string]float64{}
	for _, s := range e.metricsAt(addr, "controller_runtime_reconcile_total") {
		total += s.value
		by[s.labels["controller"]+"/"+s.labels["result"]] += s.value
	}
	return total, by
}

// perObject formats the growth of each count from before to after, per
// object, in key order, leaving out those that did not grow.
func perObject(before, after map[string]float64, n int) string {
	keys := make([]string, 0, len(after))
	for k := range after {
		if after[k] > before[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.2f", k, (after[k]-before[k])/float64(n))
	}
	return strings.Join(parts, ", ")
}

// removeRun deletes a run's objects with its controller still running
// (which deletes their topics), waits until they and their topics are
// gone, then deletes the namespace (kube-controller-manager removes the
// rest) and waits for that too, so the next run starts from the same
// state.
func removeRun(t *testing.T, e *env, ns string, v variant, names []string) {
	t.Helper()
	ctx := context.Background()
	var obj client.Object
	var list func() client.ObjectList
	if v.isPeer {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(peerTopicGVK)
		obj, list = u, peerTopicList
	} else {
		obj, list = &v1.Buckety{}, func() client.ObjectList { return &v1.BucketyList{} }
	}
	deleteCollection(t, e.k8s, ns, obj, list())
	deadline := time.Now().Add(5*time.Minute + time.Duration(len(names))*300*time.Millisecond)
	for {
		l := list()
		if err := e.k8s.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		left := meta.LenList(l)
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d of %d objects in %s still there after deleting them", v.name, left, len(names), ns)
		}
		time.Sleep(time.Second)
	}
	have, err := e.topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, n := range names {
		if have[n] {
			kept = append(kept, n)
		}
	}
	if len(kept) > 0 {
		t.Fatalf("%s: %d topics still on the broker after their objects were deleted, e.g. %v", v.name, len(kept), kept[:min(len(kept), 5)])
	}
	if err := e.k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	for {
		err := e.k8s.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("namespace %s not gone after its deletion", ns)
		}
		time.Sleep(time.Second)
	}
}

// treeCommit is the commit of the tree under test, "+dirty" with changes.
func treeCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short=7", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "+dirty"
	}
	return c
}

func peerCommit(pr *peer, apis string) string {
	if pr == nil {
		return "none (PEER_SRC not set)"
	}
	return "provider-kafka " + pr.commit + " (" + peerAPIsModule + " " + apis + ")"
}

// A figure of the table: how to read it off a run, and how to print it.
type peerFigure struct {
	name  string
	value func(r peerRun, n int) float64
	unit  string
}

var peerFigures = []peerFigure{
	{"all Ready", func(r peerRun, _ int) float64 { return r.total.Seconds() }, "s"},
	{"p50 Ready", func(r peerRun, _ int) float64 { return r.p50.Seconds() }, "s"},
	{"first Ready", func(r peerRun, _ int) float64 { return r.first.Seconds() }, "s"},
	{"Kafka requests per topic", func(r peerRun, n int) float64 { return float64(r.kafka.total()) / float64(n) }, ""},
	{"API writes per topic", func(r peerRun, n int) float64 { return float64(r.writes.total()) / float64(n) }, ""},
	{"reconciles per topic", func(r peerRun, n int) float64 { return r.reconciles / float64(n) }, ""},
	{"RSS after provisioning", func(r peerRun, _ int) float64 { return float64(r.rss) / (1 << 20) }, "MiB"},
	{"CPU seconds provisioning", func(r peerRun, _ int) float64 { return r.cpu }, "s"},
}

// median of the figure over runs.
func median(runs []peerRun, n int, f func(peerRun, int) float64) float64 {
	vs := make([]float64, len(runs))
	for i, r := range runs {
		vs[i] = f(r, n)
	}
	sort.Float64s(vs)
	if len(vs)%2 == 1 {
		return vs[len(vs)/2]
	}
	return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
}

// peersTable prints, per figure, buckety's median (and range) and, for
// each peer variant, its median and buckety's ratio to it: below 1× buckety
// takes less. Times are never shown without their ratio when a peer ran.
func peersTable(variants []variant, results map[string][]peerRun, n int, markdown bool) string {
	head := []string{"figure (median of runs, range)"}
	for i, v := range variants {
		head = append(head, v.name)
		if i > 0 {
			head = append(head, "buckety ÷ "+v.name)
		}
	}
	rows := [][]string{head}
	for _, f := range peerFigures {
		row := []string{f.name}
		base := results[variants[0].name]
		for i, v := range variants {
			runs := results[v.name]
			if len(runs) == 0 {
				row = append(row, "—")
			} else {
				lo, hi := f.value(runs[0], n), f.value(runs[0], n)
				for _, r := range runs {
					lo, hi = min(lo, f.value(r, n)), max(hi, f.value(r, n))
				}
				row = append(row, strings.TrimSpace(fmt.Sprintf("%.2f %s (%.2f–%.2f)", median(runs, n, f.value), f.unit, lo, hi)))
			}
			if i > 0 {
				if len(runs) == 0 || len(base) == 0 || median(runs, n, f.value) == 0 {
					row = append(row, "—")
				} else {
					row = append(row, fmt.Sprintf("%.2f×", median(base, n, f.value)/median(runs, n, f.value)))
				}
			}
		}
		rows = append(rows, row)
	}
	idle := []string{"machine busy at start (max)"}
	for i, v := range variants {
		busy, warn := 0.0, ""
		for _, r := range results[v.name] {
			busy = max(busy, r.busy)
			if !r.idle {
				warn = " NOT IDLE"
			}
		}
		idle = append(idle, fmt.Sprintf("%.0f%%%s", busy*100, warn))
		if i > 0 {
			idle = append(idle, "")
		}
	}
	keys := []string{"access Secret keys"}
	for i, v := range variants {
		k := "—"
		if runs := results[v.name]; len(runs) > 0 {
			k = runs[0].secretKeys
		}
		keys = append(keys, k)
		if i > 0 {
			keys = append(keys, "")
		}
	}
	rows = append(rows, idle, keys)
	var b strings.Builder
	if markdown {
		for i, r := range rows {
			b.WriteString("| " + strings.Join(r, " | ") + " |\n")
			if i == 0 {
				b.WriteString(strings.Repeat("| --- ", len(r)) + "|\n")
			}
		}
		return b.String()
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r, "\t"))
	}
	if err := tw.Flush(); err != nil {
		return err.Error()
	}
	return b.String()
}
