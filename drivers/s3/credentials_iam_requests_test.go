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
	"slices"
	"strings"
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
	// reads are the users whose keys were asked for (ListAccessKeys'
	// UserName), in order, failed requests as well.
	reads []string
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
		if action == "ListAccessKeys" {
			p.reads = append(p.reads, form.Get("UserName"))
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
	p.reads = nil
	return out
}

// takeReads returns the users whose keys were asked for since the last
// take, in order, and clears every count.
func (p *iamActions) takeReads() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.reads
	clear(p.n)
	p.reads = nil
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

// TestIAMSweepTakesUsersInTurn: with credentials.sweepUsers 3 and seven
// users on a real SeaweedFS, a sweep reads three users in full (three
// requests each, after one ListUsers), the next three after them, and so
// round: every user is read in full once in three sweeps. A user deleted
// out of band is found by the very next sweep, whoever's turn it is; a
// policy edited out of band is found when its user's turn comes; and a
// sweep stopped by a server that does not answer starts, next time, at
// the user it could not read.
func TestIAMSweepTakesUsersInTurn(t *testing.T) {
	f := newIAMRequestsFixture(t)
	ctx := context.Background()
	cfg := *f.be.cfg
	cfg.Credentials = &Credentials{IAMEndpoint: cfg.Credentials.IAMEndpoint, SweepUsers: 3}
	be, _ := open(t, &cfg)
	var as []drivers.Access
	for i := range 7 {
		a := f.access(fmt.Sprintf("turn%d", i))
		if _, err := be.Grant(ctx, a); err != nil {
			t.Fatal(err)
		}
		as = append(as, a)
	}
	f.counts.take()
	sweep := func(what string) []int {
		t.Helper()
		drifted, err := be.SweepCredentials(ctx, as)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return drifted
	}
	for k := range 3 {
		if d := sweep(fmt.Sprintf("sweep %d", k+1)); len(d) != 0 {
			t.Fatalf("sweep %d: nothing changed, want nothing drifted, got %v", k+1, d)
		}
		counts := f.counts.take()
		if counts["ListUsers"] != 1 || counts["ListAccessKeys"] != 3 || counts["ListUserPolicies"] != 3 || counts["GetUserPolicy"] != 3 || len(counts) != 4 {
			t.Errorf("sweep %d of 7 users, 3 a turn: want ListUsers 1 and 3 of each read, got %v", k+1, counts)
		}
	}
	// The next round, user by user: each read in full once.
	read := map[string]int{}
	for k := range 3 {
		sweep(fmt.Sprintf("round two, sweep %d", k+1))
		for _, u := range f.counts.takeReads() {
			read[u]++
		}
	}
	for _, a := range as {
		if read[a.Principal] < 1 {
			t.Errorf("three sweeps of 3 over 7 users: want %s read in full at least once, got %v", a.Principal, read)
		}
	}
	if len(read) != len(as) {
		t.Errorf("want only the 7 users read, got %v", read)
	}

	// Out of band: one user deleted, another's policy edited.
	gone, edited := as[2], as[5]
	if err := f.admin.DeleteUserAndKeys(ctx, gone.Principal); err != nil {
		t.Fatal(err)
	}
	if err := f.admin.PutUserPolicy(ctx, edited.Principal, iamPolicyName, []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::*"]}]}`)); err != nil {
		t.Fatal(err)
	}
	if d := sweep("after the deletion"); !slices.Contains(d, 2) {
		t.Errorf("the sweep after a user was deleted: want it (index 2) drifted at once, got %v", d)
	}
	found := false
	for k := range 3 {
		if d := sweep(fmt.Sprintf("looking for the edit, sweep %d", k+1)); slices.Contains(d, 5) {
			found = true
			break
		}
	}
	if !found {
		t.Errorf("a policy edited out of band: want it drifted within a round of sweeps (6 users, 3 a turn), it never was")
	}

	// A server that stops answering: the sweep stops at the user it was
	// reading, and the next starts there.
	f.counts.take()
	f.counts.failNext("ListAccessKeys", 1)
	if drifted, err := be.SweepCredentials(ctx, as); err == nil || !strings.Contains(err.Error(), "sweep stopped") {
		t.Fatalf("a sweep whose first read failed with a server error: want it stopped, got %v (drifted %v)", err, drifted)
	}
	failed := f.counts.takeReads()
	if len(failed) != 1 {
		t.Fatalf("the stopped sweep: want one read, the failed one, got %v", failed)
	}
	sweep("after the stopped one")
	if next := f.counts.takeReads(); len(next) == 0 || next[0] != failed[0] {
		t.Errorf("the sweep after one stopped at %s: want it to start there, read %v", failed[0], next)
	}
}
