package scale

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	bucketyctl "github.com/Yolean/buckety-controller/internal/controller/buckety"
)

// Issue 54, "new features at no visible cost": the owner record on the
// backend and sharing (one access over several Bucketies) each get a row
// against what the run measures without them.
//
//   - Requests per create with owner records: the Kafka requests of the
//     kinds only owner records use on a create (ownerKafkaAPIs), per
//     Buckety of the kadm provisioning, against all of its requests per
//     Buckety; on MinIO the bucket-tagging requests per bucket.
//   - Time to all Ready after a rebuild: the scoped phase's rebuild
//     (rebuildFigures) against the first provisioning of the same
//     Bucketies.
//   - An access over R Ready Bucketies (spec.bucketyRefs, R up to 128)
//     from create to Ready, against an access naming one, timed in turn
//     on the same backend (sharingFigures).
//
// SCALE_ONLY=features runs these rows alone (featureRun).

// ownerKafkaAPIs are the Kafka APIs only owner records use while new
// topics are created: the registry's Produce and the idempotent
// producer's InitProducerID, a catch-up's ListOffsets and Fetch (an
// emptiness check of an existing topic uses ListOffsets too, but a
// provisioning of new topics makes none). The registry's own Metadata and
// CreateTopics, once per backend, are in the other kinds.
var ownerKafkaAPIs = []string{"Produce", "InitProducerID", "ListOffsets", "Fetch"}

// ownerRequests are the owner records' requests among reqs.
func ownerRequests(reqs counts) counts {
	own := counts{}
	for _, api := range ownerKafkaAPIs {
		if v := reqs[api]; v != 0 {
			own[api] = v
		}
	}
	return own
}

// ownerRecordRows reports the owner records' share of a kadm provisioning
// of n Bucketies.
func ownerRecordRows(tb *table, n int, prov provisioned) {
	own := ownerRequests(prov.kafka)
	per := float64(own.total()) / float64(n)
	all := float64(prov.kafka.total()) / float64(n)
	without := float64(prov.kafka.total()-own.total()) / float64(n)
	tb.add("kadm: owner-record Kafka requests per create (Produce, InitProducerID, ListOffsets, Fetch)", n,
		fmt.Sprintf("%.3f = %s; all requests per create %.3f with them, %.3f without", per, own, all, without), "≤ 1 extra, batched", ptr(per <= 1),
		fmt.Sprintf("%.2f× without", all/max(without, 1e-9)))
}

// ownerS3Row reports the owner records' share of a MinIO provisioning of
// n buckets: the bucket-tagging requests.
func ownerS3Row(tb *table, n int, reqs counts) {
	own := counts{}
	for api, v := range reqs {
		if strings.Contains(strings.ToLower(api), "buckettagging") {
			own[api] = v
		}
	}
	per := float64(own.total()) / float64(n)
	without := float64(reqs.total()-own.total()) / float64(n)
	tb.add("s3 (MinIO): owner-record S3 requests per create (bucket tagging)", n,
		fmt.Sprintf("%.2f = %s; all S3 requests per create %.2f with them, %.2f without", per, own, per+without, without), "≤ 1 extra", ptr(per <= 1),
		fmt.Sprintf("%.2f× without", (per+without)/max(without, 1e-9)))
}

// featureRun is runN with SCALE_ONLY=features: the kadm provisioning of
// n Bucketies (owner-record requests per create), the sharing rows, the
// scoped phase with its rebuild when n is one of SCALE_SCOPED_N, and
// MinIO's owner-record requests when SCALE_S3_N is set (first N only).
func featureRun(t *testing.T, e *env, p params, tb *table, n int, first bool) {
	t.Helper()
	e.startWebhook()
	mainArgs := append(append([]string{}, p.ControllerArgs...), p.MainArgs...)
	e.startController(mainArgs)
	prov := provisionScale(t, e, n, nil)
	tb.add("kadm: all Ready with their Secrets (total)", n, secs(prov.total), "", nil, "")
	ownerRecordRows(tb, n, prov)
	sharingFigures(t, e, p, tb, n)
	if p.ScopedNs[n] {
		scopedFigures(t, e, tb, n, prov, mainArgs)
	}
	if first && p.S3N > 0 {
		s3Figures(t, e, p, tb, floor{})
	}
}

