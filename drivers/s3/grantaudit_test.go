package s3

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
)

// auditForeignStatement is an operator's statement on bucket shared, in
// its own spacing, which no sweep may change by a byte.
const auditForeignStatement = `{ "Sid": "OperatorReads",
      "Effect": "Allow", "Principal": {"AWS": ["` + vgKeyForeign + `"]},
      "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::shared/*"] }`

// TestVersitySweepTakesBackAStaleGrant: two Backends on one VersityGW
// stand for two replicas of a sharded controller, each serving the
// accesses of its own namespaces. P's access names buckets kept and
// shared, Q's (another namespace, the other replica) shared alone. B
// reads shared's policy for a write of its own; A takes P's grant on
// shared away (the bucket stopped being shared with P's access, whose
// record then names kept alone); B's write, merged from what it read,
// lands after A's and puts P's grant back: P's key writes to shared
// again. The next sweep takes it away, keeping Q's grant and the
// operator's statement byte for byte: A's sweep of its shard's records
// (P's alone; A watches the bucket it dropped P from), or, unsharded, a
// sweep of every record (P's and Q's) by a replica that remembers
// nothing. B's sweep of its own shard's records (Q's) never touches P's
// grant: P has no record there, and might be granted there for all it
// knows.
func TestVersitySweepTakesBackAStaleGrant(t *testing.T) {
	fx := scopedFixture(t, ImplVersityGW)
	a := fx.backend
	b, _ := open(t, fx.cfg)
	ctx := context.Background()
	scopingOf(t, a)
	scopingOf(t, b)
	for _, bucket := range []string{"kept", "shared"} {
		fx.ensure(t, bucket, nil)
	}
	if err := a.versityAdmin().CreateUser(ctx, vgKeyForeign, vgSecretF); err != nil {
		t.Fatal(err)
	}
	foreign := []byte("{\n  \"Version\": \"2012-10-17\",\n  \"Statement\": [\n    " + auditForeignStatement + "\n  ]\n}")
	putRaw := func(what string, doc []byte) {
		t.Helper()
		if _, err := fx.raw.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String("shared"), Policy: aws.String(string(doc))}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	putRaw("the operator's statement", foreign)

	p := drivers.Access{Namespace: "team-p", Name: "p", UID: "uid-audit-p", Role: drivers.RoleReadWrite, Resource: "kept", Several: severalOf("kept", "shared"), Assert: drivers.IssueNew}
	p.Principal = a.Principal(p, 1)
	gp, err := a.Grant(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	q := drivers.Access{Namespace: "team-q", Name: "q", UID: "uid-audit-q", Role: drivers.RoleReadOnly, Resource: "shared", Assert: drivers.IssueNew}
	q.Principal = b.Principal(q, 1)
	gq, err := b.Grant(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	pOps := s3Ops{t, s3As(fx.srv, p.Principal, string(gp.Data[SecretSecretAccessKey]))}
	qOps := s3Ops{t, s3As(fx.srv, q.Principal, string(gq.Data[SecretSecretAccessKey]))}
	wantOK(t, "P puts in shared while it is shared", pOps.put("shared", "p"))
	stale := fx.policyOf(t, b, "shared") // B's read, for its write below

	// Shared stops being shared with P's access: A drops the grant, and
	// P's record names kept alone from then on.
	p.Several, p.Drop, p.Assert, p.Secret = severalOf("kept"), []string{"shared"}, drivers.Reassert, a.SecretFrom(p.Principal, gp.Data)
	if _, err := a.Grant(ctx, p); err != nil {
		t.Fatal(err)
	}
	p.Drop = nil
	wantDenied(t, "P puts in shared once dropped", pOps.put("shared", "p2"))

	// checkTakenBack: P's grant on shared is gone, Q's and the
	// operator's statement are as they were, P keeps kept.
	checkTakenBack := func(t *testing.T) {
		t.Helper()
		doc := fx.policyOf(t, a, "shared")
		if got, err := bucketyGrants(doc); err != nil || !maps.Equal(got, map[string]string{q.Principal: string(drivers.RoleReadOnly)}) {
			t.Errorf("shared's grants after the sweep: want Q's alone (ReadOnly), got %v (%v)", got, err)
		}
		if !bytes.Contains(doc, []byte(auditForeignStatement)) {
			t.Errorf("want the operator's statement kept byte for byte, got\n%s", doc)
		}
		wantDenied(t, "P puts in shared after the sweep", pOps.put("shared", "p3"))
		wantOK(t, "P puts in kept after the sweep", pOps.put("kept", "p"))
		wantOK(t, "Q gets from shared after the sweep", qOps.get("shared", "p"))
	}
	staleWrite := func(t *testing.T) {
		t.Helper()
		putRaw("B's write from its stale read", stale)
		wantOK(t, "P puts in shared after the stale write (the grant came back)", pOps.put("shared", "p"))
	}

	t.Run("sharded", func(t *testing.T) {
		staleWrite(t)
		if d, err := b.SweepCredentials(ctx, []drivers.Access{q}); err != nil || len(d) != 0 {
			t.Fatalf("B's sweep of Q's record: want no drift, got %v (%v)", d, err)
		}
		if got, err := bucketyGrants(fx.policyOf(t, b, "shared")); err != nil || got[p.Principal] == "" {
			t.Fatalf("B's sweep, which has no record of P: want P's grant left alone, got %v (%v)", got, err)
		}
		fx.counter.Reset()
		if d, err := a.SweepCredentials(ctx, []drivers.Access{p}); err != nil {
			t.Fatalf("A's sweep of P's record: %v", err)
		} else if !slices.Equal(d, []int{0}) {
			t.Errorf("A's sweep of P's record: want P drifted (it held a grant its record does not name), got %v", d)
		}
		// kept and shared read once each; shared again under its lock
		// for the write that takes P's grant away.
		if ops := fx.counter.Ops(); ops["GetBucketPolicy"] != 3 || ops["PutBucketPolicy"] != 1 {
			t.Errorf("A's sweep: want 3 GetBucketPolicy and 1 PutBucketPolicy, got %v", ops)
		}
		checkTakenBack(t)
		fx.counter.Reset()
		if d, err := a.SweepCredentials(ctx, []drivers.Access{p}); err != nil || len(d) != 0 {
			t.Fatalf("A's next sweep: want no drift, got %v (%v)", d, err)
		}
		if ops := fx.counter.Ops(); ops["GetBucketPolicy"] != 2 || ops["PutBucketPolicy"] != 0 {
			t.Errorf("A's next sweep, still watching shared: want 2 GetBucketPolicy and no write, got %v", ops)
		}
	})

	t.Run("unsharded", func(t *testing.T) {
		staleWrite(t)
		c, _ := open(t, fx.cfg) // a replica that remembers no drop
		if d, err := c.SweepCredentials(ctx, []drivers.Access{p, q}); err != nil {
			t.Fatalf("a sweep of P's and Q's records: %v", err)
		} else if !slices.Equal(d, []int{0}) {
			t.Errorf("a sweep of P's and Q's records: want P drifted, got %v", d)
		}
		checkTakenBack(t)
		if d, err := c.SweepCredentials(ctx, []drivers.Access{p, q}); err != nil || len(d) != 0 {
			t.Fatalf("the next sweep: want no drift, got %v (%v)", d, err)
		}
	})
}

// TestGrantDropsWatch: a drop is watched by the sweeps that judge its
// principal (it has a record, which does not name the bucket) until a
// read begun dropWatch after the drop; a principal whose record names
// the bucket again, or one the sweep has no record of, keeps its drop;
// a revoked principal's drops are forgotten; the oldest drop goes first
// past maxGrantDrops.
func TestGrantDropsWatch(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	d := &grantDrops{now: func() time.Time { return now }}
	const watch = 10 * time.Minute
	d.add("shared", "p")
	d.add("shared", "r")
	d.add("other", "p")
	named := map[string]map[string]bool{"p": {"kept": true}}
	if got := d.watched(named); !slices.Equal(got, []string{"other", "shared"}) {
		t.Fatalf("watched for p: want other and shared, got %v", got)
	}
	if got := d.watched(map[string]map[string]bool{"q": {"shared": true}}); len(got) != 0 {
		t.Fatalf("watched for a principal never dropped: want none, got %v", got)
	}
	if got := d.watched(map[string]map[string]bool{"p": {"shared": true, "other": true}}); len(got) != 0 {
		t.Fatalf("watched for p named on both again: want none, got %v", got)
	}
	d.audited("shared", named, t0.Add(watch-time.Second), watch)
	if got := d.watched(named); !slices.Equal(got, []string{"other", "shared"}) {
		t.Fatalf("after a read begun within the watch: want both still watched, got %v", got)
	}
	d.audited("shared", map[string]map[string]bool{"p": {"shared": true}}, t0.Add(watch), watch)
	if got := d.watched(named); !slices.Equal(got, []string{"other", "shared"}) {
		t.Fatalf("after a read judging no one (p's record named shared): want both still watched, got %v", got)
	}
	d.audited("shared", named, t0.Add(watch), watch)
	if got := d.watched(named); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("after a read begun at the watch's end: want shared forgotten for p, got %v", got)
	}
	if got := d.watched(map[string]map[string]bool{"r": {}}); !slices.Equal(got, []string{"shared"}) {
		t.Fatalf("r, of whom that sweep had no record: want shared still watched, got %v", got)
	}
	d.forgetPrincipal("p")
	if got := d.watched(named); len(got) != 0 || d.n != 1 {
		t.Fatalf("after p's revocation: want nothing watched for p and r's drop alone held, got %v (%d held)", got, d.n)
	}
	for i := range maxGrantDrops {
		now = t0.Add(time.Duration(i+1) * time.Second)
		d.add("b", fmt.Sprintf("k%d", i))
	}
	if d.n != maxGrantDrops {
		t.Fatalf("past maxGrantDrops: want %d held, got %d", maxGrantDrops, d.n)
	}
	if got := d.watched(map[string]map[string]bool{"r": {}}); len(got) != 0 {
		t.Errorf("past maxGrantDrops: want the oldest drop (r's) forgotten first, got %v watched", got)
	}
}
