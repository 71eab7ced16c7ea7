package s3

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/minioadmin"
	"github.com/Yolean/buckety-controller/drivers/s3/policy"
	"github.com/Yolean/buckety-controller/drivers/s3/versityadmin"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// ownerImplementations are the servers owner records are tested on:
// SeaweedFS is also what backs the IAM issuer in tests.
var ownerImplementations = append(slices.Clone(s3test.Implementations), ImplSeaweedFS)

func TestOwnerTags(t *testing.T) {
	held := &drivers.OwnerRecord{Installation: "prod-a", Namespace: "team", Name: "orders", UID: "0d6f5c1e-7b0a-4a4e-9a57-2a51a1d6d0e4", State: drivers.OwnerHeld}
	handed := *held
	handed.State, handed.To = drivers.OwnerHandedOver, "prod-b"
	adopted := *held
	adopted.Adopted = true
	for _, c := range []struct {
		name  string
		tags  map[string]string
		rec   *drivers.OwnerRecord
		want  map[string]string
		owner *drivers.OwnerRecord
	}{
		{"none into none", nil, nil, map[string]string{}, nil},
		{"held beside others", map[string]string{"team": "payments"}, held,
			map[string]string{"team": "payments", TagInstallation: "prod-a", TagNamespace: "team", TagName: "orders", TagUID: held.UID, TagState: "Held"}, held},
		{"handover replaces held, to written", ownerTags(held), &handed,
			map[string]string{TagInstallation: "prod-a", TagNamespace: "team", TagName: "orders", TagUID: held.UID, TagState: "HandedOver", TagTo: "prod-b"}, &handed},
		{"back to held drops to", ownerTags(&handed), held, ownerTags(held), held},
		{"adopted written", ownerTags(held), &adopted,
			map[string]string{TagInstallation: "prod-a", TagNamespace: "team", TagName: "orders", TagUID: held.UID, TagState: "Held", TagAdopted: "true"}, &adopted},
		{"not adopted drops it", ownerTags(&adopted), held, ownerTags(held), held},
		{"nil removes only buckety's", withOwner(map[string]string{"x": "1"}, &handed), nil, map[string]string{"x": "1"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := withOwner(c.tags, c.rec)
			if !mapsEqual(got, c.want) {
				t.Fatalf("want tags %v, got %v", c.want, got)
			}
			if o := ownerFromTags(got); !o.Same(c.owner) {
				t.Fatalf("want record %v, got %v", c.owner, o)
			}
		})
	}
	// A partial record is a record, whose installation matches none.
	if o := ownerFromTags(map[string]string{TagName: "orders"}); o == nil || o.Installation != "" {
		t.Fatalf("partial record: want one with no installation, got %v", o)
	}
	// The keys and every value buckety writes pass S3's tag rules.
	tagRule := func(s string) bool {
		for _, r := range s {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(" _.:/=+-@", r)) {
				return false
			}
		}
		return true
	}
	for k, v := range ownerTags(&handed) {
		if len(k) > 128 || len(v) > 256 || !tagRule(k) || !tagRule(v) || strings.HasPrefix(k, "aws:") {
			t.Errorf("tag %q=%q breaks S3's tag rules", k, v)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestPrincipalNames: a principal without an installation is named as
// before; one with carries its installation's marker, is told from a
// legacy name, and fits every server's rule for keys and user names.
func TestPrincipalNames(t *testing.T) {
	a := drivers.Access{UID: "0d6f5c1e-7b0a-4a4e-9a57-2a51a1d6d0e4"}
	legacy := PrincipalFor(a, 1)
	if legacy != "bky33b2e60a167e-1" {
		t.Fatalf("legacy name changed: want bky33b2e60a167e-1, got %s", legacy)
	}
	a.Installation = "prod-a"
	marked := PrincipalFor(a, 1)
	want := "bky" + drivers.InstallationMarker("prod-a") + "-" + legacy[3:]
	if marked != want {
		t.Fatalf("want %s, got %s", want, marked)
	}
	for _, c := range []struct {
		name   string
		marker string
		ok     bool
	}{
		{legacy, "", false},
		{"bky33b2e60a167e-12345", "", false},
		{marked, drivers.InstallationMarker("prod-a"), true},
		{PrincipalFor(a, 9999), drivers.InstallationMarker("prod-a"), true},
		{"bky" + drivers.InstallationMarker("prod-a") + "-33b2e60a167e-", "", false},
		{"bky" + drivers.InstallationMarker("prod-a") + "33b2e60a167e-1", "", false},
		{"bkyprobe-0", "", false},
		{"xbky" + marked[3:], "", false},
	} {
		m, ok := principalMarker(c.name)
		if m != c.marker || ok != c.ok {
			t.Errorf("principalMarker(%s): want %q %v, got %q %v", c.name, c.marker, c.ok, m, ok)
		}
	}
	longest := PrincipalFor(drivers.Access{UID: "u", Installation: strings.Repeat("a", 40)}, 99999)
	if err := minioadmin.ValidUserKey(longest); err != nil {
		t.Errorf("MinIO: %v", err)
	}
	if err := versityadmin.ValidKey(longest); err != nil {
		t.Errorf("VersityGW: %s: %v", longest, err)
	}
	if len(longest) > 64 { // IAM user names: 1-64 of [\w+=,.@-]
		t.Errorf("IAM: %s is %d characters, want at most 64", longest, len(longest))
	}
}

// covers reports whether an IAM action pattern (with * and ?) matches
// action, case-insensitively as IAM matches actions.
func covers(pattern, action string) bool {
	ok, err := path.Match(strings.ToLower(pattern), strings.ToLower(action))
	return err == nil && ok
}

// TestTenantPoliciesNeverTag: no role's rights, in any issuer's document,
// allow reading or changing a bucket's tags, where the owner record is.
func TestTenantPoliciesNeverTag(t *testing.T) {
	tagging := []string{"s3:GetBucketTagging", "s3:PutBucketTagging", "s3:DeleteBucketTagging"}
	if !covers("s3:*", "s3:PutBucketTagging") || !covers("s3:*Tagging", "s3:GetBucketTagging") || covers("s3:GetObject", "s3:GetBucketTagging") {
		t.Fatal("covers does not match as IAM does")
	}
	check := func(who string, doc []byte) {
		t.Helper()
		var p struct{ Statement []policy.Statement }
		if err := json.Unmarshal(doc, &p); err != nil {
			t.Fatalf("%s: %v", who, err)
		}
		allowed := 0
		for _, st := range p.Statement {
			if st.Effect != policy.Allow {
				continue
			}
			for _, act := range st.Action {
				allowed++
				for _, tg := range tagging {
					if covers(act, tg) {
						t.Errorf("%s: action %q allows %s", who, act, tg)
					}
				}
			}
		}
		if allowed == 0 {
			t.Errorf("%s: no allowed action found: the check read nothing", who)
		}
	}
	for _, role := range roleNames() {
		r := drivers.Role(role)
		doc, err := minioAccessPolicy("ledger", r)
		if err != nil {
			t.Fatal(err)
		}
		check("minio "+role, doc)
		for _, acl := range []bool{false, true} {
			doc, err := iamAccessPolicy("ledger", r, acl)
			if err != nil {
				t.Fatal(err)
			}
			check("iam "+role, doc)
		}
		sts, err := desiredStatements("ledger", map[string]string{"bkyaaaaaaaa-bbbbbbbbbbbb-1": role})
		if err != nil {
			t.Fatal(err)
		}
		doc, err = json.Marshal(map[string]any{"Statement": sts})
		if err != nil {
			t.Fatal(err)
		}
		check("versitygw "+role, doc)
	}
}

// tagsOf reads a bucket's tags out of band; none is an empty map.
func tagsOf(t testing.TB, cl *s3.Client, bucket string) map[string]string {
	t.Helper()
	out, err := cl.GetBucketTagging(context.Background(), &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
	if isNoTags(err) {
		return map[string]string{}
	}
	if err != nil {
		t.Fatalf("get the tags of %s: %v", bucket, err)
	}
	tags := map[string]string{}
	for _, tg := range out.TagSet {
		tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
	}
	return tags
}

// TestOwnerRecords: on each server the record is written as tags beside
// the bucket's others, read back by a second backend (another
// installation's controller) without any cache, overwritten, and removed
// leaving the others; a missing bucket has no record; an unchanged record
// is not written again.
func TestOwnerRecords(t *testing.T) {
	for _, impl := range ownerImplementations {
		t.Run(impl, func(t *testing.T) {
			fx := newFixture(t, impl, s3test.Options{}, nil)
			ctx := context.Background()
			other, _ := open(t, fx.cfg)
			if ok, why, err := fx.backend.OwnerRecords(ctx); err != nil || !ok {
				t.Fatalf("OwnerRecords on an empty server: want true, got %v %q %v", ok, why, err)
			}
			fx.ensure(t, "ledger", nil)
			fx.ensure(t, "plain", nil)
			if ok, why, err := other.OwnerRecords(ctx); err != nil || !ok {
				t.Fatalf("OwnerRecords with a bucket to ask: want true, got %v %q %v", ok, why, err)
			}
			r := drivers.Resource{Name: "ledger"}
			if rec, err := other.ReadOwner(ctx, r); err != nil || rec != nil {
				t.Fatalf("untagged bucket: want no record, got %v %v", rec, err)
			}
			foreign := []types.Tag{{Key: aws.String("team"), Value: aws.String("payments")}, {Key: aws.String("cost-center"), Value: aws.String("42")}}
			if _, err := fx.raw.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String("ledger"), Tagging: &types.Tagging{TagSet: foreign}}); err != nil {
				t.Fatal(err)
			}
			if rec, err := other.ReadOwner(ctx, r); err != nil || rec != nil {
				t.Fatalf("bucket with someone else's tags: want no record, got %v %v", rec, err)
			}
			held := &drivers.OwnerRecord{Installation: "prod-a", Namespace: "team", Name: "ledger", UID: "0d6f5c1e-7b0a-4a4e-9a57-2a51a1d6d0e4", State: drivers.OwnerHeld}
			if err := fx.backend.WriteOwner(ctx, r, held); err != nil {
				t.Fatal(err)
			}
			if rec, err := other.ReadOwner(ctx, drivers.Resource{Name: "ledger", MaxAge: 0}); err != nil || !rec.Same(held) {
				t.Fatalf("read from a second backend: want %v, got %v %v", held, rec, err)
			}
			want := map[string]string{"team": "payments", "cost-center": "42"}
			for k, v := range ownerTags(held) {
				want[k] = v
			}
			if got := tagsOf(t, fx.raw, "ledger"); !mapsEqual(got, want) {
				t.Fatalf("tags on the server: want %v, got %v", want, got)
			}
			fx.counter.Reset()
			if err := fx.backend.WriteOwner(ctx, r, held); err != nil {
				t.Fatal(err)
			}
			if w, all := fx.counter.Reset(); len(w) != 0 || all == 0 {
				t.Fatalf("rewriting the same record: want a read and no write, got writes %v of %d requests", w, all)
			}
			// The other installation takes it over after a handover
			// (the controller decides that; the driver overwrites).
			handed := *held
			handed.State, handed.To = drivers.OwnerHandedOver, "prod-b"
			if err := fx.backend.WriteOwner(ctx, r, &handed); err != nil {
				t.Fatal(err)
			}
			if rec, err := other.ReadOwner(ctx, r); err != nil || !rec.Same(&handed) {
				t.Fatalf("after the overwrite: want %v, got %v %v", &handed, rec, err)
			}
			taken := &drivers.OwnerRecord{Installation: "prod-b", Namespace: "team", Name: "ledger", UID: "9e0c6a35-d1b8-4f3a-8a57-7b3c1f2e4d5a", State: drivers.OwnerHeld}
			if err := other.WriteOwner(ctx, r, taken); err != nil {
				t.Fatal(err)
			}
			if rec, err := fx.backend.ReadOwner(ctx, r); err != nil || !rec.Same(taken) {
				t.Fatalf("after the takeover: want %v, got %v %v", taken, rec, err)
			}
			if got := tagsOf(t, fx.raw, "ledger"); got[TagTo] != "" || got["team"] != "payments" {
				t.Fatalf("after the takeover: want no %s and the others kept, got %v", TagTo, got)
			}
			if err := other.WriteOwner(ctx, r, nil); err != nil {
				t.Fatal(err)
			}
			if got := tagsOf(t, fx.raw, "ledger"); !mapsEqual(got, map[string]string{"team": "payments", "cost-center": "42"}) {
				t.Fatalf("after removal: want the others' tags alone, got %v", got)
			}
			if rec, err := fx.backend.ReadOwner(ctx, r); err != nil || rec != nil {
				t.Fatalf("after removal: want no record, got %v %v", rec, err)
			}
			// A bucket whose only tags were buckety's is left with none.
			p := drivers.Resource{Name: "plain"}
			if err := fx.backend.WriteOwner(ctx, p, held); err != nil {
				t.Fatal(err)
			}
			if err := fx.backend.WriteOwner(ctx, p, nil); err != nil {
				t.Fatal(err)
			}
			if got := tagsOf(t, fx.raw, "plain"); len(got) != 0 {
				t.Fatalf("removing the only tags: want none, got %v", got)
			}
			missing := drivers.Resource{Name: "never-made"}
			if rec, err := fx.backend.ReadOwner(ctx, missing); err != nil || rec != nil {
				t.Fatalf("missing bucket: want no record, got %v %v", rec, err)
			}
			if err := fx.backend.WriteOwner(ctx, missing, held); err == nil {
				t.Fatal("writing a record on a missing bucket: want an error, got success")
			}
			if err := fx.backend.WriteOwner(ctx, missing, nil); err != nil {
				t.Fatalf("removing the record of a missing bucket: want success, got %v", err)
			}
		})
	}
}

// TestOwnerRecordOfANewBucket: right after the create that made its
// bucket, the owner record costs one request, the write, on every server
// that creates only new buckets (and each such server is shown refusing
// its owner's re-create of a bucket that exists); every bucket that
// existed is read first and keeps its other tags, and so is a "new"
// bucket on a server not known to refuse re-creates (generic, here on
// the same server): the read is skipped only where the table says so.
func TestOwnerRecordOfANewBucket(t *testing.T) {
	for _, impl := range ownerImplementations {
		t.Run(impl, func(t *testing.T) {
			fx := newFixture(t, impl, s3test.Options{}, nil)
			ctx := context.Background()
			if !fx.cfg.server().createsOnlyNew {
				t.Fatalf("want %s to create only new buckets (createsOnlyNew), as this test shows it does", impl)
			}
			held := &drivers.OwnerRecord{Installation: "prod-a", Namespace: "team", Name: "ledger", UID: "0d6f5c1e-7b0a-4a4e-9a57-2a51a1d6d0e4", State: drivers.OwnerHeld}
			if ok, why, err := fx.backend.OwnerRecords(ctx); err != nil || !ok {
				t.Fatalf("OwnerRecords: want true, got %v %q %v", ok, why, err)
			}
			if res := fx.ensure(t, "fresh", nil); !res.Created {
				t.Fatal("Ensure of a new bucket: want Created, got not")
			}
			// Its owner's re-create (AWS's us-east-1 answers this one 200).
			_, err := fx.raw.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("fresh")})
			if !isCode(err, "BucketAlreadyOwnedByYou", "BucketAlreadyExists") {
				t.Fatalf("its owner's re-create of an existing bucket: want BucketAlreadyOwnedByYou or BucketAlreadyExists, got %v", err)
			}
			fx.counter.Reset()
			if err := fx.backend.WriteOwner(ctx, drivers.Resource{Name: "fresh", JustCreated: true}, held); err != nil {
				t.Fatal(err)
			}
			if ops := fx.counter.Ops(); !maps.Equal(ops, map[string]int{"PutBucketTagging": 1}) {
				t.Fatalf("the record of a bucket just created: want one PutBucketTagging, got %v", ops)
			}
			if got := tagsOf(t, fx.raw, "fresh"); !mapsEqual(got, ownerTags(held)) {
				t.Fatalf("the record of a bucket just created: want tags %v, got %v", ownerTags(held), got)
			}
			// A bucket that existed, with someone else's tag.
			fx.ensure(t, "old", nil)
			foreign := []types.Tag{{Key: aws.String("team"), Value: aws.String("payments")}}
			if _, err := fx.raw.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String("old"), Tagging: &types.Tagging{TagSet: foreign}}); err != nil {
				t.Fatal(err)
			}
			if res := fx.ensure(t, "old", nil); res.Created {
				t.Fatal("Ensure of an existing bucket: want not Created, got Created")
			}
			fx.counter.Reset()
			if err := fx.backend.WriteOwner(ctx, drivers.Resource{Name: "old"}, held); err != nil {
				t.Fatal(err)
			}
			if ops := fx.counter.Ops(); !maps.Equal(ops, map[string]int{"GetBucketTagging": 1, "PutBucketTagging": 1}) {
				t.Fatalf("the record of a bucket that existed: want a read and a write, got %v", ops)
			}
			if got := tagsOf(t, fx.raw, "old"); got["team"] != "payments" || got[TagInstallation] != "prod-a" {
				t.Fatalf("the record of a bucket that existed: want its tag kept beside the record, got %v", got)
			}
			// A server not known to refuse re-creates reads, even when told
			// the bucket was just created.
			gcfg := *fx.cfg
			gcfg.Implementation = ""
			generic, gcounter := open(t, &gcfg)
			if _, err := fx.raw.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String("old"), Tagging: &types.Tagging{TagSet: foreign}}); err != nil {
				t.Fatal(err)
			}
			if err := generic.WriteOwner(ctx, drivers.Resource{Name: "old", JustCreated: true}, held); err != nil {
				t.Fatal(err)
			}
			if ops := gcounter.Ops(); ops["GetBucketTagging"] != 1 {
				t.Fatalf("a generic server told the bucket was just created: want it read first, got %v", ops)
			}
			if got := tagsOf(t, fx.raw, "old"); got["team"] != "payments" || got[TagInstallation] != "prod-a" {
				t.Fatalf("a generic server told the bucket was just created: want its tag kept, got %v", got)
			}
		})
	}
}