// sharingFigures times accesses over p.ShareRefs Ready Bucketies against
// accesses naming one, on the kadm backend with shared keys and, when its
// broker runs, on the one with a user per access.
func sharingFigures(t *testing.T, e *env, p params, tb *table, n int) {
	t.Helper()
	if p.ShareRefs == 0 {
		return
	}
	shareRows(t, e, p, tb, n, "kafka", func() func() counts { return e.kafkaStart().since })
	if e.scoped != nil {
		shareRows(t, e, p, tb, n, scopedBackend, func() func() counts {
			before := e.scopedRequests()
			return func() counts { return e.scopedRequests().minus(before) }
		})
	}
}

// grantTimes are the accesses of one size timed by shareRows.
type grantTimes struct {
	times []time.Duration
	kafka counts
	// writes are the controller's API writes; passes its reconciles, per
	// controller.
	writes, passes counts
	// passTimes are the time the access controller's passes took, per
	// access (summed over its passes).
	passTimes []time.Duration
	// admitted are the creates' own times: the API server's admission,
	// the webhooks included, and its write.
	admitted []time.Duration
	// apiSeconds is the API server's time in the writes of each grant but
	// the first (whose access is the first to hold the shared keys on its
	// Bucketies, and writes their statuses once), summed over apiGrants
	// grants, by verb and resource.
	apiSeconds map[string]float64
	apiGrants  int
}

// apiTimes formats g.apiSeconds per access, the largest first.
func (g grantTimes) apiTimes() string {
	if g.apiGrants == 0 {
		return "— (one grant)"
	}
	keys := slices.Collect(maps.Keys(g.apiSeconds))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Compare(g.apiSeconds[b], g.apiSeconds[a]) })
	total, parts := 0.0, []string{}
	for _, k := range keys {
		per := g.apiSeconds[k] / float64(g.apiGrants)
		total += per
		parts = append(parts, fmt.Sprintf("%s %.1f", k, per*1000))
	}
	return fmt.Sprintf("%.1f ms (%s)", total*1000, strings.Join(parts, ", "))
}

func (g grantTimes) median() time.Duration { return p50(g.times) }

// perGrant formats the counts c, summed over g's accesses, per access.
func (g grantTimes) perGrant(c counts) string {
	return fmt.Sprintf("%.1f = %s over %d", float64(c.total())/float64(len(g.times)), c, len(g.times))
}

