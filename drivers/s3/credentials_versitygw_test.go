package s3

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/Yolean/buckety-controller/drivers"
	"github.com/Yolean/buckety-controller/drivers/s3/versityadmin"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// versityEnv is a VersityGW with users, its admin client and a root S3
// client acting as buckety does.
type versityEnv struct {
	srv   *s3test.Server
	admin *versityadmin.Client
	root  *s3.Client
}

func startVersity(t *testing.T) *versityEnv {
	t.Helper()
	srv := s3test.Start(t, "versitygw", s3test.Options{IAM: true})
	if srv.AdminEndpoint == "" {
		t.Fatal("want the versitygw admin endpoint, got none")
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	t.Cleanup(hc.CloseIdleConnections)
	return &versityEnv{
		srv:   srv,
		admin: versityadmin.New(srv.AdminEndpoint, srv.Region, srv.AccessKey, srv.SecretKey, hc),
		root:  versityClient(t, srv, srv.AccessKey, srv.SecretKey),
	}
}

// versityClient is an S3 client signing with the given keys, without
// retries so refusals come back at once.
func versityClient(t *testing.T, srv *s3test.Server, access, secret string) *s3.Client {
	t.Helper()
	cl := rawClient(t, &Config{Implementation: "versitygw", Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
		AccessKeyID: access, SecretAccessKey: secret, RequestTimeout: drivers.Duration{Duration: 5 * time.Second}}, srv.Endpoint)
	return s3.New(cl.Options(), func(o *s3.Options) { o.RetryMaxAttempts = 1 })
}

func versityCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func (e *versityEnv) createUser(t *testing.T, access, secret string) {
	t.Helper()
	if err := e.admin.CreateUser(versityCtx(t), access, secret); err != nil {
		t.Fatalf("createUser(%s): %v", access, err)
	}
}

func (e *versityEnv) bucket(t *testing.T, name string) {
	t.Helper()
	ctx := versityCtx(t)
	if _, err := e.root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatalf("CreateBucket(%s): %v", name, err)
	}
	if _, err := e.root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String("seed.txt"), Body: strings.NewReader("seed")}); err != nil {
		t.Fatalf("PutObject(%s/seed.txt): %v", name, err)
	}
}

// policy is the bucket's stored policy, nil when it has none.
func (e *versityEnv) policy(t *testing.T, bucket string) []byte {
	t.Helper()
	out, err := e.root.GetBucketPolicy(versityCtx(t), &s3.GetBucketPolicyInput{Bucket: aws.String(bucket)})
	if isCode(err, "NoSuchBucketPolicy") {
		return nil
	}
	if err != nil {
		t.Fatalf("GetBucketPolicy(%s): %v", bucket, err)
	}
	return []byte(aws.ToString(out.Policy))
}

// putPolicy writes a policy as root; nil deletes it.
func (e *versityEnv) putPolicy(bucket string, policy []byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if policy == nil {
		_, err := e.root.DeleteBucketPolicy(ctx, &s3.DeleteBucketPolicyInput{Bucket: aws.String(bucket)})
		return err
	}
	_, err := e.root.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(string(policy))})
	return err
}

// grant merges grants into the bucket's policy and writes the result, as
// buckety's reconcile would; it returns whether anything was written.
func (e *versityEnv) grant(t *testing.T, bucket string, grants map[string]string) bool {
	t.Helper()
	merged, changed, err := mergeBucketPolicy(e.policy(t, bucket), bucket, grants)
	if err != nil {
		t.Fatalf("mergeBucketPolicy(%s, %v): %v", bucket, grants, err)
	}
	if changed {
		if err := e.putPolicy(bucket, merged); err != nil {
			t.Fatalf("write merged policy of %s: %v\n%s", bucket, err, merged)
		}
	}
	return changed
}