// scopedOwnerFixture is a backend issuing credentials per access on impl.
func scopedOwnerFixture(t *testing.T, impl string) *fixture {
	t.Helper()
	if impl == ImplSeaweedFS {
		return newFixture(t, impl, s3test.Options{}, func(c *Config) { c.Credentials = &Credentials{} })
	}
	return scopedFixture(t, impl)
}

// grantAs grants a and returns a client signing with its Secret's keys.
func grantAs(t *testing.T, fx *fixture, a drivers.Access) (drivers.Access, s3Ops) {
	t.Helper()
	a.Principal = fx.backend.Principal(a, 1)
	a.Assert = drivers.IssueNew
	if a.Secret == "" && !fx.cfg.server().iamKeys {
		s, err := newSecret()
		if err != nil {
			t.Fatal(err)
		}
		a.Secret = s
	}
	g, err := fx.backend.Grant(context.Background(), a)
	if err != nil {
		t.Fatalf("grant %s: %v", a.Principal, err)
	}
	a.Secret = string(g.Data[SecretSecretAccessKey])
	if fx.cfg.server().iamKeys {
		a.Secret = issuedSecret(string(g.Data[SecretAccessKeyID]), a.Secret)
	}
	return a, s3Ops{t: t, cl: s3As(fx.srv, string(g.Data[SecretAccessKeyID]), string(g.Data[SecretSecretAccessKey]))}
}

