package s3

import (
	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/minioadmin"
	"github.com/Yolean/buckety-controller/drivers/s3/policy"

	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	s3test "github.com/Yolean/buckety-controller/test/s3"
)

func TestMinIOPolicyDocuments(t *testing.T) {
	for role, ra := range map[string]roleActions{"": actionsOf["ReadWrite"], "ReadWrite": actionsOf["ReadWrite"], "ReadOnly": actionsOf["ReadOnly"], "WriteOnly": actionsOf["WriteOnly"]} {
		p, err := minioAccessPolicy("bucket-a", drivers.Role(role))
		if err != nil {
			t.Fatalf("role %q: %v", role, err)
		}
		want := policy.Document{Version: "2012-10-17", Statement: []policy.Statement{
			{Effect: "Allow", Action: ra.Bucket, Resource: []string{"arn:aws:s3:::bucket-a"}},
			{Effect: "Allow", Action: ra.Object, Resource: []string{"arn:aws:s3:::bucket-a/*"}},
			{Effect: "Deny", Action: []string{"admin:*"}},
		}}
		wb, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		if !policy.Equal(string(p), string(wb)) {
			t.Errorf("role %q: want %s, got %s", role, wb, p)
		}
	}
	for _, c := range []struct{ bucket, role string }{{"bucket-a", "Admin"}, {"*", "ReadOnly"}, {"a*", "ReadOnly"}, {"b/c", "ReadOnly"}, {"", "ReadOnly"}} {
		if p, err := minioAccessPolicy(c.bucket, drivers.Role(c.role)); err == nil {
			t.Errorf("minioAccessPolicy(%q, %q): want an error, got %s", c.bucket, c.role, p)
		}
	}
	if err := minioadmin.ValidInlinePolicy(bytes.Repeat([]byte("x"), 4097)); err == nil {
		t.Error("want an error for a 4097-byte policy, got none")
	}
}

func TestMinIOKeyValidation(t *testing.T) {
	for _, c := range []struct {
		s      string
		key    bool
		secret bool
	}{
		{"abc", true, false},
		{"ab", false, false},
		{"a-0123456789abcdefgh", true, true},   // 20
		{"a-0123456789abcdefghi", false, true}, // 21
		{"UPPER", false, false},
		{"a=b", false, false},
		{"abcdefgh", true, true},
		{"abc defgh", false, false},
		{strings.Repeat("s", 40), false, true},
		{strings.Repeat("s", 41), false, false},
	} {
		if err := minioadmin.ValidKey(c.s); (err == nil) != c.key {
			t.Errorf("minioadmin.ValidKey(%q): want ok=%v, got %v", c.s, c.key, err)
		}
		if err := minioadmin.ValidSecret(c.s); (err == nil) != c.secret {
			t.Errorf("minioadmin.ValidSecret(%q): want ok=%v, got %v", c.s, c.secret, err)
		}
	}
}

// writeCounter counts the admin requests that are not GETs.
type writeCounter struct {
	mu     sync.Mutex
	writes []string
}

func (w *writeCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method != http.MethodGet {
		w.mu.Lock()
		w.writes = append(w.writes, r.Method+" "+r.URL.Path)
		w.mu.Unlock()
	}
	return http.DefaultTransport.RoundTrip(r)
}

func (w *writeCounter) reset() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.writes
	w.writes = nil
	return out
}

// startMinIOAdmin starts MinIO and returns a root admin client (s3test.Start
// waits until its IAM is up).
func startMinIOAdmin(t testing.TB) (*s3test.Server, *minioadmin.Client, *writeCounter) {
	t.Helper()
	srv := s3test.Start(t, "minio", s3test.Options{})
	wc := &writeCounter{}
	m := minioadmin.New(srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey, &http.Client{Transport: wc, Timeout: 10 * time.Second})
	return srv, m, wc
}

