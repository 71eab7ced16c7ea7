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

// anonAuditForeignStatement is an operator's statement on bucket gallery,
// in its own spacing, which neither the sweep nor Ensure may change by a
// byte.
const anonAuditForeignStatement = `{ "Sid": "OperatorPublishesLogs",
      "Effect": "Allow", "Principal": {"AWS": ["*"]},
      "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::gallery/logs/*"] }`

// TestVersitySweepTakesBackStaleAnonymousRead: two Backends on one
// VersityGW stand for two replicas of a sharded controller: A serves the
// Buckety of bucket gallery, B the access of another namespace granted
// on it. B reads gallery's policy for a grant write while anonymous read
// is on; A turns anonymous read off (its owner's wish); B's write, merged
// from what it read, lands after A's and puts the anonymous statement
// back: a stranger reads the bucket's objects. A's next drift sweep reads
// gallery's policy (A wrote its anonymous statement lately), and reports
// the change Ensure makes; the Ensure the controller runs for the drifted
// Buckety removes the statement again: the stranger is refused, the
// tenant's grant and the operator's statement are as they were. The
// reverse, a stale write taking away the statement A had just written
// for an owner who wants it, is found and repaired the same way. A
// replica that wrote no anonymous statement reads no policy.
func TestVersitySweepTakesBackStaleAnonymousRead(t *testing.T) {
	fx := scopedFixture(t, ImplVersityGW)
	fx.cfg.AllowAnonymousRead = true
	a := fx.backend
	b, _ := open(t, fx.cfg)
	ctx := context.Background()
	scopingOf(t, a)
	scopingOf(t, b)
	const bucket = "gallery"
	fx.ensure(t, bucket, nil)
	fx.put(t, bucket, "a.txt", "hello")
	fx.put(t, bucket, "seed", "body of seed")
	putRaw := func(what string, doc []byte) {
		t.Helper()
		if _, err := fx.raw.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(string(doc))}); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	putRaw("the operator's statement", []byte("{\n  \"Version\": \"2012-10-17\",\n  \"Statement\": [\n    "+anonAuditForeignStatement+"\n  ]\n}"))
	viewer := grantNew(t, b, bucket, "viewer", "ReadOnly")
	viewerOps := s3Ops{t, s3As(fx.srv, viewer.Principal, viewer.Secret)}

	on := map[string]string{ParamAnonymousRead: "true"}
	off := map[string]string{ParamAnonymousRead: "false"}
	// untouched: the viewer's grant alone, and the operator's statement
	// byte for byte.
	untouched := func(t *testing.T, when string) {
		t.Helper()
		doc := fx.policyOf(t, a, bucket)
		if got, err := bucketyGrants(doc); err != nil || !maps.Equal(got, map[string]string{viewer.Principal: string(drivers.RoleReadOnly)}) {
			t.Errorf("%s: want the viewer's grant alone (ReadOnly), got %v (%v)", when, got, err)
		}
		if !bytes.Contains(doc, []byte(anonAuditForeignStatement)) {
			t.Errorf("%s: want the operator's statement kept byte for byte, got\n%s", when, doc)
		}
		wantOK(t, when+": the viewer gets", viewerOps.get(bucket, "seed"))
	}
	// sweep is A's drift sweep of its Buckety, with params, and the
	// Ensure the controller runs when the sweep finds it drifted.
	sweep := func(t *testing.T, params map[string]string, change string) {
		t.Helper()
		fx.counter.Reset()
		vs, err := a.Sweep(ctx, []drivers.Resource{{Name: bucket, Parameters: params}})
		if err != nil || len(vs) != 1 {
			t.Fatalf("A's sweep: want one verdict, got %+v (%v)", vs, err)
		}
		if v := vs[0]; v.Err != nil || !slices.Equal(v.Changes, []string{change}) {
			t.Fatalf("A's sweep after the stale write: want the change %q, got %q (%v)", change, v.Changes, v.Err)
		}
		if ops := fx.counter.Ops(); len(ops) != 2 || ops["ListBuckets"] != 1 || ops["GetBucketPolicy"] != 1 {
			t.Errorf("A's sweep: want one ListBuckets and one GetBucketPolicy (a sweep only reads), got %v", ops)
		}
		if res := fx.ensure(t, bucket, params); !slices.Equal(res.Changes, []string{change}) {
			t.Errorf("Ensure of the drifted Buckety: want the change %q, got %q", change, res.Changes)
		}
		if vs, err := a.Sweep(ctx, []drivers.Resource{{Name: bucket, Parameters: params}}); err != nil || vs[0].Err != nil || len(vs[0].Changes) != 0 {
			t.Errorf("A's next sweep: want no change, got %+v (%v)", vs, err)
		}
	}

	t.Run("off, put back", func(t *testing.T) {
		fx.ensure(t, bucket, on)
		fx.anonymousSees(t, bucket, map[string]int{"get": 200})
		stale := fx.policyOf(t, b, bucket) // B's read, for its write below
		if res := fx.ensure(t, bucket, off); !slices.Equal(res.Changes, []string{anonymousReadRemoved}) {
			t.Fatalf("anonymous read turned off: want the change %q, got %q", anonymousReadRemoved, res.Changes)
		}
		fx.anonymousSees(t, bucket, map[string]int{"get": 403})
		putRaw("B's write from its stale read", stale)
		fx.anonymousSees(t, bucket, map[string]int{"get": 200}) // the stale write's leak

		// Another replica's sweep, which wrote no anonymous statement,
		// reads no policy: the audit costs requests only where a
		// stale write can land.
		c, cc := open(t, fx.cfg)
		if vs, err := c.Sweep(ctx, []drivers.Resource{{Name: bucket, Parameters: off}}); err != nil || len(vs[0].Changes) != 0 {
			t.Fatalf("a replica that wrote no anonymous statement: want no change, got %+v (%v)", vs, err)
		}
		if ops := cc.Ops(); len(ops) != 1 || ops["ListBuckets"] != 1 {
			t.Errorf("a replica that wrote no anonymous statement: want one ListBuckets, got %v", ops)
		}

		sweep(t, off, anonymousReadRemoved)
		fx.anonymousSees(t, bucket, map[string]int{"get": 403, "head": 403, "list": 403})
		untouched(t, "after the stale anonymous statement went")
	})

	t.Run("on, taken away", func(t *testing.T) {
		stale := fx.policyOf(t, b, bucket) // B's read, for its write below
		if res := fx.ensure(t, bucket, on); !slices.Equal(res.Changes, []string{anonymousReadAllowed}) {
			t.Fatalf("anonymous read turned on: want the change %q, got %q", anonymousReadAllowed, res.Changes)
		}
		fx.anonymousSees(t, bucket, map[string]int{"get": 200})
		putRaw("B's write from its stale read", stale)
		fx.anonymousSees(t, bucket, map[string]int{"get": 403})
		sweep(t, on, anonymousReadAllowed)
		fx.anonymousSees(t, bucket, map[string]int{"get": 200, "list": 403})
		untouched(t, "after the anonymous statement came back")
	})
}

