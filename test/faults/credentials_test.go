package faults

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// credentialFigures checks per-access credentials after a run: on the
// broker, buckety's SCRAM users (named bky.) and their ACLs that no
// existing access holds (through its BucketyCredential), and the run's
// Ready accesses whose Secret names a user the broker does not have. Each
// must be 0 (and with wantScoped, some accesses must have a user); the counts are polled for up to converge, as revocations of
// the run's last deletions may still be on their way.
func (e *env) credentialFigures(t *testing.T, tb *table, run, ns string, converge time.Duration, wantScoped bool) {
	t.Helper()
	var orphanUsers, orphanACLs, unbacked []string
	var scoped int
	check := func() bool {
		var err error
		orphanUsers, orphanACLs, unbacked, scoped, err = e.credentialProblems(context.Background(), ns)
		if err != nil {
			t.Logf("%s: credential check: %v", run, err)
			return false
		}
		return len(orphanUsers)+len(orphanACLs)+len(unbacked) == 0
	}
	wait.Until(time.Now().Add(converge), check)
	tb.add(t, run, "Ready kafka accesses with a user of their own", scoped, scoped > 0 || !wantScoped)
	tb.add(t, run, "SCRAM users without an access", count(orphanUsers), len(orphanUsers) == 0)
	tb.add(t, run, "ACLs of principals without an access", count(orphanACLs), len(orphanACLs) == 0)
	tb.add(t, run, "accesses without their user", count(unbacked), len(unbacked) == 0)
	e.s3KeyFigures(t, tb, run, e.s3, "", ns, converge)
}

// s3KeyFigures checks the keys buckety minted on srv after a run: keys
// (IAM: users) that no existing access holds, Ready accesses (in ns, or
// every namespace when ns is empty) whose Secret holds a key srv does not
// have, or, on an IAM server, one of another user; and on an IAM server
// the keys of buckety's users that no access's Secret holds (one left by a
// grant that stopped half way). Each must be 0; they are polled for up to
// converge. label, when set, tells the server's rows apart from the
// harness's own S3 server's.
func (e *env) s3KeyFigures(t *testing.T, tb *table, run string, srv *s3test.Server, label, ns string, converge time.Duration) {
	t.Helper()
	var pr s3KeyProblems
	wait.Until(time.Now().Add(converge), func() bool {
		var err error
		pr, err = e.s3CredentialProblems(context.Background(), srv, ns)
		if err != nil {
			t.Logf("%s: S3 credential check on %s: %v", run, srv.Implementation, err)
			return false
		}
		return len(pr.orphanKeys)+len(pr.keyless)+len(pr.unheld) == 0
	})
	if label != "" {
		label = " (" + label + ")"
	}
	tb.add(t, run, "Ready s3 accesses with a key of their own"+label, pr.keyed, true)
	tb.add(t, run, "S3 keys without an access"+label, count(pr.orphanKeys), len(pr.orphanKeys) == 0)
	tb.add(t, run, "s3 accesses without their key"+label, count(pr.keyless), len(pr.keyless) == 0)
	if isIAM(srv) {
		tb.add(t, run, "IAM keys of buckety's users that no Secret holds"+label, count(pr.unheld), len(pr.unheld) == 0)
	}
}

// isIAM reports an S3 server whose keys per access are IAM users.
func isIAM(srv *s3test.Server) bool { return srv.Implementation == "seaweedfs" }

// s3KeyProblems are what s3CredentialProblems finds on one server.
type s3KeyProblems struct {
	// orphanKeys are principals no existing access holds; keyless Ready
	// accesses whose Secret's key the server does not have (or not for
	// the access's own principal); unheld, on an IAM server, keys of
	// buckety's users that no existing access's Secret holds.
	orphanKeys, keyless, unheld []string
	// keyed counts the Ready accesses with a key of their own.
	keyed int
}

// s3CredentialProblems lists the keys buckety minted on srv that no
// existing access holds (through its BucketyCredential), and Ready s3
// accesses on srv in ns ("" for every namespace) whose Secret holds a key
// the server does not have for the access's principal (or the server's
// root key); on an IAM server also the keys of buckety's users that no
// existing access's Secret holds.
func (e *env) s3CredentialProblems(ctx context.Context, srv *s3test.Server, ns string) (s3KeyProblems, error) {
	var pr s3KeyProblems
	// principals: keys (MinIO, VersityGW) or IAM users (SeaweedFS);
	// userOf: the principal of each access key that works for one.
	principals, userOf, err := harness.S3KeyOwners(ctx, srv)
	if err != nil {
		return pr, err
	}
	held, secrets, err := e.heldAndReady(ctx, ns, "bucket")
	if err != nil {
		return pr, err
	}
	for k := range principals {
		if !held[k] {
			pr.orphanKeys = append(pr.orphanKeys, k)
		}
	}
	for _, r := range secrets {
		if r.problem != "" {
			pr.keyless = append(pr.keyless, r.problem)
			continue
		}
		if !sameEndpoint(string(r.data["endpoint"]), srv.Endpoint) {
			continue // another server's
		}
		k := string(r.data["accessKeyID"])
		u, ok := userOf[k]
		// On an IAM server the key must be one of the access's own
		// user's (status.principal); elsewhere the key is the principal.
		if !ok || !principals[u] || (isIAM(srv) && u != r.principal) {
			pr.keyless = append(pr.keyless, fmt.Sprintf("%s: key %q (minted for %q; the access's principal %q)", r.name, k, u, r.principal))
			continue
		}
		pr.keyed++
	}
	if isIAM(srv) {
		// The keys in every existing access's Secret, Ready or not, in
		// any namespace.
		all, err := e.accessSecretKeys(ctx, srv.Endpoint)
		if err != nil {
			return pr, err
		}
		for k, u := range userOf {
			if !all[k] {
				pr.unheld = append(pr.unheld, u+": "+k)
			}
		}
	}
	sort.Strings(pr.orphanKeys)
	sort.Strings(pr.keyless)
	sort.Strings(pr.unheld)
	return pr, nil
}

