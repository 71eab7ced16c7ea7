package integration

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/wait"
)

// hungS3 is an endpoint that accepts connections and reads requests but
// never answers them, as a server stuck behind a load balancer does. It
// records the first path segment (the bucket, path-style) of each
// request.
type hungS3 struct {
	mu      sync.Mutex
	buckets map[string]int
	release chan struct{}
}

func startHungS3(t *testing.T) (*hungS3, string) {
	t.Helper()
	h := &hungS3{buckets: map[string]int{}, release: make(chan struct{})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seg, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		h.mu.Lock()
		h.buckets[seg]++
		h.mu.Unlock()
		select {
		case <-r.Context().Done():
		case <-h.release:
		}
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
			t.Errorf("hung endpoint: %v", err)
		}
	}()
	t.Cleanup(func() {
		close(h.release)
		if err := srv.Close(); err != nil {
			t.Errorf("close the hung endpoint: %v", err)
		}
	})
	return h, "http://" + ln.Addr().String()
}

// asked reports how many of names the endpoint was asked about.
func (h *hungS3) asked(names []string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	n := 0
	for _, name := range names {
		if h.buckets[name] > 0 {
			n++
		}
	}
	return n
}

// TestRecordMarkerLeavesAHungBackendAfterOneRead: the marker of retained
// resources' owner records runs one loop for every backend. On a backend
// that accepts connections and never answers, each flagged claim's record
// read took its whole request timeout, one after the other: a hundred
// such claims held the marking of every other backend's for the length of
// a hundred timeouts, every round. A round now leaves a backend at its
// first read that it could not reach: three flagged claims on the hung
// backend cost one read per round, not three.
func TestRecordMarkerLeavesAHungBackendAfterOneRead(t *testing.T) {
	needInfra(t)
	hung, endpoint := startHungS3(t)
	c := harness.S3Server(s3driver.ImplMinIO, endpoint, "us-east-1", "TEST_S3_ACCESS_KEY", "TEST_S3_SECRET_KEY")
	c.RequestTimeout = harness.Duration(2 * time.Second)
	be := harness.S3("hung", c)
	ctx := context.Background()
	ns := namespace(t)
	var names []string
	for i, name := range []string{"kept-a", "kept-b", "kept-c"} {
		bucket := ns + "-" + name
		names = append(names, bucket)
		owner := v1.ClaimOwner{Namespace: ns, Name: name, UID: "uid-" + name + "-" + string(rune('0'+i))}
		cl := &v1.BucketyClaim{ObjectMeta: metav1.ObjectMeta{Name: claims.Name("hung", bucket)},
			Spec: v1.BucketyClaimSpec{Backend: "hung", ResourceName: bucket, Owner: owner, Phase: v1.ClaimCreated,
				Retained: &v1.ClaimRetained{Since: metav1.Now(), Owner: owner, Phase: v1.ClaimCreated, RecordUnmarked: true}}}
		if err := k8s.Create(ctx, cl); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if err := k8s.Delete(context.Background(), cl); err != nil {
				t.Errorf("delete claim %s: %v", cl.Name, err)
			}
		})
	}
	const interval = 30 * time.Second
	startControllerWith(t, installationYAML("east", be), nil, func(o *appcontroller.Options) {
		o.RESTConfig, o.Recheck, o.OwnerCheck = cp.RESTConfig, time.Hour, interval
	})
	wait.For(t, interval+waitTimeout, "the marker's first read of a flagged claim's record", func() (bool, string) {
		return hung.asked(names) > 0, "not asked yet"
	})
	// Three request timeouts and more, well inside the round's interval:
	// the loop that read one claim after the other had asked about all
	// three by then.
	time.Sleep(3*2*time.Second + 3*time.Second)
	if got := hung.asked(names); got != 1 {
		t.Errorf("in one round: want the hung backend asked about 1 flagged claim, then left until the next round; got %d of %d", got, len(names))
	}
}
