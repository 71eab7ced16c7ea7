package metrics

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
)

var (
	resourcesDesc = prometheus.NewDesc("buckety_resources",
		"Buckety and BucketyAccess objects by kind, backend, condition type and status.",
		[]string{"kind", "backend", "condition", "status"}, nil)
	claimsDesc = prometheus.NewDesc("buckety_claims",
		"BucketyClaims by backend, and whether their owning Buckety still exists (owner=present), was deleted leaving its resource on the backend (owner=retained: retentionPolicy Retain; the claim counts against its namespace until a maintainer releases it), or is gone with the claim left behind (owner=gone: its finalizer was removed by hand; the resource is retained, and the claim is taken over by the next Buckety that resolves to it).",
		[]string{"backend", "owner"}, nil)
	notReadySinceDesc = prometheus.NewDesc("buckety_not_ready_since_timestamp_seconds",
		"Unix time since which the longest not-Ready object of this kind and backend, with this Ready reason, has not been Ready: its Ready condition's lastTransitionTime, or its creation when it has no Ready condition yet. Absent when every object is Ready.",
		[]string{"kind", "backend", "reason"}, nil)
	drainStuckSinceDesc = prometheus.NewDesc("buckety_drain_stuck_since_timestamp_seconds",
		"Unix time since which the longest stuck drain on this backend has reported DrainStuck (its Draining condition's lastTransitionTime): a Buckety's spec.drain that deleted nothing for its stuckAfter. Absent when no drain is stuck.",
		[]string{"backend"}, nil)
)

// reasonNotReconciled is the reason label of an object that has no Ready
// condition yet (no reconcile has written its status).
const reasonNotReconciled = "NotReconciled"

// RegisterResources registers with controller-runtime's registry the
// gauges of the objects r holds (buckety_resources, buckety_claims,
// buckety_not_ready_since_timestamp_seconds,
// buckety_drain_stuck_since_timestamp_seconds), with a series for each of
// backends from the start. retained tells a claim kept from a deleted
// Buckety (claims.IsRetained). A second call in one process (tests that
// run the controller more than once) points the registered gauges at the
// new reader.
func RegisterResources(r client.Reader, backends []string, retained func(*v1.BucketyClaim) bool) error {
	c := &resourceCollector{reader: r, backends: backends, retained: retained}
	if err := ctrlmetrics.Registry.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return err
		}
		are.ExistingCollector.(*resourceCollector).set(r, backends, retained)
	}
	return nil
}

// resourceCollector counts objects by condition from the informer cache at
// scrape time, so the gauges never drift from what the API holds.
//
// A count reads every cached object: at 10,000 Bucketies it was a tenth of
// the controller's CPU during a cold start while something scraped
// /metrics ten times a second (the scale benchmark's progress check; an
// HA Prometheus pair, or several, scrape it too). So a count is reused by
// the scrapes within collectEvery of it: the gauges lag the cache by that
// at most, and a scraper, however frequent, costs one pass over the cache
// per collectEvery.
type resourceCollector struct {
	mu       sync.Mutex
	reader   client.Reader
	backends []string
	retained func(*v1.BucketyClaim) bool
	// samples are the last count, taken at at (zero: none).
	samples []sample
	at      time.Time
	// now is the clock (time.Now when nil).
	now func() time.Time
}

// collectEvery is how long a count is reused (resourceCollector).
const collectEvery = 5 * time.Second

func (c *resourceCollector) set(r client.Reader, backends []string, retained func(*v1.BucketyClaim) bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reader, c.backends, c.retained = r, backends, retained
	c.samples, c.at = nil, time.Time{}
}

func (c *resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- resourcesDesc
	ch <- notReadySinceDesc
	ch <- drainStuckSinceDesc
	ch <- claimsDesc
}

func (c *resourceCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range c.count() {
		ch <- prometheus.MustNewConstMetric(s.desc, prometheus.GaugeValue, s.value, s.labels...)
	}
}

