package metrics

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
)

// render prints the samples whose series name is in names as "name{label
// values} value" lines, sorted, for comparing with a table's want.
func render(samples []sample, names ...string) string {
	var lines []string
	for _, s := range samples {
		name := "buckety_resources"
		switch s.desc {
		case notReadySinceDesc:
			name = "buckety_not_ready_since_timestamp_seconds"
		case drainStuckSinceDesc:
			name = "buckety_drain_stuck_since_timestamp_seconds"
		}
		for _, n := range names {
			if n == name {
				lines = append(lines, fmt.Sprintf("%s{%s} %g", name, strings.Join(s.labels, ","), s.value))
			}
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func cond(t, status, reason string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, LastTransitionTime: metav1.NewTime(at)}
}

func TestResourceSamples(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	bk := func(ns, name, backend string, created time.Time, conds ...metav1.Condition) v1.Buckety {
		return v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)}, Spec: v1.BucketySpec{Backend: backend}, Status: v1.BucketyStatus{Conditions: conds}}
	}
	acc := func(ns, name, buckety string, created time.Time, conds ...metav1.Condition) v1.BucketyAccess {
		return v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, CreationTimestamp: metav1.NewTime(created)}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: buckety}}, Status: v1.BucketyAccessStatus{Conditions: conds}}
	}
	tests := []struct {
		name  string
		in    resourceLists
		names []string
		// want are lines the rendering must hold; wantLines is its
		// length.
		want      []string
		wantLines int
	}{
		{
			name:  "the oldest not-Ready object per backend and reason; Ready objects are not reported",
			names: []string{"buckety_not_ready_since_timestamp_seconds"},
			in: resourceLists{bucketiesListed: true, accessesListed: true, bucketies: []v1.Buckety{
				bk("a", "ok", "kafka", t0, cond(v1.ConditionReady, "True", v1.ReasonReconciled, t0.Add(time.Minute))),
				bk("a", "down1", "kafka", t0, cond(v1.ConditionReady, "False", v1.ReasonBackendUnreachable, t0.Add(20*time.Second))),
				bk("b", "down2", "kafka", t0, cond(v1.ConditionReady, "False", v1.ReasonBackendUnreachable, t0.Add(10*time.Second))),
				bk("b", "drift", "s3", t0, cond(v1.ConditionReady, "False", v1.ReasonDriftUnrepairable, t0.Add(30*time.Second))),
				bk("b", "new", "s3", t0.Add(time.Hour)),
				bk("b", "unknown", "s3", t0, cond(v1.ConditionReady, "Unknown", v1.ReasonNotDetermined, t0.Add(5*time.Second))),
			}, accesses: []v1.BucketyAccess{
				acc("a", "orphan", "missing", t0.Add(2*time.Second), cond(v1.ConditionReady, "False", v1.ReasonBucketyNotFound, t0.Add(3*time.Second))),
				acc("a", "ok", "ok", t0, cond(v1.ConditionReady, "True", v1.ReasonReconciled, t0)),
				acc("b", "waits", "down2", t0, cond(v1.ConditionReady, "False", v1.ReasonBucketyNotReady, t0.Add(7*time.Second))),
			}},
			want: []string{
				"buckety_not_ready_since_timestamp_seconds{Buckety,kafka,BackendUnreachable} 1.00001e+06",
				"buckety_not_ready_since_timestamp_seconds{Buckety,s3,DriftUnrepairable} 1.00003e+06",
				"buckety_not_ready_since_timestamp_seconds{Buckety,s3,NotDetermined} 1.000005e+06",
				"buckety_not_ready_since_timestamp_seconds{Buckety,s3,NotReconciled} 1.0036e+06",
				"buckety_not_ready_since_timestamp_seconds{BucketyAccess,,BucketyNotFound} 1.000003e+06",
				"buckety_not_ready_since_timestamp_seconds{BucketyAccess,kafka,BucketyNotReady} 1.000007e+06",
			},
			wantLines: 6,
		},
		{
			name:  "counts per backend; configured backends report zeros before their first object",
			names: []string{"buckety_resources"},
			in: resourceLists{backends: []string{"kafka", "s3"}, bucketiesListed: true, bucketies: []v1.Buckety{
				bk("a", "down", "kafka", t0, cond(v1.ConditionBackendUnavailable, "True", v1.ReasonBackendUnreachable, t0), cond(v1.ConditionReady, "False", v1.ReasonBackendUnreachable, t0)),
				bk("a", "gone", "removed", t0, cond(v1.ConditionBackendUnavailable, "True", v1.ReasonBackendNotConfigured, t0)),
			}},
			// 3 backends x 9 Buckety condition types x 3 statuses; no
			// BucketyAccess series, since accesses were not listed.
			want: []string{
				"buckety_resources{Buckety,kafka,BackendUnavailable,True} 1",
				"buckety_resources{Buckety,kafka,Ready,False} 1",
				"buckety_resources{Buckety,kafka,ParameterDrift,Unknown} 1",
				"buckety_resources{Buckety,s3,BackendUnavailable,True} 0",
				"buckety_resources{Buckety,s3,Ready,Unknown} 0",
				"buckety_resources{Buckety,removed,BackendUnavailable,True} 1",
				"buckety_resources{Buckety,removed,Ready,Unknown} 1",
			},
			wantLines: 3 * len(v1.BucketyConditions) * 3, // backends × condition types × statuses
		},
		{
			name:  "the oldest stuck drain per backend; a drain making progress is not reported",
			names: []string{"buckety_drain_stuck_since_timestamp_seconds"},
			in: resourceLists{backends: []string{"kafka", "s3"}, bucketiesListed: true, bucketies: []v1.Buckety{
				bk("a", "stuck1", "s3", t0, cond(v1.ConditionDraining, "True", v1.ReasonDrainStuck, t0.Add(20*time.Second))),
				bk("b", "stuck2", "s3", t0, cond(v1.ConditionDraining, "True", v1.ReasonDrainStuck, t0.Add(10*time.Second))),
				bk("b", "going", "kafka", t0, cond(v1.ConditionDraining, "True", v1.ReasonDraining, t0)),
				bk("b", "done", "kafka", t0, cond(v1.ConditionDraining, "False", v1.ReasonDrained, t0)),
			}},
			want:      []string{"buckety_drain_stuck_since_timestamp_seconds{s3} 1.00001e+06"},
			wantLines: 1,
		},
		{
			name:  "a kind whose list failed reports nothing",
			names: []string{"buckety_resources", "buckety_not_ready_since_timestamp_seconds"},
			in:    resourceLists{backends: []string{"kafka"}, bucketies: []v1.Buckety{bk("a", "new", "kafka", t0)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render(resourceSamples(tt.in), tt.names...)
			for _, line := range tt.want {
				if !strings.Contains(got+"\n", line+"\n") {
					t.Errorf("want line %q, got\n%s", line, got)
				}
			}
			n := 0
			if got != "" {
				n = strings.Count(got, "\n") + 1
			}
			if n != tt.wantLines {
				t.Errorf("want %d series, got %d:\n%s", tt.wantLines, n, got)
			}
		})
	}
}

