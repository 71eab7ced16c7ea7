package scale

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// scopedBackend is the kadm backend on the broker with SASL/SCRAM and ACLs
// enforced, where every access gets its own user and ACLs.
const (
	scopedBackend  = "kafka-scoped"
	scopedPassword = "scale-superuser"
)

// credentialAPIs are the Kafka APIs of per-access users and ACLs.
var credentialAPIs = []string{"DescribeUserSCRAMCredentials", "AlterUserSCRAMCredentials", "DescribeACLs", "CreateACLs", "DeleteACLs"}

// scopedFigures provisions n Bucketies, each with its defaultAccess, on the
// scoped backend and compares them with the unscoped figure of the same
// run: the time until all are Ready, and the Kafka requests for users and
// ACLs per access. After a cold start it rebuilds their control plane
// (rebuildFigures). Then it deletes them, on the rebuilt control plane, and
// counts what revocation costs, and that no user or ACL is left.
func scopedFigures(t *testing.T, e *env, tb *table, n int, unscoped provisioned, args []string) {
	t.Helper()
	ctx := context.Background()
	ns := "scale-scoped"
	if err := e.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("s%05d", i)
	}
	params := func(string) map[string]string {
		return map[string]string{"partitions": "1", "config.retention.ms": retention}
	}
	before := e.scopedRequests()
	prov := provision(t, e, ns, names, scopedBackend, params, time.Duration(n)*700*time.Millisecond+5*time.Minute)
	reqs := e.scopedRequests().minus(before)
	e.checkScopedSecrets(ctx, ns, names)

	// Issue 36: a user of its own per access at ≤ 1.1× the unscoped time
	// (issue 33 had asked ≤ 1.3×).
	goal := time.Duration(float64(unscoped.total) * 1.1)
	tb.add("kadm scoped: all Ready with their Secrets and own users (total)", n, secs(prov.total), "≤ 1.1 × unscoped = "+secs(goal), ptr(prov.total <= goal),
		fmt.Sprintf("%.2f× unscoped", prov.total.Seconds()/unscoped.total.Seconds()))
	cred := credentialCounts(reqs)
	perAccess := float64(cred.total()) / float64(n)
	tb.add("kadm scoped: Kafka requests for users and ACLs, per access", n, fmt.Sprintf("%.3f = %s", perAccess, cred), "≤ 2", ptr(perAccess <= 2), "")
	tb.add("kadm scoped: all Kafka requests to provision", n, reqs.String(), "", nil, "")
	tb.add("kadm scoped: controller API writes to provision, per Buckety (with access, Secret, claim, credential, events)", n,
		fmt.Sprintf("%.2f = %s", float64(prov.writes.total())/float64(n), prov.writes), "", nil, "")

	// A cold start with the scoped accesses in place: each Secret's
	// credential comes from the start's one list of Secrets (no GET per
	// access), and the records' digests match it, so no user or ACL is
	// written.
	e.stopController()
	var all v1.BucketyList
	if err := e.k8s.List(ctx, &all); err != nil {
		t.Fatal(err)
	}
	gets0, cred0 := e.secretGets(), e.scopedRequests()
	cs := coldStart(t, e, args, len(all.Items), true, nil)
	gets := e.secretGets() - gets0
	credWrites := counts{}
	for api, v := range credentialCounts(e.scopedRequests().minus(cred0)) {
		if api == "AlterUserSCRAMCredentials" || api == "CreateACLs" || api == "DeleteACLs" {
			credWrites[api] = v
		}
	}
	tb.add(fmt.Sprintf("kadm scoped: cold start with %d Bucketies (%d scoped): all re-verified", len(all.Items), n), n, secs(cs.elapsed), "", nil, "")
	tb.add("kadm scoped: cold start: Secret GETs / user and ACL writes / API writes", n, fmt.Sprintf("%d / %d / %d", gets, credWrites.total(), cs.writes.total()), "0 / 0 / 0",
		ptr(gets == 0 && credWrites.total() == 0 && cs.writes.total() == 0), "")

	// A rebuild of the cluster from git (new etcd, same installation, the
	// same manifests). The deletion below runs on the rebuilt control
	// plane; then the run goes on with the first.
	restore := rebuildFigures(t, e, tb, ns, names, params, prov, args)

	// Deletion revokes every user and its ACLs before the finalizers go.
	before = e.scopedRequests()
	gone := deleteAllIn(t, e, ns, 5*time.Minute+time.Duration(n)*200*time.Millisecond)
	e.quiet(15 * time.Second)
	revoke := credentialCounts(e.scopedRequests().minus(before))
	tb.add("kadm scoped: all deleted, users and ACLs revoked", n, secs(gone), "", nil, "")
	tb.add("kadm scoped: Kafka requests for users and ACLs to revoke, per access", n, fmt.Sprintf("%.3f = %s", float64(revoke.total())/float64(n), revoke), "", nil, "")
	users, acls := e.scopedLeftovers(ctx)
	tb.add("kadm scoped: buckety users / ACLs left after deletion", n, fmt.Sprintf("%d / %d", users, acls), "0 / 0", ptr(users == 0 && acls == 0), "")
	if users != 0 || acls != 0 {
		t.Errorf("after deleting every scoped Buckety: %d buckety users and %d of their ACLs left on the broker", users, acls)
	}
	var cl v1.BucketyCredentialList
	if err := e.k8s.List(ctx, &cl); err != nil {
		t.Fatal(err)
	}
	if len(cl.Items) != 0 {
		t.Errorf("after deleting every scoped Buckety: %d BucketyCredentials left, e.g. %s", len(cl.Items), cl.Items[0].Name)
	}
	// Back to the first control plane (not on a fatal failure above: the
	// test's cleanup stops every process then).
	restore()
}