// count returns the last count if it is younger than collectEvery, or
// counts again. Concurrent scrapes wait for one count.
func (c *resourceCollector) count() []sample {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	if !c.at.IsZero() && now().Sub(c.at) < collectEvery {
		return c.samples
	}
	c.samples, c.at = countResources(c.reader, c.backends, c.retained), now()
	return c.samples
}

// countResources reads the cache's objects and derives every gauge's
// samples from them.
func countResources(r client.Reader, backends []string, retained func(*v1.BucketyClaim) bool) []sample {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var in resourceLists
	in.backends = backends
	// A scrape only reads: the cached objects themselves, not copies (a
	// copy of every object per scrape is most of a scrape's cost at 10,000
	// Bucketies, and garbage the size of the cache).
	var bl v1.BucketyList
	if err := r.List(ctx, &bl, client.UnsafeDisableDeepCopy); err == nil {
		in.bucketies, in.bucketiesListed = bl.Items, true
	}
	var al v1.BucketyAccessList
	if err := r.List(ctx, &al, client.UnsafeDisableDeepCopy); err == nil {
		in.accesses, in.accessesListed = al.Items, true
	}
	var cl v1.BucketyClaimList
	if err := r.List(ctx, &cl, client.UnsafeDisableDeepCopy); err == nil && in.bucketiesListed {
		in.claims, in.claimsListed = cl.Items, true
	}
	return append(resourceSamples(in), claimSamples(in, retained)...)
}

// claimSamples counts claims per backend by whether their owner exists in
// the cache, or was deleted leaving the claim retained. Every configured
// backend reports every series.
func claimSamples(in resourceLists, retained func(*v1.BucketyClaim) bool) []sample {
	if !in.claimsListed {
		return nil
	}
	present := make(map[string]bool, len(in.bucketies))
	for i := range in.bucketies {
		present[string(in.bucketies[i].UID)] = true
	}
	type key struct{ backend, owner string }
	counts := map[key]float64{}
	var order []key
	add := func(k key, n float64) {
		if _, seen := counts[k]; !seen {
			order = append(order, k)
		}
		counts[k] += n
	}
	owners := []string{"present", "retained", "gone"}
	for _, b := range in.backends {
		for _, o := range owners {
			add(key{b, o}, 0)
		}
	}
	for i := range in.claims {
		c := &in.claims[i]
		owner := "present"
		switch {
		case retained(c):
			owner = "retained"
		case !present[c.Spec.Owner.UID]:
			owner = "gone"
		}
		for _, o := range owners {
			add(key{c.Spec.Backend, o}, 0)
		}
		add(key{c.Spec.Backend, owner}, 1)
	}
	out := make([]sample, 0, len(order))
	for _, k := range order {
		out = append(out, sample{desc: claimsDesc, value: counts[k], labels: []string{k.backend, k.owner}})
	}
	return out
}

// resourceLists is what one scrape read from the cache. A kind whose list
// failed reports nothing rather than zeros.
type resourceLists struct {
	// backends are the configured backends: every kind reports zeros for
	// each, so a backend's series exist before its first object.
	backends                        []string
	bucketies                       []v1.Buckety
	accesses                        []v1.BucketyAccess
	bucketiesListed, accessesListed bool
	claims                          []v1.BucketyClaim
	claimsListed                    bool
}

// sample is one gauge value with its label values, in the desc's order.
type sample struct {
	desc   *prometheus.Desc
	value  float64
	labels []string
}

// object is what the gauges need of one Buckety or BucketyAccess.
type object struct {
	backend    string
	created    metav1.Time
	conditions []metav1.Condition
}

