package faults

import (
	"bytes"
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/secure-io/sio-go"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers/s3/iam"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// adminCall is one admin API request of the sibling-key attack and what
// the server answered.
type adminCall struct {
	what   string
	status int
	body   string
	// noOp: a 2xx answer is allowed, because the server does nothing
	// (MinIO's delete-service-account answers 204 for a key that is a user,
	// not a service account); alice's failures afterwards are what count.
	noOp bool
}

// refused reports whether the server refused the call, or answered a call
// that does nothing.
func (c adminCall) refused() bool { return c.noOp || c.status < 200 || c.status > 299 }

// signedAdmin sends one admin API request signed with SigV4 (service s3)
// as the keys ak/sk, the way MinIO's mc and VersityGW's CLI sign theirs:
// X-Amz-Content-Sha256 is the hex SHA-256 of the body. It returns the
// status and the start of the body.
func signedAdmin(ctx context.Context, endpoint, region, ak, sk, method, path string, query url.Values, body []byte) (int, string, error) {
	u := strings.TrimRight(endpoint, "/") + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, u, bytes.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if len(body) > 0 {
		req.Header.Set("Content-Type", "application/octet-stream")
	}
	if err := v4.NewSigner().SignHTTP(ctx, aws.Credentials{AccessKeyID: ak, SecretAccessKey: sk}, req, hash, "s3", region, time.Now()); err != nil {
		return 0, "", err
	}
	hc := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	return resp.StatusCode, strings.TrimSpace(string(b)), nil
}

// sealMadmin encrypts a MinIO admin request body as madmin's EncryptData
// does, with the caller's secret key: salt (32) | AEAD id 0x02 (PBKDF2-
// SHA256, 8192 rounds, AES-256-GCM) | nonce (8) | sio stream. MinIO
// decrypts such a body with the secret key of the key that signed it.
func sealMadmin(password string, plain []byte) ([]byte, error) {
	hdr := make([]byte, 32+1+8)
	if _, err := rand.Read(hdr); err != nil {
		return nil, err
	}
	hdr[32] = 0x02
	key, err := pbkdf2.Key(sha256.New, password, hdr[:32], 8192, 32)
	if err != nil {
		return nil, err
	}
	stream, err := sio.AES_256_GCM.Stream(key)
	if err != nil {
		return nil, err
	}
	out := bytes.NewBuffer(append([]byte{}, hdr...))
	w := stream.EncryptWriter(out, hdr[33:], nil)
	if _, err := w.Write(plain); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// forgedKey is an access key and secret mallory chooses, shaped as MinIO
// and VersityGW accept them.
func (a *attack) forgedKey() (string, string) {
	return fmt.Sprintf("mal%012d", a.r.Int63n(1e12)), fmt.Sprintf("%016x%016x", a.r.Uint64(), a.r.Uint64())
}

// siblingKeys: mallory takes her own access's key on each S3 server that
// mints keys and calls its admin API on alice's key (which she is assumed
// to know): list, inspect, add, change and delete users and service
// accounts; on SeaweedFS, whose keys are IAM users, its IAM API on alice's
// user (iamCalls). Every call must be refused; then alice's key must still
// work, and no key mallory tried to create or set may work on alice's
// bucket (the foreign-credentials figure tries them).
func (a *attack) siblingKeys() {
	t, ctx := a.t, a.ctx
	type target struct {
		backend, impl, endpoint, adminEndpoint, region string
		// aliceSecret is the Secret of alice's key on the backend, and
		// aliceAccess its access (whose status names her IAM user).
		aliceSecret, aliceAccess string
	}
	var targets []target
	if a.e.s3.Implementation == "minio" {
		targets = append(targets, target{"s3", "minio", a.e.s3.Endpoint, a.e.s3.Endpoint, a.e.s3.Region, "files-bucket", "files"})
	} else {
		a.tb.add(t, a.run, "sibling keys on minio", "skipped: the harness's S3 server is "+a.e.s3.Implementation+" (FAULTS_S3)", true)
	}
	// Alice's key on the other servers: on the harness's own, her
	// files bucket's (Secret files-bucket of the implicit access files);
	// on a server this run started, her reclaimed bucket's (Secret and
	// implicit access named as the Buckety).
	aliceOn := func(backend, reclaim string) (secret, access string) {
		if backend == "s3" {
			return "files-bucket", "files"
		}
		if a.reclaimed[reclaim] {
			return reclaim, reclaim
		}
		return "", ""
	}
	if vs, va := aliceOn(a.s3x.vgwBackend, "reclaim-v"); vs != "" {
		targets = append(targets, target{a.s3x.vgwBackend, "versitygw", a.s3x.vgw.Endpoint, a.s3x.vgw.AdminEndpoint, a.s3x.vgw.Region, vs, va})
	} else {
		a.tb.add(t, a.run, "sibling keys on versitygw", "not run: alice has no key there (her reclaim failed)", false)
	}
	// SeaweedFS has no admin API beside S3: what mallory tries there is
	// its IAM API, which serves on the S3 port.
	if ws, wa := aliceOn(a.s3x.weedBackend, "reclaim-w"); ws != "" {
		targets = append(targets, target{a.s3x.weedBackend, "seaweedfs", a.s3x.weed.Endpoint, a.s3x.weed.Endpoint, a.s3x.weed.Region, ws, wa})
	} else {
		a.tb.add(t, a.run, "sibling keys on seaweedfs", "not run: alice has no key there (her reclaim failed)", false)
	}
	for _, tg := range targets {
		md := a.waitSecret(a.malloryNS, "keys-"+tg.backend)
		ad := a.waitSecret(a.aliceNS, tg.aliceSecret)
		mk, ms := string(md["accessKeyID"]), string(md["secretAccessKey"])
		ak, bucket := string(ad["accessKeyID"]), string(ad["bucket"])
		send := func(c adminCall, method, path string, q url.Values, body []byte) adminCall {
			st, b, err := signedAdmin(ctx, tg.adminEndpoint, tg.region, mk, ms, method, path, q, body)
			if err != nil {
				t.Fatalf("%s as mallory: %v", c.what, err)
			}
			c.status, c.body = st, b
			return c
		}
		forge := func(access, secret string) {
			a.forged = append(a.forged, map[string][]byte{"endpoint": []byte(tg.endpoint), "region": []byte(tg.region), "accessKeyID": []byte(access), "secretAccessKey": []byte(secret)})
		}
		var calls []adminCall
		switch tg.impl {
		case "minio":
			seal := func(v any) []byte {
				plain, err := json.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				b, err := sealMadmin(ms, plain)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			const p = "/minio/admin/v3"
			key := url.Values{"accessKey": {ak}}
			_, newSecret := a.forgedKey()
			k1, s1 := a.forgedKey()
			k2, s2 := a.forgedKey()
			_, s3 := a.forgedKey()
			forge(ak, newSecret)
			forge(k1, s1)
			forge(k2, s2)
			forge(ak, s3)
			calls = append(calls,
				send(adminCall{what: "list-users"}, http.MethodGet, p+"/list-users", nil, nil),
				send(adminCall{what: "list-users of alice's bucket"}, http.MethodGet, p+"/list-users", url.Values{"bucket": {bucket}}, nil),
				send(adminCall{what: "user-info of alice's key"}, http.MethodGet, p+"/user-info", key, nil),
				send(adminCall{what: "info-service-account of alice's key"}, http.MethodGet, p+"/info-service-account", key, nil),
				send(adminCall{what: "list-service-accounts of alice's key"}, http.MethodGet, p+"/list-service-accounts", url.Values{"user": {ak}}, nil),
				send(adminCall{what: "delete-service-account of alice's key", noOp: true}, http.MethodDelete, p+"/delete-service-account", key, nil),
				send(adminCall{what: "remove-user of alice's key"}, http.MethodDelete, p+"/remove-user", key, nil),
				send(adminCall{what: "set-user-status of alice's key to disabled"}, http.MethodPut, p+"/set-user-status", url.Values{"accessKey": {ak}, "status": {"disabled"}}, nil),
				send(adminCall{what: "add-user with alice's key (a new secret)"}, http.MethodPut, p+"/add-user", key,
					seal(map[string]string{"secretKey": newSecret, "status": "enabled"})),
				send(adminCall{what: "add-service-account under alice's key"}, http.MethodPut, p+"/add-service-account", nil,
					seal(map[string]any{"targetUser": ak, "accessKey": k1, "secretKey": s1})),
				send(adminCall{what: "add-service-account of her own, without a policy"}, http.MethodPut, p+"/add-service-account", nil,
					seal(map[string]any{"accessKey": k2, "secretKey": s2})),
				send(adminCall{what: "update-service-account of alice's key (a new secret)"}, http.MethodPost, p+"/update-service-account", key,
					seal(map[string]any{"newSecretKey": s3})),
				send(adminCall{what: "set-user-or-group-policy readwrite on her own key"}, http.MethodPut, p+"/set-user-or-group-policy",
					url.Values{"policyName": {"readwrite"}, "userOrGroup": {mk}, "isGroup": {"false"}}, nil),
			)
		case "versitygw":
			type account struct {
				XMLName   xml.Name `xml:"Account"`
				Access    string   `xml:"Access"`
				Secret    string   `xml:"Secret"`
				Role      string   `xml:"Role"`
				UserID    int      `xml:"UserID"`
				GroupID   int      `xml:"GroupID"`
				ProjectID int      `xml:"ProjectID"`
			}
			type props struct {
				XMLName xml.Name `xml:"MutableProps"`
				Secret  string   `xml:"Secret"`
			}
			enc := func(v any) []byte {
				b, err := xml.Marshal(v)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			_, newSecret := a.forgedKey()
			k1, s1 := a.forgedKey()
			forge(ak, newSecret)
			forge(k1, s1)
			calls = append(calls,
				send(adminCall{what: "list-users"}, http.MethodPatch, "/list-users", nil, nil),
				send(adminCall{what: "list-buckets"}, http.MethodPatch, "/list-buckets", nil, nil),
				send(adminCall{what: "delete-user of alice's key"}, http.MethodPatch, "/delete-user", url.Values{"access": {ak}}, nil),
				send(adminCall{what: "update-user of alice's key (a new secret)"}, http.MethodPatch, "/update-user", url.Values{"access": {ak}}, enc(props{Secret: newSecret})),
				send(adminCall{what: "create-user with role admin"}, http.MethodPatch, "/create-user", nil, enc(account{Access: k1, Secret: s1, Role: "admin"})),
				send(adminCall{what: "change-bucket-owner of alice's bucket to her own key"}, http.MethodPatch, "/change-bucket-owner", url.Values{"bucket": {bucket}, "owner": {mk}}, nil),
			)
		case "seaweedfs":
			calls = a.iamCalls(tg.endpoint, tg.region, mk, ms, a.principal(a.malloryNS, "keys-"+tg.backend), a.principal(a.aliceNS, tg.aliceAccess), ak, bucket, string(md["bucket"]), forge)
			a.publicACLs(tg.endpoint, tg.region, mk, ms, string(md["bucket"]))
		}
		a.openBucket(tg.impl, tg.endpoint, tg.region, mk, ms, string(md["bucket"]), send)
		refused := 0
		var allowed, answers []string
		for _, c := range calls {
			answers = append(answers, fmt.Sprintf("%s: %d", c.what, c.status))
			if c.refused() {
				refused++
			} else {
				allowed = append(allowed, fmt.Sprintf("%s: HTTP %d %s", c.what, c.status, c.body))
			}
			if c.noOp && c.status >= 200 && c.status <= 299 {
				t.Logf("%s: %s answered HTTP %d (a no-op on a user; alice's key is checked next)", a.run, c.what, c.status)
			}
		}
		api, on := "admin API", "alice's key"
		if tg.impl == "seaweedfs" {
			api, on = "IAM API", "alice's user"
		}
		t.Logf("%s: %s %s as mallory: %s", a.run, tg.impl, api, strings.Join(answers, "; "))
		a.tb.add(t, a.run, fmt.Sprintf("sibling keys on %s: %s calls with mallory's key on %s refused", tg.impl, api, on), fmt.Sprintf("%d of %d", refused, len(calls)), len(allowed) == 0 && len(calls) > 0)
		if len(allowed) > 0 {
			t.Logf("%s: %s %s calls mallory's key was allowed: %v", a.run, tg.impl, api, allowed)
		}
		// Alice's key, after the attack: still hers, still working.
		a.aliceRequests++
		if err := aliceWrites(ctx, ad, victimResource{kind: "bucket", name: bucket, endpoint: tg.endpoint, key: "after-admin-attack"}); err != nil {
			a.aliceFailed = append(a.aliceFailed, fmt.Sprintf("her %s key after mallory's %s calls: %v", tg.impl, api, err))
		}
	}
}

// principal is an access's status.principal (its IAM user on SeaweedFS),
// waited for up to a minute.
func (a *attack) principal(ns, access string) string {
	a.t.Helper()
	var cur v1.BucketyAccess
	if !wait.Until(time.Now().Add(time.Minute), func() bool {
		return a.e.k8s.Get(a.ctx, client.ObjectKey{Namespace: ns, Name: access}, &cur) == nil && cur.Status.Principal != ""
	}) {
		a.t.Fatalf("access %s/%s names no principal: %v", ns, access, cur.Status.Conditions)
	}
	return cur.Status.Principal
}

// iamCalls are mallory's IAM API calls on SeaweedFS, signed with her own
// access's key (mk/ms, of her user mu), aimed at alice's user au, her key
// ak and her bucket: read alice's user, keys and policy; make, delete and
// re-scope keys and policies of alice's; delete alice's user; make a user
// of her own; make a second key for herself (-s3.iam.selfServiceRequiresGrant
// must hold); widen her own policy to alice's bucket. A key a call returns
// is handed to forge, so the foreign-credentials figure tries it on alice's
// resources.
func (a *attack) iamCalls(endpoint, region, mk, ms, mu, au, ak, bucket, ownBucket string, forge func(access, secret string)) []adminCall {
	t, ctx := a.t, a.ctx
	mc := iam.New(endpoint, region, mk, ms, &http.Client{Timeout: 15 * time.Second})
	call := func(what string, fn func() error) adminCall {
		c := adminCall{what: what, status: http.StatusOK}
		var ie *iam.Error
		switch err := fn(); {
		case err == nil:
		case errors.As(err, &ie):
			c.status, c.body = ie.Status, ie.Code+": "+ie.Message
		default:
			t.Fatalf("IAM %s as mallory: %v", what, err)
		}
		return c
	}
	key := func(user string) func() error {
		return func() error {
			k, err := mc.CreateAccessKey(ctx, user)
			if err == nil {
				forge(k.AccessKeyID, k.SecretAccessKey)
			}
			return err
		}
	}
	everything := func(b string) []byte {
		return []byte(fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Action":["s3:*"],"Resource":["arn:aws:s3:::%s","arn:aws:s3:::%s/*"]}]}`, b, b))
	}
	forgedUser, _ := a.forgedKey()
	return []adminCall{
		call("ListUsers", func() error { _, err := mc.ListUsers(ctx, ""); return err }),
		call("GetUser of alice's user", func() error { _, err := mc.GetUser(ctx, au); return err }),
		call("ListAccessKeys of alice's user", func() error { _, err := mc.ListAccessKeys(ctx, au); return err }),
		call("ListUserPolicies of alice's user", func() error { _, err := mc.ListUserPolicies(ctx, au); return err }),
		call("GetUserPolicy buckety of alice's user", func() error { _, err := mc.GetUserPolicy(ctx, au, "buckety"); return err }),
		call("CreateAccessKey for alice's user", key(au)),
		call("DeleteAccessKey of alice's key", func() error { return mc.DeleteAccessKey(ctx, au, ak) }),
		call("PutUserPolicy buckety of alice's user (her own bucket instead of alice's)", func() error { return mc.PutUserPolicy(ctx, au, "buckety", everything(ownBucket)) }),
		call("DeleteUserPolicy buckety of alice's user", func() error { return mc.DeleteUserPolicy(ctx, au, "buckety") }),
		call("TagUser alice's user", func() error {
			return mc.TagUser(ctx, au, []iam.Tag{{Key: "buckety.yolean.se/access-uid", Value: "mallory"}})
		}),
		call("DeleteUser alice's user", func() error { return mc.DeleteUser(ctx, au) }),
		call("CreateUser of her own", func() error {
			if _, err := mc.CreateUser(ctx, "bky"+forgedUser, "/buckety/", nil); err != nil {
				return err
			}
			return key("bky" + forgedUser)()
		}),
		call("CreateAccessKey, a second key for herself", key("")),
		call("CreateAccessKey for her own user by name", key(mu)),
		call("PutUserPolicy on her own user, s3:* on alice's bucket", func() error { return mc.PutUserPolicy(ctx, mu, "more", everything(bucket)) }),
	}
}

// openBucket: mallory's writer key tries to take the limits off her own
// bucket: lift its hard quota (MinIO's admin set-bucket-quota, SeaweedFS's
// PUT ?seaweedfs-quota; the bucket has one only where the maintainer's
// parameters put it, and a key must not be able to remove it), and open it
// to anonymous readers with a bucket policy, which only the backend's
// allowAnonymousRead lets a tenant ask buckety for. Each must be refused,
// and her object must not be served to an anonymous reader.
func (a *attack) openBucket(impl, endpoint, region, mk, ms, bucket string, send func(adminCall, string, string, url.Values, []byte) adminCall) {
	t, ctx := a.t, a.ctx
	cl := s3Client(endpoint, region, mk, ms)
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("open-me"), Body: strings.NewReader("m")}); err != nil {
		a.tb.add(t, a.run, "limits on "+impl+": mallory's writes to her own bucket work", err.Error(), false)
		return
	}
	public := fmt.Sprintf(`{"Version":"2012-10-17","Statement":[{"Effect":"Allow","Principal":{"AWS":["*"]},"Action":["s3:GetObject","s3:ListBucket"],"Resource":["arn:aws:s3:::%s","arn:aws:s3:::%s/*"]}]}`, bucket, bucket)
	calls := []adminCall{}
	s3call := func(what string, fn func() error) adminCall {
		c := adminCall{what: what, status: http.StatusOK}
		var re interface{ HTTPStatusCode() int }
		if err := fn(); errors.As(err, &re) {
			c.status, c.body = re.HTTPStatusCode(), err.Error()
		} else if err != nil {
			t.Fatalf("%s as mallory on %s: %v", what, impl, err)
		}
		return c
	}
	calls = append(calls, s3call("PutBucketPolicy public read", func() error {
		_, err := cl.PutBucketPolicy(ctx, &s3.PutBucketPolicyInput{Bucket: aws.String(bucket), Policy: aws.String(public)})
		return err
	}))
	switch impl {
	case "minio":
		calls = append(calls, send(adminCall{what: "set-bucket-quota of her bucket to none"}, http.MethodPut, "/minio/admin/v3/set-bucket-quota", url.Values{"bucket": {bucket}}, []byte(`{"quota":0,"size":0,"quotatype":"hard"}`)))
	case "seaweedfs":
		st, body, err := signedAdmin(ctx, endpoint, region, mk, ms, http.MethodPut, "/"+bucket, url.Values{"seaweedfs-quota": {""}}, []byte(`{"quota_size":0,"quota_unit":"B","quota_enabled":false}`))
		if err != nil {
			t.Fatalf("PUT ?seaweedfs-quota as mallory: %v", err)
		}
		calls = append(calls, adminCall{what: "PUT ?seaweedfs-quota of her bucket to none", status: st, body: body})
	}
	var allowed []string
	refused := 0
	for _, c := range calls {
		if c.refused() {
			refused++
		} else {
			allowed = append(allowed, fmt.Sprintf("%s: HTTP %d", c.what, c.status))
		}
	}
	v, ok := anonymousVerdict(t, endpoint+"/"+bucket+"/open-me", refused, len(calls), allowed)
	a.tb.add(t, a.run, "limits on "+impl+": mallory's attempts to lift her bucket's quota or open it to anonymous readers refused", v, ok)
}

// publicACLs: on SeaweedFS mallory's writer key may send ACL headers
// (buckety grants s3:PutObjectAcl there while the bucket blocks public
// ACLs: drivers/s3/publicacls.go). She uploads with X-Amz-Acl: private, as
// rclone does, which must work; then tries to make her bucket's objects
// public: a public-read upload, PutObjectAcl and PutBucketAcl public-read,
// and removing or rewriting the bucket's public access block. Each must be
// refused, and her object must not be served to an anonymous reader.
func (a *attack) publicACLs(endpoint, region, mk, ms, bucket string) {
	t, ctx := a.t, a.ctx
	cl := s3Client(endpoint, region, mk, ms)
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("acl-private"), Body: strings.NewReader("m"), ACL: types.ObjectCannedACLPrivate}); err != nil {
		a.tb.add(t, a.run, "public ACLs on seaweedfs: mallory's upload with X-Amz-Acl: private (rclone's) works", err.Error(), false)
		return
	}
	off := &types.PublicAccessBlockConfiguration{BlockPublicAcls: aws.Bool(false), IgnorePublicAcls: aws.Bool(false), BlockPublicPolicy: aws.Bool(false), RestrictPublicBuckets: aws.Bool(false)}
	tries := []struct {
		what string
		fn   func() error
	}{
		{"public-read upload", func() error {
			_, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("acl-public"), Body: strings.NewReader("m"), ACL: types.ObjectCannedACLPublicRead})
			return err
		}},
		{"PutObjectAcl public-read", func() error {
			_, err := cl.PutObjectAcl(ctx, &s3.PutObjectAclInput{Bucket: aws.String(bucket), Key: aws.String("acl-private"), ACL: types.ObjectCannedACLPublicRead})
			return err
		}},
		{"PutBucketAcl public-read", func() error {
			_, err := cl.PutBucketAcl(ctx, &s3.PutBucketAclInput{Bucket: aws.String(bucket), ACL: types.BucketCannedACLPublicRead})
			return err
		}},
		{"DeletePublicAccessBlock", func() error {
			_, err := cl.DeletePublicAccessBlock(ctx, &s3.DeletePublicAccessBlockInput{Bucket: aws.String(bucket)})
			return err
		}},
		{"PutPublicAccessBlock all off", func() error {
			_, err := cl.PutPublicAccessBlock(ctx, &s3.PutPublicAccessBlockInput{Bucket: aws.String(bucket), PublicAccessBlockConfiguration: off})
			return err
		}},
	}
	var allowed []string
	refused := 0
	for _, try := range tries {
		if err := try.fn(); err == nil {
			allowed = append(allowed, try.what)
		} else {
			refused++
		}
	}
	v, ok := anonymousVerdict(t, endpoint+"/"+bucket+"/acl-private", refused, len(tries), allowed)
	a.tb.add(t, a.run, "public ACLs on seaweedfs: mallory's attempts to publish her bucket refused (her private-ACL upload works)", v, ok)
}

// anonymousVerdict is the verdict of an attempt to publish a bucket:
// refused of tries were refused, and an anonymous GET of url (her object)
// must answer 403; allowed lists what was not refused.
func anonymousVerdict(t *testing.T, url string, refused, tries int, allowed []string) (string, bool) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		allowed = append(allowed, fmt.Sprintf("an anonymous GET of her object answered %d", resp.StatusCode))
	}
	v := fmt.Sprintf("%d of %d refused, anonymous read %d", refused, tries, resp.StatusCode)
	if len(allowed) > 0 {
		v += " (allowed: " + strings.Join(allowed, ", ") + ")"
	}
	return v, len(allowed) == 0
}
