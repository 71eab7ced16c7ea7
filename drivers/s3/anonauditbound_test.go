package s3

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// anonAuditFixture is a VersityGW that allows anonymous read.
func anonAuditFixture(t *testing.T) *fixture {
	t.Helper()
	return newFixture(t, ImplVersityGW, s3test.Options{}, func(c *Config) { c.AllowAnonymousRead = true })
}

// through opens another backend on fx's server, its requests sent
// through proxy.
func (f *fixture) through(t *testing.T, proxy *httptest.Server, mutate func(*Config)) (*Backend, *anonWrites, *drivertest.Requests) {
	t.Helper()
	cfg := *f.cfg
	cfg.Endpoint = proxy.URL
	if mutate != nil {
		mutate(&cfg)
	}
	be, reqs := open(t, &cfg)
	w, _ := be.anonWatch()
	if w == nil {
		t.Fatal("want a VersityGW backend to watch its anonymous read writes")
	}
	return be, w, reqs
}

// isPolicyWrite picks PutBucketPolicy and DeleteBucketPolicy.
func isPolicyWrite(r *http.Request) bool {
	return r.URL.Query().Has("policy") && (r.Method == http.MethodPut || r.Method == http.MethodDelete)
}

// isPolicyRead picks GetBucketPolicy.
func isPolicyRead(r *http.Request) bool {
	return r.URL.Query().Has("policy") && r.Method == http.MethodGet
}

// TestVersityLostPolicyReplyStillWatched: the Buckety's replica removes
// the anonymous read statement; the server applies the write, but its
// reply is lost (a proxy drops the connection), so Ensure fails. The
// retry finds the statement gone and writes nothing. A stale grant of
// another replica then puts the statement back: the replica's next drift
// sweep must read the bucket's policy and report the statement as drift,
// and Ensure then removes it. The bucket was watched only once a write's
// reply came, so the sweep read nothing and the bucket stayed readable
// by anyone until the re-check.
func TestVersityLostPolicyReplyStillWatched(t *testing.T) {
	fx := anonAuditFixture(t)
	ctx := context.Background()
	const bucket = "gallery"
	on := map[string]string{ParamAnonymousRead: "true"}
	off := map[string]string{ParamAnonymousRead: "false"}
	fx.ensure(t, bucket, on) // another replica, before this one took the shard
	fx.put(t, bucket, "a.txt", "hello")
	fx.anonymousSees(t, bucket, map[string]int{"get": 200})
	stale := fx.policy(t, bucket) // the other replica's read, for its grant write below
	if stale == "" {
		t.Fatal("want the anonymous read statement in the policy, got none")
	}

	target, err := url.Parse(fx.srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	server := httputil.NewSingleHostReverseProxy(target)
	lying, lies, lied := lyingProxy(t, fx.srv.Endpoint, isPolicyWrite, func(w http.ResponseWriter, r *http.Request) {
		server.ServeHTTP(httptest.NewRecorder(), r) // applied, and the reply lost
		panic(http.ErrAbortHandler)
	})
	a, w, _ := fx.through(t, lying, nil)
	if _, err := a.Ensure(ctx, drivers.Resource{Name: bucket, Parameters: off}); err == nil {
		t.Fatal("Ensure whose policy write lost its reply: want an error, got none")
	}
	if lied.Load() == 0 {
		t.Fatal("want the policy write's reply lost, the proxy lied 0 times")
	}
	fx.anonymousSees(t, bucket, map[string]int{"get": 403}) // the write landed
	lies.Store(false)
	res, err := a.Ensure(ctx, drivers.Resource{Name: bucket, Parameters: off})
	if err != nil || len(res.Changes) != 0 {
		t.Fatalf("Ensure again: want nothing to write, got %q (%v)", res.Changes, err)
	}
	if _, err := fx.raw.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(stale)}); err != nil {
		t.Fatalf("the stale grant write: %v", err)
	}
	fx.anonymousSees(t, bucket, map[string]int{"get": 200}) // the stale write's leak

	if !w.watched(bucket) {
		t.Errorf("after a policy write whose reply was lost: want %s watched", bucket)
	}
	vs, err := a.Sweep(ctx, []drivers.Resource{{Name: bucket, Parameters: off}})
	if err != nil || len(vs) != 1 || vs[0].Err != nil || !slices.Equal(vs[0].Changes, []string{anonymousReadRemoved}) {
		t.Fatalf("the sweep after the stale write: want the change %q, got %+v (%v)", anonymousReadRemoved, vs, err)
	}
	if res, err := a.Ensure(ctx, drivers.Resource{Name: bucket, Parameters: off}); err != nil || !slices.Equal(res.Changes, []string{anonymousReadRemoved}) {
		t.Fatalf("Ensure of the drifted Buckety: want the change %q, got %q (%v)", anonymousReadRemoved, res.Changes, err)
	}
	fx.anonymousSees(t, bucket, map[string]int{"get": 403})
}