// resourceSamples derives both gauges from the listed objects. An access is
// counted under its Buckety's backend ("" while the Buckety does not exist).
func resourceSamples(in resourceLists) []sample {
	var out []sample
	if in.bucketiesListed {
		objs := make([]object, len(in.bucketies))
		for i, b := range in.bucketies {
			objs[i] = object{backend: b.Spec.Backend, created: b.CreationTimestamp, conditions: b.Status.Conditions}
		}
		out = append(out, kindSamples("Buckety", v1.BucketyConditions, in.backends, objs)...)
		out = append(out, drainStuckSamples(objs)...)
	}
	if in.accessesListed {
		backendOf := map[[2]string]string{}
		for _, b := range in.bucketies {
			backendOf[[2]string{b.Namespace, b.Name}] = b.Spec.Backend
		}
		objs := make([]object, len(in.accesses))
		for i, a := range in.accesses {
			objs[i] = object{backend: backendOf[[2]string{a.BucketyNamespace(), a.FirstRef().Name}], created: a.CreationTimestamp, conditions: a.Status.Conditions}
		}
		out = append(out, kindSamples("BucketyAccess", v1.BucketyAccessConditions, in.backends, objs)...)
	}
	return out
}

// drainStuckSamples finds, per backend, the oldest Buckety whose drain
// reports DrainStuck.
func drainStuckSamples(objs []object) []sample {
	since := map[string]time.Time{}
	for _, o := range objs {
		c := meta.FindStatusCondition(o.conditions, v1.ConditionDraining)
		if c == nil || c.Status != metav1.ConditionTrue || c.Reason != v1.ReasonDrainStuck {
			continue
		}
		if t, ok := since[o.backend]; !ok || c.LastTransitionTime.Time.Before(t) {
			since[o.backend] = c.LastTransitionTime.Time
		}
	}
	out := make([]sample, 0, len(since))
	for backend, t := range since {
		out = append(out, sample{drainStuckSinceDesc, float64(t.Unix()), []string{backend}})
	}
	return out
}

// kindSamples counts one kind's objects per backend, condition type and
// status (a missing condition counts as Unknown), and finds the oldest
// not-Ready object per backend and Ready reason.
func kindSamples(kind string, decls []v1.ConditionDecl, backends []string, objs []object) []sample {
	type key struct{ backend, condition, status string }
	counts := map[key]float64{}
	var order []key
	zero := func(backend string) {
		for _, d := range decls {
			for _, s := range []string{"True", "False", "Unknown"} {
				k := key{backend, d.Type, s}
				if _, seen := counts[k]; !seen {
					counts[k] = 0
					order = append(order, k)
				}
			}
		}
	}
	for _, b := range backends {
		zero(b)
	}
	type nrKey struct{ backend, reason string }
	since := map[nrKey]time.Time{}
	var nrOrder []nrKey
	for _, o := range objs {
		zero(o.backend)
		for _, d := range decls {
			st := "Unknown"
			if c := meta.FindStatusCondition(o.conditions, d.Type); c != nil {
				st = string(c.Status)
			}
			counts[key{o.backend, d.Type, st}]++
		}
		ready := meta.FindStatusCondition(o.conditions, v1.ConditionReady)
		if ready != nil && ready.Status == metav1.ConditionTrue {
			continue
		}
		k, t := nrKey{o.backend, reasonNotReconciled}, o.created.Time
		if ready != nil {
			k.reason = ready.Reason
			if !ready.LastTransitionTime.IsZero() {
				t = ready.LastTransitionTime.Time
			}
		}
		old, seen := since[k]
		if !seen {
			nrOrder = append(nrOrder, k)
		}
		if !seen || t.Before(old) {
			since[k] = t
		}
	}
	out := make([]sample, 0, len(order)+len(nrOrder))
	for _, k := range order {
		out = append(out, sample{resourcesDesc, counts[k], []string{kind, k.backend, k.condition, k.status}})
	}
	for _, k := range nrOrder {
		out = append(out, sample{notReadySinceDesc, float64(since[k].Unix()), []string{kind, k.backend, k.reason}})
	}
	return out
}
