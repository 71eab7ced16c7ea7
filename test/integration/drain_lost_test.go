package integration

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/test/harness"
	s3test "github.com/Yolean/buckety-controller/test/s3"
)

// lostStatusReply loses, once armed, the reply to the first status patch
// whose body holds marker: the patch reaches the API server and is
// committed, then the controller waits until the test releases it and is
// told the request failed. From the moment the patch is sent, hold keeps
// the controller's watch events back (a cache that has not caught up).
type lostStatusReply struct {
	statusMarker
	hold      *heldWatches
	committed chan struct{}
	release   chan struct{}
}

// statusMarker picks, once armed, the first status patch whose body holds
// marker.
type statusMarker struct {
	marker string
	mu     sync.Mutex
	armed  bool
}

func (m *statusMarker) arm() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.armed = true
}

// take reports whether req is that patch, and disarms; the body stays
// readable for the request.
func (m *statusMarker) take(req *http.Request) (bool, error) {
	if req.Method != http.MethodPatch || !strings.HasSuffix(req.URL.Path, "/status") || req.Body == nil {
		return false, nil
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return false, err
	}
	if err := req.Body.Close(); err != nil {
		return false, err
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	m.mu.Lock()
	defer m.mu.Unlock()
	hit := m.armed && bytes.Contains(body, []byte(m.marker))
	if hit {
		m.armed = false
	}
	return hit, nil
}

// around sends every request on to next but the patch take picks, which
// goes to hit instead.
func (m *statusMarker) around(next http.RoundTripper, hit func(*http.Request) (*http.Response, error)) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		picked, err := m.take(req)
		if err != nil {
			return nil, err
		}
		if !picked {
			return next.RoundTrip(req)
		}
		return hit(req)
	})
}

func (l *lostStatusReply) transport(next http.RoundTripper) http.RoundTripper {
	return l.around(next, func(req *http.Request) (*http.Response, error) {
		l.hold.set(true)
		resp, err := next.RoundTrip(req)
		if err == nil {
			if _, err := io.Copy(io.Discard, resp.Body); err != nil {
				return nil, err
			}
			if err := resp.Body.Close(); err != nil {
				return nil, err
			}
		}
		close(l.committed)
		<-l.release
		return nil, errors.New("test: the reply to this status write was lost")
	})
}

// TestDrainEndWhoseReplyIsLost: the status write that records a drain
// Drained is committed, but its reply is lost and the controller's watch
// of Bucketies lags behind it. The tenant reads Drained and writes to the
// bucket again; the controller's next pass, whose cache still shows the
// drain running, reads the server's status.drain before a step and does
// not empty the bucket a second time.
func TestDrainEndWhoseReplyIsLost(t *testing.T) {
	needInfra(t)
	hold := &heldWatches{resource: "bucketies"}
	lose := &lostStatusReply{statusMarker: statusMarker{marker: `"phase":"Drained"`}, hold: hold, committed: make(chan struct{}), release: make(chan struct{})}
	rc := rest.CopyConfig(cp.RESTConfig)
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper { return lose.transport(hold.transport(next)) })
	released := false
	release := func() {
		if !released {
			released = true
			close(lose.release)
		}
		hold.set(false)
	}
	startControllerWith(t, harness.ConfigYAML(drainS3Backend("s3", "minio", minio)), nil, func(o *appcontroller.Options) {
		o.RESTConfig, o.Recheck, o.DrainUnits = rc, time.Hour, 1000
	})
	t.Cleanup(release) // before the controller stops (cleanups run last first)
	b, bucket, cl := filledBucket(t, minio, "drain", 20)
	removeWhileRunning(t, b.Namespace)

	lose.arm()
	requestDrain(t, b, &v1.DrainSpec{Request: "r1"})
	select {
	case <-lose.committed:
	case <-time.After(waitTimeout):
		t.Fatal("no status write recorded the drain Drained")
	}
	cur := waitDrain(t, b, "r1", v1.DrainPhaseDrained, waitTimeout)
	if n := count(cur.Status.Drain.Deleted.Objects); n != 20 {
		t.Fatalf("want the drain to have deleted the 20 objects, got %d", n)
	}
	// The tenant read Drained: what it writes now is kept.
	ctx := context.Background()
	if _, err := cl.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("after-drained"), Body: strings.NewReader("x")}); err != nil {
		t.Fatal(err)
	}
	// The controller is told its write failed; its cache still shows the
	// drain running while its retries come and go.
	close(lose.release)
	released = true
	time.Sleep(5 * time.Second)
	hold.set(false)
	time.Sleep(2 * time.Second)
	if _, err := cl.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("after-drained")}); err != nil {
		t.Errorf("the object written after the drain was Drained: want it kept, got %v", err)
	}
	cur = waitDrain(t, b, "r1", v1.DrainPhaseDrained, waitTimeout)
	if n := count(cur.Status.Drain.Deleted.Objects); n != 20 {
		t.Errorf("status.drain: want the 20 objects deleted once, got %d", n)
	}
}

// failedStatusWrite fails, once armed, the first status patch whose body
// holds marker, before it reaches the API server.
type failedStatusWrite struct {
	statusMarker
	failed chan struct{}
}

func (f *failedStatusWrite) transport(next http.RoundTripper) http.RoundTripper {
	return f.around(next, func(*http.Request) (*http.Response, error) {
		close(f.failed)
		return nil, errors.New("test: this status write failed")
	})
}

// TestDrainStartedRecordedOnce: a drain requested while its backend is
// down, whose first status write recording it Draining fails, is started
// by the next pass; DrainStarted is recorded once, by the pass whose
// status write holds the start, not by every pass that found the request
// new (a series of two in kubectl describe).
func TestDrainStartedRecordedOnce(t *testing.T) {
	needInfra(t)
	srv := s3test.Start(t, "minio", s3test.Options{DefaultScanner: true})
	fail := &failedStatusWrite{statusMarker: statusMarker{marker: `"phase":"Draining"`, armed: true}, failed: make(chan struct{})}
	rc := rest.CopyConfig(cp.RESTConfig)
	rc.Wrap(fail.transport)
	startControllerWith(t, harness.ConfigYAML(drainS3Backend("s3", "minio", srv)), nil, func(o *appcontroller.Options) {
		o.RESTConfig, o.Recheck, o.DrainUnits = rc, time.Hour, 1000
	})
	b, _, _ := filledBucket(t, srv, "drain", 10)
	removeWhileRunning(t, b.Namespace)
	ns := b.Namespace
	if err := srv.Kill(); err != nil {
		t.Fatal(err)
	}
	requestDrain(t, b, &v1.DrainSpec{Request: "r1"})
	select {
	case <-fail.failed:
	case <-time.After(waitTimeout):
		t.Fatal("no status write recorded the drain Draining")
	}
	waitDrain(t, b, "r1", v1.DrainPhaseDraining, waitTimeout)
	if err := srv.Respawn(); err != nil {
		t.Fatal(err)
	}
	waitDrain(t, b, "r1", v1.DrainPhaseDrained, waitTimeout)
	waitEvent(t, ns, v1.EventDrainCompleted, "deleted 10 objects")
	var evs eventsv1.EventList
	if err := k8s.List(context.Background(), &evs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	started := 0
	for _, e := range evs.Items {
		if e.Reason != v1.EventDrainStarted {
			continue
		}
		started++
		if e.Series != nil {
			t.Errorf("DrainStarted: want it recorded once, got a series of %d (%q)", e.Series.Count, e.Note)
		}
	}
	if started != 1 {
		t.Errorf("want one DrainStarted event, got %d", started)
	}
}
