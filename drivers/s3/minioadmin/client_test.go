package minioadmin

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/Yolean/buckety-controller/drivers/s3/policy"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// The client's calls on a real server are tested through the s3 driver's
// issuer (drivers/s3 minio_test.go, scoped_test.go); here are what needs
// the client's insides: its encrypted bodies and the raw update call.

const testParent = "buckety-tenants"

// startAdmin starts MinIO and returns a root admin client (s3test.Start
// waits until MinIO's IAM is up).
func startAdmin(t testing.TB) (*s3test.Server, *Client) {
	t.Helper()
	srv := s3test.Start(t, "minio", s3test.Options{})
	m := New(srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey, &http.Client{Timeout: 10 * time.Second})
	return srv, m
}

// s3As is an S3 client signing with the given keys, without retries.
func s3As(srv *s3test.Server, access, secret string) *s3.Client {
	return s3.New(s3.Options{
		Region: srv.Region, BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true,
		Credentials:      credentials.NewStaticCredentialsProvider(access, secret, ""),
		RetryMaxAttempts: 1,
	})
}

// wantPut puts bucket-a/key as cl: allowed, or refused with AccessDenied.
func wantPut(t *testing.T, cl *s3.Client, what, key string, allowed bool) {
	t.Helper()
	_, err := cl.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("bucket-a"), Key: aws.String(key), Body: strings.NewReader(key)})
	var ae smithy.APIError
	switch {
	case allowed && err != nil:
		t.Errorf("%s: want success, got %v", what, err)
	case !allowed && !(errors.As(err, &ae) && ae.ErrorCode() == "AccessDenied"):
		t.Errorf("%s: want AccessDenied, got %v", what, err)
	}
}

// TestEncryptedBodies round-trips every AEAD id of madmin's format
// and checks that tampering, a wrong password and an unknown id fail. The
// server tests below prove interoperability (it decrypts our 0x02 bodies,
// we decrypt its argon2id ones); 0x01 is only seen from servers without
// AES instructions, so only this test covers it.
func TestEncryptedBodies(t *testing.T) {
	plain := []byte(`{"secretKey":"s3cr3t-s3cr3t","status":"enabled"}`)
	for _, id := range []byte{madminArgon2idAESGCM, madminArgon2idChaCha20, madminPBKDF2AESGCM} {
		sealed, err := sealBody("root-secret", id, plain)
		if err != nil {
			t.Fatalf("id %d: seal: %v", id, err)
		}
		if sealed[madminSaltLen] != id {
			t.Errorf("id %d: want id byte %d, got %d", id, id, sealed[madminSaltLen])
		}
		got, err := openBody("root-secret", sealed)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("id %d: want %s, got %s (%v)", id, plain, got, err)
		}
		if _, err := openBody("other-secret", sealed); err == nil {
			t.Errorf("id %d: want an error with the wrong password, got none", id)
		}
		tampered := bytes.Clone(sealed)
		tampered[len(tampered)-1] ^= 1
		if _, err := openBody("root-secret", tampered); err == nil {
			t.Errorf("id %d: want an error on a tampered body, got none", id)
		}
	}
	if _, err := sealBody("p", 0x07, plain); err == nil {
		t.Error("want an error sealing with id 7, got none")
	}
	if _, err := openBody("p", make([]byte, 20)); err == nil {
		t.Error("want an error on a body shorter than the header, got none")
	}
	if got, err := openIfEncrypted("p", []byte(`{"policyName":"x"}`)); err != nil || string(got) != `{"policyName":"x"}` {
		t.Errorf("want plain JSON passed through, got %s (%v)", got, err)
	}
}

