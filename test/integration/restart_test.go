package integration

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// secretReads counts a controller's reads of Secrets' data: GETs of one
// Secret in ns, and lists of Secrets with their data (not the cache's
// metadata-only lists).
type secretReads struct {
	ns   string
	mu   sync.Mutex
	gets map[string]int
	full int
}

type secretReadTransport struct {
	c    *secretReads
	next http.RoundTripper
}

func (t secretReadTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet && !strings.Contains(req.Header.Get("Accept"), "PartialObjectMetadata") && req.URL.Query().Get("watch") == "" {
		t.c.mu.Lock()
		switch p := req.URL.Path; {
		case strings.HasPrefix(p, "/api/v1/namespaces/"+t.c.ns+"/secrets/"):
			t.c.gets[strings.TrimPrefix(p, "/api/v1/namespaces/"+t.c.ns+"/secrets/")]++
		case p == "/api/v1/secrets":
			t.c.full++
		}
		t.c.mu.Unlock()
	}
	return t.next.RoundTrip(req)
}

// startCountingSecretReads starts a controller with yaml whose reads of
// Secrets' data in ns are counted.
func startCountingSecretReads(t *testing.T, yaml, ns string) *secretReads {
	t.Helper()
	reads, _ := startCountingSecretReadsRun(t, yaml, ns)
	return reads
}

// startCountingSecretReadsRun is startCountingSecretReads, returning the
// controller too.
func startCountingSecretReadsRun(t *testing.T, yaml, ns string) (*secretReads, *controllerRun) {
	t.Helper()
	reads := &secretReads{ns: ns, gets: map[string]int{}}
	rc := rest.CopyConfig(cp.RESTConfig)
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper { return secretReadTransport{c: reads, next: next} })
	return reads, startControllerREST(t, yaml, nil, time.Hour, rc)
}

// idle waits until the controller has read nothing for 2 s, and returns
// what it read in all.
func (r *secretReads) idle(t *testing.T) (gets map[string]int, full int) {
	t.Helper()
	wait.For(t, waitTimeout, "the controller idle", func() (bool, string) {
		r.mu.Lock()
		n0 := r.full + len(r.gets)
		r.mu.Unlock()
		time.Sleep(2 * time.Second)
		r.mu.Lock()
		defer r.mu.Unlock()
		gets, full = map[string]int{}, r.full
		for k, v := range r.gets {
			gets[k] = v
		}
		return r.full+len(r.gets) == n0, ""
	})
	return gets, full
}

// accessWriting finds the access of ns whose Secret is secretName.
func accessWriting(t *testing.T, ns, secretName string) *v1.BucketyAccess {
	t.Helper()
	var list v1.BucketyAccessList
	if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		if list.Items[i].Spec.CredentialsSecretName == secretName {
			return &list.Items[i]
		}
	}
	t.Fatalf("no access in %s writes Secret %s", ns, secretName)
	return nil
}

// TestRestartReadsOnlyWhatChanged: each access's status records the
// version of its Secret the controller wrote or verified
// (status.secret), so a controller that starts reads no Secret nobody
// touched; it still finds and repairs a Secret edited by hand while no
// controller ran (one GET, then the repair); and an access whose status
// records no Secret (written by an earlier release) is read in the one
// paged list of buckety's Secrets, not with a GET of its own, and has it
// recorded after.
func TestRestartReadsOnlyWhatChanged(t *testing.T) {
	needInfra(t)
	ctx := context.Background()
	ns := namespace(t)
	first := startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	names := []string{"orders", "invoices", "payments"}
	for _, n := range names {
		create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns},
			Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}." + n, DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: n + "-topic"}}})
	}
	for _, n := range names {
		waitCondition(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns}}, v1.ConditionReady, metav1.ConditionTrue, v1.ReasonReconciled, waitTimeout)
	}
	recorded := func(n string) (bool, string) {
		s, a := secret(t, ns, n+"-topic"), accessWriting(t, ns, n+"-topic")
		got := a.Status.Secret
		return got != nil && got.UID == string(s.UID) && got.ResourceVersion == s.ResourceVersion, fmt.Sprintf("%s: status.secret %+v, Secret at %s", n, got, s.ResourceVersion)
	}
	for _, n := range names {
		wait.For(t, waitTimeout, n+"'s Secret recorded in its access's status", func() (bool, string) { return recorded(n) })
	}
	first.stop(t)

	// Edited by hand while no controller runs.
	s := secret(t, ns, "orders-topic")
	want := string(s.Data["topic"])
	before := s.DeepCopy()
	s.Data["topic"] = []byte("someone-elses-topic")
	if err := k8s.Patch(ctx, s, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
	// As an earlier release left it: no status.secret.
	legacy := accessWriting(t, ns, "payments-topic")
	if err := k8s.Status().Patch(ctx, legacy, client.RawPatch(types.MergePatchType, []byte(`{"status":{"secret":null}}`))); err != nil {
		t.Fatal(err)
	}
	if accessWriting(t, ns, "payments-topic").Status.Secret != nil {
		t.Fatal("status.secret of payments' access: want it removed")
	}

	reads, second := startCountingSecretReadsRun(t, configYAML("kafka", "s3"), ns)
	wait.For(t, waitTimeout, "the edited Secret repaired", func() (bool, string) {
		got := string(secret(t, ns, "orders-topic").Data["topic"])
		return got == want, "topic=" + got
	})
	for _, n := range []string{"orders", "payments"} {
		wait.For(t, waitTimeout, n+"'s Secret recorded again", func() (bool, string) { return recorded(n) })
	}
	gets, full := reads.idle(t)
	t.Logf("Secret reads after the restart: %d full lists, GETs %v", full, gets)
	if full < 1 {
		t.Errorf("want the Secret of the access without status.secret read in a list after the restart, got no list")
	}
	if len(gets) != 1 || gets["orders-topic"] != 1 {
		t.Errorf("after a restart, want one GET, of the Secret edited by hand (orders-topic), and none of the others; got %v", gets)
	}
	for _, n := range []string{"invoices", "payments"} {
		if got := string(secret(t, ns, n+"-topic").Data["topic"]); !strings.HasSuffix(got, "."+n) {
			t.Errorf("Secret %s-topic: topic %q", n, got)
		}
	}
	second.stop(t)

	// Started again with nothing touched: no Secret is read at all.
	reads = startCountingSecretReads(t, configYAML("kafka", "s3"), ns)
	for _, n := range names {
		waitCondition(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns}}, v1.ConditionReady, metav1.ConditionTrue, v1.ReasonReconciled, waitTimeout)
	}
	if gets, full := reads.idle(t); full != 0 || len(gets) != 0 {
		t.Errorf("a restart with nothing changed: want no Secret read, got %d lists and GETs %v", full, gets)
	}
}
