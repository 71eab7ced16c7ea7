package crds_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/app/crds"
	"github.com/Yolean/buckety-controller/test/controlplane"
)

// TestKindsAreTheCRDsKinds: the kinds a start waits for are the object
// kinds of the API group, and each is one of the generated CRDs (a kind
// without a CRD would make every start wait in vain).
func TestKindsAreTheCRDsKinds(t *testing.T) {
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	got := crds.Kinds(s, v1.GroupVersion)
	defs, err := controlplane.ReadCRDs(controlplane.CRDDir())
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, d := range defs {
		if d.Spec.Group == v1.GroupVersion.Group {
			want = append(want, d.Spec.Names.Kind)
		}
	}
	slices.Sort(want)
	if !slices.Equal(got, want) || len(got) < 5 {
		t.Fatalf("kinds of %s in the scheme: %v; kinds of the CRDs: %v", v1.GroupVersion, got, want)
	}
}

// logLines is a logger that keeps what it was told.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.lines = append(l.lines, args)
	}, funcr.Options{})
}

// waiterOn is a Waiter on cp's API server that logs to log.
func waiterOn(t *testing.T, cp *controlplane.ControlPlane, log *logLines) *crds.Waiter {
	t.Helper()
	w, err := crds.NewWaiter(cp.RESTConfig, log.logger())
	if err != nil {
		t.Fatal(err)
	}
	return w
}

func (l *logLines) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestWaitForServedKinds, on a real API server: with no CRDs a start's
// wait ends at its bound with an error naming every missing kind and what
// installs them; a wait begun before the CRDs are created ends, without
// error, once the API server serves them, which is the order of a first
// `kubectl apply -k`.
func TestWaitForServedKinds(t *testing.T) {
	cp := controlplane.StartT(t, controlplane.Options{})
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	kinds := crds.Kinds(s, v1.GroupVersion)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	t.Run("not installed", func(t *testing.T) {
		var log logLines
		w := waiterOn(t, cp, &log)
		w.Timeout = 2 * time.Second
		err := w.Wait(ctx, v1.GroupVersion, kinds)
		if err == nil {
			t.Fatal("want an error: no CRD is installed")
		}
		for _, want := range append(slices.Clone(kinds), v1.GroupVersion.String(), "deploy/kustomize/base/crds") {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		}
		if !strings.Contains(log.String(), "waiting for the API server to serve buckety's kinds") {
			t.Errorf("want the wait logged, got:\n%s", log.String())
		}
	})

	t.Run("installed while waiting", func(t *testing.T) {
		var log logLines
		w := waiterOn(t, cp, &log)
		w.Timeout = 2 * time.Minute
		done := make(chan error, 1)
		go func() { done <- w.Wait(ctx, v1.GroupVersion, kinds) }()
		select {
		case err := <-done:
			t.Fatalf("the wait ended before any CRD was installed: %v", err)
		case <-time.After(2 * time.Second):
		}
		if err := cp.InstallCRDs(ctx, controlplane.CRDDir()); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("want the wait to end once the CRDs are served: %v", err)
			}
		case <-time.After(time.Minute):
			t.Fatalf("the wait did not end a minute after the CRDs were served; log:\n%s", log.String())
		}
		if !strings.Contains(log.String(), "serves buckety's kinds now") {
			t.Errorf("want the end of the wait logged, got:\n%s", log.String())
		}
		// Served now: a second wait returns at once, and logs nothing.
		var again logLines
		w2 := waiterOn(t, cp, &again)
		if err := w2.Wait(ctx, v1.GroupVersion, kinds); err != nil {
			t.Fatal(err)
		}
		if again.String() != "" {
			t.Errorf("a wait with every kind served logged %q", again.String())
		}
		missing, err := crds.Missing(ctx, w2.Discovery, v1.GroupVersion, append(slices.Clone(kinds), "NoSuchKind"))
		if err != nil || fmt.Sprint(missing) != "[NoSuchKind]" {
			t.Errorf("Missing with an unknown kind: got %v, %v; want [NoSuchKind]", missing, err)
		}
	})
}
