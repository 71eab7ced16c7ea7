package s3

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/drivertest"
	"github.com/Yolean/buckety-controller/drivers/s3/policy"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// severalOf is the Several of an access over buckets, keyed k0, k1, ...
// but for the last, keyed as another namespace's (ns_k<n>).
func severalOf(buckets ...string) []drivers.AccessResource {
	out := make([]drivers.AccessResource, len(buckets))
	for i, b := range buckets {
		key := fmt.Sprintf("k%d", i)
		if i == len(buckets)-1 {
			key = "ns_" + key
		}
		out[i] = drivers.AccessResource{Key: key, Name: b}
	}
	return out
}

// TestSeveralSharedSecret: on a backend handing out its own keys, an
// access naming several Bucketies gets the several-resource shape with
// those keys: buckets and bucket.<key>, no bucket, region.<key> only
// where a bucket's region is not the first's; the formats say the same
// (rclone: an alias per bucket); obc is refused for several; an access
// naming one is as before.
func TestSeveralSharedSecret(t *testing.T) {
	be := &Backend{name: "shared", cfg: &Config{Endpoint: "http://s3.local:9000", AccessKeyID: "ak", SecretAccessKey: "sk", Region: "eu-north-1", ForcePathStyle: true}, srv: &generic}
	several := severalOf("media", "logs", "archive")
	several[2].Parameters = map[string]string{ParamRegion: "eu-west-1"}
	a := drivers.Access{Namespace: "team", Name: "app", Resource: "media", Several: several, SecretFormats: []string{FormatRclone, FormatAWSEnv}}
	g, err := be.Grant(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	drivertest.CheckGrant(t, drivers.AllSecretKeys(New()), g)
	want := map[string]string{
		SecretBuckets: "media,logs,archive", "bucket.k0": "media", "bucket.k1": "logs", "bucket.ns_k2": "archive",
		SecretRegion: "eu-north-1", "region.ns_k2": "eu-west-1", SecretAccessKeyID: "ak", SecretSecretAccessKey: "sk",
		SecretAWSRegion: "eu-north-1",
	}
	for k, v := range want {
		if got := string(g.Data[k]); got != v {
			t.Errorf("key %s: want %q, got %q", k, v, got)
		}
	}
	for _, k := range []string{SecretBucket, "region.k0", "region.k1"} {
		if v, ok := g.Data[k]; ok {
			t.Errorf("key %s: want none, got %q", k, v)
		}
	}
	conf := string(g.Data[SecretRcloneConf])
	for _, alias := range []string{"[k0]\ntype = alias\nremote = s3:media\n", "[k1]\ntype = alias\nremote = s3:logs\n", "[ns_k2]\ntype = alias\nremote = s3,region=eu-west-1:archive\n"} {
		if !strings.Contains(conf, alias) {
			t.Errorf("rclone.conf: want %q in it, got\n%s", alias, conf)
		}
	}
	if strings.Contains(conf, "[bucket]") || !strings.Contains(conf, "[s3]\ntype = s3\n") {
		t.Errorf("rclone.conf: want the remote s3 and no remote bucket, got\n%s", conf)
	}

	if errs := drivers.ValidateSeveralFormats(field.NewPath("spec", "secretFormats"), New(), []string{FormatAWSEnv, FormatOBC}); len(errs) != 1 || !strings.Contains(errs.ToAggregate().Error(), "secretFormats[1]") {
		t.Errorf("obc for several: want spec.secretFormats[1] refused, got %v", errs)
	}
	a.SecretFormats = []string{FormatOBC}
	if _, err := be.Grant(context.Background(), a); err == nil || !strings.Contains(err.Error(), "spec.bucketyRefs") {
		t.Errorf("obc rendered for several: want an error naming spec.bucketyRefs, got %v", err)
	}
	a.SecretFormats = []string{FormatRclone}
	a.Several = severalOf("media", "s3")
	a.Several[1].Key = "s3"
	if _, err := be.Grant(context.Background(), a); err == nil || !strings.Contains(err.Error(), "keyed s3") {
		t.Errorf("rclone with a Buckety keyed s3: want refused, got %v", err)
	}

	one, err := be.Grant(context.Background(), drivers.Access{Namespace: "team", Name: "app", Resource: "media", SecretFormats: []string{FormatRclone, FormatOBC}})
	if err != nil {
		t.Fatal(err)
	}
	drivertest.CheckGrant(t, drivers.AllSecretKeys(New()), one)
	if string(one.Data[SecretBucket]) != "media" || one.Data[SecretBuckets] != nil || !strings.Contains(string(one.Data[SecretRcloneConf]), "[bucket]\ntype = alias\nremote = s3:media\n") {
		t.Errorf("an access naming one: want bucket and the remote bucket as before, got %q", one.Data)
	}
}

// TestSeveralPolicyBound: the policy of a key over 128 buckets of 40
// characters fits MinIO's canned policy bound; over 128 of 63 it does
// not, nor on AWS's 2 KiB of inline user policy, and the error names
// spec.bucketyRefs.
func TestSeveralPolicyBound(t *testing.T) {
	names := func(n, length int) []string {
		out := make([]string, n)
		for i := range out {
			s := fmt.Sprintf("b%03d-", i)
			out[i] = s + strings.Repeat("x", length-len(s))
		}
		return out
	}
	a := func(buckets []string) drivers.Access {
		return drivers.Access{Namespace: "team", Name: "app", Resource: buckets[0], Several: severalOf(buckets...)}
	}
	minio := &Backend{name: "m", cfg: &Config{Implementation: ImplMinIO}, srv: serverOf(ImplMinIO)}
	for _, c := range []struct {
		be     *Backend
		length int
		fits   bool
	}{{minio, 40, true}, {minio, 63, false}, {&Backend{name: "a", cfg: &Config{Implementation: ImplAWS}, srv: serverOf(ImplAWS)}, 20, false}} {
		buckets := names(128, c.length)
		doc, err := minioBucketsPolicy(buckets, drivers.RoleReadWrite)
		if c.be.srv.impl == ImplAWS {
			doc, err = iamBucketsPolicy(buckets, drivers.RoleReadWrite, func(string) bool { return false })
		}
		if err != nil {
			t.Fatal(err)
		}
		err = c.be.fitUserPolicy(a(buckets), doc)
		if c.fits != (err == nil) || (err != nil && !strings.Contains(err.Error(), "spec.bucketyRefs")) {
			t.Errorf("%s, 128 buckets of %d characters (%d bytes): want fits=%v, got %v", c.be.srv.impl, c.length, len(doc), c.fits, err)
		}
	}
}

// severalEnv is what TestSeveralBucketsPerAccess runs on: a backend with
// keys per access, four buckets holding an object seed, and a client per
// Secret.
type severalEnv struct {
	be      *Backend
	buckets []string
	as      func(t *testing.T, data map[string][]byte) s3Ops
}

// TestSeveralBucketsPerAccess: on MinIO, VersityGW and SeaweedFS (IAM),
// one key over three buckets does its role on each and nothing on a
// fourth; re-asserted with one bucket dropped it keeps the other two and
// loses the third; revoked, it is refused everywhere.
func TestSeveralBucketsPerAccess(t *testing.T) {
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			fx := scopedFixture(t, impl)
			if sc := scopingOf(t, fx.backend); !sc.PerAccess {
				t.Fatalf("want the backend scoped, got %+v", sc)
			}
			env := severalEnv{be: fx.backend, buckets: []string{"sev-a", "sev-b", "sev-c", "sev-d"}, as: func(t *testing.T, data map[string][]byte) s3Ops {
				return s3Ops{t: t, cl: s3As(fx.srv, string(data[SecretAccessKeyID]), string(data[SecretSecretAccessKey]))}
			}}
			for _, b := range env.buckets {
				fx.ensure(t, b, nil)
				fx.put(t, b, "seed", "body of seed")
			}
			env.run(t)
		})
	}
	t.Run(ImplSeaweedFS, func(t *testing.T) {
		srv, be, _ := iamFixture(t)
		env := severalEnv{be: be, buckets: []string{"sev-a", "sev-b", "sev-c", "sev-d"}, as: func(t *testing.T, data map[string][]byte) s3Ops {
			o := seaweedAs(srv, data)
			o.t = t
			return o
		}}
		raw := s3Ops{t: t, cl: rawClient(t, be.cfg, be.cfg.Endpoint)}
		for _, b := range env.buckets {
			wantOK(t, "create "+b, raw.createBucket(b))
			wantOK(t, "seed "+b, raw.put(b, "seed"))
		}
		env.run(t)
	})
}

