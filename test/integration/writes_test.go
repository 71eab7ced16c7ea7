package integration

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/test/wait"
)

// writeCounter counts the controller's writing requests to the API server
// (POST, PUT, PATCH, DELETE) by verb and resource, for one namespace plus
// its Buckety's cluster-scoped claim.
type writeCounter struct {
	ns     string
	claim  string // the name of the one claim counted
	mu     sync.Mutex
	counts map[string]int
	failed map[string]int
}

type countingTransport struct {
	c    *writeCounter
	next http.RoundTripper
}

var verbs = map[string]string{http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch", http.MethodDelete: "delete"}

func (t countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	verb, write := verbs[req.Method]
	key := ""
	if write {
		key = t.c.key(verb, req.URL.Path)
		if strings.HasSuffix(key, " bucketyclaims") && !t.c.ours(req) {
			key = "" // another test's Buckety, still reconciled by this controller
		}
	}
	resp, err := t.next.RoundTrip(req)
	if key != "" {
		t.c.mu.Lock()
		t.c.counts[key]++
		if err != nil || resp.StatusCode >= 300 {
			t.c.failed[key]++
		}
		t.c.mu.Unlock()
	}
	return resp, err
}

// ours reports whether a claim request is about the counted claim: by its
// name in the path, or, for a create, in the body.
func (c *writeCounter) ours(req *http.Request) bool {
	if strings.HasSuffix(req.URL.Path, "/"+c.claim) {
		return true
	}
	if req.GetBody == nil {
		return false
	}
	body, err := req.GetBody()
	if err != nil {
		return false
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	return err == nil && strings.Contains(string(b), `"name":"`+c.claim+`"`)
}

// key names a write as "verb resource[/subresource]", or "" when it is not
// about the counted namespace or claims.
func (c *writeCounter) key(verb, path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	// /api/v1/... or /apis/group/version/...
	rest := parts[2:]
	if parts[0] == "apis" {
		rest = parts[3:]
	}
	if len(rest) >= 2 && rest[0] == "namespaces" {
		if rest[1] != c.ns || len(rest) < 3 {
			return ""
		}
		rest = rest[2:]
	} else if len(rest) == 0 || rest[0] != "bucketyclaims" {
		return ""
	}
	k := rest[0]
	if len(rest) >= 3 {
		k += "/" + rest[2]
	}
	return verb + " " + k
}

func (c *writeCounter) snapshot() (map[string]int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return maps.Clone(c.counts), maps.Clone(c.failed)
}

func formatCounts(m map[string]int) string {
	var b strings.Builder
	total := 0
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "%s=%d ", k, m[k])
		total += m[k]
	}
	fmt.Fprintf(&b, "(total %d)", total)
	return b.String()
}

// TestWritesPerBucketyOnAPIServer counts, on the real API server, the
// writes the controller sends for one kadm Buckety with defaultAccess from
// apply until it is Ready with its Secret and the controller is idle: the
// same figure internal/controller's TestWritesPerBuckety pins on the fake
// client, here with the manager's real watches, cache and event
// broadcaster, where two reconciles may run at once.
func TestWritesPerBucketyOnAPIServer(t *testing.T) {
	needInfra(t)
	ns := namespace(t)
	wc := &writeCounter{ns: ns, claim: claims.Name("kafka", ns+".orders"), counts: map[string]int{}, failed: map[string]int{}}
	rc := rest.CopyConfig(cp.RESTConfig)
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper { return countingTransport{c: wc, next: next} })
	startControllerREST(t, configYAML("kafka", "s3"), nil, time.Hour, rc)
	b := &v1.Buckety{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec:       v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}", DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "orders-topic"}},
	}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, v1.ReasonReconciled, waitTimeout)
	secret(t, ns, "orders-topic")
	// Idle: nothing more is written (events are sent asynchronously).
	var got, failed map[string]int
	wait.For(t, waitTimeout, "the controller idle", func() (bool, string) {
		before, _ := wc.snapshot()
		time.Sleep(2 * time.Second)
		got, failed = wc.snapshot()
		return maps.Equal(before, got), formatCounts(got)
	})
	// Six, the design's minimum (internal/controller TestWritesPerBuckety
	// says which is which); no event for a plain create.
	want := map[string]int{
		"patch bucketies":              1,
		"create bucketyclaims":         1,
		"patch bucketies/status":       1,
		"create bucketyaccesses":       1,
		"create secrets":               1,
		"patch bucketyaccesses/status": 1,
	}
	t.Logf("apply to Ready on the API server: %s; refused: %s", formatCounts(got), formatCounts(failed))
	if !maps.Equal(got, want) {
		t.Errorf("writes from apply to Ready: want %s, got %s (refused: %s)", formatCounts(want), formatCounts(got), formatCounts(failed))
	}
}
