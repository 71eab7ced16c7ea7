package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/proc"
)

// The peer: crossplane-contrib/provider-kafka, built from a source tree the
// caller provides (PEER_SRC; the module proxy refuses the module) and run
// out of cluster as its Deployment would run it, against the benchmark's
// control plane and broker.

const (
	// peerAPIsModule is the module the peer's go.mod must take at
	// PEER_APIS_VERSION: the version it names is not served here.
	peerAPIsModule = "github.com/crossplane/crossplane/apis/v2"
	// peerMetricsEnv is the variable the build's added file reads the
	// metrics bind address from.
	peerMetricsEnv = "BENCH_PEERS_METRICS_ADDR"
	// peerNamespace and peerServiceAccount are what the peer runs as (its
	// package installs it in crossplane-system).
	peerNamespace      = "crossplane-system"
	peerServiceAccount = "provider-kafka"
	// peerCredentials is the Secret the ClusterProviderConfig points at.
	peerCredentials = "kafka-creds"
	// peerTopicController is the peer's Topic controller, as its metrics
	// name it.
	peerTopicController = "managed/topic.topic.kafka.m.crossplane.io"
)

// The peer's namespaced kinds (crossplane v2 managed resources).
var (
	peerTopicGVK = schema.GroupVersionKind{Group: "topic.kafka.m.crossplane.io", Version: "v1alpha1", Kind: "Topic"}
	peerPCGVK    = schema.GroupVersionKind{Group: "kafka.m.crossplane.io", Version: "v1alpha1", Kind: "ClusterProviderConfig"}
)

// peerLoopbackMetrics is added to the peer's main package in the build
// copy: its main leaves the metrics server at controller-runtime's default,
// every interface, and the benchmark binds every server to loopback.
const peerLoopbackMetrics = `package main

// Added by buckety's bench-peers build (test/scale/peer_test.go): bind the
// metrics server to loopback. Nothing else in the provider is changed.

import (
	"os"

	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

func init() {
	metricsserver.DefaultBindAddress = "127.0.0.1:8080"
	if a := os.Getenv("` + peerMetricsEnv + `"); a != "" {
		metricsserver.DefaultBindAddress = a
	}
}
`

// peer is a built provider-kafka.
type peer struct {
	bin, crdDir string
	// commit is the source tree's commit ("unknown" when it is not a git
	// checkout and PEER_COMMIT is unset; "+dirty" when it has changes).
	commit string
}