// TestTenantCannotReadOrTagItsBucket: an access's own credential, which
// reads and writes its bucket's objects, is refused the bucket's tags,
// where its owner record is.
func TestTenantCannotReadOrTagItsBucket(t *testing.T) {
	for _, impl := range ownerImplementations {
		t.Run(impl, func(t *testing.T) {
			fx := scopedOwnerFixture(t, impl)
			ctx := context.Background()
			if sc := scopingOf(t, fx.backend); !sc.PerAccess {
				t.Fatalf("want the backend scoped, got %+v", sc)
			}
			fx.ensure(t, "ledger", nil)
			held := &drivers.OwnerRecord{Installation: "prod-a", Namespace: "team", Name: "ledger", UID: "u1", State: drivers.OwnerHeld}
			if err := fx.backend.WriteOwner(ctx, drivers.Resource{Name: "ledger"}, held); err != nil {
				t.Fatal(err)
			}
			_, tenant := grantAs(t, fx, drivers.Access{Resource: "ledger", Namespace: "team", Name: "writer", UID: "uid-writer", Installation: "prod-a", Role: drivers.RoleReadWrite})
			// IAM keys take a moment on some servers: the object write
			// shows the credential works before the refusals count.
			wantOK(t, "the tenant's put in its own bucket", tenant.put("ledger", "k"))
			_, err := tenant.cl.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String("ledger")})
			wantDenied(t, "the tenant's GetBucketTagging on its own bucket", err)
			_, err = tenant.cl.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String("ledger"), Tagging: &types.Tagging{TagSet: tagSet(ownerTags(&drivers.OwnerRecord{Installation: "evil", State: drivers.OwnerHeld}))}})
			wantDenied(t, "the tenant's PutBucketTagging on its own bucket", err)
			_, err = tenant.cl.DeleteBucketTagging(ctx, &s3.DeleteBucketTaggingInput{Bucket: aws.String("ledger")})
			wantDenied(t, "the tenant's DeleteBucketTagging on its own bucket", err)
			if rec, err := fx.backend.ReadOwner(ctx, drivers.Resource{Name: "ledger"}); err != nil || !rec.Same(held) {
				t.Fatalf("after the tenant's attempts: want %v, got %v %v", held, rec, err)
			}
		})
	}
}

