// Package crds waits, at a binary's start, until the API server serves the
// kinds of buckety's API group.
//
// The controller and the webhook build caches and indexes of buckety's
// kinds before their managers start, and a kind the API server does not
// serve yet is an error there ("no matches for kind"), which ended the
// process. That is the normal order of a first install: `kubectl apply -k`
// creates the CustomResourceDefinitions and the Deployments in one go, and
// a CRD is served a moment after it is created (Established, then listed
// by discovery). So a binary waits for its kinds, a bounded time, and says
// which it waits for; past the bound it ends with an error that names the
// missing kinds and what installs them, and the Pod's restart tries again.
package crds

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// ServedWait is how long a start waits for its kinds: well inside the
// Deployments' liveness probes (three failures 20 s apart), which a
// process that has not started its probe server would fail.
const ServedWait = 45 * time.Second

// Install says what serves the kinds, in the error past ServedWait.
const Install = "install buckety's CustomResourceDefinitions first (deploy/kustomize/base/crds, part of the release's kustomize base)"

// Kinds are the object kinds scheme registers in gv: those with object
// metadata (not lists, not the options and watch-event types every group
// carries), sorted.
func Kinds(scheme *runtime.Scheme, gv schema.GroupVersion) []string {
	var kinds []string
	for kind, t := range scheme.KnownTypes(gv) {
		if _, ok := reflect.New(t).Interface().(metav1.Object); ok {
			kinds = append(kinds, kind)
		}
	}
	slices.Sort(kinds)
	return kinds
}

// Missing are the kinds of kinds that discovery does not list in gv now.
func Missing(ctx context.Context, d discovery.DiscoveryInterface, gv schema.GroupVersion, kinds []string) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	list, err := d.ServerResourcesForGroupVersion(gv.String())
	if apierrors.IsNotFound(err) {
		// No CRD of the group is served: the group version is unknown.
		return slices.Clone(kinds), nil
	}
	if err != nil {
		return nil, err
	}
	served := map[string]bool{}
	for _, r := range list.APIResources {
		if !strings.Contains(r.Name, "/") { // not a subresource
			served[r.Kind] = true
		}
	}
	var missing []string
	for _, k := range kinds {
		if !served[k] {
			missing = append(missing, k)
		}
	}
	return missing, nil
}

// Waiter waits until the API server serves every kind of a group version.
type Waiter struct {
	// Discovery is the API server's discovery client.
	Discovery discovery.DiscoveryInterface
	// Log says once what it waits for, and when it is over.
	Log logr.Logger
	// Timeout bounds the wait (ServedWait when zero).
	Timeout time.Duration
	// Every is the first interval between checks; it doubles up to 5 s
	// (500 ms when zero).
	Every time.Duration
}

// NewWaiter is a Waiter on cfg's API server. Each discovery request is
// bounded by 10 s (discovery takes no context), so an API server that
// does not answer does not hold the start past the wait.
func NewWaiter(cfg *rest.Config, log logr.Logger) (*Waiter, error) {
	c := rest.CopyConfig(cfg)
	c.Timeout = 10 * time.Second
	d, err := discovery.NewDiscoveryClientForConfig(c)
	if err != nil {
		return nil, fmt.Errorf("discovery client: %w", err)
	}
	return &Waiter{Discovery: d, Log: log}, nil
}

// Wait returns nil once every kind of kinds is served in gv; an error that
// names the kinds still missing after the timeout, or the last error of
// discovery itself; ctx's error when ctx ends first.
func (w *Waiter) Wait(ctx context.Context, gv schema.GroupVersion, kinds []string) error {
	timeout, every := w.Timeout, w.Every
	if timeout <= 0 {
		timeout = ServedWait
	}
	if every <= 0 {
		every = 500 * time.Millisecond
	}
	start := time.Now()
	deadline := start.Add(timeout)
	logged := false
	for {
		missing, err := Missing(ctx, w.Discovery, gv, kinds)
		if err == nil && len(missing) == 0 {
			if logged {
				w.Log.Info("the API server serves buckety's kinds now", "groupVersion", gv.String(), "waited", time.Since(start).Round(time.Millisecond).String())
			}
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if !logged {
			if err != nil {
				w.Log.Info("waiting for the API server's discovery", "groupVersion", gv.String(), "error", err.Error(), "upTo", timeout.String())
			} else {
				w.Log.Info("waiting for the API server to serve buckety's kinds", "groupVersion", gv.String(), "missing", missing, "upTo", timeout.String())
			}
			logged = true
		}
		if !time.Now().Before(deadline) {
			if err != nil {
				return fmt.Errorf("the API server's discovery of %s did not answer in %s: %w", gv, timeout, err)
			}
			return fmt.Errorf("the API server does not serve %s of %s after %s: %s", strings.Join(missing, ", "), gv, timeout, Install)
		}
		t := time.NewTimer(min(every, time.Until(deadline)))
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
		every = min(2*every, 5*time.Second)
	}
}

// WaitServed waits (ServedWait at most) until cfg's API server serves
// every object kind scheme registers in gv.
func WaitServed(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, gv schema.GroupVersion, log logr.Logger) error {
	w, err := NewWaiter(cfg, log)
	if err != nil {
		return err
	}
	return w.Wait(ctx, gv, Kinds(scheme, gv))
}
