package controller

import (
	"context"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"k8s.io/client-go/rest"
	ctrlcache "sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/internal/shard"
)

// The Assigner's client and each shard's manager must not share one
// connection, as client-go makes clients of one config do: the Lease
// renewals would wait behind the shards' lists, watches and writes (at
// 10,000 Bucketies on 16 shards, 16 shards were lost in one run with the
// connection shared), and the shards' watches behind each other's.
func TestOwnConnectionIsNotShared(t *testing.T) {
	var mu sync.Mutex
	conns := 0
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			t.Errorf("request over %s, want HTTP/2 (as the API server serves)", r.Proto)
		}
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			conns++
			mu.Unlock()
		}
	}
	srv.StartTLS()
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{
		CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}),
	}}
	get := func(c *rest.Config) {
		t.Helper()
		hc, err := rest.HTTPClientFor(c)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		if err := resp.Body.Close(); err != nil {
			t.Fatal(err)
		}
	}
	opened := func() int {
		mu.Lock()
		defer mu.Unlock()
		return conns
	}
	// Two clients of one config: one connection (client-go's transport
	// cache), as a shard's cache and its workers share.
	get(cfg)
	get(rest.CopyConfig(cfg))
	if n := opened(); n != 1 {
		t.Fatalf("two clients of one config opened %d connections, want 1 (the premise of this test)", n)
	}
	own := ownConnection(cfg)
	get(own)
	if n := opened(); n != 2 {
		t.Fatalf("the Assigner's client and the others opened %d connections, want 2", n)
	}
	if cfg.Dial != nil {
		t.Error("ownConnection changed the config it was given")
	}
}

// unsyncedCache is a cache whose informers never sync: GetInformer waits,
// as a cache's does, until its context ends, then fails.
type unsyncedCache struct {
	ctrlcache.Cache
	asked atomic.Int32
}

func (c *unsyncedCache) GetInformer(ctx context.Context, _ client.Object, _ ...ctrlcache.InformerGetOption) (ctrlcache.Informer, error) {
	c.asked.Add(1)
	<-ctx.Done()
	return nil, fmt.Errorf("informer not synced: %w", ctx.Err())
}

// A shard taken with a warm cache and given up before its manager started
// that cache (the shard's context ended while wire waited for the first
// lists, as when a shard is handed back right after its take) stops the
// warm cache: take removed it from warmCaches, so nothing else would, and
// a whole shard's informers and watches would run until the process exits.
func TestTakenWarmCacheIsStoppedWhenTheShardGivesUp(t *testing.T) {
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	warmCtx, stop := context.WithCancel(context.Background())
	defer stop()
	fake := &unsyncedCache{}
	wc := &warmCache{since: time.Now(), ready: make(chan struct{}), cache: fake, stop: stop}
	close(wc.ready)
	w := &warmCaches{m: map[int]*warmCache{1: wc}}
	taken := w.take(1)
	if taken != wc {
		t.Fatal("take: want the registered warm cache")
	}
	// The API server is never reached: the cache is the fake one.
	o := Options{RESTConfig: &rest.Config{Host: "https://127.0.0.1:1"}, Log: testr.New(t)}
	o.Shards = 2
	ctx, end := context.WithCancel(context.Background())
	end() // handed back at once
	err = runShard(ctx, o, scheme, nil, 1, &shard.Readers{}, func() {}, taken)
	if err == nil {
		t.Fatal("runShard: want the error of the caches that did not sync")
	}
	if fake.asked.Load() == 0 {
		t.Fatalf("runShard gave up before it asked the warm cache for an informer (%v): the test does not test the leak", err)
	}
	select {
	case <-warmCtx.Done():
	default:
		t.Errorf("runShard gave up (%v) and left the taken warm cache running", err)
	}
}
