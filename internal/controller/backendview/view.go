package backendview

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/controller/periodic"
	"github.com/Yolean/buckety-controller/internal/metrics"
)

// +kubebuilder:rbac:groups=buckety.yolean.se,resources=bucketybackends,verbs=get;list;watch;create;update;delete

// View is the leader's runnable that probes every backend each Interval
// and writes the BucketyBackend objects.
type View struct {
	periodic.LeaderOnly
	// Client reads Bucketies, accesses and BucketyBackends from the cache
	// and writes BucketyBackends.
	Client client.Client
	// Backends are the configured backends.
	Backends *backends.Set
	// Interval is the probe interval. Each probe is bounded by half of it
	// (and by the driver's request timeout), so a backend that refuses
	// connections is reported by the first probe that starts after it
	// stopped, within one interval, and one that hangs within one and a
	// half.
	Interval time.Duration
	// Log is the logger.
	Log logr.Logger
	// now is the clock; nil: time.Now.
	now func() time.Time
	// probes counts the probes of each backend, by name (Round alone
	// touches it, and rounds do not overlap).
	probes map[string]int64
}

// Start implements manager.Runnable.
func (v *View) Start(ctx context.Context) error {
	periodic.Every(ctx, v.Interval, func(ctx context.Context) {
		if err := v.Round(ctx); err != nil && ctx.Err() == nil {
			v.Log.Error(err, "writing the BucketyBackend view")
		}
	})
	return nil
}

