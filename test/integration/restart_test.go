package integration

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	reads := &secretReads{ns: ns, gets: map[string]int{}}
	rc := rest.CopyConfig(cp.RESTConfig)
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper { return secretReadTransport{c: reads, next: next} })
	startControllerREST(t, yaml, nil, time.Hour, rc)
	return reads
}

// TestRestartReadsEverySecretOnce: a controller that starts reads the
// data of buckety's Secrets in one paged list, not one GET per access; it
// still finds and repairs a Secret edited by hand while no controller ran
// (one GET, then the repair), and reads nothing of the Secrets nobody
// touched.
func TestRestartReadsEverySecretOnce(t *testing.T) {
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
	first.stop(t)

	// Edited by hand while no controller runs.
	s := secret(t, ns, "orders-topic")
	want := string(s.Data["topic"])
	before := s.DeepCopy()
	s.Data["topic"] = []byte("someone-elses-topic")
	if err := k8s.Patch(ctx, s, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}

	reads := startCountingSecretReads(t, configYAML("kafka", "s3"), ns)
	wait.For(t, waitTimeout, "the edited Secret repaired", func() (bool, string) {
		got := string(secret(t, ns, "orders-topic").Data["topic"])
		return got == want, "topic=" + got
	})
	// Every access passed (idle: no more reads for 2 s).
	var gets map[string]int
	var full int
	wait.For(t, waitTimeout, "the controller idle", func() (bool, string) {
		reads.mu.Lock()
		n0 := reads.full + len(reads.gets)
		reads.mu.Unlock()
		time.Sleep(2 * time.Second)
		reads.mu.Lock()
		defer reads.mu.Unlock()
		gets, full = map[string]int{}, reads.full
		for k, v := range reads.gets {
			gets[k] = v
		}
		return reads.full+len(reads.gets) == n0, ""
	})
	t.Logf("Secret reads after the restart: %d full lists, GETs %v", full, gets)
	if full < 1 {
		t.Errorf("want buckety's Secrets read in a list after the restart, got none")
	}
	if len(gets) != 1 || gets["orders-topic"] != 1 {
		t.Errorf("after a restart, want one GET, of the Secret edited by hand (orders-topic), and none of the others; got %v", gets)
	}
	for _, n := range []string{"invoices", "payments"} {
		if got := string(secret(t, ns, n+"-topic").Data["topic"]); !strings.HasSuffix(got, "."+n) {
			t.Errorf("Secret %s-topic: topic %q", n, got)
		}
	}
}
