package pagedcache

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/test/controlplane"
)

// A cache must fill while its kind is busy and its reader slow, as a
// replica taking over a dead replica's shards is: at 100,000 Bucketies the
// API server closed the takers' watch-list streams as unresponsive and
// their shards waited two minutes. The cache here fills a selection of
// 1200 ConfigMaps of 8 KiB (more than an HTTP/2 stream's window, so the
// API server must wait for the reader) through a transform that takes
// 3 ms an object, while another ConfigMap is written as fast as the API
// server takes it. With NewInformer the cache
// fills by lists in pages, transformed page by page, and the API server
// closes no watcher. The same cache filled by client-go's watch-list
// stream is closed, which is the premise, asserted last.
func TestCachesFillByPagesWhileTheKindIsBusy(t *testing.T) {
	cp := controlplane.StartT(t, controlplane.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cp.RESTConfig)
	if err != nil {
		t.Fatal(err)
	}
	const ns, seeds = "default", 1200
	payload := strings.Repeat("x", 8<<10)
	create := make(chan int)
	errs := make(chan error, seeds)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range create {
				_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("seed-%04d", i), Labels: map[string]string{"seed": "yes"}},
					Data:       map[string]string{"payload": payload},
				}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range seeds {
		create <- i
	}
	close(create)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "churn"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The churn: another ConfigMap of the kind, written without pause
	// until the test ends. Each write is an event every watcher of the
	// kind is handed, whatever it selects.
	churnCtx, stopChurn := context.WithCancel(ctx)
	var churn sync.WaitGroup
	churn.Go(func() {
		for n := 0; churnCtx.Err() == nil; n++ {
			p := fmt.Sprintf(`{"data":{"n":%q}}`, strconv.Itoa(n))
			if _, err := cs.CoreV1().ConfigMaps(ns).Patch(churnCtx, "churn", types.MergePatchType, []byte(p), metav1.PatchOptions{}); err != nil && churnCtx.Err() == nil {
				t.Errorf("churn: %v", err)
				return
			}
		}
	})
	defer func() { stopChurn(); churn.Wait() }()

	// The transform is slow, and counts itself in a label: it must run
	// once on each object, as the informer's own does.
	strip := ctrlcache.TransformStripManagedFields()
	slow := func(o any) (any, error) {
		if cm, ok := o.(*corev1.ConfigMap); ok && strings.HasPrefix(cm.Name, "seed-") {
			time.Sleep(3 * time.Millisecond)
			n := 0
			if v, ok := cm.Labels["transformed"]; ok {
				var err error
				if n, err = strconv.Atoi(v); err != nil {
					return nil, err
				}
			}
			cm.Labels["transformed"] = strconv.Itoa(n + 1)
		}
		return strip(o)
	}
	closedBefore := terminatedWatchers(ctx, t, cs)

	// NewInformer: lists in pages, no stream.
	old := PageSize
	PageSize = 200
	defer func() { PageSize = old }()
	var mu sync.Mutex
	var requests []string
	cfg := rest.CopyConfig(cp.RESTConfig)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			if strings.HasSuffix(r.URL.Path, "/configmaps") {
				mu.Lock()
				requests = append(requests, r.URL.RawQuery)
				mu.Unlock()
			}
			return rt.RoundTrip(r)
		})
	})
	co := ctrlcache.Options{
		NewInformer:      NewInformer,
		DefaultTransform: slow,
		ByObject:         map[client.Object]ctrlcache.ByObject{&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{"seed": "yes"})}},
	}
	if n := fill(ctx, t, cfg, co); n != seeds {
		t.Fatalf("the cache holds %d ConfigMaps, want %d", n, seeds)
	}
	mu.Lock()
	lists, pages := 0, 0
	for _, q := range requests {
		if strings.Contains(q, "sendInitialEvents") {
			t.Errorf("the cache asked for a watch-list stream: %s", q)
		}
		if !strings.Contains(q, "watch=") {
			lists++
			if strings.Contains(q, "limit=200") {
				pages++
			}
		}
	}
	mu.Unlock()
	if want := seeds/200 + 1; pages < want {
		t.Errorf("the cache listed in %d pages of 200 (%d lists), want at least %d", pages, lists, want)
	}
	if n := terminatedWatchers(ctx, t, cs); n != closedBefore {
		t.Errorf("the API server closed %d watchers of ConfigMaps as unresponsive while the cache filled by pages, want none", n-closedBefore)
	}

	// The premise: client-go's own informer fills the same cache by a
	// watch-list stream, and the API server closes it.
	plain := co
	plain.NewInformer = nil
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	c, err := ctrlcache.New(cp.RESTConfig, plain)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(pctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	go func() {
		if err := c.Start(pctx); err != nil {
			t.Errorf("cache: %v", err)
		}
	}()
	for terminatedWatchers(ctx, t, cs) == closedBefore {
		if ctx.Err() != nil {
			t.Fatal("the watch-list stream was never closed as unresponsive: the premise of this test does not hold")
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// fill starts a cache of co's ConfigMaps, waits until it has synced and
// returns how many it holds, checking that each went through the
// transform.
func fill(ctx context.Context, t *testing.T, cfg *rest.Config, co ctrlcache.Options) int {
	t.Helper()
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	c, err := ctrlcache.New(cfg, co)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.GetInformer(cctx, &corev1.ConfigMap{}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Start(cctx) }()
	if !c.WaitForCacheSync(cctx) {
		t.Fatal("the cache did not sync")
	}
	var l corev1.ConfigMapList
	if err := c.List(cctx, &l); err != nil {
		t.Fatal(err)
	}
	for _, cm := range l.Items {
		if len(cm.ManagedFields) > 0 {
			t.Fatalf("%s was cached with its managedFields: the transform was not applied", cm.Name)
		}
		if n := cm.Labels["transformed"]; n != "1" {
			t.Fatalf("%s went through the transform %q times, want once", cm.Name, n)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("cache: %v", err)
	}
	return len(l.Items)
}

// terminatedWatchers is the API server's count of ConfigMap watchers it
// closed as unresponsive.
func terminatedWatchers(ctx context.Context, t *testing.T, cs kubernetes.Interface) int {
	t.Helper()
	body, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s := bufio.NewScanner(bytes.NewReader(body))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		if strings.HasPrefix(line, "apiserver_terminated_watchers_total{") && strings.Contains(line, `resource="configmaps"`) {
			f := strings.Fields(line)
			v, err := strconv.ParseFloat(f[len(f)-1], 64)
			if err != nil {
				t.Fatal(err)
			}
			return int(v)
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return 0
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
