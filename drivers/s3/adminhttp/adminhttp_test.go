package adminhttp_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Yolean/buckety-controller/drivers/s3/adminhttp"
	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	"github.com/Yolean/buckety-controller/drivers/s3/minioadmin"
	"github.com/Yolean/buckety-controller/drivers/s3/versityadmin"
)

// TestAdminClientFollowsNoRedirect: an admin endpoint that answers with a
// redirect (a misconfigured proxy, or a hostile one) never receives the
// signed request, body and all, at the address it names: the client
// stops at the redirect and reports it; and a server that never answers
// is given up on after the client's timeout.
func TestAdminClientFollowsNoRedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
	defer other.Close()
	redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer redirector.Close()
	for _, hc := range []*http.Client{nil, {}, {Timeout: time.Hour}} {
		i := iam.New(redirector.URL, "us-east-1", "root", "root-secret-0001", hc)
		if _, err := i.CreateUser(context.Background(), "bkyabc-1", "/buckety/", nil); err == nil {
			t.Error("IAM CreateUser through a redirect: want an error, got success")
		}
		m := minioadmin.New(redirector.URL, "us-east-1", "root", "root-secret-0001", hc)
		if err := m.SetUser(context.Background(), "bkyabc-1", "a-secret-to-keep-0001"); err == nil {
			t.Error("add-user through a redirect: want an error, got success")
		}
		v := versityadmin.New(redirector.URL, "us-east-1", "root", "root-secret-0001", hc)
		if err := v.CreateUser(context.Background(), "bkyabc-1", "a-secret-to-keep-0001"); err == nil {
			t.Error("create-user through a redirect: want an error, got success")
		}
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("want no request at the redirect's target, got %d", n)
	}

	hang := make(chan struct{})
	silent := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-hang }))
	defer silent.Close()
	defer close(hang)
	c := adminhttp.Client(&http.Client{}, 200*time.Millisecond)
	start := time.Now()
	m := minioadmin.New(silent.URL, "us-east-1", "root", "root-secret-0001", c)
	// The caller's context ends only at a backstop of a minute: the
	// client's own 200ms timeout must end the call first, however slow the
	// machine (the time it took is a figure).
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := m.KeyTaken(ctx, "bkyabc-1"); err == nil {
		t.Error("a server that never answers: want an error, got success")
	}
	if ctx.Err() != nil {
		t.Error("a server that never answers: want the client's own timeout to end the call, got the test's backstop")
	}
	t.Logf("the client gave up after %s", time.Since(start).Round(time.Millisecond))
}
