package integration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/access"
	"github.com/Yolean/buckety-controller/internal/testhook"
	"github.com/Yolean/buckety-controller/test/harness"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// scopedS3 starts impl with an IAM store and returns it with backend
// s3-scoped, which issues a key per access on it.
func scopedS3(t *testing.T, impl string) (*s3test.Server, config.Backend) {
	t.Helper()
	srv := s3test.Start(t, impl, s3test.Options{IAM: true})
	return srv, scopedS3Backend(srv, impl, func(*s3driver.Config) {})
}

// scopedS3Backend is backend s3-scoped on srv, its driver config changed
// by edit.
func scopedS3Backend(srv *s3test.Server, impl string, edit func(*s3driver.Config)) config.Backend {
	c := s3driver.Config{Implementation: impl, Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: harness.Duration(10 * time.Second),
		Credentials: &s3driver.Credentials{AdminEndpoint: srv.AdminEndpoint}}
	edit(&c)
	be := harness.S3("s3-scoped", c)
	be.Credentials = harness.Grace(3 * time.Second)
	return be
}

// s3With is an S3 client with nothing but a Secret's keys, as a workload.
func s3With(data map[string][]byte) *s3.Client {
	return s3.New(s3.Options{
		Region: string(data["region"]), BaseEndpoint: aws.String(string(data["endpoint"])), UsePathStyle: true, RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider(string(data["accessKeyID"]), string(data["secretAccessKey"]), ""),
	})
}

func putWith(data map[string][]byte, bucket, key string) error {
	_, err := s3With(data).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: nil})
	return err
}

