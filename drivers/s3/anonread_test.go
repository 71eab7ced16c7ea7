package s3

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/Yolean/buckety-controller/drivers"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// anonymousRequest sends an unsigned request, as curl or a browser
// without keys does, and returns the status and body.
func anonymousRequest(t *testing.T, method, url string) (int, string) {
	t.Helper()
	var body io.Reader
	if method == http.MethodPut {
		body = strings.NewReader("from anyone")
	}
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// anonymousSees checks what an anonymous caller gets from bucket: each
// request's status.
func (f *fixture) anonymousSees(t *testing.T, bucket string, want map[string]int) {
	t.Helper()
	base := f.srv.Endpoint + "/" + bucket
	reqs := map[string][2]string{
		"get":         {http.MethodGet, base + "/a.txt"},
		"head":        {http.MethodHead, base + "/a.txt"},
		"get logs":    {http.MethodGet, base + "/logs/l.txt"},
		"list":        {http.MethodGet, base + "?list-type=2"},
		"put":         {http.MethodPut, base + "/planted.txt"},
		"delete":      {http.MethodDelete, base + "/a.txt"},
		"get policy":  {http.MethodGet, base + "?policy"},
		"list root":   {http.MethodGet, f.srv.Endpoint + "/"},
		"delete logs": {http.MethodDelete, base + "/logs/l.txt"},
	}
	for name, code := range want {
		r := reqs[name]
		got, body := anonymousRequest(t, r[0], r[1])
		if got != code {
			t.Errorf("anonymous %s (%s %s): want %d, got %d %.200s", name, r[0], r[1], code, got, body)
		}
		if name == "get" && code == http.StatusOK && body != "hello" {
			t.Errorf("anonymous get: want the object's body, got %q", body)
		}
	}
}

// operatorPolicy is a statement of someone else's in the bucket policy:
// anyone reads logs/. buckety keeps it whatever anonymousRead says.
const operatorPolicy = `{"Version":"2012-10-17","Statement":[{"Sid":"OperatorPublishesLogs","Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::public-media/logs/*"]}]}`

// TestAnonymousRead: on MinIO and VersityGW (SeaweedFS: in
// TestSeaweedFSQuotaAnonymousReadUsage), anonymousRead lets anyone get
// and head the bucket's objects, and nothing else (no list, no write, no
// delete); an operator's statement in the policy is kept; a statement
// edited out of band is repaired; "false" removes it; a backend whose
// config stopped allowing it removes it with a shortfall; a policy that
// held only buckety's statement is deleted.
func TestAnonymousRead(t *testing.T) {
	forEach(t, s3test.Options{}, func(t *testing.T, f *fixture) {
		f.cfg.AllowAnonymousRead = true
		checkAnonymousRead(t, f)
	})
}

func checkAnonymousRead(t *testing.T, f *fixture) {
	ctx := context.Background()
	const bucket = "public-media"
	f.ensure(t, bucket, nil)
	f.put(t, bucket, "a.txt", "hello")
	f.put(t, bucket, "logs/l.txt", "log")
	if _, err := f.raw.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(operatorPolicy)}); err != nil {
		t.Fatal(err)
	}
	private := map[string]int{"get": 403, "get logs": 200, "list": 403, "put": 403, "delete": 403}
	f.anonymousSees(t, bucket, private)

	on := map[string]string{ParamAnonymousRead: "true"}
	dry, err := f.backend.Ensure(ctx, drivers.Resource{Name: bucket, Parameters: on, DryRun: true})
	if err != nil || len(dry.Changes) != 1 || dry.Changes[0] != anonymousReadAllowed {
		t.Fatalf("dry run: want the one change %q, got %+v (%v)", anonymousReadAllowed, dry, err)
	}
	f.anonymousSees(t, bucket, map[string]int{"get": 403})
	if res := f.ensure(t, bucket, on); len(res.Changes) != 1 || res.Changes[0] != anonymousReadAllowed {
		t.Errorf("Ensure: want the change %q, got %q", anonymousReadAllowed, res.Changes)
	}
	public := map[string]int{"get": 200, "head": 200, "get logs": 200, "list": 403, "put": 403, "delete": 403, "get policy": 403, "list root": 403, "delete logs": 403}
	f.anonymousSees(t, bucket, public)
	if p := f.policy(t, bucket); !strings.Contains(p, "OperatorPublishesLogs") {
		t.Errorf("want the operator's statement kept, got %s", p)
	}
	f.counter.Reset()
	if res := f.ensure(t, bucket, on); len(res.Changes) != 0 {
		t.Errorf("Ensure again: want no changes, got %q", res.Changes)
	}
	if w, _ := f.counter.Reset(); len(w) != 0 {
		t.Errorf("Ensure again: want no writes, got %v", w)
	}

	widenAnonymousRead(t, f, bucket)
	f.anonymousSees(t, bucket, map[string]int{"list": 200})
	if res := f.ensure(t, bucket, on); len(res.Changes) != 1 || !strings.HasPrefix(res.Changes[0], "anonymous read repaired") {
		t.Errorf("Ensure after an out-of-band edit: want the statement repaired, got %q", res.Changes)
	}
	f.anonymousSees(t, bucket, public)

	if res := f.ensure(t, bucket, map[string]string{ParamAnonymousRead: "false"}); len(res.Changes) != 1 || res.Changes[0] != anonymousReadRemoved {
		t.Errorf("anonymousRead false: want the change %q, got %q", anonymousReadRemoved, res.Changes)
	}
	f.anonymousSees(t, bucket, private)
	if p := f.policy(t, bucket); !strings.Contains(p, "OperatorPublishesLogs") || strings.Contains(p, AnonymousReadSid) {
		t.Errorf("want the operator's statement alone, got %s", p)
	}

	checkAnonymousReadDisallowed(t, f)
}

