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
	var accesses v1.BucketyAccessList
	if err := e.k8s.List(ctx, &accesses); err != nil {
		return nil, nil, nil, 0, err
	}
	var creds v1.BucketyCredentialList
	if err := e.k8s.List(ctx, &creds); err != nil {
		return nil, nil, nil, 0, err
	}
	liveAccess := map[string]bool{}
	for _, a := range accesses.Items {
		liveAccess[string(a.UID)] = true
	}
	held := map[string]bool{} // principals whose record's access exists
	for _, c := range creds.Items {
		if liveAccess[c.Spec.Owner.UID] {
			held[c.Spec.Principal] = true
		}
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
	for _, a := range accesses.Items {
		if a.Namespace != ns || a.DeletionTimestamp != nil || !ready(a.Status.Conditions, a.Generation) {
			continue
		}
		var s corev1.Secret
		if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: a.Spec.CredentialsSecretName}, &s); err != nil {
			unbacked = append(unbacked, fmt.Sprintf("%s: Secret %s: %v", a.Name, a.Spec.CredentialsSecretName, err))
			continue
		}
		if _, kafka := s.Data["topic"]; !kafka {
			continue
		}
		u := string(s.Data["sasl.username"])
		if d, ok := users[u]; !ok || d.Err != nil || len(d.CredInfos) == 0 {
			unbacked = append(unbacked, fmt.Sprintf("%s: user %q", a.Name, u))
			continue
		}
		scoped++
	}
	sort.Strings(orphanUsers)
	sort.Strings(orphanACLs)
	sort.Strings(unbacked)
	return orphanUsers, orphanACLs, unbacked, scoped, nil
}
