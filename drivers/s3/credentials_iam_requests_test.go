package s3

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	"github.com/Yolean/buckety-controller/test/seaweedfs"
)

// iamActions is a reverse proxy in front of an IAM endpoint that counts
// the requests by Action, and can fail the next requests of one Action
// (with an IAM ServiceFailure, before the server sees them).
type iamActions struct {
	mu   sync.Mutex
	n    map[string]int
	fail map[string]int
}

func startIAMActions(t *testing.T, target string) (*iamActions, string) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	p := &iamActions{n: map[string]int{}, fail: map[string]int{}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		// The signature covers the body's hash: it goes on as it came.
		r.Body = io.NopCloser(bytes.NewReader(body))
		form, err := url.ParseQuery(string(body))
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		action := form.Get("Action")
		p.mu.Lock()
		fail := p.fail[action] > 0
		if fail {
			p.fail[action]--
		} else {
			p.n[action]++
		}
		p.mu.Unlock()
		if fail {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "<ErrorResponse><Error><Code>%s</Code><Message>injected</Message></Error></ErrorResponse>", iam.CodeServiceFailure)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return p, srv.URL
}

// take returns the counts since the last take.
func (p *iamActions) take() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := maps.Clone(p.n)
	clear(p.n)
	return out
}

func (p *iamActions) failNext(action string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fail[action] = n
}