// TestSealKeyRotates: a client's bodies share a salt (one key
// derivation) for sealKeyUses bodies, each with a nonce of its own, and
// each opens with the password alone, as the server opens it; then, and
// when the password changes, the key is derived from a new salt.
func TestSealKeyRotates(t *testing.T) {
	m := New("http://127.0.0.1:1", "us-east-1", "root", "root-secret", nil)
	salt := func(b []byte) string { return string(b[:madminSaltLen]) }
	nonce := func(b []byte) string { return string(b[madminSaltLen+1 : madminHeaderLen]) }
	var first []byte
	nonces := map[string]bool{}
	for i := range sealKeyUses + 1 {
		b, err := m.sealJSON(map[string]int{"i": i})
		if err != nil {
			t.Fatalf("body %d: seal: %v", i, err)
		}
		if b[madminSaltLen] != madminPBKDF2AESGCM {
			t.Fatalf("body %d: want id %d, got %d", i, madminPBKDF2AESGCM, b[madminSaltLen])
		}
		if i%100 == 0 || i >= sealKeyUses-1 { // opening derives the key: 1.5 ms each
			got, err := openBody("root-secret", b)
			if want := fmt.Sprintf(`{"i":%d}`, i); err != nil || string(got) != want {
				t.Fatalf("body %d: want %s opened with the password, got %s (%v)", i, want, got, err)
			}
		}
		if nonces[nonce(b)] {
			t.Fatalf("body %d: a nonce repeated", i)
		}
		nonces[nonce(b)] = true
		switch {
		case i == 0:
			first = b
		case i < sealKeyUses && salt(b) != salt(first):
			t.Fatalf("body %d: want the first body's salt until %d bodies, got a new one", i, sealKeyUses)
		case i == sealKeyUses && salt(b) == salt(first):
			t.Fatalf("body %d: want a new salt after %d bodies, got the same", i, sealKeyUses)
		}
	}
	before, err := m.sealJSON("x")
	if err != nil {
		t.Fatal(err)
	}
	m.s = New("http://127.0.0.1:1", "us-east-1", "root", "new-secret", nil).s
	after, err := m.sealJSON("x")
	if err != nil {
		t.Fatal(err)
	}
	if salt(after) == salt(before) {
		t.Error("want a new salt after the password changed, got the same")
	}
	if _, err := openBody("root-secret", after); err == nil {
		t.Error("want the old password refused after the change, got the body opened")
	}
	if got, err := openBody("new-secret", after); err != nil || string(got) != `"x"` {
		t.Errorf("want the body opened with the new password, got %s (%v)", got, err)
	}
}

// TestPolicyDrift: an inline policy changed out of band shows in
// info, and an update without newPolicy drops it (why update always
// sends the policy).
func TestPolicyDrift(t *testing.T) {
	srv, m := startAdmin(t)
	ctx := context.Background()
	// A parent user with every object right on every bucket.
	all := policy.ForBucket("*", []string{"s3:ListBucket", "s3:GetBucketLocation"}, []string{"s3:GetObject", "s3:PutObject"}).JSON()
	if err := m.PutCannedPolicy(ctx, "parent", all); err != nil {
		t.Fatal(err)
	}
	if err := m.SetUser(ctx, testParent, "legacy-parent-secret-01"); err != nil {
		t.Fatal(err)
	}
	if err := m.SetUserPolicy(ctx, testParent, "parent"); err != nil {
		t.Fatal(err)
	}
	if _, err := s3As(srv, srv.AccessKey, srv.SecretKey).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String("bucket-a")}); err != nil {
		t.Fatal(err)
	}
	roPolicy := policy.ForBucket("bucket-a", []string{"s3:ListBucket"}, []string{"s3:GetObject"}).JSON()
	const key, secret = "acc-drift", "drift-secret-01"
	if err := m.Add(ctx, testParent, key, secret, roPolicy, "", ""); err != nil {
		t.Fatal(err)
	}
	ro := s3As(srv, key, secret)
	wantPut(t, ro, "put before drift", "x", false)

	// Out of band, root broadens the inline policy.
	broad := policy.ForBucket("bucket-a", []string{"s3:ListBucket"}, []string{"s3:GetObject", "s3:PutObject"}).JSON()
	if err := m.Update(ctx, key, "", broad); err != nil {
		t.Fatal(err)
	}
	sa, _, err := m.Info(ctx, key)
	if err != nil {
		t.Fatal(err)
	}
	if policy.Equal(sa.Policy, string(roPolicy)) {
		t.Errorf("after drift: want a policy different from %s, got %s", roPolicy, sa.Policy)
	}
	wantPut(t, ro, "put after drift", "x", true)

	// Converging resends the policy.
	if err := m.Update(ctx, key, "", roPolicy); err != nil {
		t.Fatal(err)
	}
	if sa, _, err := m.Info(ctx, key); err != nil || !policy.Equal(sa.Policy, string(roPolicy)) {
		t.Errorf("after converging: want %s, got %s (%v)", roPolicy, sa.Policy, err)
	}
	wantPut(t, ro, "put after converging", "y", false)

	// An update without newPolicy (as madmin's UpdateServiceAccount with
	// only NewSecretKey sends) leaves the account on its parent's rights.
	body, err := m.sealJSON(map[string]string{"newSecretKey": secret})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.call(ctx, http.MethodPost, routeUpdateServiceAcct, url.Values{"accessKey": {key}}, body, http.StatusNoContent); err != nil {
		t.Fatal(err)
	}
	if sa, _, err := m.Info(ctx, key); err != nil || !sa.ImpliedPolicy {
		t.Errorf("update without newPolicy: want the inline policy dropped (impliedPolicy), got %+v (%v)", sa, err)
	}
	wantPut(t, ro, "put with the parent's rights", "z", true)
}