// watchBuckets creates n buckets on fx's server, each with the anonymous
// read statement in its policy (drift for anonymousRead "false"), and
// has w watch them, written in order, on a clock that stands still (the
// watch never ends). It returns the buckets and their resources.
func watchBuckets(t *testing.T, fx *fixture, w *anonWrites, n int) ([]string, []drivers.Resource) {
	t.Helper()
	ctx := context.Background()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	w.now = func() time.Time { return t0 }
	var names []string
	var rs []drivers.Resource
	for i := range n {
		name := fmt.Sprintf("watched-%03d", i)
		if _, err := fx.raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			t.Fatal(err)
		}
		doc, _, err := mergeAnonymousRead(nil, name, true, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := fx.raw.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(name), Policy: aws.String(string(doc))}); err != nil {
			t.Fatal(err)
		}
		w.add(name)
		names = append(names, name)
		rs = append(rs, drivers.Resource{Name: name, Parameters: map[string]string{ParamAnonymousRead: "false"}})
	}
	return names, rs
}

// drifted names the resources of rs whose verdict is the anonymous read
// statement's removal, and fails on any other verdict.
func drifted(t *testing.T, rs []drivers.Resource, vs []drivers.SweepVerdict) []string {
	t.Helper()
	if len(vs) != len(rs) {
		t.Fatalf("want %d verdicts, got %d", len(rs), len(vs))
	}
	var out []string
	for i, v := range vs {
		switch {
		case v.Err != nil:
			t.Errorf("%s: want no error, got %v", rs[i].Name, v.Err)
		case slices.Equal(v.Changes, []string{anonymousReadRemoved}):
			out = append(out, rs[i].Name)
		case len(v.Changes) != 0:
			t.Errorf("%s: want the change %q or none, got %q", rs[i].Name, anonymousReadRemoved, v.Changes)
		}
	}
	return out
}

// TestVersityAnonAuditIsBounded: with 100 buckets watched, all drifted,
// one sweep reads at most maxAnonAudits policies, the oldest writes
// first, and the next sweeps read the others before any again: every
// bucket is judged within ceil(100/maxAnonAudits) sweeps, and stays
// watched while drifted. The audit read every watched bucket, in
// sequence, in every sweep.
func TestVersityAnonAuditIsBounded(t *testing.T) {
	fx := anonAuditFixture(t)
	ctx := context.Background()
	w, _ := fx.backend.anonWatch()
	names, rs := watchBuckets(t, fx, w, 100)
	seen := map[string]int{}
	sweeps := (len(names) + maxAnonAudits - 1) / maxAnonAudits
	for s := range sweeps {
		fx.counter.Reset()
		vs, err := fx.backend.Sweep(ctx, rs)
		if err != nil {
			t.Fatalf("sweep %d: %v", s, err)
		}
		got := drifted(t, rs, vs)
		if ops := fx.counter.Ops(); ops["GetBucketPolicy"] != maxAnonAudits || ops["ListBuckets"] != 1 || len(ops) != 2 {
			t.Fatalf("sweep %d: want one ListBuckets and %d GetBucketPolicy, got %v", s, maxAnonAudits, ops)
		}
		if len(got) != maxAnonAudits {
			t.Fatalf("sweep %d: want %d buckets judged drifted, got %d", s, maxAnonAudits, len(got))
		}
		if s == 0 && !slices.Equal(got, names[:maxAnonAudits]) {
			t.Errorf("the first sweep: want the oldest writes judged first, %v, got %v", names[:maxAnonAudits], got)
		}
		for _, name := range got {
			seen[name]++
		}
	}
	for _, name := range names {
		if seen[name] == 0 {
			t.Errorf("after %d sweeps: want %s judged, it was not", sweeps, name)
		}
		if !w.watched(name) {
			t.Errorf("%s still drifted: want it watched", name)
		}
	}
	// Written again, a bucket keeps its place in line: toggling the
	// parameter does not starve the others.
	again := names[len(names)-1]
	w.add(again)
	fx.counter.Reset()
	if vs, err := fx.backend.Sweep(ctx, rs); err != nil {
		t.Fatal(err)
	} else if got := drifted(t, rs, vs); slices.Contains(got, again) {
		t.Errorf("a bucket written again, judged last sweep: want it behind the others, got judged in %v", got)
	}
}