// shareRows provisions p.ShareRefs Bucketies without an access on backend,
// then creates p.ShareReps accesses naming all of them and as many naming
// the first, alternating, one at a time, each timed from its create to
// its Ready with the controller quiet before the next; requests counts
// the backend's requests from its call to the returned func's. It checks
// every Secret and deletes the namespace's objects afterwards.
func shareRows(t *testing.T, e *env, p params, tb *table, n int, backend string, requests func() func() counts) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := "scale-share-" + backend
	if err := e.k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	r := p.ShareRefs
	refs := make([]v1.BucketyReference, r)
	bw := e.watchReady(ctx, ns)
	if err := parallel(r, workers, func(i int) error {
		refs[i].Name = fmt.Sprintf("r%03d", i)
		return e.k8s.Create(ctx, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: refs[i].Name, Namespace: ns},
			Spec: v1.BucketySpec{Backend: backend, Parameters: map[string]string{"partitions": "1"}}})
	}); err != nil {
		t.Fatalf("sharing: create Bucketies: %v", err)
	}
	if got, missing := bw.wait(r, 5*time.Minute); len(got) < r {
		t.Fatalf("sharing: %d of %d Bucketies on %s Ready; not Ready, e.g.: %s", len(got), r, backend, missing)
	}
	e.quiet(15 * time.Second)

	aw := e.watchReadyOf(ctx, ns, func() client.ObjectList { return &v1.BucketyAccessList{} }, accessReady)
	var one, all grantTimes
	for i := 0; i < 2*p.ShareReps; i++ {
		several := i%2 == 0
		a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("one-%d", i/2), Namespace: ns},
			Spec: v1.BucketyAccessSpec{BucketyRef: refs[0], CredentialsSecretName: fmt.Sprintf("one-%d", i/2)}}
		g := &one
		if several {
			a.Name, a.Spec.CredentialsSecretName = fmt.Sprintf("all-%d", i/2), fmt.Sprintf("all-%d", i/2)
			a.Spec.BucketyRef, a.Spec.BucketyRefs = v1.BucketyReference{}, refs
			g = &all
		}
		passes0, time0, api0 := e.passesByController(), e.accessPassTime(), e.apiWriteSeconds()
		d, admitted, c, w := grantOne(t, e, aw, a, i+1, requests)
		if len(g.times) > 0 {
			if g.apiSeconds == nil {
				g.apiSeconds = map[string]float64{}
			}
			for k, v := range e.apiWriteSeconds() {
				if dv := v - api0[k]; dv > 0 {
					g.apiSeconds[k] += dv
				}
			}
			g.apiGrants++
		}
		g.passTimes = append(g.passTimes, e.accessPassTime()-time0)
		g.times, g.admitted = append(g.times, d), append(g.admitted, admitted)
		g.kafka, g.writes, g.passes = sum(g.kafka, c), sum(g.writes, w), sum(g.passes, e.passesByController().minus(passes0))
		checkSharedSecret(t, e, ns, a, r)
	}
	what := fmt.Sprintf("sharing (%s): an access over %d Ready Bucketies, create → Ready (median of %d)", backend, r, p.ShareReps)
	tb.add(what, n, fmt.Sprintf("%s (one Buckety: %s)", ms(all.median()), ms(one.median())), "≤ 2× one",
		ptr(all.median() <= 2*one.median()), fmt.Sprintf("%.2f× one", all.median().Seconds()/one.median().Seconds()))
	tb.add(fmt.Sprintf("sharing (%s): backend requests per access, %d Bucketies / one", backend, r), n,
		all.perGrant(all.kafka)+" / "+one.perGrant(one.kafka), "", nil, "")
	tb.add(fmt.Sprintf("sharing (%s): controller API writes per access, %d Bucketies / one", backend, r), n,
		all.perGrant(all.writes)+" / "+one.perGrant(one.writes), "", nil, "")
	tb.add(fmt.Sprintf("sharing (%s): controller reconciles per access, %d Bucketies / one", backend, r), n,
		all.perGrant(all.passes)+" / "+one.perGrant(one.passes), "", nil, "")
	tb.add(fmt.Sprintf("sharing (%s): the access controller's pass time per access (median), %d Bucketies / one", backend, r), n,
		ms(p50(all.passTimes))+" / "+ms(p50(one.passTimes)), "", nil, "")
	tb.add(fmt.Sprintf("sharing (%s): the create call (admission and write; median), %d Bucketies / one", backend, r), n,
		ms(p50(all.admitted))+" / "+ms(p50(one.admitted)), "", nil, "")
	tb.add(fmt.Sprintf("sharing (%s): the API server's time in the writes per access (mean of all but the first, ms), %d Bucketies / one", backend, r), n,
		all.apiTimes()+" / "+one.apiTimes(), "", nil, "")

	cancel()
	deleteCollection(t, e.k8s, ns, &v1.BucketyAccess{}, &v1.BucketyAccessList{})
	deleteAllIn(t, e, ns, 5*time.Minute)
	e.quiet(15 * time.Second)
}

