package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	"github.com/Yolean/buckety-controller/test/seaweedfs"
)

func TestIAMTarget(t *testing.T) {
	cases := []struct {
		name, impl, endpoint, region, iamEndpoint string
		wantEndpoint, wantRegion                  string
	}{
		{"seaweedfs: its S3 port", "seaweedfs", "http://127.0.0.1:8333", "us-east-1", "", "http://127.0.0.1:8333", "us-east-1"},
		{"seaweedfs without a region", "seaweedfs", "http://127.0.0.1:8333", "", "", "http://127.0.0.1:8333", "us-east-1"},
		{"seaweedfs with an admin (IAM) endpoint", "seaweedfs", "http://127.0.0.1:8333", "eu-north-1", "http://127.0.0.1:8111", "http://127.0.0.1:8111", "eu-north-1"},
		{"aws: the global endpoint", "aws", "https://s3.eu-north-1.amazonaws.com", "eu-north-1", "", iam.AWSEndpoint, iam.AWSSigningRegion},
		{"aws with an admin (IAM) endpoint", "aws", "https://s3.eu-north-1.amazonaws.com", "eu-north-1", "https://iam.example", "https://iam.example", iam.AWSSigningRegion},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, r := iamTarget(c.impl, c.endpoint, c.region, c.iamEndpoint)
			if e != c.wantEndpoint || r != c.wantRegion {
				t.Errorf("want %s %s, got %s %s", c.wantEndpoint, c.wantRegion, e, r)
			}
		})
	}
	for impl, want := range map[string]bool{"seaweedfs": true, "aws": true, "minio": false, "versitygw": false} {
		ka, err := newKeyAdmin(impl, "http://127.0.0.1:1", "", "us-east-1", "ak", "sk")
		if err != nil {
			t.Fatalf("%s: %v", impl, err)
		}
		if _, got := ka.(iamKeys); got != want {
			t.Errorf("%s: want key commands through IAM %v, got %T", impl, want, ka)
		}
	}
}

// fakeIAM answers the IAM actions the probe calls, recording them; users
// lists the users that exist.
type fakeIAM struct {
	t       *testing.T
	mu      sync.Mutex
	users   map[string]bool
	actions []url.Values
}

func (f *fakeIAM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	form, err := url.ParseQuery(string(b))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, form)
	user := form.Get("UserName")
	noSuch := `<ErrorResponse><Error><Code>NoSuchEntity</Code><Message>no user ` + user + `</Message></Error></ErrorResponse>`
	answer := func(status int, body string) {
		w.WriteHeader(status)
		if _, err := io.WriteString(w, body); err != nil {
			f.t.Errorf("fake IAM: write the answer: %v", err)
		}
	}
	switch form.Get("Action") {
	case "CreateUser":
		f.users[user] = true
		answer(200, `<CreateUserResponse><CreateUserResult><User><UserName>`+user+`</UserName></User></CreateUserResult></CreateUserResponse>`)
	case "CreateAccessKey":
		answer(200, `<CreateAccessKeyResponse><CreateAccessKeyResult><AccessKey><UserName>`+user+`</UserName><AccessKeyId>AKIAISSUED</AccessKeyId><SecretAccessKey>issuedSecret</SecretAccessKey></AccessKey></CreateAccessKeyResult></CreateAccessKeyResponse>`)
	case "GetUser":
		if !f.users[user] {
			answer(404, noSuch)
			return
		}
		answer(200, `<GetUserResponse><GetUserResult><User><UserName>`+user+`</UserName></User></GetUserResult></GetUserResponse>`)
	case "GetUserPolicy":
		// AWS URL-encodes the document, indented as it was put.
		answer(200, `<GetUserPolicyResponse><GetUserPolicyResult><PolicyDocument>`+url.QueryEscape("{\n  \"Version\": \"2012-10-17\"\n}")+`</PolicyDocument></GetUserPolicyResult></GetUserPolicyResponse>`)
	case "PutUserPolicy":
		answer(200, `<PutUserPolicyResponse></PutUserPolicyResponse>`)
	default:
		answer(400, `<ErrorResponse><Error><Code>InvalidAction</Code></Error></ErrorResponse>`)
	}
}

