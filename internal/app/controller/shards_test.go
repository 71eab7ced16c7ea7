package controller

import (
	"encoding/pem"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
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