// buildPeer copies the source tree src into dir (src is never written),
// replaces peerAPIsModule by apisVersion in the copy's go.mod, adds the
// loopback metrics file and builds ./cmd/provider.
func buildPeer(t *testing.T, src, dir, apisVersion string) *peer {
	t.Helper()
	if _, err := os.Stat(filepath.Join(src, "cmd", "provider", "main.go")); err != nil {
		t.Fatalf("PEER_SRC=%s: want a provider-kafka source tree (cmd/provider/main.go): %v", src, err)
	}
	p := &peer{commit: sourceCommit(src), bin: filepath.Join(dir, "provider-kafka")}
	cp := filepath.Join(dir, "provider-kafka-src")
	if err := proc.CopyTree(src, cp); err != nil {
		t.Fatalf("copy PEER_SRC: %v", err)
	}
	p.crdDir = filepath.Join(cp, "package", "crds")
	if err := os.WriteFile(filepath.Join(cp, "cmd", "provider", "zz_bench_loopback_metrics.go"), []byte(peerLoopbackMetrics), 0o644); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for _, args := range [][]string{
		{"mod", "edit", "-replace", peerAPIsModule + "=" + peerAPIsModule + "@" + apisVersion},
		{"build", "-trimpath", "-o", p.bin, "./cmd/provider"},
	} {
		cmd := exec.Command("go", args...)
		cmd.Dir = cp
		// -mod=mod: the replaced module's sums are not in the peer's go.sum.
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("peer: go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	t.Logf("peer provider-kafka %s built in %s", p.commit, time.Since(start).Round(time.Second))
	return p
}

// sourceCommit names the commit of the tree at src.
func sourceCommit(src string) string {
	if c := os.Getenv("PEER_COMMIT"); c != "" {
		return c
	}
	out, err := exec.Command("git", "-C", src, "rev-parse", "--short=7", "HEAD").Output()
	if err != nil {
		return "unknown (not a git checkout; set PEER_COMMIT)"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "-C", src, "status", "--porcelain").Output(); err == nil && len(strings.TrimSpace(string(st))) > 0 {
		c += "+dirty"
	}
	return c
}

// installPeer does what installing the provider package and configuring
// it would: its CRDs, a ServiceAccount allowed everything (crossplane's RBAC
// manager grants a provider its own kinds, Secrets, events and CRD reads;
// cluster-admin is a superset and costs the API server the same checks),
// a kubeconfig impersonating it, the credentials Secret with the broker's
// address and the ClusterProviderConfig "default" that Topics use when
// they name none. It returns the kubeconfig.
func (e *env) installPeer(p *peer) string {
	e.t.Helper()
	ctx := context.Background()
	if err := e.cp.InstallCRDs(ctx, p.crdDir); err != nil {
		e.t.Fatalf("peer CRDs: %v", err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: peerNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: peerServiceAccount, Namespace: peerNamespace}},
		&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: peerServiceAccount},
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
			Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: peerServiceAccount, Namespace: peerNamespace}}},
	}
	creds, err := json.Marshal(map[string]any{"brokers": e.broker.Addrs})
	if err != nil {
		e.t.Fatal(err)
	}
	objs = append(objs, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: peerCredentials, Namespace: peerNamespace}, Data: map[string][]byte{"credentials": creds}})
	pc := &unstructured.Unstructured{}
	pc.SetGroupVersionKind(peerPCGVK)
	pc.SetName("default")
	pc.Object["spec"] = map[string]any{"credentials": map[string]any{"source": "Secret",
		"secretRef": map[string]any{"namespace": peerNamespace, "name": peerCredentials, "key": "credentials"}}}
	objs = append(objs, pc)
	for _, o := range objs {
		if err := harness.CreateOrIgnore(ctx, e.k8s, o); err != nil {
			e.t.Fatalf("peer: create %T %s: %v", o, o.GetName(), err)
		}
	}
	kubeconfig := filepath.Join(e.dir, "provider-kafka.kubeconfig")
	if err := harness.ImpersonatingKubeconfig(e.cp, kubeconfig, peerNamespace, peerServiceAccount); err != nil {
		e.t.Fatal(err)
	}
	return kubeconfig
}

// peerProc is a running provider-kafka.
type peerProc struct {
	p       *proc.Process
	metrics string
}