// sameEndpoint compares two endpoint URLs, a trailing slash aside.
func sameEndpoint(a, b string) bool { return strings.TrimRight(a, "/") == strings.TrimRight(b, "/") }

// accessSecretKeys returns the access keys in the Secrets of every
// existing BucketyAccess whose Secret names endpoint.
func (e *env) accessSecretKeys(ctx context.Context, endpoint string) (map[string]bool, error) {
	var accesses v1.BucketyAccessList
	if err := e.k8s.List(ctx, &accesses); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, a := range accesses.Items {
		var sec corev1.Secret
		err := e.k8s.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: a.Spec.CredentialsSecretName}, &sec)
		if apierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if sameEndpoint(string(sec.Data["endpoint"]), endpoint) && len(sec.Data["accessKeyID"]) > 0 {
			out[string(sec.Data["accessKeyID"])] = true
		}
	}
	return out, nil
}

// credentialProblems lists buckety users and ACLs without an access, and
// Ready accesses in ns whose Secret's user is missing; scoped counts the
// Ready accesses in ns that have a user.
func (e *env) credentialProblems(ctx context.Context, ns string) (orphanUsers, orphanACLs, unbacked []string, scoped int, err error) {
	cl, err := kgo.NewClient(e.superuser()...)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	defer cl.Close()
	users, userACLs, err := kafka.BucketyCredentials(ctx, cl)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	held, secrets, err := e.heldAndReady(ctx, ns, "topic")
	if err != nil {
		return nil, nil, nil, 0, err
	}
	for u, list := range userACLs {
		if !held[u] {
			for _, x := range list {
				orphanACLs = append(orphanACLs, u+" on "+x)
			}
		}
	}
	for u := range users {
		if !held[u] {
			orphanUsers = append(orphanUsers, u)
		}
	}
	for _, r := range secrets {
		if r.problem != "" {
			unbacked = append(unbacked, r.problem)
			continue
		}
		u := string(r.data["sasl.username"])
		if d, ok := users[u]; !ok || d.Err != nil || len(d.CredInfos) == 0 {
			unbacked = append(unbacked, fmt.Sprintf("%s: user %q", r.name, u))
			continue
		}
		scoped++
	}
	sort.Strings(orphanUsers)
	sort.Strings(orphanACLs)
	sort.Strings(unbacked)
	return orphanUsers, orphanACLs, unbacked, scoped, nil
}

// readySecret is a Ready access's Secret: its data, or why it could not be
// read, and the access's principal (status.principal).
type readySecret struct {
	name, problem, principal string
	data                     map[string][]byte
}

// heldAndReady returns the principals whose BucketyCredential's access
// still exists, and the Secrets of the Ready accesses in ns ("" for every
// namespace) whose Secret has driverKey (topic: kadm; bucket: s3).
func (e *env) heldAndReady(ctx context.Context, ns, driverKey string) (map[string]bool, []readySecret, error) {
	var accesses v1.BucketyAccessList
	if err := e.k8s.List(ctx, &accesses); err != nil {
		return nil, nil, err
	}
	var creds v1.BucketyCredentialList
	if err := e.k8s.List(ctx, &creds); err != nil {
		return nil, nil, err
	}
	live := map[string]bool{}
	for _, a := range accesses.Items {
		live[string(a.UID)] = true
	}
	held := map[string]bool{}
	for _, c := range creds.Items {
		if live[c.Spec.Owner.UID] {
			held[c.Spec.Principal] = true
		}
	}
	var out []readySecret
	for _, a := range accesses.Items {
		if (ns != "" && a.Namespace != ns) || a.DeletionTimestamp != nil || !ready(a.Status.Conditions, a.Generation) {
			continue
		}
		var sec corev1.Secret
		if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: a.Namespace, Name: a.Spec.CredentialsSecretName}, &sec); err != nil {
			out = append(out, readySecret{name: a.Name, problem: fmt.Sprintf("%s: Secret %s: %v", a.Name, a.Spec.CredentialsSecretName, err)})
			continue
		}
		if _, ok := sec.Data[driverKey]; ok {
			out = append(out, readySecret{name: a.Namespace + "/" + a.Name, principal: a.Status.Principal, data: sec.Data})
		}
	}
	return held, out, nil
}