// TestClaimSamplesRetained: a claim retained from a deleted Buckety is
// counted as retained, not as gone (whose alert says a finalizer was
// removed by hand): with the default retentionPolicy every kept resource
// has one.
func TestClaimSamplesRetained(t *testing.T) {
	live := v1.Buckety{ObjectMeta: metav1.ObjectMeta{UID: "live"}}
	claim := func(owner string, retained bool) v1.BucketyClaim {
		c := v1.BucketyClaim{Spec: v1.BucketyClaimSpec{Backend: "kafka", Owner: v1.ClaimOwner{UID: owner}}}
		if retained {
			c.Spec.Retained = &v1.ClaimRetained{Owner: c.Spec.Owner}
		}
		return c
	}
	in := resourceLists{backends: []string{"kafka"}, bucketies: []v1.Buckety{live}, bucketiesListed: true, claimsListed: true,
		claims: []v1.BucketyClaim{claim("live", false), claim("deleted", true), claim("stripped", false)}}
	got := map[string]float64{}
	for _, s := range claimSamples(in, claims.IsRetained) {
		got[strings.Join(s.labels, ",")] = s.value
	}
	want := map[string]float64{"kafka,present": 1, "kafka,retained": 1, "kafka,gone": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("want %v, got %v", want, got)
	}
}

// listCounter is a client.Reader holding Bucketies, counting the lists.
type listCounter struct {
	client.Reader
	bucketies []v1.Buckety
	lists     int
}

func (l *listCounter) List(_ context.Context, list client.ObjectList, _ ...client.ListOption) error {
	l.lists++
	if bl, ok := list.(*v1.BucketyList); ok {
		bl.Items = append([]v1.Buckety(nil), l.bucketies...)
	}
	return nil
}

// TestCollectReusesACountForCollectEvery: scrapes within collectEvery of a
// count get that count without reading the cache; the first scrape after
// it counts again and shows what changed.
func TestCollectReusesACountForCollectEvery(t *testing.T) {
	t0 := time.Unix(1_000_000, 0)
	now := t0
	ready := func(name string) v1.Buckety {
		return v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: name}, Spec: v1.BucketySpec{Backend: "kafka"},
			Status: v1.BucketyStatus{Conditions: []metav1.Condition{cond(v1.ConditionReady, "True", "Ready", t0)}}}
	}
	r := &listCounter{bucketies: []v1.Buckety{ready("one")}}
	c := &resourceCollector{reader: r, backends: []string{"kafka"}, retained: claims.IsRetained, now: func() time.Time { return now }}
	readyTrue := func() float64 {
		for _, s := range c.count() {
			if s.desc == resourcesDesc && strings.Join(s.labels, ",") == "Buckety,kafka,Ready,True" {
				return s.value
			}
		}
		t.Fatal("no Ready=True series")
		return 0
	}
	if got := readyTrue(); got != 1 || r.lists != 3 {
		t.Fatalf("first scrape: want 1 Ready and 3 lists, got %v and %d", got, r.lists)
	}
	r.bucketies = append(r.bucketies, ready("two"))
	now = t0.Add(collectEvery - time.Millisecond)
	if got := readyTrue(); got != 1 || r.lists != 3 {
		t.Errorf("within collectEvery: want the last count (1) and no list, got %v and %d lists", got, r.lists)
	}
	now = t0.Add(collectEvery)
	if got := readyTrue(); got != 2 || r.lists != 6 {
		t.Errorf("at collectEvery: want a new count (2), got %v and %d lists", got, r.lists)
	}
	c.set(r, []string{"kafka"}, claims.IsRetained)
	if readyTrue(); r.lists != 9 {
		t.Errorf("after set: want a new count, got %d lists", r.lists)
	}
}