// widenAnonymousRead edits buckety's statement out of band: anyone may
// also list the bucket.
func widenAnonymousRead(t *testing.T, f *fixture, bucket string) {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal([]byte(f.policy(t, bucket)), &doc); err != nil {
		t.Fatal(err)
	}
	for _, st := range doc["Statement"].([]any) {
		if st := st.(map[string]any); st["Sid"] == AnonymousReadSid {
			st["Action"] = []string{"s3:GetObject", "s3:ListBucket"}
			st["Resource"] = []string{"arn:aws:s3:::" + bucket, "arn:aws:s3:::" + bucket + "/*"}
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.raw.PutBucketPolicy(context.Background(), &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(string(b))}); err != nil {
		t.Fatal(err)
	}
}

// checkAnonymousReadDisallowed: a backend whose config does not allow
// anonymous reads (the operator turned it off) removes the statement of
// a bucket that still asks for it, with a shortfall; and removing the
// parameter deletes a policy that held only buckety's statement.
func checkAnonymousReadDisallowed(t *testing.T, f *fixture) {
	const bucket = "public-only"
	on := map[string]string{ParamAnonymousRead: "true"}
	f.ensure(t, bucket, on)
	f.put(t, bucket, "a.txt", "hello")
	f.anonymousSees(t, bucket, map[string]int{"get": 200})

	cfg := *f.cfg
	cfg.AllowAnonymousRead = false
	off, _ := open(t, &cfg)
	res, err := off.Ensure(context.Background(), drivers.Resource{Name: bucket, Parameters: on})
	if err != nil || len(res.Changes) != 1 || res.Changes[0] != anonymousReadRemoved ||
		len(res.Shortfalls) != 1 || res.Shortfalls[0].Parameter != ParamAnonymousRead || !strings.Contains(res.Shortfalls[0].Message, "allowAnonymousRead") {
		t.Errorf("config without allowAnonymousRead: want the statement removed with a shortfall, got %+v (%v)", res, err)
	}
	f.anonymousSees(t, bucket, map[string]int{"get": 403})
	if p := f.policy(t, bucket); p != "" {
		t.Errorf("want no policy left, got %s", p)
	}
}

// TestAnonymousReadBesideVersityGrants: on VersityGW the bucket policy
// also holds the statements granting keys per access; the anonymous read
// statement and the grants are written by two owners and neither loses
// the other's, and the credential sweep sees no drift in the anonymous
// statement.
func TestAnonymousReadBesideVersityGrants(t *testing.T) {
	fx := scopedFixture(t, ImplVersityGW)
	fx.cfg.AllowAnonymousRead = true
	be, ctx := fx.backend, context.Background()
	fx.ensure(t, "ledger", nil)
	fx.put(t, "ledger", "seed", "body of seed")
	grant := func(name, role string) drivers.Access { return grantNew(t, be, "ledger", name, role) }
	reader := grant("reader", "ReadOnly")
	if res := fx.ensure(t, "ledger", map[string]string{ParamAnonymousRead: "true"}); len(res.Changes) != 1 {
		t.Errorf("anonymousRead beside a grant: want one change, got %q", res.Changes)
	}
	writer := grant("writer", "ReadWrite")
	p := fx.policy(t, "ledger")
	for _, sid := range []string{AnonymousReadSid, "buckety-ReadOnly-bucket", "buckety-ReadWrite-objects"} {
		if !strings.Contains(p, `"`+sid+`"`) {
			t.Errorf("want statement %s in the policy, got %s", sid, p)
		}
	}
	if drifted, err := be.SweepCredentials(ctx, []drivers.Access{reader, writer}); err != nil || len(drifted) != 0 {
		t.Errorf("credential sweep beside the anonymous statement: want no drift, got %v (%v)", drifted, err)
	}
	if res := fx.ensure(t, "ledger", map[string]string{ParamAnonymousRead: "true"}); len(res.Changes) != 0 {
		t.Errorf("Ensure after a grant: want no changes, got %q", res.Changes)
	}
	fx.ensure(t, "ledger", nil)
	wantOK(t, "reader lists after the anonymous statement went", (s3Ops{t: t, cl: s3As(fx.srv, reader.Principal, reader.Secret)}).list("ledger"))
	wantOK(t, "writer puts after the anonymous statement went", (s3Ops{t: t, cl: s3As(fx.srv, writer.Principal, writer.Secret)}).put("ledger", "w"))
	fx.anonymousSees(t, "ledger", map[string]int{"list": 403})
}

// TestMergeAnonymousRead: the one comparison of a bucket policy with the
// anonymous read wanted, and the policy that brings it there.
func TestMergeAnonymousRead(t *testing.T) {
	const bucket = "media"
	ours := `{"Sid":"buckety-anonymous-read","Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::media/*"]}`
	// As SeaweedFS answers it: one-item lists as strings.
	oursSeaweed := `{"Sid":"buckety-anonymous-read","Effect":"Allow","Principal":{"AWS":"*"},"Action":"s3:GetObject","Resource":"arn:aws:s3:::media/*"}`
	foreign := `{ "Sid": "Operator", "Effect": "Allow", "Principal": {"AWS": ["*"]}, "Action": "s3:GetObject", "Resource": "arn:aws:s3:::media/logs/*" }`
	grant := `{"Sid":"buckety-ReadOnly-objects","Effect":"Allow","Principal":{"AWS":["bky0123456789ab-1"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::media/*"]}`
	doc := func(stmts ...string) string {
		return `{"Version":"2012-10-17","Statement":[` + strings.Join(stmts, ",") + `]}`
	}
	for _, c := range []struct {
		name, existing string
		want           bool
		change, merged string // merged "": delete the policy (when change is set)
	}{
		{name: "none, not wanted", existing: "", want: false},
		{name: "none, wanted", existing: "", want: true, change: "anonymous read allowed", merged: doc(ours)},
		{name: "in sync", existing: doc(ours), want: true},
		{name: "in sync as SeaweedFS answers", existing: doc(oursSeaweed), want: true},
		{name: "beside foreign and grant statements, kept byte for byte", existing: doc(foreign, grant), want: true, change: "anonymous read allowed", merged: doc(foreign, grant, ours)},
		{name: "removed, others kept", existing: doc(foreign, ours, grant), want: false, change: "anonymous read removed", merged: doc(foreign, grant)},
		{name: "removed, nothing left", existing: doc(ours), want: false, change: "anonymous read removed"},
		{name: "edited: a list right added", existing: doc(strings.Replace(ours, `["s3:GetObject"]`, `["s3:GetObject","s3:ListBucket"]`, 1)), want: true, change: "anonymous read repaired", merged: doc(ours)},
		{name: "edited: a condition added", existing: doc(strings.Replace(ours, `"Effect"`, `"Condition":{"Bool":{"aws:SecureTransport":"true"}},"Effect"`, 1)), want: true, change: "anonymous read repaired", merged: doc(ours)},
		{name: "repeated", existing: doc(ours, ours), want: true, change: "anonymous read repaired", merged: doc(ours)},
		{name: "a policy without Version keeps none", existing: `{"Statement":` + foreign + `}`, want: true, change: "anonymous read allowed", merged: `{"Statement":[` + foreign + `,` + ours + `]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			merged, change, err := mergeAnonymousRead([]byte(c.existing), bucket, c.want, 0)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(change, c.change) || (c.change == "") != (change == "") {
				t.Errorf("want change %q, got %q", c.change, change)
			}
			if string(merged) != c.merged {
				t.Errorf("want policy\n%s\ngot\n%s", c.merged, merged)
			}
		})
	}
	if _, _, err := mergeAnonymousRead([]byte(`{"Statement":["x"]}`), bucket, true, 0); err == nil {
		t.Error("a statement that is no object: want an error, got none")
	}
	if _, _, err := mergeAnonymousRead(nil, bucket, true, 100); !errors.Is(err, errPolicyTooLarge) {
		t.Errorf("a policy over maxBytes: want errPolicyTooLarge, got %v", err)
	}
	// And the grants' owner keeps the anonymous statement byte for byte.
	merged, _, err := mergeBucketPolicy([]byte(doc(ours)), bucket, map[string]string{"bky0123456789ab-1": "ReadOnly"})
	if err != nil || !strings.Contains(string(merged), ours) {
		t.Errorf("grants merged beside the anonymous statement: want it kept, got %s (%v)", merged, err)
	}
}

// TestAnonymousReadRemovedWhenTheImplementationChanges: a bucket made
// public on a backend declared minio, whose operator then removes
// implementation (the config makes allowAnonymousRead go with it): an
// implementation without the statement still reads the policy of a
// Buckety that sets the parameter and takes buckety's statement out, so
// the shortfall's "not public" is true and a later "false" is honoured.
// Nothing else would ever read that policy again: the bucket stayed
// public. A Buckety without the parameter costs no policy read.
func TestAnonymousReadRemovedWhenTheImplementationChanges(t *testing.T) {
	f := newFixture(t, ImplMinIO, s3test.Options{}, func(c *Config) { c.AllowAnonymousRead = true })
	ctx := context.Background()
	on := map[string]string{ParamAnonymousRead: "true"}
	for _, bucket := range []string{"public-media", "other-media"} {
		f.ensure(t, bucket, on)
		f.put(t, bucket, "a.txt", "hello")
		f.anonymousSees(t, bucket, map[string]int{"get": 200})
	}

	cfg := *f.cfg
	cfg.Implementation, cfg.AllowAnonymousRead = "", false
	be, counter := open(t, &cfg)
	res, err := be.Ensure(ctx, drivers.Resource{Name: "public-media", Parameters: on})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Shortfalls) != 1 || res.Shortfalls[0].Parameter != ParamAnonymousRead || !strings.Contains(res.Shortfalls[0].Message, "removed") {
		t.Errorf("want the anonymousRead shortfall, got %+v", res.Shortfalls)
	}
	if len(res.Changes) != 1 || res.Changes[0] != anonymousReadRemoved {
		t.Errorf("want the change %q, got %q", anonymousReadRemoved, res.Changes)
	}
	f.anonymousSees(t, "public-media", map[string]int{"get": 403})
	if res, err := be.Ensure(ctx, drivers.Resource{Name: "other-media", Parameters: map[string]string{ParamAnonymousRead: "false"}}); err != nil || len(res.Changes) != 1 || res.Changes[0] != anonymousReadRemoved {
		t.Errorf("anonymousRead false: want the change %q, got %+v (%v)", anonymousReadRemoved, res, err)
	}
	f.anonymousSees(t, "other-media", map[string]int{"get": 403})

	counter.Reset()
	if _, err := be.Ensure(ctx, drivers.Resource{Name: "other-media"}); err != nil {
		t.Fatal(err)
	}
	if n := counter.Ops()["GetBucketPolicy"]; n != 0 {
		t.Errorf("a Buckety without the parameter: want no policy read, got %d", n)
	}
}
