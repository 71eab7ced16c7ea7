package faults

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
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
	until(time.Now().Add(converge), check)
	tb.add(t, run, "Ready kafka accesses with a user of their own", scoped, scoped > 0 || !wantScoped)
	tb.add(t, run, "SCRAM users without an access", count(orphanUsers), len(orphanUsers) == 0)
	tb.add(t, run, "ACLs of principals without an access", count(orphanACLs), len(orphanACLs) == 0)
	tb.add(t, run, "accesses without their user", count(unbacked), len(unbacked) == 0)
	var orphanKeys, keyless []string
	var keyed int
	until(time.Now().Add(converge), func() bool {
		var err error
		orphanKeys, keyless, keyed, err = e.s3CredentialProblems(context.Background(), ns)
		if err != nil {
			t.Logf("%s: S3 credential check: %v", run, err)
			return false
		}
		return len(orphanKeys)+len(keyless) == 0
	})
	tb.add(t, run, "Ready s3 accesses with a key of their own", keyed, true)
	tb.add(t, run, "S3 keys without an access", count(orphanKeys), len(orphanKeys) == 0)
	tb.add(t, run, "s3 accesses without their key", count(keyless), len(keyless) == 0)
}

// s3CredentialProblems lists the keys buckety minted on the S3 server that
// no existing access holds (through its BucketyCredential), and Ready s3
// accesses in ns whose Secret holds a key the server does not have (or the
// server's root key); keyed counts the Ready s3 accesses in ns with a key
// of their own.
func (e *env) s3CredentialProblems(ctx context.Context, ns string) (orphanKeys, keyless []string, keyed int, err error) {
	keys, err := harness.MintedS3Keys(ctx, e.s3)
	if err != nil {
		return nil, nil, 0, err
	}
	held, secrets, err := e.heldAndReady(ctx, ns, "bucket")
	if err != nil {
		return nil, nil, 0, err
	}
	for k := range keys {
		if !held[k] {
			orphanKeys = append(orphanKeys, k)
		}
	}
	for _, r := range secrets {
		if r.problem != "" {
			keyless = append(keyless, r.problem)
			continue
		}
		if k := string(r.data["accessKeyID"]); !keys[k] {
			keyless = append(keyless, fmt.Sprintf("%s: key %q", r.name, k))
			continue
		}
		keyed++
	}
	sort.Strings(orphanKeys)
	sort.Strings(keyless)
	return orphanKeys, keyless, keyed, nil
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
// read.
type readySecret struct {
	name, problem string
	data          map[string][]byte
}

// heldAndReady returns the principals whose BucketyCredential's access
// still exists, and the Secrets of the Ready accesses in ns whose Secret
// has driverKey (topic: kadm; bucket: s3).
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
		if a.Namespace != ns || a.DeletionTimestamp != nil || !ready(a.Status.Conditions, a.Generation) {
			continue
		}
		var sec corev1.Secret
		if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.Spec.CredentialsSecretName}, &sec); err != nil {
			out = append(out, readySecret{name: a.Name, problem: fmt.Sprintf("%s: Secret %s: %v", a.Name, a.Spec.CredentialsSecretName, err)})
			continue
		}
		if _, ok := sec.Data[driverKey]; ok {
			out = append(out, readySecret{name: a.Name, data: sec.Data})
		}
	}
	return held, out, nil
}