func listWith(data map[string][]byte, bucket string) error {
	_, err := s3With(data).ListObjectsV2(context.Background(), &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	return err
}

// apiCode is an S3 error's code ("" for success, the error's text when it
// is not an S3 answer).
func apiCode(err error) string {
	var ae smithy.APIError
	switch {
	case err == nil:
		return ""
	case errors.As(err, &ae):
		return ae.ErrorCode()
	}
	return err.Error()
}

// refusedKey: the key itself is refused (unknown, or not its secret).
func refusedKey(err error) bool {
	c := apiCode(err)
	return c == "InvalidAccessKeyId" || c == "SignatureDoesNotMatch"
}

// TestScopedS3Accesses: with credentials set, on MinIO and VersityGW, the
// controller gives every access a key of its own: ReadOnly cannot write,
// no key reaches a neighbour's bucket; a Secret its tenant deletes is
// written again with a new secret and the old one is refused; a rotation
// overlaps the old key for the grace period, then revokes it; deleting
// the access revokes its key before the access is gone.
func TestScopedS3Accesses(t *testing.T) {
	needInfra(t)
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			srv, be := scopedS3(t, impl)
			startController(t, harness.ConfigYAML(be), nil, time.Hour)
			ns := namespace(t)
			removeWhileRunning(t, ns)
			ledger := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3-scoped", Name: ns + "-ledger"}}
			payroll := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "payroll", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3-scoped", Name: ns + "-payroll",
				DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "payroll"}}}
			create(t, ledger)
			create(t, payroll)
			writer := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "writer"}}
			reader := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "reader", Role: v1.RoleReadOnly}}
			create(t, writer)
			create(t, reader)
			for _, a := range []*v1.BucketyAccess{writer, reader} {
				waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
				waitCondition(t, a, v1.ConditionScopingNotImplemented, metav1.ConditionFalse, v1.ReasonAsExpected, waitTimeout)
			}
			waitCondition(t, payroll, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			w, r := secret(t, ns, "writer").Data, secret(t, ns, "reader").Data
			if string(w["accessKeyID"]) == srv.AccessKey || string(w["accessKeyID"]) == string(r["accessKeyID"]) {
				t.Fatalf("want a key per access, not the root's: writer %s, reader %s", w["accessKeyID"], r["accessKeyID"])
			}
			// Born Active with the digest of the secret minted for it: one
			// write of the record, none once the Secret holds it.
			if creds := credentialsOf(t, writer.UID); len(creds) != 1 || creds[0].Generation != 1 || creds[0].Spec.Phase != v1.CredentialActive ||
				creds[0].Spec.SecretDigest != access.SecretDigest(string(w["secretAccessKey"])) {
				t.Errorf("want the writer's record written once, Active with the digest of its Secret's secret, got %+v", creds)
			}
			bucket, neighbour := ns+"-ledger", ns+"-payroll"
			if err := putWith(w, bucket, "a"); err != nil {
				t.Errorf("ReadWrite put: %v", err)
			}
			if err := listWith(r, bucket); err != nil {
				t.Errorf("ReadOnly list: %v", err)
			}
			if c := apiCode(putWith(r, bucket, "b")); c != "AccessDenied" {
				t.Errorf("ReadOnly put: want AccessDenied, got %q", c)
			}
			if c := apiCode(listWith(w, neighbour)); c != "AccessDenied" {
				t.Errorf("the neighbour's bucket: want AccessDenied, got %q", c)
			}

			// The tenant deletes the reader's Secret: a new secret, the old refused.
			old := r
			if err := k8s.Delete(context.Background(), secret(t, ns, "reader")); err != nil {
				t.Fatal(err)
			}
			wait.For(t, waitTimeout, "the reader's Secret written again with a new secret", func() (bool, string) {
				s := &corev1.Secret{}
				if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "reader"}, s); err != nil {
					return false, err.Error()
				}
				r = s.Data
				return string(r["secretAccessKey"]) != string(old["secretAccessKey"]), "same secret"
			})
			if err := listWith(r, bucket); err != nil {
				t.Errorf("the new secret: %v", err)
			}
			if err := listWith(old, bucket); !refusedKey(err) {
				t.Errorf("the deleted Secret's secret: want the key refused, got %v", err)
			}

			// Rotation: a new key; the old one works for the grace, then is refused.
			if err := k8s.Patch(context.Background(), reader, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"rotation":"now"}}`))); err != nil {
				t.Fatal(err)
			}
			wait.For(t, waitTimeout, "the reader's Secret rotated to a new key", func() (bool, string) {
				s := &corev1.Secret{}
				if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: "reader"}, s); err != nil {
					return false, err.Error()
				}
				return string(s.Data["accessKeyID"]) != string(r["accessKeyID"]), string(s.Data["accessKeyID"])
			})
			rotated := secret(t, ns, "reader").Data
			if err := listWith(r, bucket); err != nil {
				t.Errorf("the old key within its grace: %v", err)
			}
			if err := listWith(rotated, bucket); err != nil {
				t.Errorf("the rotated key: %v", err)
			}
			wait.For(t, waitTimeout, "the old key refused after its grace", func() (bool, string) {
				err := listWith(r, bucket)
				return refusedKey(err), fmt.Sprint(err)
			})

			// Deleting the access revokes its key before it is gone.
			if err := k8s.Delete(context.Background(), writer); err != nil {
				t.Fatal(err)
			}
			wait.For(t, waitTimeout, "the writer access gone", func() (bool, string) { return gone(t, writer) })
			if err := putWith(w, bucket, "c"); !refusedKey(err) {
				t.Errorf("a deleted access's key: want it refused, got %v", err)
			}
			if creds := credentialsOf(t, writer.UID); len(creds) != 0 {
				t.Errorf("want the writer's BucketyCredential deleted, got %d", len(creds))
			}
		})
	}
}

// TestScopedS3SIGKILLBetweenMintAndSecret is the S3 side of
// TestScopedSIGKILLBetweenMintAndSecret, on MinIO and VersityGW: the real
// controller process is killed right after two accesses' keys and rights
// were set on the server, before their Secrets were written; one access
// is deleted while it is down. The restarted controller finishes the other
// with its recorded key (a working Secret) and revokes the deleted one's:
// afterwards the server holds exactly the kept access's key.
func TestScopedS3SIGKILLBetweenMintAndSecret(t *testing.T) {
	needInfra(t)
	bin := buildController(t, "0.3.0", testhook.Tag)
	for _, impl := range s3test.Implementations {
		t.Run(impl, func(t *testing.T) {
			srv, sigkill := scopedS3(t, impl)
			// A backend name of its own: the binary watches every namespace.
			sigkill.Name = "s3-sigkill"
			m := startMintCrash(t, bin, harness.ConfigYAML(sigkill))
			ns := namespace(t)
			bucket := ns + "-ledger"
			create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3-sigkill", Name: bucket}})
			kept := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "kept", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "kept"}}
			dropped := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "dropped", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "dropped", Role: v1.RoleReadOnly}}
			create(t, kept)
			create(t, dropped)
			keptKey := s3driver.PrincipalFor(drivers.Access{UID: string(kept.UID), Installation: defaultInstallation(t)}, 1)
			droppedKey := s3driver.PrincipalFor(drivers.Access{UID: string(dropped.UID), Installation: defaultInstallation(t)}, 1)
			be, err := s3driver.New().Open(context.Background(), "s3", &s3driver.Config{Implementation: impl, Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
				AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: drivers.Duration{Duration: 10 * time.Second},
				Credentials: &s3driver.Credentials{AdminEndpoint: srv.AdminEndpoint}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := be.Close(); err != nil {
					t.Error(err)
				}
			})
			issued := func() (map[string]bool, error) { return be.(*s3driver.Backend).IssuedCredentials(context.Background()) }
			wait.For(t, waitTimeout, "both keys issued, the controller paused before their Secrets", func() (bool, string) {
				keys, err := issued()
				if err != nil {
					return false, err.Error()
				}
				return m.paused() && keys[keptKey] && keys[droppedKey], fmt.Sprintf("keys %v, paused: %v", keys, m.paused())
			})
			m.killAndRestart(ns, dropped, "kept", "dropped")
			waitCondition(t, kept, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			data := secret(t, ns, "kept").Data
			if got := string(data["accessKeyID"]); got != keptKey {
				t.Errorf("want the recorded key %s finished, got %q", keptKey, got)
			}
			if err := putWith(data, bucket, "after-the-crash"); err != nil {
				t.Errorf("want the finished key to work, got %v", err)
			}
			wait.For(t, waitTimeout, "the deleted access gone and its key revoked", func() (bool, string) {
				err := k8s.Get(context.Background(), client.ObjectKeyFromObject(dropped), &v1.BucketyAccess{})
				keys, kerr := issued()
				if kerr != nil {
					return false, kerr.Error()
				}
				return apierrors.IsNotFound(err) && len(keys) == 1 && keys[keptKey], fmt.Sprintf("access: %v; keys %v", err, keys)
			})
		})
	}
}

// TestNarrowingRefusedRevokesTheKey: on VersityGW, whose bucket policy
// holds every key's grant, a policy with no room for a narrowed role's
// statements refuses the narrowing. The key that held the wider role is
// then revoked (fail closed), not left writing to a bucket its access
// now only reads; the maintainer's own statement and the other access's
// key are kept.
func TestNarrowingRefusedRevokesTheKey(t *testing.T) {
	needInfra(t)
	srv, be := scopedS3(t, "versitygw")
	startController(t, harness.ConfigYAML(be), nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bucket := ns + "-ledger"
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "ledger", Namespace: ns}, Spec: v1.BucketySpec{Backend: "s3-scoped", Name: bucket}})
	keep := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "keep", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "keep"}}
	narrowed := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "narrowed", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "ledger"}, CredentialsSecretName: "narrowed"}}
	for _, a := range []*v1.BucketyAccess{keep, narrowed} {
		create(t, a)
		waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	}
	k, n := secret(t, ns, "keep").Data, secret(t, ns, "narrowed").Data
	if err := putWith(n, bucket, "before"); err != nil {
		t.Fatalf("ReadWrite put before the narrowing: %v", err)
	}

	// The maintainer's own statement (a Deny on a prefix nobody uses)
	// leaves 100 bytes of what buckety writes: room for no role's
	// statements.
	ctx := context.Background()
	root := s3With(map[string][]byte{"region": []byte(srv.Region), "endpoint": []byte(srv.Endpoint), "accessKeyID": []byte(srv.AccessKey), "secretAccessKey": []byte(srv.SecretKey)})
	got, err := root.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Version   string            `json:"Version"`
		Statement []json.RawMessage `json:"Statement"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(got.Policy)), &doc); err != nil {
		t.Fatalf("the bucket policy buckety wrote: %v", err)
	}
	filled := func(pad int) []byte {
		d := doc
		d.Statement = append(slices.Clone(doc.Statement), json.RawMessage(fmt.Sprintf(
			`{"Sid":"maintainer-filler","Effect":"Deny","Principal":{"AWS":["*"]},"Action":["s3:GetObject"],"Resource":["arn:aws:s3:::%s/unused-%s/*"]}`, bucket, strings.Repeat("x", pad))))
		b, err := json.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for spare := 100; ; spare += 50 {
		policy := filled(s3driver.VersityPolicyMaxBytes - spare - len(filled(0)))
		_, err := root.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(string(policy))})
		if err == nil {
			t.Logf("policy of %d bytes stored, %d spare", len(policy), spare)
			break
		}
		if spare > 1000 {
			t.Fatalf("the maintainer's statement: %v", err)
		}
	}

	patch(t, narrowed, `{"spec":{"role":"ReadOnly"}}`)
	principal := string(n["accessKeyID"])
	waitEvent(t, ns, v1.EventCredentialRevoked, principal)
	wait.For(t, waitTimeout, "the narrowed access's old key refused", func() (bool, string) {
		err := putWith(n, bucket, "after")
		return refusedKey(err), fmt.Sprint(err)
	})
	c := waitCondition(t, narrowed, v1.ConditionReady, metav1.ConditionFalse, "", waitTimeout)
	if !strings.Contains(c.Message, "too large") {
		t.Errorf("Ready: want the refusal (policy too large) named, got %s: %s", c.Reason, c.Message)
	}
	if err := putWith(k, bucket, "kept"); err != nil {
		t.Errorf("the other access's key: want it kept, got %v", err)
	}
	got, err = root.GetBucketPolicy(ctx, &s3.GetBucketPolicyInput{Bucket: aws.String(bucket)})
	switch {
	case err != nil:
		t.Error(err)
	case !strings.Contains(aws.ToString(got.Policy), "maintainer-filler"):
		t.Errorf("the maintainer's statement: want it kept, got %s", aws.ToString(got.Policy))
	case strings.Contains(aws.ToString(got.Policy), principal):
		t.Errorf("the revoked key: want it gone from the bucket policy, got %s", aws.ToString(got.Policy))
	}
}