// grant grants a and checks its Secret's shape.
func (e severalEnv) grant(t *testing.T, a drivers.Access) map[string][]byte {
	t.Helper()
	g, err := e.be.Grant(context.Background(), a)
	if err != nil {
		t.Fatalf("grant %s: %v", a.Name, err)
	}
	drivertest.CheckGrant(t, drivers.AllSecretKeys(New()), g)
	if g.Data[SecretBucket] != nil || string(g.Data[SecretBuckets]) != drivers.SeveralList(a.Resources()) {
		t.Errorf("grant %s: want buckets %q and no bucket, got %q", a.Name, drivers.SeveralList(a.Resources()), g.Data)
	}
	for _, r := range a.Several {
		if got := string(g.Data[drivers.SeveralKey(SecretBucket, r.Key)]); got != r.Name {
			t.Errorf("grant %s: want bucket.%s %q, got %q", a.Name, r.Key, r.Name, got)
		}
	}
	return g.Data
}

func (e severalEnv) run(t *testing.T) {
	ctx := context.Background()
	all, other := e.buckets[:3], e.buckets[3]
	access := func(name string, role drivers.Role, buckets []string) drivers.Access {
		a := drivers.Access{Namespace: "team", Name: name, UID: "uid-" + name, Role: role, Resource: buckets[0], Several: severalOf(buckets...), Assert: drivers.IssueNew, SecretFormats: []string{FormatRclone}}
		a.Principal = e.be.Principal(a, 1)
		return a
	}
	rw, ro := access("writer", drivers.RoleReadWrite, all), access("reader", drivers.RoleReadOnly, all)
	rwData, roData := e.grant(t, rw), e.grant(t, ro)
	conf := string(rwData[SecretRcloneConf])
	for _, r := range rw.Several {
		if alias := fmt.Sprintf("[%s]\ntype = alias\nremote = s3:%s\n", r.Key, r.Name); !strings.Contains(conf, alias) {
			t.Errorf("rclone.conf: want %q, got\n%s", alias, conf)
		}
	}
	w, r := e.as(t, rwData), e.as(t, roData)
	for _, b := range all {
		wantOK(t, "ReadWrite put in "+b, w.put(b, "w"))
		wantOK(t, "ReadWrite get from "+b, w.get(b, "w"))
		wantOK(t, "ReadOnly get from "+b, r.get(b, "seed"))
		wantDenied(t, "ReadOnly put in "+b, r.put(b, "r"))
	}
	for who, o := range map[string]s3Ops{"ReadWrite": w, "ReadOnly": r} {
		wantDenied(t, who+" put in a fourth bucket", o.put(other, "x"))
		wantDenied(t, who+" get from a fourth bucket", o.get(other, "seed"))
	}
	rw.Secret, ro.Secret = e.be.SecretFrom(rw.Principal, rwData), e.be.SecretFrom(ro.Principal, roData)
	if d, err := e.be.SweepCredentials(ctx, []drivers.Access{rw, ro}); err != nil || len(d) != 0 {
		t.Fatalf("sweep of fresh grants: want no drift, got %v (%v)", d, err)
	}
	// Out of band, the reader's rights shrink to its first bucket: the
	// sweep sees it, a re-assert repairs it.
	e.narrow(t, ro, all[0])
	wantDenied(t, "ReadOnly get after its rights shrank (the change took)", r.get(all[1], "seed"))
	if d, err := e.be.SweepCredentials(ctx, []drivers.Access{rw, ro}); err != nil || !slices.Equal(d, []int{1}) {
		t.Fatalf("sweep after the reader's rights shrank: want [1], got %v (%v)", d, err)
	}
	ro.Assert = drivers.Reassert
	e.grant(t, ro)
	wantOK(t, "ReadOnly get after the repair", r.get(all[1], "seed"))

	// One bucket stops being shared: re-asserted, its rights go, the
	// others stay.
	rw.Several, rw.Drop, rw.Assert = rw.Several[:2], []string{all[2]}, drivers.Reassert
	rwData = e.grant(t, rw)
	w = e.as(t, rwData)
	wantOK(t, "ReadWrite put in a kept bucket", w.put(all[0], "kept"))
	wantOK(t, "ReadWrite get from a kept bucket", w.get(all[1], "w"))
	wantDenied(t, "ReadWrite put in the dropped bucket", w.put(all[2], "dropped"))
	wantDenied(t, "ReadWrite get from the dropped bucket", w.get(all[2], "w"))
	wantOK(t, "ReadOnly get from the bucket the writer lost", r.get(all[2], "seed"))
	rw.Drop = nil
	if d, err := e.be.SweepCredentials(ctx, []drivers.Access{rw, ro}); err != nil || len(d) != 0 {
		t.Fatalf("sweep after the drop: want no drift, got %v (%v)", d, err)
	}

	for _, a := range []drivers.Access{rw, ro} {
		if err := e.be.Revoke(ctx, a); err != nil {
			t.Fatalf("revoke %s: %v", a.Name, err)
		}
	}
	for _, b := range all {
		if w.get(b, "seed") == nil || r.get(b, "seed") == nil {
			t.Errorf("a revoked key still reads %s", b)
		}
	}
	e.noGrantsLeft(t, all, rw.Principal, ro.Principal)
}