// TestListPrincipals: with two installations' principals and a legacy
// one on one server, each installation lists exactly its own; the legacy
// one is never listed, and neither is a principal revoked.
func TestListPrincipals(t *testing.T) {
	for _, impl := range ownerImplementations {
		t.Run(impl, func(t *testing.T) {
			fx := scopedOwnerFixture(t, impl)
			ctx := context.Background()
			scopingOf(t, fx.backend)
			fx.ensure(t, "ledger", nil)
			access := func(name, installation string) drivers.Access {
				a, ops := grantAs(t, fx, drivers.Access{Resource: "ledger", Namespace: "team", Name: name, UID: "uid-" + name, Installation: installation, Role: drivers.RoleReadOnly})
				wantOK(t, name+"'s list of its bucket", ops.list("ledger"))
				return a
			}
			a1, a2 := access("a-one", "prod-a"), access("a-two", "prod-a")
			b1 := access("b-one", "prod-b")
			legacy := access("old", "")
			if _, ok := principalMarker(legacy.Principal); ok {
				t.Fatalf("legacy principal %s carries a marker", legacy.Principal)
			}
			for inst, want := range map[string][]string{
				"prod-a": slices.Sorted(slices.Values([]string{a1.Principal, a2.Principal})),
				"prod-b": {b1.Principal},
				"prod-c": nil,
			} {
				got, err := fx.backend.ListPrincipals(ctx, inst)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("ListPrincipals(%s): want %v, got %v", inst, want, got)
				}
			}
			if _, err := fx.backend.ListPrincipals(ctx, ""); err == nil {
				t.Error("ListPrincipals without an installation: want an error, got success")
			}
			if err := fx.backend.Revoke(ctx, a2); err != nil {
				t.Fatal(err)
			}
			if got, err := fx.backend.ListPrincipals(ctx, "prod-a"); err != nil || !slices.Equal(got, []string{a1.Principal}) {
				t.Errorf("after revoking %s: want [%s], got %v %v", a2.Principal, a1.Principal, got, err)
			}
		})
	}
}