// BenchmarkBodies measures the client's share of each encrypted
// call: sealing a request (PBKDF2) and opening a response (argon2id).
func BenchmarkBodies(b *testing.B) {
	plain := []byte(`{"newPolicy":{},"newSecretKey":"bench-secret-01"}`)
	b.Run("seal-pbkdf2", func(b *testing.B) {
		for b.Loop() {
			if _, err := sealBody("root-secret", madminPBKDF2AESGCM, plain); err != nil {
				b.Fatal(err)
			}
		}
	})
	m := New("http://127.0.0.1:1", "us-east-1", "root", "root-secret", nil)
	b.Run("seal-client", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := m.sealJSON(plain); err != nil {
				b.Fatal(err)
			}
		}
	})
	sealed, err := sealBody("root-secret", madminArgon2idAESGCM, plain)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("open-argon2id", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := openBody("root-secret", sealed); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// sealBody encrypts plaintext in madmin's EncryptData format with the
// given AEAD id and a salt of its own, as the server seals its answers
// (argon2id) and as madmin-go seals requests; the client seals with
// sealKey's key instead.
func sealBody(password string, id byte, plaintext []byte) ([]byte, error) {
	salt := make([]byte, madminSaltLen)
	if _, err := rand.Read(salt); err != nil {
		return nil, err
	}
	stream, err := madminStream(password, id, salt)
	if err != nil {
		return nil, err
	}
	return sealStream(salt, id, stream, plaintext)
}

// TestServerReleasesOfAnOfflineServer: MinIO lists a server it cannot
// reach with state "offline" and no version (madmin.ServerProperties, as
// cmd/notification.go's ServerInfo fills it). That is an outage, asked
// again soon, not a release that "does not say when it was built", which
// the issuing probe would hold for its whole TTL.
func TestServerReleasesOfAnOfflineServer(t *testing.T) {
	online := `{"servers":[{"state":"online","endpoint":"minio-0:9000","version":"2026-02-12T20:18:48Z"},{"state":"online","endpoint":"minio-1:9000","version":"2026-02-12T20:18:48Z"}]}`
	got, err := serverReleases([]byte(online))
	if err != nil || len(got) != 2 || got[1] != "2026-02-12T20:18:48Z" {
		t.Fatalf("two online servers: want both releases, got %v, %v", got, err)
	}
	offline := `{"servers":[{"state":"online","endpoint":"minio-0:9000","version":"2026-02-12T20:18:48Z"},{"state":"offline","endpoint":"minio-1:9000"}]}`
	got, err = serverReleases([]byte(offline))
	var e *Error
	if !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || !strings.Contains(e.Error(), "minio-1:9000 is offline") {
		t.Fatalf("an offline server: want a 503 naming it, got %v, %v", got, err)
	}
	if _, err := serverReleases([]byte(`{"servers":[{"endpoint":"minio-0:9000","version":"2026-02-12T20:18:48Z"}]}`)); err != nil {
		t.Errorf("an answer without states (a single server): want its release, got %v", err)
	}
}