// scopedRequests reads the scoped broker's request counts; the harness
// sends it nothing while they are compared.
func (e *env) scopedRequests() counts {
	e.t.Helper()
	got, err := e.scoped.Requests()
	if err != nil {
		e.t.Fatal(err)
	}
	return counts(got)
}

func credentialCounts(c counts) counts {
	out := counts{}
	for _, api := range credentialAPIs {
		if c[api] != 0 {
			out[api] = c[api]
		}
	}
	return out
}

// checkScopedSecrets asserts that every Secret names a user of its own,
// and that a sample of them produce to their own topic with nothing but
// the Secret (the harness's requests come after the counts were read).
func (e *env) checkScopedSecrets(ctx context.Context, ns string, names []string) {
	e.t.Helper()
	users := map[string]string{}
	for i, name := range names {
		var s corev1.Secret
		if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name + "-creds"}, &s); err != nil {
			e.t.Fatal(err)
		}
		u := string(s.Data["sasl.username"])
		if u == "" || users[u] != "" {
			e.t.Fatalf("Secret %s: want a sasl.username of its own, got %q (also in %s's)", s.Name, u, users[u])
		}
		users[u] = name
		if i%max(1, len(names)/5) != 0 {
			continue
		}
		cl, err := kafka.SecretClient(s.Data, kgo.DisableIdempotentWrite())
		if err != nil {
			e.t.Fatal(err)
		}
		pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		err = cl.ProduceSync(pctx, &kgo.Record{Topic: string(s.Data["topic"]), Value: []byte("v")}).FirstErr()
		cancel()
		cl.Close()
		if err != nil {
			e.t.Errorf("Secret %s: produce to its own topic %s: %v", s.Name, s.Data["topic"], err)
		}
	}
}

// scopedLeftovers counts buckety's users (named bky. or bky-) and their ACLs on
// the scoped broker, as its superuser.
func (e *env) scopedLeftovers(ctx context.Context) (users, acls int) {
	e.t.Helper()
	cl := e.scopedAdmin()
	defer cl.Close()
	got, all, err := kafka.BucketyCredentials(ctx, cl)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, list := range all {
		acls += len(list)
	}
	return len(got), acls
}