// narrow makes a's rights, out of band, its role's on bucket alone.
func (e severalEnv) narrow(t *testing.T, a drivers.Access, bucket string) {
	t.Helper()
	ctx := context.Background()
	var err error
	switch is := e.be.scoping.issuer.(type) {
	case *minioIssuer:
		var doc []byte
		if doc, err = minioAccessPolicy(bucket, a.Role); err == nil {
			err = is.admin.PutCannedPolicy(ctx, MinIOPolicyName(a.Principal), doc)
		}
	case *iamIssuer:
		var doc []byte
		if doc, err = iamAccessPolicy(bucket, a.Role, false); err == nil {
			err = is.iam.PutUserPolicy(ctx, a.Principal, iamPolicyName, doc)
		}
	case *versityIssuer:
		for _, b := range a.Resources() {
			if b != bucket && err == nil {
				err = is.setBucketGrant(ctx, b, a.Principal, "", nil)
			}
		}
	}
	if err != nil {
		t.Fatal(err)
	}
}

// noGrantsLeft: on VersityGW, no bucket policy names a revoked principal.
func (e severalEnv) noGrantsLeft(t *testing.T, buckets []string, principals ...string) {
	t.Helper()
	if e.be.srv.impl != ImplVersityGW {
		return
	}
	cl, err := e.be.client(e.be.cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range buckets {
		doc, err := e.be.bucketPolicy(context.Background(), cl, b)
		if err != nil {
			t.Fatal(err)
		}
		grants, err := bucketyGrants(doc)
		if err != nil {
			t.Fatal(err)
		}
		for p := range grants {
			if slices.Contains(principals, p) {
				t.Errorf("bucket %s: a revoked principal %s is still granted", b, p)
			}
		}
	}
}

// TestIAMBucketsPolicyACLHeaders: a key over several buckets may send ACL
// headers on the objects of those whose public access block allows it,
// and only there.
func TestIAMBucketsPolicyACLHeaders(t *testing.T) {
	doc, err := iamBucketsPolicy([]string{"open", "closed"}, drivers.RoleReadWrite, func(b string) bool { return b == "open" })
	if err != nil {
		t.Fatal(err)
	}
	rw := actionsOf[drivers.RoleReadWrite]
	want := policy.Document{Version: policy.Version, Statement: []policy.Statement{
		{Effect: policy.Allow, Action: rw.Bucket, Resource: policy.Strings{policy.BucketARN("open"), policy.BucketARN("closed")}},
		{Effect: policy.Allow, Action: rw.Object, Resource: policy.Strings{policy.ObjectsARN("closed")}},
		{Effect: policy.Allow, Action: append(slices.Clone(rw.Object), "s3:PutObjectAcl"), Resource: policy.Strings{policy.ObjectsARN("open")}},
	}}
	if !policy.Equal(string(doc), string(want.JSON())) {
		t.Errorf("want %s, got %s", want.JSON(), doc)
	}
	ro, err := iamBucketsPolicy([]string{"open", "closed"}, drivers.RoleReadOnly, func(string) bool { return true })
	if err != nil || strings.Contains(string(ro), "PutObjectAcl") {
		t.Errorf("ReadOnly: want no ACL header right, got %s (%v)", ro, err)
	}
	if _, err := iamBucketsPolicy([]string{"open", "a*"}, drivers.RoleReadOnly, func(string) bool { return false }); err == nil {
		t.Error("a bucket name with a wildcard: want refused")
	}
}

// TestGrantTimeout: a grant or revocation has requestTimeout for each
// request its issuer may make: on VersityGW four per bucket it touches,
// kept or dropped, on IAM one per bucket past its own ten; one without a
// bucket still has its issuer's fixed requests.
func TestGrantTimeout(t *testing.T) {
	be := &Backend{cfg: &Config{RequestTimeout: drivers.Duration{Duration: time.Second}}}
	several := drivers.Access{Resource: "a", Several: severalOf("a", "b", "c"), Drop: []string{"d"}}
	for _, c := range []struct {
		is   issuer
		a    drivers.Access
		want time.Duration
	}{
		{&versityIssuer{}, drivers.Access{}, 4 * time.Second},
		{&versityIssuer{}, drivers.Access{Resource: "a"}, 8 * time.Second},
		{&versityIssuer{}, several, 20 * time.Second},
		{&iamIssuer{}, drivers.Access{}, 10 * time.Second},
		{&iamIssuer{}, several, 13 * time.Second},
		{&minioIssuer{}, several, 10 * time.Second},
	} {
		if got := be.grantTimeout(c.is, c.a); got != c.want {
			t.Errorf("%T %v: want %v, got %v", c.is, c.a.Resources(), c.want, got)
		}
	}
}