// grantOne creates access a and waits until aw has seen k accesses Ready
// (a the last), then until the Bucketies it names have been woken and the
// controller is quiet: the time to a's Ready, the create call's own time,
// the backend's requests and the controller's API writes until quiet.
func grantOne(t *testing.T, e *env, aw *readyWatch, a *v1.BucketyAccess, k int, requests func() func() counts) (time.Duration, time.Duration, counts, counts) {
	t.Helper()
	reqs := requests()
	writes0 := e.apiWrites()
	start := time.Now()
	if err := e.k8s.Create(context.Background(), a); err != nil {
		t.Fatalf("sharing: create access %s: %v", a.Name, err)
	}
	admitted := time.Since(start)
	if got, missing := aw.wait(k, 2*time.Minute); len(got) < k {
		t.Fatalf("sharing: access %s/%s not Ready after 2m: %s\ncontroller log:\n%s", a.Namespace, a.Name, missing, e.ctrl.P.Tail(20))
	}
	aw.mu.Lock()
	d := aw.readyAt[a.Name].Sub(start)
	aw.mu.Unlock()
	// The access wakes the Bucketies it names NewAccessWake after its
	// create, from the work queues' delayed items, which the depth quiet
	// reads does not show: past it, those passes and their writes count
	// to this access, not to the next one.
	time.Sleep(time.Until(start.Add(bucketyctl.NewAccessWake + 100*time.Millisecond)))
	e.quiet(15 * time.Second)
	return d, admitted, reqs(), e.apiWrites().minus(writes0)
}

// passesByController are the controller's reconciles so far, per controller.
func (e *env) passesByController() counts {
	out := counts{}
	for _, s := range e.controllerMetrics("controller_runtime_reconcile_total") {
		out[s.labels["controller"]] += int64(s.value)
	}
	return out
}

// accessPassTime is the time the access controller's reconciles took so
// far (controller-runtime's reconcile_time_seconds, summed).
func (e *env) accessPassTime() time.Duration {
	var sec float64
	for _, s := range e.controllerMetrics("controller_runtime_reconcile_time_seconds_sum") {
		if s.labels["controller"] == "bucketyaccess" {
			sec += s.value
		}
	}
	return time.Duration(sec * float64(time.Second))
}

// p50 is the median of lat.
func p50(lat []time.Duration) time.Duration {
	p, _ := percentiles(append([]time.Duration{}, lat...))
	return p
}

// sum adds two counts.
func sum(a, b counts) counts {
	out := counts{}
	for k, v := range a {
		out[k] += v
	}
	for k, v := range b {
		out[k] += v
	}
	return out
}

// accessReady is bucketyReady for a BucketyAccess.
func accessReady(o client.Object) (bool, string) {
	a, ok := o.(*v1.BucketyAccess)
	if !ok {
		return false, fmt.Sprintf("not a BucketyAccess: %T", o)
	}
	c := meta.FindStatusCondition(a.Status.Conditions, v1.ConditionReady)
	switch {
	case c == nil:
		return false, "no Ready condition"
	case c.Status == metav1.ConditionTrue && a.Status.ObservedGeneration == a.Generation && c.ObservedGeneration == a.Generation:
		return true, ""
	}
	return false, fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
}

// checkSharedSecret asserts that a's Secret names its one topic, or every
// one of its r Bucketies' topics.
func checkSharedSecret(t *testing.T, e *env, ns string, a *v1.BucketyAccess, r int) {
	t.Helper()
	var s corev1.Secret
	if err := e.k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: a.Spec.CredentialsSecretName}, &s); err != nil {
		t.Fatalf("sharing: Secret of access %s: %v", a.Name, err)
	}
	if !a.Several() {
		if len(s.Data["topic"]) == 0 {
			t.Fatalf("sharing: Secret %s: want a topic key, got keys %v", s.Name, slices.Sorted(maps.Keys(s.Data)))
		}
		return
	}
	if got := strings.Split(string(s.Data["topics"]), ","); len(got) != r {
		t.Fatalf("sharing: Secret %s: want %d topics in key topics, got %d (%q)", s.Name, r, len(got), s.Data["topics"])
	}
	for _, ref := range a.Spec.BucketyRefs {
		if len(s.Data["topic."+ref.Name]) == 0 {
			t.Fatalf("sharing: Secret %s: want key topic.%s, got keys %v", s.Name, ref.Name, slices.Sorted(maps.Keys(s.Data)))
		}
	}
}