// TestS3AdminIAMCommands: on aws (and seaweedfs) the key commands are IAM
// calls: key-add makes a user with neither path nor tags (not buckety's)
// and prints the key IAM issued, not the secret it was given; key-exists
// is GetUser; the policies are the user's inline policy buckety.
func TestS3AdminIAMCommands(t *testing.T) {
	f := &fakeIAM{t: t, users: map[string]bool{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	for k, v := range map[string]string{s3driver.SecretEndpoint: "https://s3.eu-north-1.amazonaws.com", s3driver.SecretRegion: "eu-north-1",
		s3driver.SecretAccessKeyID: "AKIAADMIN", s3driver.SecretSecretAccessKey: "adminSecret", "implementation": "aws", "adminEndpoint": srv.URL} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	run := func(args ...string) string {
		t.Helper()
		out, err := captureStdout(t, func() error { return s3Admin(ctx, args) })
		if err != nil {
			t.Fatalf("s3-admin %v: %v", args, err)
		}
		return out
	}
	if got := run("key-exists", "bkyabc-1"); got != "false\n" {
		t.Errorf("key-exists of a missing user: want false, got %q", got)
	}
	if got := run("key-add", "bkyabc-1", "TheirOwnSecret"); got != "AKIAISSUED issuedSecret\n" {
		t.Errorf("key-add: want the issued key and secret on the last line, got %q", got)
	}
	if got := run("key-exists", "bkyabc-1"); got != "true\n" {
		t.Errorf("key-exists after key-add: want true, got %q", got)
	}
	if got := run("key-policy", "bkyabc-1"); got != `{"Version":"2012-10-17"}`+"\n" {
		t.Errorf("key-policy: want the policy decoded, on one line, got %q", got)
	}
	run("set-key-policy", "bkyabc-1", `{"Version":"2012-10-17","Statement":[]}`)
	f.mu.Lock()
	defer f.mu.Unlock()
	var seen []string
	for _, a := range f.actions {
		seen = append(seen, a.Get("Action"))
		switch a.Get("Action") {
		case "CreateUser":
			for k := range a {
				if k == "Path" || strings.HasPrefix(k, "Tags.") {
					t.Errorf("CreateUser: want a user without path or tags (not buckety's), got %s=%s", k, a.Get(k))
				}
			}
		case "GetUserPolicy", "PutUserPolicy":
			if a.Get("PolicyName") != "buckety" {
				t.Errorf("%s: want policy buckety, got %q", a.Get("Action"), a.Get("PolicyName"))
			}
		}
		if strings.Contains(a.Encode(), "TheirOwnSecret") {
			t.Errorf("%s: the secret key-add was given is not IAM's to take, yet it was sent", a.Get("Action"))
		}
	}
	if got := strings.Join(seen, ","); got != "GetUser,CreateUser,CreateAccessKey,GetUser,GetUserPolicy,PutUserPolicy" {
		t.Errorf("want the calls GetUser,CreateUser,CreateAccessKey,GetUser,GetUserPolicy,PutUserPolicy, got %s", got)
	}
}

// TestS3AdminOutOfBandSeaweedFS: the probe's out-of-band commands on a
// real SeaweedFS, as the scoped-ownership scenario uses them: a user made
// with key-add is known to the server with the key it printed, yet reaches
// no bucket; its inline policy is written and read back, and then grants
// what it says; the operator's bucket policy is written and read back.
func TestS3AdminOutOfBandSeaweedFS(t *testing.T) {
	srv := seaweedfs.Start(t, seaweedfs.Options{})
	for k, v := range map[string]string{s3driver.SecretEndpoint: srv.Endpoint, s3driver.SecretRegion: seaweedfs.Region,
		s3driver.SecretAccessKeyID: srv.AccessKey, s3driver.SecretSecretAccessKey: srv.SecretKey,
		"implementation": "seaweedfs", s3driver.SecretBucket: "ledger"} {
		t.Setenv(k, v)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	must := func(args ...string) string {
		t.Helper()
		out, err := captureStdout(t, func() error { return s3Admin(ctx, args) })
		if err != nil {
			t.Fatalf("s3-admin %v: %v", args, err)
		}
		return out
	}
	must("create", "ledger")
	if _, err := srv.S3().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("ledger"), Key: aws.String("public/a"), Body: strings.NewReader("a")}); err != nil {
		t.Fatal(err)
	}
	user := "bky0123456789ab-1"
	if got := must("key-exists", user); got != "false\n" {
		t.Errorf("key-exists before key-add: want false, got %q", got)
	}
	out := must("key-add", user, "TheirOwnSecret0123456789")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	key := strings.Fields(lines[len(lines)-1])
	if len(key) != 2 || key[1] == "TheirOwnSecret0123456789" {
		t.Fatalf("key-add: want the issued key and secret on the last line, got %q", out)
	}
	if got := must("key-exists", user); got != "true\n" {
		t.Errorf("key-exists after key-add: want true, got %q", got)
	}
	as := func(role, bucket string, refused bool) map[string]string {
		env := map[string]string{s3driver.SecretEndpoint: srv.Endpoint, s3driver.SecretRegion: seaweedfs.Region, s3driver.SecretBucket: bucket,
			s3driver.SecretAccessKeyID: key[0], s3driver.SecretSecretAccessKey: key[1], "PROBE_ROLE": role}
		if refused {
			env["PROBE_EXPECT_REFUSED"] = "true"
		}
		return env
	}
	foreign := as("WriteOnly", "ledger", true)
	if err := bucketAs(ctx, func(k string) string { return foreign[k] }); err == nil || !strings.Contains(err.Error(), "AccessDenied") {
		t.Errorf("the foreign user's key writing a bucket: want AccessDenied (known, not authorized), got %v", err)
	}
	if _, err := captureStdout(t, func() error { return s3Admin(ctx, []string{"key-policy", user}) }); err == nil || !iam.IsNoSuchEntity(err) {
		t.Errorf("key-policy of a user without buckety's policy: want NoSuchEntity, got %v", err)
	}
	readOnly := `{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:ListBucket"],"Resource":["arn:aws:s3:::ledger"]},{"Effect":"Allow","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::ledger/*"]}]}`
	must("set-key-policy", user, readOnly)
	if got := must("key-policy", user); strings.Count(got, "\n") != 1 || !strings.Contains(got, "arn:aws:s3:::ledger/*") || !strings.Contains(got, "s3:GetObject") {
		t.Errorf("key-policy after set-key-policy: want the new policy on one line, got %q", got)
	}
	reader := as("ReadOnly", "ledger", false)
	if err := bucketAs(ctx, func(k string) string { return reader[k] }); err != nil {
		t.Errorf("the user's key as ReadOnly after set-key-policy: want it to pass, got %v", err)
	}

	if got := must("policy", "ledger"); got != "none\n" {
		t.Errorf("policy of a new bucket: want none, got %q", got)
	}
	pol := `{"Version":"2012-10-17","Statement":[{"Sid":"ops-public","Effect":"Allow","Principal":"*","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::ledger/public/*"]}]}`
	must("set-policy", "ledger", pol)
	if got := must("policy", "ledger"); strings.Count(got, "\n") != 1 || !strings.Contains(got, "ops-public") || !strings.Contains(got, "arn:aws:s3:::ledger/public/*") {
		t.Errorf("policy after set-policy: want the ops-public statement, got %q", got)
	}
	// The operator's bucket policy takes nothing from the user's own.
	if err := bucketAs(ctx, func(k string) string { return reader[k] }); err != nil {
		t.Errorf("the user's key as ReadOnly beside the operator's bucket policy: want it to pass, got %v", err)
	}
	// What the scenarios read and change out of band on every
	// implementation's buckets.
	for _, status := range []string{"Enabled", "Suspended"} {
		must("set-versioning", "ledger", status)
		if got := must("versioning", "ledger"); got != status+"\n" {
			t.Errorf("versioning after set-versioning %s: want %s, got %q", status, status, got)
		}
	}
}