// s3As is an S3 client signing with the given keys, without retries.
func s3As(srv *s3test.Server, access, secret string) *s3.Client {
	return s3.New(s3.Options{
		Region:                     srv.Region,
		BaseEndpoint:               aws.String(srv.Endpoint),
		UsePathStyle:               true,
		Credentials:                credentials.NewStaticCredentialsProvider(access, secret, ""),
		RetryMaxAttempts:           1,
		RequestChecksumCalculation: aws.RequestChecksumCalculationWhenRequired,
		ResponseChecksumValidation: aws.ResponseChecksumValidationWhenRequired,
	})
}

// s3Ops are the checks run as one key; each returns the request's error.
type s3Ops struct {
	t  *testing.T
	cl *s3.Client
}

func (o s3Ops) put(bucket, key string) error {
	_, err := o.cl.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: strings.NewReader("body of " + key)})
	return err
}

func (o s3Ops) get(bucket, key string) error {
	out, err := o.cl.GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	if err != nil {
		return err
	}
	defer out.Body.Close()
	b, err := io.ReadAll(out.Body)
	if err == nil && string(b) != "body of "+key {
		o.t.Errorf("get %s/%s: want %q, got %q", bucket, key, "body of "+key, b)
	}
	return err
}

func (o s3Ops) list(bucket string) error {
	_, err := o.cl.ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	return err
}

func (o s3Ops) del(bucket, key string) error {
	_, err := o.cl.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)})
	return err
}

func (o s3Ops) createBucket(bucket string) error {
	_, err := o.cl.CreateBucket(context.Background(), &s3.CreateBucketInput{Bucket: aws.String(bucket)})
	return err
}