// startPeer starts the peer with args (leader election is off by
// default) and waits until its Topic controller runs: with the CRD gate
// ("safe start"), that is after it has seen the Topic CRD established.
func (e *env) startPeer(bin, kubeconfig string, args []string) *peerProc {
	e.t.Helper()
	port, err := proc.FreePort()
	if err != nil {
		e.t.Fatal(err)
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	p, err := proc.Start(e.dir, "provider-kafka", bin, args, []string{"KUBECONFIG=" + kubeconfig, peerMetricsEnv + "=" + addr}, false)
	if err != nil {
		e.t.Fatal(err)
	}
	pp := &peerProc{p: p, metrics: addr}
	deadline := time.Now().Add(90 * time.Second)
	for {
		if done, err := p.Exited(); done {
			e.t.Fatalf("provider-kafka exited: %v\n%s", err, p.Tail(30))
		}
		if body, err := e.get("http://"+addr+"/metrics", false); err == nil && strings.Contains(body, `controller="`+peerTopicController+`"`) {
			return pp
		}
		if time.Now().After(deadline) {
			e.stopPeer(pp)
			e.t.Fatalf("provider-kafka: its Topic controller not running after 90 s (metrics on %s):\n%s", addr, p.Tail(30))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (e *env) stopPeer(pp *peerProc) {
	if err := pp.p.Stop(30 * time.Second); err != nil {
		e.t.Errorf("stop provider-kafka: %v", err)
	}
}

// peerTopic is the peer's object for one Buckety with defaultAccess: a
// Topic with the same partitions and retention, named as the topic, that
// writes its connection Secret to secret.
func peerTopic(ns, name, secret string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(peerTopicGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	u.Object["spec"] = map[string]any{
		"forProvider": map[string]any{"partitions": int64(1), "replicationFactor": int64(1),
			"config": map[string]any{"retention.ms": retention}},
		"writeConnectionSecretToRef": map[string]any{"name": secret},
	}
	return u
}

func peerTopicList() client.ObjectList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(peerTopicGVK.GroupVersion().WithKind(peerTopicGVK.Kind + "List"))
	return l
}

// crossplaneReady reports whether a managed resource's Ready condition is
// True (crossplane's Available); managed resources carry no
// observedGeneration on their conditions to compare.
func crossplaneReady(o client.Object) (bool, string) {
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		return false, fmt.Sprintf("not unstructured: %T", o)
	}
	conds, _, err := unstructured.NestedSlice(u.Object, "status", "conditions")
	if err != nil {
		return false, err.Error()
	}
	var desc []string
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if !ok {
			continue
		}
		if m["type"] == "Ready" && m["status"] == "True" {
			return true, ""
		}
		desc = append(desc, fmt.Sprintf("%v=%v %v: %v", m["type"], m["status"], m["reason"], m["message"]))
	}
	if len(desc) == 0 {
		return false, "no conditions"
	}
	return false, strings.Join(desc, "; ")
}

// checkPeer asserts every Topic of ns is Ready, exists on the broker, and
// has its connection Secret controlled by it; it returns the keys those
// Secrets hold (the connection details the peer publishes), as
// "key1,key2" or "none".
func checkPeer(t *testing.T, e *env, ns string, names []string) string {
	t.Helper()
	ctx := context.Background()
	l := peerTopicList()
	if err := e.k8s.List(ctx, l, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	items, err := meta.ExtractList(l)
	if err != nil {
		t.Fatal(err)
	}
	have, err := e.topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var sl corev1.SecretList
	if err := e.k8s.List(ctx, &sl, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	secrets := map[string]*corev1.Secret{}
	for i := range sl.Items {
		secrets[sl.Items[i].Name] = &sl.Items[i]
	}
	keys := map[string]bool{}
	var bad []string
	for _, it := range items {
		u, ok := it.(*unstructured.Unstructured)
		if !ok {
			t.Fatalf("peer list item: %T", it)
		}
		if ok, desc := crossplaneReady(u); !ok {
			bad = append(bad, u.GetName()+": not Ready: "+desc)
		}
		if !have[u.GetName()] {
			bad = append(bad, u.GetName()+": no topic on the broker")
		}
		s := secrets[u.GetName()+"-creds"]
		if s == nil {
			bad = append(bad, u.GetName()+": no Secret "+u.GetName()+"-creds")
			continue
		}
		if c := metav1.GetControllerOf(s); c == nil || c.UID != u.GetUID() {
			bad = append(bad, fmt.Sprintf("%s: Secret %s: want controlled by the Topic, got %v", u.GetName(), s.Name, c))
		}
		for k := range s.Data {
			keys[k] = true
		}
	}
	if len(items) != len(names) {
		bad = append(bad, fmt.Sprintf("want %d Topics, got %d", len(names), len(items)))
	}
	if len(bad) > 0 {
		if len(bad) > 10 {
			bad = append(bad[:10], fmt.Sprintf("... %d more", len(bad)-10))
		}
		t.Fatalf("peer: %s", strings.Join(bad, "; "))
	}
	if len(keys) == 0 {
		return "none"
	}
	var ks []string
	for k := range keys {
		ks = append(ks, k)
	}
	return strings.Join(ks, ",")
}