// Round probes every backend at once, counts their objects, writes the
// objects whose status changed (or whose heartbeat is due) and deletes
// those of backends no longer configured.
func (v *View) Round(ctx context.Context) error {
	entries := v.Backends.Entries()
	facts := make([]Facts, len(entries))
	if v.probes == nil {
		v.probes = map[string]int64{}
	}
	var wg sync.WaitGroup
	for i, e := range entries {
		if e.Prober != nil {
			v.probes[e.Name]++
			metrics.BackendProbes.WithLabelValues(e.Name).Inc()
		}
		n := v.probes[e.Name]
		wg.Add(1)
		go func() {
			defer wg.Done()
			facts[i] = v.probe(ctx, e, n)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	bucketies, accesses, err := v.count(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for i := range facts {
		facts[i].Bucketies, facts[i].Accesses = bucketies[entries[i].Name], accesses[entries[i].Name]
		observe(facts[i])
		if err := v.write(ctx, facts[i]); err != nil {
			errs = append(errs, fmt.Errorf("backend %s: %w", entries[i].Name, err))
		}
	}
	if err := v.prune(ctx); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// probe asks one backend, bounded by half the interval; n numbers the
// probe.
func (v *View) probe(ctx context.Context, e *backends.Entry, n int64) Facts {
	f := Facts{Backend: e.Config, Driver: e.Driver.Name(), DriverVersion: e.Driver.Version().String(),
		Implementation: e.Implementation, HasProber: e.Prober != nil, Interval: v.Interval}
	pctx, cancel := context.WithTimeout(ctx, v.Interval/2)
	defer cancel()
	f.ProbeTime = v.clock()
	if e.Prober != nil {
		f.Probed, f.Probe, f.ProbeErr = true, n, e.Prober.Probe(pctx)
		// A backend that passed may still warn (a kadm owner registry
		// that is not compacted): it serves, so it is Ready and its
		// Issuing is asked below as for any other.
		if w, ok := e.Prober.(drivers.Warner); ok && f.ProbeErr == nil {
			f.Warnings = w.ProbeWarnings()
		}
	}
	switch {
	case e.Issuer == nil:
		f.IssuingKnown = true
	case f.ProbeErr == nil:
		sc, err := e.Issuer.Issuing(pctx)
		switch {
		case err == nil:
			f.Issuing, f.IssuingKnown = &sc, true
		case ctx.Err() == nil:
			// Not the round's own end (the controller stopping).
			f.IssuingErr = err
		}
	}
	return f
}

func (v *View) clock() time.Time {
	if v.now != nil {
		return v.now()
	}
	return time.Now()
}

// observe sets the backend's gauges. buckety_backend_degraded follows the
// Degraded condition, with a series of value 1 for each reason the probe
// warned of: it is left as it is while the probe fails, as the condition
// is.
func observe(f Facts) {
	if !f.Probed {
		return
	}
	c := readyCondition(f)
	up := 0.0
	if c.Status == metav1.ConditionTrue {
		up = 1
	}
	metrics.BackendUp.DeletePartialMatch(map[string]string{"backend": f.Backend.Name})
	metrics.BackendUp.WithLabelValues(f.Backend.Name, f.Driver, c.Reason).Set(up)
	if d, known := degradedCondition(f); known {
		metrics.BackendDegraded.DeletePartialMatch(map[string]string{"backend": f.Backend.Name})
		if d.Status != metav1.ConditionTrue {
			metrics.BackendDegraded.WithLabelValues(f.Backend.Name, f.Driver, d.Reason).Set(0)
		}
		// One series per reason warned of: the condition has room for
		// the first reason only (its message carries every warning),
		// and an alert grouped by reason must not hide the second.
		for _, w := range f.Warnings {
			if d.Status == metav1.ConditionTrue {
				metrics.BackendDegraded.WithLabelValues(f.Backend.Name, f.Driver, w.Reason).Set(1)
			}
		}
	}
	metrics.BackendLastProbe.WithLabelValues(f.Backend.Name).Set(float64(f.ProbeTime.UnixNano()) / 1e9)
}

// count counts Bucketies and accesses per backend from the cache: a
// Buckety is on status.backend (spec.backend before its first reconcile),
// an access on its Buckety's backend.
func (v *View) count(ctx context.Context) (bucketies, accesses map[string]int64, err error) {
	var bl v1.BucketyList
	if err := v.Client.List(ctx, &bl, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	var al v1.BucketyAccessList
	if err := v.Client.List(ctx, &al, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	bucketies, accesses = Count(bl.Items, al.Items)
	return bucketies, accesses, nil
}

// Count counts Bucketies and accesses per backend.
func Count(bs []v1.Buckety, as []v1.BucketyAccess) (bucketies, accesses map[string]int64) {
	bucketies, accesses = map[string]int64{}, map[string]int64{}
	of := make(map[[2]string]string, len(bs))
	for i := range bs {
		b := &bs[i]
		name := b.Status.Backend
		if name == "" {
			name = b.Spec.Backend
		}
		of[[2]string{b.Namespace, b.Name}] = name
		bucketies[name]++
	}
	for i := range as {
		a := &as[i]
		if name, ok := of[[2]string{a.BucketyNamespace(), a.FirstRef().Name}]; ok {
			accesses[name]++
		}
	}
	return bucketies, accesses
}

// write creates or updates the backend's object when its status changed or
// its heartbeat is due.
func (v *View) write(ctx context.Context, f Facts) error {
	var cur v1.BucketyBackend
	err := v.Client.Get(ctx, client.ObjectKey{Name: f.Backend.Name}, &cur)
	switch {
	case apierrors.IsNotFound(err):
		obj := &v1.BucketyBackend{ObjectMeta: metav1.ObjectMeta{Name: f.Backend.Name,
			Labels: map[string]string{v1.ManagedByLabel: v1.ManagedByValue}}}
		obj.Status = Desired(f, nil)
		return client.IgnoreAlreadyExists(v.Client.Create(ctx, obj))
	case err != nil:
		return err
	}
	want := Desired(f, &cur.Status)
	if !NeedsWrite(&cur.Status, want, v.Interval) {
		return nil
	}
	cur.Status = want
	return v.Client.Update(ctx, &cur)
}

// prune deletes the objects of backends that are not configured.
func (v *View) prune(ctx context.Context) error {
	var l v1.BucketyBackendList
	if err := v.Client.List(ctx, &l); err != nil {
		return err
	}
	var errs []error
	for i := range l.Items {
		o := &l.Items[i]
		if _, ok := v.Backends.Get(o.Name); ok {
			continue
		}
		v.Log.Info("deleting the BucketyBackend of a backend no longer in the config", "backend", o.Name)
		pre := client.Preconditions{UID: &o.UID, ResourceVersion: &o.ResourceVersion}
		if err := v.Client.Delete(ctx, o, pre); client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