func (o s3Ops) putPolicy(bucket string) error {
	_, err := o.cl.PutBucketPolicy(context.Background(), &s3.PutBucketPolicyInput{Bucket: aws.String(bucket),
		Policy: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::` + bucket + `/*"]}]}`)})
	return err
}

func wantOK(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: want success, got %v", what, err)
	}
}

func wantDenied(t *testing.T, what string, err error) {
	t.Helper()
	if !isCode(err, "AccessDenied") {
		t.Errorf("%s: want AccessDenied, got %v", what, err)
	}
}

// wantRefusedKey: the key itself is refused (unknown or wrong secret).
func wantRefusedKey(t *testing.T, what string, err error) {
	t.Helper()
	if !isCode(err, "InvalidAccessKeyId", "SignatureDoesNotMatch") {
		t.Errorf("%s: want InvalidAccessKeyId or SignatureDoesNotMatch, got %v", what, err)
	}
}

const (
	testParent       = "buckety-tenants"
	testParentPolicy = "buckety-tenants"
)

// timed runs f and adds its duration to the named total.
func timed(totals map[string][]time.Duration, name string, f func() error) error {
	start := time.Now()
	err := f()
	totals[name] = append(totals[name], time.Since(start))
	return err
}

func TestMinIOServiceAccounts(t *testing.T) {
	srv, m, wc := startMinIOAdmin(t)
	ctx := context.Background()
	calls := map[string][]time.Duration{}

	// The parent, as buckety made it before keys were users of their own.
	makeLegacyParent(t, m)
	if u, found, err := m.UserInfo(ctx, testParent); err != nil || !found || !slices.Equal(u.Policies(), []string{testParentPolicy}) {
		t.Errorf("parent's policies: want [%s], got %+v, %v (%v)", testParentPolicy, u, found, err)
	}
	wc.reset()

	seedBuckets(t, srv, "bucket-a", "bucket-b")

	rwPolicy, err := minioAccessPolicy("bucket-a", "")
	if err != nil {
		t.Fatal(err)
	}
	roPolicy, err := minioAccessPolicy("bucket-a", "ReadOnly")
	if err != nil {
		t.Fatal(err)
	}
	const rwKey, rwSecret, roKey, roSecret = "acc-rw", "rw-secret-0001", "acc-ro", "ro-secret-0001"
	if err := timed(calls, "add", func() error { return m.Add(ctx, testParent, rwKey, rwSecret, rwPolicy, "team-a-rw", "ns/a rw") }); err != nil {
		t.Fatal(err)
	}
	if err := timed(calls, "add", func() error { return m.Add(ctx, testParent, roKey, roSecret, roPolicy, "team-a-ro", "ns/a ro") }); err != nil {
		t.Fatal(err)
	}

	rw := s3Ops{t, s3As(srv, rwKey, rwSecret)}
	ro := s3Ops{t, s3As(srv, roKey, roSecret)}
	t.Run("ReadWrite in its bucket", func(t *testing.T) {
		rw.t = t
		wantOK(t, "put", rw.put("bucket-a", "rw-obj"))
		wantOK(t, "get", rw.get("bucket-a", "rw-obj"))
		wantOK(t, "list", rw.list("bucket-a"))
		wantOK(t, "delete", rw.del("bucket-a", "rw-obj"))
	})
	t.Run("ReadOnly in its bucket", func(t *testing.T) {
		ro.t = t
		wantOK(t, "list", ro.list("bucket-a"))
		wantOK(t, "get", ro.get("bucket-a", "seed"))
		wantDenied(t, "put", ro.put("bucket-a", "ro-obj"))
		wantDenied(t, "delete", ro.del("bucket-a", "seed"))
	})
	for name, o := range map[string]s3Ops{"ReadWrite": rw, "ReadOnly": ro} {
		t.Run(name+" elsewhere", func(t *testing.T) {
			o.t = t
			wantDenied(t, "list neighbour", o.list("bucket-b"))
			wantDenied(t, "get neighbour", o.get("bucket-b", "seed"))
			wantDenied(t, "put neighbour", o.put("bucket-b", "x"))
			wantDenied(t, "delete neighbour", o.del("bucket-b", "seed"))
			wantDenied(t, "create bucket", o.createBucket("bucket-c-"+strings.ToLower(name)))
			wantDenied(t, "put bucket policy", o.putPolicy("bucket-a"))
		})
	}

	// info: what was set, and the stored policy is the server's
	// re-formatting of what was sent.
	var sa minioadmin.ServiceAccount
	var found bool
	if err := timed(calls, "info", func() (err error) { sa, found, err = m.Info(ctx, roKey); return err }); err != nil || !found {
		t.Fatalf("info(%s): want found, got %v, %v", roKey, found, err)
	}
	if sa.ParentUser != testParent || sa.Name != "team-a-ro" || sa.Description != "ns/a ro" || sa.Status != "on" || sa.ImpliedPolicy {
		t.Errorf("info(%s): want parent %s, name team-a-ro, description ns/a ro, status on, inline policy; got %+v", roKey, testParent, sa)
	}
	if !policy.Equal(sa.Policy, string(roPolicy)) {
		t.Errorf("info(%s): want policy like %s, got %s", roKey, roPolicy, sa.Policy)
	}
	if sa.Policy == string(roPolicy) {
		t.Logf("note: the server returned the policy byte for byte as sent")
	}
	if _, found, err := m.Info(ctx, "acc-missing"); found || err != nil {
		t.Errorf("info(acc-missing): want not found and no error, got %v, %v", found, err)
	}
	// keyTaken sees a service account's key (user-info refuses it), a
	// user's, and not a missing one, from plain answers.
	if err := timed(calls, "keyTaken", func() error {
		found, err := m.KeyTaken(ctx, roKey)
		if err == nil && !found {
			err = fmt.Errorf("keyTaken(%s): want true", roKey)
		}
		return err
	}); err != nil {
		t.Error(err)
	}
	if found, err := m.KeyTaken(ctx, testParent); !found || err != nil {
		t.Errorf("keyTaken(a user): want true and no error, got %v, %v", found, err)
	}
	if found, err := m.KeyTaken(ctx, "acc-missing"); found || err != nil {
		t.Errorf("keyTaken(acc-missing): want false and no error, got %v, %v", found, err)
	}

	// add of a taken key: refused, and the account is unchanged.
	err = m.Add(ctx, testParent, roKey, "other-secret-99", rwPolicy, "", "")
	if !errors.Is(err, minioadmin.ErrServiceAccountExists) {
		t.Errorf("add of a taken key: want minioadmin.ErrServiceAccountExists, got %v", err)
	}
	wantOK(t, "RO get after refused re-add", ro.get("bucket-a", "seed"))
	wantDenied(t, "RO put after refused re-add (policy unchanged)", ro.put("bucket-a", "x"))
	if err := m.Add(ctx, srv.AccessKey, rwKey, "other-secret-99", rwPolicy, "", ""); !errors.Is(err, minioadmin.ErrServiceAccountExists) {
		t.Errorf("add of a key taken under another parent: want minioadmin.ErrServiceAccountExists, got %v", err)
	}

	// update: new secret, same policy.
	const roSecret2 = "ro-secret-0002"
	if err := timed(calls, "update", func() error { return m.Update(ctx, roKey, roSecret2, roPolicy) }); err != nil {
		t.Fatal(err)
	}
	wantRefusedKey(t, "old secret after update", ro.list("bucket-a"))
	ro2 := s3Ops{t, s3As(srv, roKey, roSecret2)}
	wantOK(t, "new secret after update", ro2.get("bucket-a", "seed"))
	wantDenied(t, "put with new secret (inline policy kept)", ro2.put("bucket-a", "x"))
	if sa, _, err := m.Info(ctx, roKey); err != nil || sa.Name != "team-a-ro" || sa.Description != "ns/a ro" || !policy.Equal(sa.Policy, string(roPolicy)) {
		t.Errorf("info after update: want name, description and policy kept, got %+v (%v)", sa, err)
	}
	if err := m.Update(ctx, "acc-missing", "", roPolicy); !errors.Is(err, minioadmin.ErrServiceAccountNotFound) {
		t.Errorf("update of a missing account: want minioadmin.ErrServiceAccountNotFound, got %v", err)
	}

	// list: both, and only the parent's.
	var l []minioadmin.ServiceAccount
	if err := timed(calls, "list", func() (err error) { l, err = m.List(ctx, testParent); return err }); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, a := range l {
		keys = append(keys, a.AccessKey)
		if a.ParentUser != testParent || a.ImpliedPolicy {
			t.Errorf("list: want parent %s and an inline policy, got %+v", testParent, a)
		}
	}
	if slices.Sort(keys); !slices.Equal(keys, []string{roKey, rwKey}) {
		t.Errorf("list(%s): want [%s %s], got %v", testParent, roKey, rwKey, keys)
	}
	if l, err := m.List(ctx, "nobody"); err != nil || len(l) != 0 {
		t.Errorf("list(nobody): want empty, got %v (%v)", l, err)
	}

	// delete: refused at once; deleting again succeeds.
	if err := timed(calls, "delete", func() error { return m.Delete(ctx, rwKey) }); err != nil {
		t.Fatal(err)
	}
	wantRefusedKey(t, "deleted key", rw.list("bucket-a"))
	if err := m.Delete(ctx, rwKey); err != nil {
		t.Errorf("delete of a missing account: want success, got %v", err)
	}
	if _, found, err := m.Info(ctx, rwKey); found || err != nil {
		t.Errorf("info after delete: want not found, got %v, %v", found, err)
	}

	for name, ds := range calls {
		var sum time.Duration
		for _, d := range ds {
			sum += d
		}
		t.Logf("%s: %v per call (%d calls)", name, sum/time.Duration(len(ds)), len(ds))
	}
}

// seedBuckets creates each bucket as root, with an object "seed" in it.
func seedBuckets(t *testing.T, srv *s3test.Server, buckets ...string) {
	t.Helper()
	root := s3Ops{t, s3As(srv, srv.AccessKey, srv.SecretKey)}
	for _, b := range buckets {
		if err := root.createBucket(b); err != nil {
			t.Fatal(err)
		}
		if err := root.put(b, "seed"); err != nil {
			t.Fatal(err)
		}
	}
}

// makeLegacyParent makes testParent as buckety made credentials.parentUser
// before keys were users of their own: a user holding object actions on
// every bucket, the ceiling of its service accounts.
func makeLegacyParent(t testing.TB, m *minioadmin.Client) {
	t.Helper()
	ctx := context.Background()
	policy := []byte(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:ListBucket","s3:GetBucketLocation"],"Resource":["arn:aws:s3:::*"]},{"Effect":"Allow","Action":["s3:GetObject","s3:PutObject","s3:DeleteObject","s3:AbortMultipartUpload","s3:ListMultipartUploadParts"],"Resource":["arn:aws:s3:::*/*"]}]}`)
	if err := m.PutCannedPolicy(ctx, testParentPolicy, policy); err != nil {
		t.Fatal(err)
	}
	if err := m.SetUser(ctx, testParent, "legacy-parent-secret-01"); err != nil {
		t.Fatal(err)
	}
	if err := m.SetUserPolicy(ctx, testParent, testParentPolicy); err != nil {
		t.Fatal(err)
	}
}

// TestMinIOUsers: the calls a key per access is made of, on the real
// server: a canned policy, a user with its secret, the policy as the
// user's only one (replacing one an operator attached beside it), the
// lists the sweep reads, and removal, missing things being success.
func TestMinIOUsers(t *testing.T) {
	srv, m, _ := startMinIOAdmin(t)
	ctx := context.Background()
	seedBuckets(t, srv, "bucket-a", "bucket-b")
	roPolicy, err := minioAccessPolicy("bucket-a", "ReadOnly")
	if err != nil {
		t.Fatal(err)
	}
	const key, secret, name = "bky-user-1", "user-secret-0001", "buckety-bky-user-1"
	if err := m.PutCannedPolicy(ctx, name, roPolicy); err != nil {
		t.Fatal(err)
	}
	if err := m.SetUser(ctx, key, secret); err != nil {
		t.Fatal(err)
	}
	u := s3Ops{t, s3As(srv, key, secret)}
	wantDenied(t, "a user without its policy reads", u.get("bucket-a", "seed"))
	if err := m.SetUserPolicy(ctx, key, name); err != nil {
		t.Fatal(err)
	}
	wantOK(t, "ReadOnly get", u.get("bucket-a", "seed"))
	wantDenied(t, "ReadOnly put", u.put("bucket-a", "x"))
	wantDenied(t, "the neighbour's bucket", u.get("bucket-b", "seed"))

	// An operator attaches readwrite beside it; setUserPolicy replaces.
	if err := m.SetUserPolicy(ctx, key, name+",readwrite"); err != nil {
		t.Fatal(err)
	}
	wantOK(t, "put with readwrite attached", u.put("bucket-b", "x"))
	users, err := m.ListUsers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := users[key].Policies(); len(got) != 2 || users[key].Status != "enabled" {
		t.Errorf("list-users: want %s enabled with two policies, got %+v", key, users[key])
	}
	if err := m.SetUserPolicy(ctx, key, name); err != nil {
		t.Fatal(err)
	}
	wantDenied(t, "put after setUserPolicy replaced the operator's", u.put("bucket-b", "y"))
	if got, found, err := m.UserInfo(ctx, key); err != nil || !found || !slices.Equal(got.Policies(), []string{name}) {
		t.Errorf("userInfo: want exactly [%s], got %+v, %v (%v)", name, got, found, err)
	}
	policies, err := m.ListCannedPolicies(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !policy.Equal(policies[name], string(roPolicy)) {
		t.Errorf("list-canned-policies: want %s like %s, got %q", name, roPolicy, policies[name])
	}

	// A new secret (add-user is an upsert) refuses the old one.
	if err := m.SetUser(ctx, key, "user-secret-0002"); err != nil {
		t.Fatal(err)
	}
	wantRefusedKey(t, "old secret", u.get("bucket-a", "seed"))
	wantOK(t, "new secret, policy kept", s3Ops{t, s3As(srv, key, "user-secret-0002")}.get("bucket-a", "seed"))

	// add-user of a service account's key is minioadmin.ErrNotAUser, and so is remove-user.
	if err := m.Add(ctx, "", "svc-key-1", "svc-secret-001", roPolicy, "", ""); err != nil {
		t.Fatal(err)
	}
	if err := m.SetUser(ctx, "svc-key-1", "user-secret-0003"); !errors.Is(err, minioadmin.ErrNotAUser) {
		t.Errorf("setUser of a service account's key: want minioadmin.ErrNotAUser, got %v", err)
	}
	if err := m.RemoveUser(ctx, "svc-key-1"); !errors.Is(err, minioadmin.ErrNotAUser) {
		t.Errorf("removeUser of a service account's key: want minioadmin.ErrNotAUser, got %v", err)
	}

	// Removal: the key fails at once; the policy goes after; both again succeed.
	if err := m.RemoveCannedPolicy(ctx, name); err == nil {
		t.Error("remove a policy still attached: want refused, got success")
	}
	if err := m.RemoveUser(ctx, key); err != nil {
		t.Fatal(err)
	}
	wantRefusedKey(t, "removed user", s3Ops{t, s3As(srv, key, "user-secret-0002")}.get("bucket-a", "seed"))
	for i := 0; i < 2; i++ {
		if err := m.RemoveCannedPolicy(ctx, name); err != nil {
			t.Errorf("remove policy (%d): %v", i, err)
		}
		if err := m.RemoveUser(ctx, key); err != nil {
			t.Errorf("remove user again (%d): %v", i, err)
		}
	}
	if _, found, err := m.CannedPolicy(ctx, name); found || err != nil {
		t.Errorf("policy after removal: want missing, got %v (%v)", found, err)
	}
}

// TestMinIORelease: the pinned server reports a release (install.sh
// stamps it as MinIO's release builds are), which is new enough; and
// minioadmin.ReleaseProblem refuses older, unstamped and unparsable ones.
func TestMinIORelease(t *testing.T) {
	_, m, _ := startMinIOAdmin(t)
	got, err := m.ServerRelease(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if p := minioadmin.ReleaseProblem(got); p != "" {
		t.Errorf("the pinned server (%v): want supported, got %s", got, p)
	}
	for _, c := range []struct {
		versions []string
		want     string
	}{
		{[]string{"2026-02-12T20:18:48Z"}, ""},
		{[]string{"2025-10-15T17:29:55Z"}, ""},
		{[]string{"2025-10-15T17:29:55Z", "2025-09-07T16:13:09Z"}, "RELEASE.2025-09-07T16-13-09Z, older than RELEASE.2025-10-15T17-29-55Z"},
		{[]string{"2024-02-04T22:36:13Z"}, "older than"},
		{[]string{"DEVELOPMENT.GOGET"}, `"DEVELOPMENT.GOGET", which does not say when it was built`},
		{[]string{""}, "does not say"},
	} {
		got := minioadmin.ReleaseProblem(c.versions)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("minioadmin.ReleaseProblem(%v): want %q, got %q", c.versions, c.want, got)
		}
	}
}

// BenchmarkMinIOUser measures the calls of a key per access (each op:
// put its policy, set the user, attach, then remove user and policy).
func BenchmarkMinIOUser(b *testing.B) {
	_, m, _ := startMinIOAdmin(b)
	ctx := context.Background()
	pol, err := minioAccessPolicy("bucket-a", "ReadWrite")
	if err != nil {
		b.Fatal(err)
	}
	const key, name = "bky-bench-1", "buckety-bky-bench-1"
	var policy, user, attach, remove time.Duration
	n := 0
	for b.Loop() {
		t0 := time.Now()
		if err := m.PutCannedPolicy(ctx, name, pol); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := m.SetUser(ctx, key, "bench-secret-01"); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := m.SetUserPolicy(ctx, key, name); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		if err := m.RemoveUser(ctx, key); err != nil {
			b.Fatal(err)
		}
		if err := m.RemoveCannedPolicy(ctx, name); err != nil {
			b.Fatal(err)
		}
		policy, user, attach, remove = policy+t1.Sub(t0), user+t2.Sub(t1), attach+t3.Sub(t2), remove+time.Since(t3)
		n++
	}
	for name, d := range map[string]time.Duration{"policy": policy, "user": user, "attach": attach, "remove": remove} {
		b.ReportMetric(float64(d.Microseconds())/1000/float64(n), name+"-ms/op")
	}
}

// TestMinIOSweepDerivesNoKey: a credential sweep of n keys on MinIO makes
// no argon2id derivation (64 MiB each: issue 54 bounds the controller's
// peak memory), and still sees each kind of out-of-band change: a user
// removed, a policy attached beside its own, its own policy edited or
// deleted.
func TestMinIOSweepDerivesNoKey(t *testing.T) {
	const n = 12
	fx := scopedFixture(t, ImplMinIO)
	be, ctx := fx.backend, context.Background()
	if sc := scopingOf(t, be); !sc.PerAccess {
		t.Fatalf("want the backend scoped, got %+v", sc)
	}
	fx.ensure(t, "ledger", nil)
	as := make([]drivers.Access, n)
	for i := range as {
		a := drivers.Access{Resource: "ledger", Namespace: "team", Name: fmt.Sprintf("a%d", i), UID: fmt.Sprintf("uid-%d", i), Role: "ReadOnly", Assert: drivers.IssueNew}
		a.Principal = be.Principal(a, 1)
		g, err := be.Grant(ctx, a)
		if err != nil {
			t.Fatalf("grant %s: %v", a.Name, err)
		}
		a.Secret, a.Assert = string(g.Data[SecretSecretAccessKey]), drivers.Reassert
		as[i] = a
	}
	sweep := func(what string, want []int) {
		t.Helper()
		before := minioadmin.Argon2idDerivations()
		d, err := be.SweepCredentials(ctx, as)
		if err != nil || !slices.Equal(d, want) {
			t.Fatalf("sweep %s: want drifted %v, got %v (%v)", what, want, d, err)
		}
		if got := minioadmin.Argon2idDerivations() - before; got != 0 {
			t.Errorf("sweep %s of %d keys: want 0 argon2id derivations, got %d", what, n, got)
		}
	}
	sweep("of fresh grants", nil)

	adm := be.minioAdmin()
	readWrite, err := minioAccessPolicy("ledger", "ReadWrite")
	if err != nil {
		t.Fatal(err)
	}
	for what, change := range map[string]func() error{
		"user removed": func() error { return adm.RemoveUser(ctx, as[1].Principal) },
		"policy attached beside": func() error {
			return adm.SetUserPolicy(ctx, as[4].Principal, MinIOPolicyName(as[4].Principal)+",readwrite")
		},
		"own policy edited":       func() error { return adm.PutCannedPolicy(ctx, MinIOPolicyName(as[7].Principal), readWrite) },
		"own policy put on other": func() error { return adm.SetUserPolicy(ctx, as[9].Principal, "readwrite") },
	} {
		if err := change(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	sweep("after the out-of-band changes", []int{1, 4, 7, 9})
	for _, i := range []int{1, 4, 7, 9} {
		if _, err := be.Grant(ctx, as[i]); err != nil {
			t.Fatalf("re-assert %s: %v", as[i].Name, err)
		}
	}
	sweep("after the repair", nil)
}