// The operations a key is checked for.
var versityOps = map[string]func(ctx context.Context, cl *s3.Client, bucket string) error{
	"list": func(ctx context.Context, cl *s3.Client, b string) error {
		_, err := cl.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(b)})
		return err
	},
	"get": func(ctx context.Context, cl *s3.Client, b string) error {
		out, err := cl.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(b), Key: aws.String("seed.txt")})
		if err == nil {
			err = out.Body.Close()
		}
		return err
	},
	"put": func(ctx context.Context, cl *s3.Client, b string) error {
		_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(b), Key: aws.String("written.txt"), Body: strings.NewReader("w")})
		return err
	},
	"delete": func(ctx context.Context, cl *s3.Client, b string) error {
		_, err := cl.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(b), Key: aws.String("written.txt")})
		return err
	},
	"createBucket": func(ctx context.Context, cl *s3.Client, b string) error {
		_, err := cl.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(b + "-new")})
		return err
	},
	"putPolicy": func(ctx context.Context, cl *s3.Client, b string) error {
		_, err := cl.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(b), Policy: aws.String(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":"*","Action":["s3:GetObject"],"Resource":["arn:aws:s3:::` + b + `/*"]}]}`)})
		return err
	},
	"deleteBucket": func(ctx context.Context, cl *s3.Client, b string) error {
		_, err := cl.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(b)})
		return err
	},
}

// expectOps checks that each op on bucket succeeds ("ok") or is refused with
// one of the codes ("AccessDenied", ...).
func expectOps(t *testing.T, who string, cl *s3.Client, bucket string, want map[string]string) {
	t.Helper()
	for _, op := range []string{"list", "get", "put", "delete", "createBucket", "putPolicy", "deleteBucket"} {
		w, ok := want[op]
		if !ok {
			continue
		}
		err := versityOps[op](versityCtx(t), cl, bucket)
		switch {
		case w == "ok" && err != nil:
			t.Errorf("%s %s on %s: want success, got %v", who, op, bucket, err)
		case w != "ok" && err == nil:
			t.Errorf("%s %s on %s: want %s, got success", who, op, bucket, w)
		case w != "ok" && !isCode(err, strings.Split(w, "|")...):
			t.Errorf("%s %s on %s: want %s, got %v", who, op, bucket, w, err)
		}
	}
}

const (
	vgKeyA       = "bkt-test-access-a"
	vgKeyB       = "bkt-test-access-b"
	vgKeyForeign = "operator-key-0001"
	vgSecretA    = "secret-of-access-a-000000000000000000000"
	vgSecretB    = "secret-of-access-b-000000000000000000000"
	vgSecretF    = "secret-of-operator-000000000000000000000"
)

// vgForeignStatement is written by someone else, with its own spacing, which
// buckety must keep byte for byte.
const vgForeignStatement = `{ "Sid": "OperatorReads",
      "Effect": "Allow", "Principal": {"AWS": ["` + vgKeyForeign + `"]},
      "Action": ["s3:GetObject"], "Resource": ["arn:aws:s3:::data-bucket/*"] }`

const vgForeignPolicy = "{\n  \"Version\": \"2012-10-17\",\n  \"Statement\": [\n    " + vgForeignStatement + "\n  ]\n}"

func TestVersityPolicyGrantsRoles(t *testing.T) {
	e := startVersity(t)
	e.createUser(t, vgKeyA, vgSecretA)
	e.createUser(t, vgKeyB, vgSecretB)
	e.createUser(t, vgKeyForeign, vgSecretF)
	e.bucket(t, "data-bucket")
	e.bucket(t, "neighbour-bucket")
	if err := e.putPolicy("data-bucket", []byte(vgForeignPolicy)); err != nil {
		t.Fatalf("write foreign policy: %v", err)
	}

	grants := map[string]string{vgKeyA: "", vgKeyB: "ReadOnly"}
	if !e.grant(t, "data-bucket", grants) {
		t.Fatal("first merge: want changed, got unchanged")
	}
	stored := e.policy(t, "data-bucket")
	if !bytes.Contains(stored, []byte(vgForeignStatement)) {
		t.Errorf("want the foreign statement byte-identical in\n%s", stored)
	}
	got, err := bucketyGrants(stored)
	if err != nil {
		t.Fatalf("bucketyGrants: %v", err)
	}
	if want := map[string]string{vgKeyA: "ReadWrite", vgKeyB: "ReadOnly"}; !maps.Equal(got, want) {
		t.Errorf("bucketyGrants: want %v, got %v", want, got)
	}
	if e.grant(t, "data-bucket", grants) {
		t.Error("second merge: want unchanged, got changed")
	}
	t.Logf("policy (%d bytes): %s", len(stored), stored)

	a := versityClient(t, e.srv, vgKeyA, vgSecretA)
	b := versityClient(t, e.srv, vgKeyB, vgSecretB)
	f := versityClient(t, e.srv, vgKeyForeign, vgSecretF)
	const denied = "AccessDenied"
	expectOps(t, "A (ReadWrite)", a, "data-bucket", map[string]string{"list": "ok", "get": "ok", "put": "ok", "delete": "ok",
		"createBucket": denied, "putPolicy": denied, "deleteBucket": denied})
	expectOps(t, "B (ReadOnly)", b, "data-bucket", map[string]string{"list": "ok", "get": "ok", "put": denied, "delete": denied})
	for who, cl := range map[string]*s3.Client{"A": a, "B": b} {
		expectOps(t, who, cl, "neighbour-bucket", map[string]string{"list": denied, "get": denied, "put": denied, "createBucket": denied})
	}
	expectOps(t, "foreign", f, "data-bucket", map[string]string{"get": "ok", "list": denied, "put": denied})
}

func TestVersityRevokeAndUsers(t *testing.T) {
	e := startVersity(t)
	e.createUser(t, vgKeyA, vgSecretA)
	e.createUser(t, vgKeyB, vgSecretB)
	e.bucket(t, "data-bucket")
	e.grant(t, "data-bucket", map[string]string{vgKeyA: "ReadWrite", vgKeyB: "ReadOnly"})
	b := versityClient(t, e.srv, vgKeyB, vgSecretB)
	expectOps(t, "B before revoke", b, "data-bucket", map[string]string{"list": "ok"})

	// Revoke: statements first, then the user.
	if !e.grant(t, "data-bucket", map[string]string{vgKeyA: "ReadWrite"}) {
		t.Fatal("merge without B: want changed, got unchanged")
	}
	if got, err := bucketyGrants(e.policy(t, "data-bucket")); err != nil || !maps.Equal(got, map[string]string{vgKeyA: "ReadWrite"}) {
		t.Errorf("grants after revoke: want map[%s:ReadWrite], got %v (%v)", vgKeyA, got, err)
	}
	ctx := versityCtx(t)
	if err := e.admin.DeleteUser(ctx, vgKeyB); err != nil {
		t.Fatalf("deleteUser(B): %v", err)
	}
	expectOps(t, "B after delete", b, "data-bucket", map[string]string{"list": "InvalidAccessKeyId", "get": "InvalidAccessKeyId"})
	if err := e.admin.DeleteUser(ctx, vgKeyB); err != nil {
		t.Errorf("deleteUser(B) again: want success, got %v", err)
	}
	if err := e.admin.DeleteUser(ctx, "never-existed-key-0"); err != nil {
		t.Errorf("deleteUser(missing): want success, got %v", err)
	}
	users, err := e.admin.ListUsers(ctx)
	if err != nil {
		t.Fatalf("listUsers: %v", err)
	}
	if want := map[string]string{vgKeyA: "user"}; !maps.Equal(users, want) {
		t.Errorf("listUsers: want %v, got %v", want, users)
	}

	// The gateway refuses a policy naming a user that does not exist.
	merged, _, err := mergeBucketPolicy(e.policy(t, "data-bucket"), "data-bucket", map[string]string{vgKeyA: "ReadWrite", vgKeyB: "ReadOnly"})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.putPolicy("data-bucket", merged); !isCode(err, "MalformedPolicy") {
		t.Errorf("policy naming a deleted user: want MalformedPolicy, got %v", err)
	}

	// An existing key is reported, not overwritten: root's and A's.
	for _, key := range []string{vgKeyA, e.srv.AccessKey} {
		err := e.admin.CreateUser(ctx, key, "another-secret-000000000000")
		if !errors.Is(err, versityadmin.ErrUserExists) {
			t.Errorf("createUser(existing %s): want versityadmin.ErrUserExists, got %v", key, err)
		} else if !strings.Contains(err.Error(), "/create-user") || !strings.Contains(err.Error(), "XAdminUserExists") {
			t.Errorf("createUser(existing): want route and code in %q", err)
		}
	}
	a := versityClient(t, e.srv, vgKeyA, vgSecretA)
	expectOps(t, "A with its first secret", a, "data-bucket", map[string]string{"list": "ok"})
	expectOps(t, "A with the refused secret", versityClient(t, e.srv, vgKeyA, "another-secret-000000000000"), "data-bucket",
		map[string]string{"list": "SignatureDoesNotMatch"})

	// Rotation takes effect at once.
	const vgSecretA2 = "rotated-secret-of-a-0000000000000000000"
	if err := e.admin.UpdateSecret(ctx, vgKeyA, vgSecretA2); err != nil {
		t.Fatalf("updateSecret(A): %v", err)
	}
	expectOps(t, "A with its old secret", a, "data-bucket", map[string]string{"list": "SignatureDoesNotMatch"})
	expectOps(t, "A with its new secret", versityClient(t, e.srv, vgKeyA, vgSecretA2), "data-bucket", map[string]string{"list": "ok"})
	err = e.admin.UpdateSecret(ctx, "never-existed-key-0", vgSecretA2)
	var ae *versityadmin.Error
	if !errors.As(err, &ae) || ae.Code != "XAdminUserNotFound" || ae.Route != "/update-user" {
		t.Errorf("updateSecret(missing): want XAdminUserNotFound from /update-user, got %v", err)
	}

	// Wrong admin keys name the route and the gateway's code.
	bad := versityadmin.New(e.srv.AdminEndpoint, e.srv.Region, e.srv.AccessKey, "wrong-secret-0000000000", nil)
	if _, err := bad.ListUsers(ctx); !errors.As(err, &ae) || ae.Code != "SignatureDoesNotMatch" || ae.Route != "/list-users" {
		t.Errorf("listUsers with a wrong secret: want SignatureDoesNotMatch from /list-users, got %v", err)
	}
	notAdmin := versityadmin.New(e.srv.AdminEndpoint, e.srv.Region, vgKeyA, vgSecretA2, nil)
	if err := notAdmin.CreateUser(ctx, "created-by-a-user-0", vgSecretB); !errors.As(err, &ae) || ae.Code != "XAdminAccessDenied" {
		t.Errorf("createUser as a user: want XAdminAccessDenied, got %v", err)
	}
}

func TestVersityPolicyDriftRepaired(t *testing.T) {
	e := startVersity(t)
	e.createUser(t, vgKeyA, vgSecretA)
	e.createUser(t, vgKeyForeign, vgSecretF)
	e.bucket(t, "data-bucket")
	if err := e.putPolicy("data-bucket", []byte(vgForeignPolicy)); err != nil {
		t.Fatal(err)
	}
	grants := map[string]string{vgKeyA: "ReadWrite"}
	e.grant(t, "data-bucket", grants)
	a := versityClient(t, e.srv, vgKeyA, vgSecretA)
	expectOps(t, "A", a, "data-bucket", map[string]string{"put": "ok", "delete": "ok"})

	f := versityClient(t, e.srv, vgKeyForeign, vgSecretF)
	// Each edit shows its effect before buckety repairs it.
	edits := map[string]struct {
		edit   func(st map[string]any)
		who    string
		cl     *s3.Client
		before map[string]string
	}{
		"action dropped": {func(st map[string]any) {
			if st["Sid"] == "buckety-ReadWrite-objects" {
				st["Action"] = []string{"s3:GetObject", "s3:PutObject"}
			}
		}, "A", a, map[string]string{"put": "ok", "delete": "AccessDenied"}},
		"principal added": {func(st map[string]any) {
			if st["Sid"] == "buckety-ReadWrite-objects" {
				st["Principal"] = map[string]any{"AWS": []string{vgKeyA, vgKeyForeign}}
			}
		}, "foreign", f, map[string]string{"put": "ok"}},
	}
	for name, c := range edits {
		t.Run(name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal(e.policy(t, "data-bucket"), &doc); err != nil {
				t.Fatal(err)
			}
			for _, st := range doc["Statement"].([]any) {
				c.edit(st.(map[string]any))
			}
			edited, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			if err := e.putPolicy("data-bucket", edited); err != nil {
				t.Fatalf("out-of-band edit: %v", err)
			}
			expectOps(t, c.who+" before repair", c.cl, "data-bucket", c.before)
			if _, err := bucketyGrants(edited); !errors.Is(err, errPolicyDrift) {
				t.Errorf("bucketyGrants of the edited policy: want errPolicyDrift, got %v", err)
			}
			if !e.grant(t, "data-bucket", grants) {
				t.Fatal("merge of the edited policy: want changed, got unchanged")
			}
			repaired := e.policy(t, "data-bucket")
			if got, err := bucketyGrants(repaired); err != nil || !maps.Equal(got, map[string]string{vgKeyA: "ReadWrite"}) {
				t.Errorf("grants after repair: want map[%s:ReadWrite], got %v (%v)", vgKeyA, got, err)
			}
			if !bytes.Contains(repaired, []byte(`"Sid":"OperatorReads"`)) {
				t.Errorf("want the foreign statement kept, got\n%s", repaired)
			}
			expectOps(t, "A after repair", a, "data-bucket", map[string]string{"put": "ok", "delete": "ok"})
			expectOps(t, "foreign after repair", f, "data-bucket", map[string]string{"get": "ok", "put": "AccessDenied"})
		})
	}

	t.Run("policy deleted", func(t *testing.T) {
		if err := e.putPolicy("data-bucket", nil); err != nil {
			t.Fatal(err)
		}
		expectOps(t, "A without policy", a, "data-bucket", map[string]string{"list": "AccessDenied"})
		if got, err := bucketyGrants(e.policy(t, "data-bucket")); err != nil || len(got) != 0 {
			t.Errorf("bucketyGrants(no policy): want none, got %v (%v)", got, err)
		}
		if !e.grant(t, "data-bucket", grants) {
			t.Fatal("merge after deletion: want changed, got unchanged")
		}
		expectOps(t, "A after repair", a, "data-bucket", map[string]string{"list": "ok", "put": "ok"})
	})

	t.Run("all grants removed", func(t *testing.T) {
		if !e.grant(t, "data-bucket", nil) {
			t.Fatal("merge without grants: want changed, got unchanged")
		}
		if p := e.policy(t, "data-bucket"); p != nil {
			t.Errorf("want no policy left, got %s", p)
		}
	})
}

// TestVersityPolicySizeCap writes the largest policy merge allows, on a
// versioned bucket (one more attribute beside the policy), and shows one
// grant more is refused by merge rather than by the gateway.
func TestVersityPolicySizeCap(t *testing.T) {
	e := startVersity(t)
	e.bucket(t, "data-bucket")
	if _, err := e.root.PutBucketVersioning(versityCtx(t), &s3.PutBucketVersioningInput{Bucket: aws.String("data-bucket"),
		VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	roles := []string{"ReadWrite", "ReadOnly", "WriteOnly"}
	grants := map[string]string{}
	var fits map[string]string
	for i := 0; ; i++ {
		if i == 1000 {
			t.Fatal("1000 grants: want errPolicyTooLarge, got none")
		}
		grants[fmt.Sprintf("bkt-size-access-%04d", i)] = roles[i%len(roles)]
		_, _, err := mergeBucketPolicy(nil, "data-bucket", grants)
		if errors.Is(err, errPolicyTooLarge) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		fits = maps.Clone(grants)
	}
	for k := range fits {
		e.createUser(t, k, "secret-of-"+k+"-00000")
	}
	policy, _, err := mergeBucketPolicy(nil, "data-bucket", fits)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.putPolicy("data-bucket", policy); err != nil {
		t.Errorf("largest mergeable policy (%d bytes, %d grants): want stored, got %v", len(policy), len(fits), err)
	}
	t.Logf("%d grants of %d-character keys fit in %d bytes", len(fits), len("bkt-size-access-0000"), len(policy))
}

func TestVersityMergeBucketPolicy(t *testing.T) {
	const bucket = "data-bucket"
	grants := map[string]string{vgKeyA: "ReadWrite", vgKeyB: "ReadOnly"}
	merge := func(t *testing.T, existing []byte, g map[string]string) ([]byte, bool) {
		t.Helper()
		p, changed, err := mergeBucketPolicy(existing, bucket, g)
		if err != nil {
			t.Fatalf("mergeBucketPolicy: %v", err)
		}
		return p, changed
	}

	t.Run("empty is created, then unchanged", func(t *testing.T) {
		p, changed := merge(t, nil, grants)
		if !changed || p == nil {
			t.Fatalf("want a new policy, changed; got changed=%v %s", changed, p)
		}
		if !json.Valid(p) {
			t.Fatalf("want valid JSON, got %s", p)
		}
		if got, err := bucketyGrants(p); err != nil || !maps.Equal(got, grants) {
			t.Errorf("grants: want %v, got %v (%v)", grants, got, err)
		}
		for range 20 { // map order must not show
			again, changed := merge(t, p, maps.Clone(grants))
			if changed || !bytes.Equal(again, p) {
				t.Fatalf("second merge: want unchanged and identical, got changed=%v\n%s\n%s", changed, again, p)
			}
		}
		if !bytes.Contains(p, []byte(`"Version":"2012-10-17"`)) {
			t.Errorf("want Version 2012-10-17 in %s", p)
		}
	})

	t.Run("foreign statements kept byte for byte, first", func(t *testing.T) {
		p, changed := merge(t, []byte(vgForeignPolicy), grants)
		if !changed {
			t.Error("want changed")
		}
		if !bytes.HasPrefix(p, []byte(`{"Version":"2012-10-17","Statement":[`+vgForeignStatement+`,{"Sid":"buckety-`)) {
			t.Errorf("want the foreign statement verbatim and first, got\n%s", p)
		}
		if _, changed := merge(t, p, grants); changed {
			t.Error("second merge: want unchanged")
		}
	})

	t.Run("grants emptied leaves foreign statements", func(t *testing.T) {
		withBoth, _ := merge(t, []byte(vgForeignPolicy), grants)
		p, changed := merge(t, withBoth, nil)
		if !changed {
			t.Error("want changed")
		}
		if want := `{"Version":"2012-10-17","Statement":[` + vgForeignStatement + `]}`; string(p) != want {
			t.Errorf("want %s, got %s", want, p)
		}
		if _, changed := merge(t, p, nil); changed {
			t.Error("merge of a foreign-only policy without grants: want unchanged")
		}
	})

	t.Run("grants emptied without foreign statements deletes the policy", func(t *testing.T) {
		withGrants, _ := merge(t, nil, grants)
		if p, changed := merge(t, withGrants, nil); p != nil || !changed {
			t.Errorf("want nil and changed, got changed=%v %s", changed, p)
		}
		if p, changed := merge(t, nil, nil); p != nil || changed {
			t.Errorf("nothing to nothing: want nil and unchanged, got changed=%v %s", changed, p)
		}
	})

	t.Run("order and spacing of buckety's statements do not count", func(t *testing.T) {
		p, _ := merge(t, nil, grants)
		var doc struct {
			Version   string
			Statement []map[string]any
		}
		if err := json.Unmarshal(p, &doc); err != nil {
			t.Fatal(err)
		}
		for i, j := 0, len(doc.Statement)-1; i < j; i, j = i+1, j-1 {
			doc.Statement[i], doc.Statement[j] = doc.Statement[j], doc.Statement[i]
		}
		for _, st := range doc.Statement {
			a := st["Action"].([]any)
			for i, j := 0, len(a)-1; i < j; i, j = i+1, j-1 {
				a[i], a[j] = a[j], a[i]
			}
		}
		shuffled, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if _, changed := merge(t, shuffled, grants); changed {
			t.Errorf("want unchanged for\n%s", shuffled)
		}
	})

	t.Run("single-statement form and a policy without Version", func(t *testing.T) {
		existing := `{"Statement":` + vgForeignStatement + `}`
		p, _ := merge(t, []byte(existing), grants)
		if !bytes.HasPrefix(p, []byte(`{"Statement":[`+vgForeignStatement+`,`)) {
			t.Errorf("want the statement kept and no Version added, got %s", p)
		}
	})

	t.Run("refused input", func(t *testing.T) {
		for name, c := range map[string]struct {
			existing string
			grants   map[string]string
		}{
			"unknown role":         {"", map[string]string{vgKeyA: "Admin"}},
			"wildcard principal":   {"", map[string]string{"*": "ReadOnly"}},
			"short key":            {"", map[string]string{"abc": "ReadOnly"}},
			"not JSON":             {"{", grants},
			"statement not object": {`{"Statement":["x"]}`, grants},
		} {
			if _, _, err := mergeBucketPolicy([]byte(c.existing), bucket, c.grants); err == nil {
				t.Errorf("%s: want an error, got none", name)
			}
		}
		many := map[string]string{}
		for i := range 200 {
			many[fmt.Sprintf("bkt-size-access-%04d", i)] = "ReadWrite"
		}
		if _, _, err := mergeBucketPolicy(nil, bucket, many); !errors.Is(err, errPolicyTooLarge) {
			t.Errorf("200 grants: want errPolicyTooLarge, got %v", err)
		}
	})
}

func TestVersityBucketyGrantsDrift(t *testing.T) {
	good, _, err := mergeBucketPolicy([]byte(vgForeignPolicy), "data-bucket", map[string]string{vgKeyA: "ReadWrite", vgKeyB: "ReadOnly"})
	if err != nil {
		t.Fatal(err)
	}
	rw := `"Sid":"buckety-ReadWrite-objects"`
	for name, c := range map[string]struct {
		from, to string
		want     map[string]string // the grants still read
	}{
		"effect Deny":             {rw + `,"Effect":"Allow"`, rw + `,"Effect":"Deny"`, map[string]string{vgKeyB: "ReadOnly"}},
		"unknown field":           {rw + `,`, rw + `,"Condition":{"Bool":{"aws:SecureTransport":"true"}},`, map[string]string{vgKeyB: "ReadOnly"}},
		"other bucket":            {`"Resource":["arn:aws:s3:::data-bucket/*"]}`, `"Resource":["arn:aws:s3:::other-bucket/*"]}`, map[string]string{vgKeyA: "ReadWrite"}},
		"action dropped":          {`"s3:DeleteObject",`, ``, map[string]string{vgKeyB: "ReadOnly"}},
		"principal as string":     {`{"AWS":["` + vgKeyA + `"]}`, `"*"`, map[string]string{vgKeyB: "ReadOnly"}},
		"unknown role in Sid":     {`buckety-ReadOnly-bucket`, `buckety-Owner-bucket`, map[string]string{vgKeyA: "ReadWrite"}},
		"principal in two roles":  {`{"AWS":["` + vgKeyB + `"]}`, `{"AWS":["` + vgKeyA + `","` + vgKeyB + `"]}`, map[string]string{vgKeyB: "ReadOnly"}},
		"wildcard principal list": {`{"AWS":["` + vgKeyB + `"]}`, `{"AWS":["*"]}`, map[string]string{vgKeyA: "ReadWrite"}},
	} {
		t.Run(name, func(t *testing.T) {
			edited := strings.Replace(string(good), c.from, c.to, 1)
			if edited == string(good) {
				t.Fatalf("edit %q not found in %s", c.from, good)
			}
			got, err := bucketyGrants([]byte(edited))
			if !errors.Is(err, errPolicyDrift) {
				t.Errorf("want errPolicyDrift, got %v", err)
			}
			if !maps.Equal(got, c.want) {
				t.Errorf("grants still read: want %v, got %v", c.want, got)
			}
			if _, changed, err := mergeBucketPolicy([]byte(edited), "data-bucket", map[string]string{vgKeyA: "ReadWrite", vgKeyB: "ReadOnly"}); err != nil || !changed {
				t.Errorf("merge: want changed, got changed=%v, err %v", changed, err)
			}
		})
	}
	if got, err := bucketyGrants(good); err != nil || len(got) != 2 {
		t.Errorf("untouched policy: want 2 grants and no error, got %v (%v)", got, err)
	}
	// Releases before the one policy model wrote each resource as a
	// string: the same grants, and nothing to rewrite.
	old := regexp.MustCompile(`"Resource":\["(arn:aws:s3:::data-bucket[^"]*)"\]`).ReplaceAllString(string(good), `"Resource":"$1"`)
	if old == string(good) {
		t.Fatal("no resource list to turn into a string")
	}
	if got, err := bucketyGrants([]byte(old)); err != nil || len(got) != 2 {
		t.Errorf("resources as strings: want 2 grants and no error, got %v (%v)", got, err)
	}
	if _, changed, err := mergeBucketPolicy([]byte(old), "data-bucket", map[string]string{vgKeyA: "ReadWrite", vgKeyB: "ReadOnly"}); err != nil || changed {
		t.Errorf("resources as strings: want nothing to rewrite, got changed=%v, err %v", changed, err)
	}
}

// TestVersityReassertWritesNoUser: re-asserting an access whose user
// already holds its secret (a drift repair, a restart) writes no user:
// /update-user of a cached user corrupts the gateway's IAM cache (see
// credentials_versitygw.go), and a repair that re-keyed every drifted user
// to the secret it had made another user's requests fail
// SignatureDoesNotMatch once in CI. A secret its tenant edited is written
// by making the user again (a /delete-user and a /create-user, never
// /update-user), and a user deleted out of band is made again (one
// /create-user), each working afterwards.
func TestVersityReassertWritesNoUser(t *testing.T) {
	fx := scopedFixture(t, ImplVersityGW)
	ctx := context.Background()
	target, err := url.Parse(fx.srv.AdminEndpoint)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	routes := map[string]int{}
	rp := httputil.NewSingleHostReverseProxy(target)
	counting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		routes[r.URL.Path]++
		mu.Unlock()
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(counting.Close)
	cfg := *fx.cfg
	cfg.Credentials = &Credentials{AdminEndpoint: counting.URL}
	be, _ := open(t, &cfg)
	scopingOf(t, be)
	fx.ensure(t, "ledger", nil)
	taken := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := maps.Clone(routes)
		clear(routes)
		return out
	}

	a := drivers.Access{Resource: "ledger", Namespace: "team", Name: "app", UID: "uid-app", Assert: drivers.IssueRecorded}
	a.Principal = be.Principal(a, 1)
	g, err := be.Grant(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	secret := string(g.Data[SecretSecretAccessKey])
	if got := taken(); got["/create-user"] != 1 || got["/update-user"] != 0 {
		t.Fatalf("the first issue: want one /create-user and no /update-user, got %v", got)
	}
	wantOK(t, "the issued key lists its bucket", s3Ops{t, s3As(fx.srv, a.Principal, secret)}.list("ledger"))

	a.Assert, a.Secret = drivers.Reassert, secret
	for i := range 3 {
		if _, err := be.Grant(ctx, a); err != nil {
			t.Fatalf("re-assertion %d: %v", i, err)
		}
	}
	if got := taken(); got["/create-user"] != 0 || got["/update-user"] != 0 {
		t.Errorf("three re-assertions of the secret the user holds: want no user written, got %v", got)
	}

	a.Secret = "EditedByItsTenant0123456789abcdefghijklm"
	if _, err := be.Grant(ctx, a); err != nil {
		t.Fatal(err)
	}
	if got := taken(); got["/delete-user"] != 1 || got["/create-user"] != 1 || got["/update-user"] != 0 {
		t.Errorf("a secret its tenant edited: want the user made again (one /delete-user, one /create-user, no /update-user), got %v", got)
	}
	wantOK(t, "the edited secret lists the bucket", s3Ops{t, s3As(fx.srv, a.Principal, a.Secret)}.list("ledger"))
	if _, err := s3As(fx.srv, a.Principal, secret).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("ledger")}); err == nil || !strings.Contains(err.Error(), "SignatureDoesNotMatch") {
		t.Errorf("the replaced secret: want SignatureDoesNotMatch, got %v", err)
	}

	if err := be.versityAdmin().DeleteUser(ctx, a.Principal); err != nil {
		t.Fatal(err)
	}
	taken()
	if _, err := be.Grant(ctx, a); err != nil {
		t.Fatalf("re-assertion of a user deleted out of band: %v", err)
	}
	if got := taken(); got["/create-user"] != 1 || got["/update-user"] != 0 {
		t.Errorf("a user deleted out of band: want one /create-user, got %v", got)
	}
	wantOK(t, "the user made again lists the bucket", s3Ops{t, s3As(fx.srv, a.Principal, a.Secret)}.list("ledger"))
}

// TestVersityRepairKeepsOtherUsersWorking: a drift repair re-asserts
// every access of a bucket one after another, as the sweep does after an
// operator replaced the bucket's policy; every key must authenticate
// with its own secret afterwards. Re-keying each user to the secret it
// had (/update-user, what grant did before) leaves the gateway's IAM
// cache answering one user's key with another's secret: with eight users
// re-keyed and then used, the last one was refused SignatureDoesNotMatch
// in 5 of 40 rounds on VersityGW v1.8.0, so 30 rounds would fail about
// 98 times in 100 without the probe.
func TestVersityRepairKeepsOtherUsersWorking(t *testing.T) {
	fx := scopedFixture(t, ImplVersityGW)
	be := fx.backend
	ctx := context.Background()
	scopingOf(t, be)
	for r := range 30 {
		bucket := fmt.Sprintf("repaired-%02d", r)
		fx.ensure(t, bucket, nil)
		as := make([]drivers.Access, 8)
		for i := range as {
			a := drivers.Access{Resource: bucket, Namespace: "team", Name: fmt.Sprintf("app-%d", i), UID: fmt.Sprintf("uid-%d-%d", r, i), Assert: drivers.IssueRecorded}
			a.Principal = be.Principal(a, 1)
			g, err := be.Grant(ctx, a)
			if err != nil {
				t.Fatal(err)
			}
			a.Assert, a.Secret = drivers.Reassert, string(g.Data[SecretSecretAccessKey])
			as[i] = a
			// The gateway caches the user.
			wantOK(t, "a new key lists its bucket", s3Ops{t, s3As(fx.srv, a.Principal, a.Secret)}.list(bucket))
		}
		for _, a := range as {
			if _, err := be.Grant(ctx, a); err != nil {
				t.Fatal(err)
			}
		}
		for _, a := range as {
			_, err := s3As(fx.srv, a.Principal, a.Secret).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
			if err != nil {
				t.Fatalf("round %d: %s after the repair: %v", r, a.Principal, err)
			}
		}
	}
}

// TestVersityOneEditedStatementKeepsOtherGrants: an operator edits one of
// buckety's statements of a bucket's policy (a Condition on the ReadOnly
// ones); the next grant on that bucket, of any access, must keep every
// well-formed grant. It rewrote buckety's statements from nothing but its
// own key, and the bucket's other keys were refused until the sweep
// re-asserted them (a retiring key, never swept, for good).
func TestVersityOneEditedStatementKeepsOtherGrants(t *testing.T) {
	fx := scopedFixture(t, ImplVersityGW)
	be := fx.backend
	ctx := context.Background()
	scopingOf(t, be)
	fx.ensure(t, "ledger", nil)
	grant := func(name, role string) drivers.Access { return grantNew(t, be, "ledger", name, role) }
	writer := grant("writer", "ReadWrite")
	grant("reader", "ReadOnly")
	w := s3Ops{t, s3As(fx.srv, writer.Principal, writer.Secret)}
	wantOK(t, "the writer puts before the edit", w.put("ledger", "k1"))

	cl, err := be.client(fx.cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	cur, err := be.bucketPolicy(ctx, cl, "ledger")
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(cur, &doc); err != nil {
		t.Fatal(err)
	}
	for _, st := range doc["Statement"].([]any) {
		if m := st.(map[string]any); strings.HasPrefix(m["Sid"].(string), "buckety-ReadOnly") {
			m["Condition"] = map[string]any{"Bool": map[string]any{"aws:SecureTransport": "true"}}
		}
	}
	edited, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	if err := be.putBucketPolicy(ctx, cl, "ledger", edited); err != nil {
		t.Fatalf("out-of-band edit: %v", err)
	}
	if _, err := bucketyGrants(edited); !errors.Is(err, errPolicyDrift) {
		t.Fatalf("the edited policy: want errPolicyDrift, got %v", err)
	}

	grant("other", "ReadWrite")
	got, err := bucketyGrants(fx.policyOf(t, be, "ledger"))
	if err != nil {
		t.Fatalf("the policy after the next grant: %v", err)
	}
	if got[writer.Principal] != "ReadWrite" {
		t.Errorf("the writer's grant after another access's grant on an edited policy: want ReadWrite, got %q (grants %v)", got[writer.Principal], got)
	}
	wantOK(t, "the writer puts after another access's grant", w.put("ledger", "k2"))
}

// policyOf reads bucket's policy through be.
func (fx *fixture) policyOf(t *testing.T, be *Backend, bucket string) []byte {
	t.Helper()
	cl, err := be.client(fx.cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := be.bucketPolicy(context.Background(), cl, bucket)
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// grantNew issues team/name a key of its own on bucket for role, serial 1,
// and returns the access with its secret.
func grantNew(t *testing.T, be *Backend, bucket, name, role string) drivers.Access {
	t.Helper()
	a := drivers.Access{Resource: bucket, Namespace: "team", Name: name, UID: "uid-" + name, Role: drivers.Role(role), Assert: drivers.IssueNew}
	a.Principal = be.Principal(a, 1)
	g, err := be.Grant(context.Background(), a)
	if err != nil {
		t.Fatalf("grant %s: %v", name, err)
	}
	a.Secret = string(g.Data[SecretSecretAccessKey])
	return a
}