// TestVersityAnonAuditStopsAtServerError: a gateway answering
// GetBucketPolicy 500 stops the audit at the first: one read, its
// resource unjudged, the others left watched for the next sweep, which
// reads them once the gateway answers. The audit went on reading every
// watched bucket from a failing gateway.
func TestVersityAnonAuditStopsAtServerError(t *testing.T) {
	fx := anonAuditFixture(t)
	ctx := context.Background()
	lying, lies, _ := lyingProxy(t, fx.srv.Endpoint, isPolicyRead, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>We encountered an internal error. Please try again.</Message></Error>`)
	})
	a, w, reqs := fx.through(t, lying, nil)
	names, rs := watchBuckets(t, fx, w, 5)
	vs, err := a.Sweep(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	if ops := reqs.Ops(); ops["GetBucketPolicy"] != 1 {
		t.Errorf("a gateway answering 500: want the audit stopped at the first GetBucketPolicy, got %v", ops)
	}
	unjudged := 0
	for i, v := range vs {
		switch {
		case v.Err != nil:
			unjudged++
		case len(v.Changes) != 0:
			t.Errorf("%s: want no change judged from a failing gateway, got %q", rs[i].Name, v.Changes)
		}
	}
	if unjudged != 1 {
		t.Errorf("want the one resource read unjudged, got %d", unjudged)
	}
	for _, name := range names {
		if !w.watched(name) {
			t.Errorf("%s: want it still watched", name)
		}
	}
	lies.Store(false)
	vs, err = a.Sweep(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	if got := drifted(t, rs, vs); !slices.Equal(got, names) {
		t.Errorf("the gateway answering again: want every watched bucket judged drifted, %v, got %v", names, got)
	}
}

// TestVersityAnonAuditReleasesWhatEnsureLeavesAlone: a watched bucket
// whose policy the keys may not read (the parameter not set), or whose
// policy does not parse, is one Ensure writes nothing to: the sweep that
// finds it so stops watching it, and the next sweep reads no policy. It
// was read again by every sweep for as long as the process ran.
func TestVersityAnonAuditReleasesWhatEnsureLeavesAlone(t *testing.T) {
	fx := anonAuditFixture(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		params map[string]string
		status int
		body   string
		// unjudged: the verdict's Err is set, as Ensure's would be.
		unjudged bool
	}{
		{"access denied", nil, http.StatusForbidden, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>Access Denied.</Message></Error>`, false},
		{"not JSON", map[string]string{ParamAnonymousRead: "false"}, http.StatusOK, `{"Version": "2012-10-17", "Statement": "all of it"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lying, _, lied := lyingProxy(t, fx.srv.Endpoint, isPolicyRead, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			})
			a, w, reqs := fx.through(t, lying, nil)
			const bucket = "gallery"
			fx.ensure(t, bucket, nil)
			w.add(bucket)
			rs := []drivers.Resource{{Name: bucket, Parameters: tc.params}}
			vs, err := a.Sweep(ctx, rs)
			if err != nil || len(vs) != 1 || len(vs[0].Changes) != 0 || (vs[0].Err != nil) != tc.unjudged {
				t.Fatalf("sweep: want no change, unjudged %v, got %+v (%v)", tc.unjudged, vs, err)
			}
			if lied.Load() == 0 {
				t.Fatal("want the policy read answered by the proxy, it was not")
			}
			if w.watched(bucket) {
				t.Errorf("a policy Ensure leaves alone: want the bucket no longer watched")
			}
			reqs.Reset()
			if _, err := a.Sweep(ctx, rs); err != nil {
				t.Fatal(err)
			}
			if ops := reqs.Ops(); ops["GetBucketPolicy"] != 0 {
				t.Errorf("the next sweep: want no GetBucketPolicy, got %v", ops)
			}
		})
	}
}

// TestVersityAnonAuditBudget: through a gateway that takes 1.5 s for each
// GetBucketPolicy (slow, within the 2 s request timeout), one sweep's
// audit of 10 watched buckets stops within anonAuditBudget request
// timeouts (4 s): each read takes 1.5 s at least, so at most 3 begin,
// and the buckets not read stay watched. The audit read every one, 15 s
// of a drift sweep held for ten buckets (and up to maxAnonWrites).
func TestVersityAnonAuditBudget(t *testing.T) {
	fx := anonAuditFixture(t)
	ctx := context.Background()
	target, err := url.Parse(fx.srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	server := httputil.NewSingleHostReverseProxy(target)
	const delay = 1500 * time.Millisecond
	slow, _, _ := lyingProxy(t, fx.srv.Endpoint, isPolicyRead, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		server.ServeHTTP(w, r)
	})
	a, w, reqs := fx.through(t, slow, func(c *Config) { c.RequestTimeout = drivers.Duration{Duration: 2 * time.Second} })
	names, rs := watchBuckets(t, fx, w, 10)
	vs, err := a.Sweep(ctx, rs)
	if err != nil {
		t.Fatal(err)
	}
	got := drifted(t, rs, vs)
	budget := anonAuditBudget * 2 * time.Second
	most := int(budget/delay) + 1
	if n := reqs.Ops()["GetBucketPolicy"]; n == 0 || n > most {
		t.Errorf("a gateway taking %v per read, a budget of %v: want 1 to %d GetBucketPolicy, got %d", delay, budget, most, n)
	}
	if len(got) > most {
		t.Errorf("want at most %d buckets judged, got %v", most, got)
	}
	for _, name := range names {
		if !w.watched(name) {
			t.Errorf("%s: want it still watched", name)
		}
	}
}