// TestAnonWritesWatch: a bucket is watched from this process's write of
// its anonymous statement until a read begun watch after the write (one
// begun sooner, or one that found drift, keeps it); a bucket found gone
// is forgotten at once; the oldest write goes first past maxAnonWrites.
func TestAnonWritesWatch(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	w := &anonWrites{now: func() time.Time { return now }}
	const watch = 10 * time.Minute
	w.add("gallery")
	w.add("other")
	if !w.watched("gallery") || !w.watched("other") || w.watched("never") {
		t.Fatalf("want gallery and other watched, never not")
	}
	w.audited("gallery", t0.Add(watch-time.Second), watch)
	if !w.watched("gallery") {
		t.Fatalf("after a read begun within the watch: want gallery still watched")
	}
	now = t0.Add(time.Minute)
	w.add("gallery") // written again: the watch starts over
	w.audited("gallery", t0.Add(watch), watch)
	if !w.watched("gallery") {
		t.Fatalf("after a read begun within the watch of the second write: want gallery still watched")
	}
	w.audited("gallery", t0.Add(time.Minute+watch), watch)
	if w.watched("gallery") {
		t.Fatalf("after a read begun at the watch's end: want gallery forgotten")
	}
	w.audited("other", t0, 0)
	if w.watched("other") {
		t.Fatalf("a bucket found gone: want it forgotten")
	}
	for i := range maxAnonWrites + 1 {
		now = t0.Add(time.Duration(i+1) * time.Second)
		w.add(fmt.Sprintf("b%d", i))
	}
	if len(w.at) != maxAnonWrites {
		t.Fatalf("past maxAnonWrites: want %d held, got %d", maxAnonWrites, len(w.at))
	}
	if w.watched("b0") {
		t.Errorf("past maxAnonWrites: want the oldest write forgotten first")
	}
}