// TestOwnerRecordsNotImplemented: a server that answers bucket tagging
// with NotImplemented (here a real MinIO behind a proxy that answers so,
// as a gateway without tags does, on a backend of no implementation)
// keeps no records: OwnerRecords says so naming the implementation, and
// ReadOwner and WriteOwner fail rather than report "no owner". A MinIO
// backend (keepsTags) answers yes without asking, and learns otherwise
// from its first read.
func TestOwnerRecordsNotImplemented(t *testing.T) {
	srv := s3test.Start(t, ImplMinIO, s3test.Options{})
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(target)
	var tagsAnswered atomic.Bool
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := r.URL.Query()["tagging"]; ok && !tagsAnswered.Load() {
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusNotImplemented)
			_, err := io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NotImplemented</Code><Message>A header you provided implies functionality that is not implemented</Message></Error>`)
			if err != nil {
				t.Error(err)
			}
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(proxy.Close)
	cfg := &Config{Endpoint: proxy.URL, Region: srv.Region, ForcePathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: drivers.Duration{Duration: 10 * time.Second}}
	be, _ := open(t, cfg)
	ctx := context.Background()
	if _, err := be.Ensure(ctx, drivers.Resource{Name: "ledger"}); err != nil {
		t.Fatal(err)
	}
	ok, why, err := be.OwnerRecords(ctx)
	if err != nil || ok || !strings.Contains(why, "implementation unset") || !strings.Contains(why, "NotImplemented") {
		t.Fatalf("want no records, with a reason naming the implementation, got %v %q %v", ok, why, err)
	}
	r := drivers.Resource{Name: "ledger"}
	if rec, err := be.ReadOwner(ctx, r); !errors.Is(err, ErrNoOwnerRecords) {
		t.Fatalf("ReadOwner: want ErrNoOwnerRecords, got %v %v", rec, err)
	}
	if err := be.WriteOwner(ctx, r, &drivers.OwnerRecord{Installation: "prod-a", State: drivers.OwnerHeld}); !errors.Is(err, ErrNoOwnerRecords) {
		t.Fatalf("WriteOwner: want ErrNoOwnerRecords, got %v", err)
	}
	// A backend that saw the server keep tags takes a NotImplemented
	// later for a fault of the moment (a proxy, a node of a rolling
	// upgrade): the request fails, to be retried, and the records stay
	// on. Before, one such answer turned every owner check of the backend
	// off for the process's life.
	tagsAnswered.Store(true)
	fresh, _ := open(t, cfg)
	if _, err := fresh.ReadOwner(ctx, r); err != nil {
		t.Fatalf("ReadOwner with tags answered: %v", err)
	}
	tagsAnswered.Store(false)
	if _, err := fresh.ReadOwner(ctx, r); err == nil || errors.Is(err, ErrNoOwnerRecords) || !drivers.IsUnavailable(err) {
		t.Fatalf("ReadOwner, tags seen kept before: want an error of the moment (unavailable), not ErrNoOwnerRecords; got %v", err)
	}
	if err := fresh.WriteOwner(ctx, r, &drivers.OwnerRecord{Installation: "prod-a", State: drivers.OwnerHeld}); err == nil || errors.Is(err, ErrNoOwnerRecords) || !drivers.IsUnavailable(err) {
		t.Fatalf("WriteOwner, tags seen kept before: want an error of the moment (unavailable), not ErrNoOwnerRecords; got %v", err)
	}
	if ok, why, err := fresh.OwnerRecords(ctx); err != nil || !ok || why != "" {
		t.Fatalf("after a NotImplemented read, tags seen kept before: want records still kept, got %v %q %v", ok, why, err)
	}
	tagsAnswered.Store(true)
	if err := fresh.WriteOwner(ctx, r, &drivers.OwnerRecord{Installation: "prod-a", State: drivers.OwnerHeld}); err != nil {
		t.Fatalf("WriteOwner once the server answers again: %v", err)
	}
	if rec, err := fresh.ReadOwner(ctx, r); err != nil || rec == nil || rec.Installation != "prod-a" {
		t.Fatalf("ReadOwner once the server answers again: want prod-a's record, got %+v %v", rec, err)
	}
	tagsAnswered.Store(false)
	// So does a MinIO backend, which assumes tags without asking.
	mcfg := *cfg
	mcfg.Implementation = ImplMinIO
	minio, counter := open(t, &mcfg)
	if ok, why, err := minio.OwnerRecords(ctx); err != nil || !ok || why != "" {
		t.Fatalf("MinIO: want records assumed, got %v %q %v", ok, why, err)
	}
	if _, all := counter.Reset(); all != 0 {
		t.Fatalf("MinIO: want OwnerRecords to ask nothing, got %d requests", all)
	}
	if err := minio.WriteOwner(ctx, r, &drivers.OwnerRecord{Installation: "prod-a", State: drivers.OwnerHeld}); !errors.Is(err, ErrNoOwnerRecords) {
		t.Fatalf("MinIO: WriteOwner: want ErrNoOwnerRecords, got %v", err)
	}
	if ok, why, err := minio.OwnerRecords(ctx); err != nil || ok || !strings.Contains(why, "implementation minio") {
		t.Fatalf("MinIO after a NotImplemented read: want no records naming the implementation, got %v %q %v", ok, why, err)
	}
}

// TestRecordReadAnsweredNoSuchBucketIsNoVerdict: a server that answers
// the owner record read (GetBucketTagging) NoSuchBucket for a bucket it
// has (a node whose bucket metadata lags, SeaweedFS while its filer does
// not answer, a proxy in a rollout) gives "no record", which the
// controller judges as a resource of nobody's. A request that then finds
// the bucket must not act on that judgement: another installation's
// bucket is not emptied, drained, converged or given this installation's
// record, until a read sees the bucket and its record.
func TestRecordReadAnsweredNoSuchBucketIsNoVerdict(t *testing.T) {
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			f := newFixture(t, impl, s3test.Options{}, nil)
			ctx := context.Background()
			const bucket = "west-holds-it"
			f.ensure(t, bucket, nil)
			west := &drivers.OwnerRecord{Installation: "west", Namespace: "team", Name: "orders", UID: "uid-west", State: drivers.OwnerHeld}
			if err := f.backend.WriteOwner(ctx, drivers.Resource{Name: bucket}, west); err != nil {
				t.Fatal(err)
			}
			for i := range 3 {
				if _, err := f.raw.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(fmt.Sprintf("k/%02d", i)), Body: strings.NewReader("x")}); err != nil {
					t.Fatal(err)
				}
			}
			lying, lies, lied := lyingProxy(t, f.srv.Endpoint, func(r *http.Request) bool {
				_, tagging := r.URL.Query()["tagging"]
				return tagging && r.Method == http.MethodGet && strings.Trim(r.URL.Path, "/") == bucket
			}, func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "application/xml")
				w.WriteHeader(http.StatusNotFound)
				fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchBucket</Code><Message>The specified bucket does not exist</Message><BucketName>%s</BucketName></Error>`, bucket)
			})
			cfg := *f.cfg
			cfg.Endpoint = lying.URL
			be, _ := open(t, &cfg)
			res := drivers.Resource{Name: bucket}
			rec, err := be.ReadOwner(ctx, res)
			if err != nil || rec != nil {
				t.Fatalf("the record read answered NoSuchBucket: want no record (the bucket looks missing), got %v, %v", rec, err)
			}
			if lied.Load() == 0 {
				t.Fatal("the proxy answered no GetBucketTagging: the test proves nothing")
			}
			var ip *drivers.InProgressError
			if err := be.Delete(ctx, res); !errors.As(err, &ip) || ip.Done != 0 {
				t.Errorf("Delete after the record read missed the bucket: want InProgress with nothing removed, got %v", err)
			}
			if _, err := be.Drain(ctx, res, drivers.DrainLimits{Units: 100}); err == nil {
				t.Error("Drain after the record read missed the bucket: want an error, got none")
			}
			if _, err := be.Ensure(ctx, drivers.Resource{Name: bucket, Parameters: map[string]string{ParamVersioning: "true"}}); err == nil {
				t.Error("Ensure after the record read missed the bucket: want an error, got none")
			}
			east := &drivers.OwnerRecord{Installation: "east", Namespace: "team", Name: "orders", UID: "uid-east", State: drivers.OwnerHeld}
			lies.Store(false)
			if err := be.WriteOwner(ctx, res, east); err == nil {
				t.Error("WriteOwner after the record read missed the bucket: want an error (the record it replaces was never judged), got none")
			}
			out, err := f.raw.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
			if err != nil || len(out.Contents) != 3 {
				t.Fatalf("want west's bucket and its 3 objects untouched, got %v (%v)", out, err)
			}
			if got := ownerFromTags(tagsOf(t, f.raw, bucket)); !got.Same(west) {
				t.Fatalf("want west's record kept, got %v", got)
			}
			if v, err := f.raw.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)}); err != nil || v.Status == types.BucketVersioningStatusEnabled {
				t.Fatalf("want west's bucket not converged to versioning, got %v (%v)", v, err)
			}
			// A read that sees the bucket gives its verdict back.
			if rec, err := be.ReadOwner(ctx, res); err != nil || !rec.Same(west) {
				t.Fatalf("once the read sees the bucket: want west's record, got %v, %v", rec, err)
			}
		})
	}
}
