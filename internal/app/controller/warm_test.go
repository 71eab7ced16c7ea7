package controller

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/shard"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

// secretRequests records the Accept header of every list and watch of
// Secrets a client of the config sends.
type secretRequests struct {
	mu      sync.Mutex
	accepts []string
}

func (s *secretRequests) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if strings.HasSuffix(r.URL.Path, "/secrets") {
			s.mu.Lock()
			what := "list"
			if r.URL.Query().Get("watch") == "true" {
				what = "watch"
			}
			s.accepts = append(s.accepts, what+", Accept: "+r.Header.Get("Accept"))
			s.mu.Unlock()
		}
		return rt.RoundTrip(r)
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A shard's warm cache, taken over, holds the shard's objects already, in
// the form the controllers read them: buckety's Secrets of the shard's
// namespaces only, listed and watched as metadata (a typed informer would
// list their data). One not taken is stopped and unregistered when its
// context ends.
func TestWarmCacheIsTakenOverFilled(t *testing.T) {
	cp := controlplane.StartT(t, controlplane.Options{CRDDirs: []string{controlplane.CRDDir()}})
	scheme, err := Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cp.RESTConfig, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const shards = 2
	// A namespace of each shard, with one of buckety's Secrets.
	nss := map[int]string{}
	for i := 0; len(nss) < shards; i++ {
		ns := fmt.Sprintf("team-%d", i)
		if _, ok := nss[shard.Home(ns, shards)]; !ok {
			nss[shard.Home(ns, shards)] = ns
		}
	}
	for _, ns := range nss {
		if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			t.Fatal(err)
		}
		if err := c.Create(ctx, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "s", Labels: map[string]string{
				v1.ManagedByLabel: v1.ManagedByValue, shard.SlotLabel: strconv.Itoa(shard.SlotOf(ns)),
			}},
			StringData: map[string]string{"password": "not in a cache"},
		}); err != nil {
			t.Fatal(err)
		}
	}
	rec := &secretRequests{}
	cfg := rest.CopyConfig(cp.RESTConfig)
	cfg.WrapTransport = rec.wrap
	o := Options{RESTConfig: cfg, Log: testr.New(t)}
	o.Shards = shards
	w := &warmCaches{m: map[int]*warmCache{}}

	wctx, endWarm := context.WithCancel(ctx)
	w.warm(wctx, o, scheme, 1)
	wc := w.take(1)
	if wc == nil {
		t.Fatal("take: no warm cache of shard 1")
	}
	defer wc.end()
	if !wc.cache.WaitForCacheSync(ctx) {
		t.Fatal("the warm cache did not sync")
	}
	endWarm() // as the Assigner does once the shard's run ends: nothing more
	got := &metav1.PartialObjectMetadataList{}
	got.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := wc.cache.List(ctx, got); err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != 1 || got.Items[0].Namespace != nss[1] {
		var names []string
		for _, s := range got.Items {
			names = append(names, s.Namespace+"/"+s.Name)
		}
		t.Errorf("want the warm cache of shard 1 to hold %s/s only, got %v", nss[1], names)
	}
	// The Buckety kinds' informers were started too: a list answers from
	// the cache at once.
	var bs v1.BucketyList
	if err := wc.cache.List(ctx, &bs); err != nil {
		t.Errorf("list Bucketies from the warm cache: %v", err)
	}
	rec.mu.Lock()
	if len(rec.accepts) == 0 {
		t.Error("want the warm cache to list Secrets, saw no request")
	}
	for _, a := range rec.accepts {
		if !strings.Contains(a, "as=PartialObjectMetadata") {
			t.Errorf("the warm cache asked for Secrets with their data: %s", a)
		}
	}
	rec.mu.Unlock()

	// Adopted: the manager's Start returns when it stops, stopping it.
	mctx, stopManager := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- (adoptedCache{Cache: wc.cache, stop: wc.stop}).Start(mctx) }()
	stopManager()
	if err := <-done; err != nil {
		t.Errorf("adopted cache's Start: %v", err)
	}

	// A warm not taken is unregistered when its context ends.
	wctx0, endWarm0 := context.WithCancel(ctx)
	w.warm(wctx0, o, scheme, 0)
	endWarm0()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w.mu.Lock()
		_, left := w.m[0]
		w.mu.Unlock()
		if !left {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a warm whose context ended is still registered after 30s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if wc := w.take(0); wc != nil {
		t.Error("take after the warm ended: want nil")
	}
}