// TestIAMGrantRequests counts the IAM requests of each kind of grant on a
// real SeaweedFS, which answers every IAM request under one lock after
// loading all its users (so requests, reads as well, are what a grant
// costs): a first issue is three (the user, its policy, and the key the
// controller made before its record) and reads nothing back; a re-assertion reads the policies and keys it
// repairs; an issue cut short between two writes converges on the next
// grant with one key left, and a user deleted out of band is made again
// without a read.
func TestIAMGrantRequests(t *testing.T) {
	f := newIAMRequestsFixture(t)
	pb, counts, want, keys := f.be, f.counts, f.want, f.keys
	ctx := context.Background()
	// The controller makes the new principal's key before it records it
	// (SeaweedFS takes the caller's key): the grant creates that key.
	a := f.access("first")
	made, err := pb.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	a.Secret = made
	g, err := pb.Grant(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	want("first issue", counts.take(), map[string]int{"CreateUser": 1, "PutUserPolicy": 1, "CreateAccessKey": 1})
	if ks := keys(a.Principal); len(ks) != 1 || ks[0].AccessKeyID != string(g.Data[SecretAccessKeyID]) {
		t.Errorf("first issue: want the Secret's key alone, got %v", ks)
	}
	if got := pb.SecretFrom(a.Principal, g.Data); got != made {
		t.Errorf("first issue: want the Secret to hold the key made before the record, %q, got %q", made, got)
	}
	if err := seaweedAs(f.srv, g.Data).list("ledger"); err != nil {
		t.Errorf("the made key on its bucket: %v", err)
	}

	re := a
	re.Assert, re.Secret = drivers.Reassert, pb.SecretFrom(a.Principal, g.Data)
	g2, err := pb.Grant(ctx, re)
	if err != nil {
		t.Fatal(err)
	}
	want("re-assertion", counts.take(), map[string]int{"CreateUser": 1, "PutUserPolicy": 1, "ListUserPolicies": 1, "ListAccessKeys": 1})
	if string(g2.Data[SecretAccessKeyID]) != string(g.Data[SecretAccessKeyID]) {
		t.Errorf("re-assertion: want key %s kept, got %s", g.Data[SecretAccessKeyID], g2.Data[SecretAccessKeyID])
	}

	// Cut short after the user and its policy (the key's request fails
	// as a process stopping there would leave it), then after the key
	// (its Secret never written): the next grant, IssueNew, lists only
	// the keys, and leaves the one it returns.
	cut := f.access("cut")
	counts.failNext("CreateAccessKey", 1)
	if _, err := pb.Grant(ctx, cut); err == nil {
		t.Fatal("the cut-short issue: want the injected failure")
	}
	counts.take()
	cut.Assert = drivers.IssueNew
	if _, err := pb.Grant(ctx, cut); err != nil {
		t.Fatal(err)
	}
	want("issue after one cut short before the key", counts.take(), map[string]int{"CreateUser": 1, "PutUserPolicy": 1, "ListAccessKeys": 1, "CreateAccessKey": 1})
	g3, err := pb.Grant(ctx, cut)
	if err != nil {
		t.Fatal(err)
	}
	want("issue after one cut short after the key", counts.take(), map[string]int{"CreateUser": 1, "PutUserPolicy": 1, "ListAccessKeys": 1, "DeleteAccessKey": 1, "CreateAccessKey": 1})
	if ks := keys(cut.Principal); len(ks) != 1 || ks[0].AccessKeyID != string(g3.Data[SecretAccessKeyID]) {
		t.Errorf("after the cut-short issues: want the returned key alone, got %v", ks)
	}

	// A user deleted out of band: made again, nothing to read.
	if err := f.admin.DeleteUserAndKeys(ctx, a.Principal); err != nil {
		t.Fatal(err)
	}
	counts.take()
	g4, err := pb.Grant(ctx, re)
	if err != nil {
		t.Fatal(err)
	}
	want("re-assertion of a deleted user", counts.take(), map[string]int{"CreateUser": 1, "PutUserPolicy": 1, "CreateAccessKey": 1})
	if ks := keys(a.Principal); len(ks) != 1 || ks[0].AccessKeyID != string(g4.Data[SecretAccessKeyID]) {
		t.Errorf("after the repair: want the returned key alone, got %v", ks)
	}
	// The key deleted with it (revoked out of band, say) is not made
	// again: the server issues a new one.
	if string(g4.Data[SecretAccessKeyID]) == string(g.Data[SecretAccessKeyID]) {
		t.Errorf("after the repair: want a new key, got the deleted %s again", g.Data[SecretAccessKeyID])
	}
}

// iamRequestsFixture is a SeaweedFS with bucket ledger and a backend whose
// IAM requests go through an iamActions proxy.
type iamRequestsFixture struct {
	t      *testing.T
	srv    *seaweedfs.Server
	be     *Backend
	admin  *iam.Client
	counts *iamActions
}

func newIAMRequestsFixture(t *testing.T) *iamRequestsFixture {
	srv, be, admin := iamFixture(t)
	counts, proxy := startIAMActions(t, srv.Endpoint)
	cfg := *be.cfg
	cfg.Credentials = &Credentials{IAMEndpoint: proxy}
	pb, _ := open(t, &cfg)
	if err := (s3Ops{t: t, cl: rawClient(t, be.cfg, be.cfg.Endpoint)}).createBucket("ledger"); err != nil {
		t.Fatal(err)
	}
	counts.take()
	return &iamRequestsFixture{t: t, srv: srv, be: pb, admin: admin, counts: counts}
}

// access is a new access to ledger, recorded in this pass.
func (f *iamRequestsFixture) access(name string) drivers.Access {
	a := drivers.Access{Resource: "ledger", Namespace: "team", Name: name, UID: "uid-req-" + name, Role: drivers.RoleReadWrite, Assert: drivers.IssueRecorded}
	a.Principal = f.be.Principal(a, 1)
	return a
}

func (f *iamRequestsFixture) want(what string, got, want map[string]int) {
	f.t.Helper()
	if !maps.Equal(got, want) {
		f.t.Errorf("%s: want IAM requests %v, got %v", what, want, got)
	}
}

func (f *iamRequestsFixture) keys(user string) []iam.AccessKeyMetadata {
	f.t.Helper()
	ks, err := f.admin.ListAccessKeys(context.Background(), user)
	if err != nil {
		f.t.Fatal(err)
	}
	return ks
}
