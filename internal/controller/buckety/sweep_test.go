package buckety

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/backends/backendstest"
)

// testSet opens a kafka (kadm) and an s3 backend; neither dials in Open.
func testSet(t *testing.T) *backends.Set {
	t.Helper()
	return testSetOf(t, "backends:\n- {name: kafka, driver: kadm, config: {seedBrokers: ['127.0.0.1:1']}}\n"+
		"- {name: s3, driver: s3, config: {endpoint: 'http://127.0.0.1:1', accessKeyID: a, secretAccessKey: b}}\n")
}

// testSetOf opens the backends of the config yaml.
func testSetOf(t *testing.T, yaml string) *backends.Set {
	t.Helper()
	return backendstest.Open(t, yaml)
}

func TestSweepTargets(t *testing.T) {
	set := testSet(t)
	kafka, _ := set.Get("kafka")
	major := kafka.Driver.Version().Major
	other := major + 1
	now := metav1.Now()
	bk := func(name, backend, driver string, mj *int64, resource string) v1.Buckety {
		b := v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: name, UID: types.UID("uid-" + name)},
			Spec:   v1.BucketySpec{Backend: "kafka", Parameters: map[string]string{"partitions": "1"}},
			Status: v1.BucketyStatus{Backend: backend, Driver: driver, DriverMajor: mj, BackendResourceName: resource}}
		return b
	}
	deleting := bk("deleting", "kafka", "kadm", &major, "t.deleting")
	deleting.DeletionTimestamp = &now
	list := []v1.Buckety{
		bk("by-claim", "kafka", "kadm", &major, "t.status-name"),
		bk("by-status", "kafka", "kadm", &major, "t.by-status"),
		bk("claimed-only", "kafka", "kadm", &major, ""),
		deleting,
		bk("on-s3", "s3", "s3", &major, "on-s3"),
		bk("new", "", "", nil, ""),
		bk("driver-changed", "kafka", "s3", &major, "t.driver-changed"),
		bk("major-differs", "kafka", "kadm", &other, "t.major-differs"),
		bk("claim-elsewhere", "kafka", "kadm", &major, "t.claim-elsewhere"),
		bk("unrecorded", "", "", nil, ""),
		bk("unrecorded-claimed", "", "", nil, ""),
		bk("unrecorded-s3", "", "", nil, ""),
	}
	claim := func(owner, backend, resource string, phase v1.ClaimPhase) v1.BucketyClaim {
		return v1.BucketyClaim{Spec: v1.BucketyClaimSpec{Backend: backend, ResourceName: resource, Phase: phase, Owner: v1.ClaimOwner{UID: "uid-" + owner}}}
	}
	claims := []v1.BucketyClaim{
		claim("by-claim", "kafka", "t.by-claim", v1.ClaimCreated),
		claim("claimed-only", "kafka", "t.claimed-only", v1.ClaimClaimed),
		claim("claim-elsewhere", "s3", "elsewhere", v1.ClaimAdopted),
		claim("unrecorded", "kafka", "t.unrecorded", v1.ClaimCreated),
		claim("unrecorded-claimed", "kafka", "t.unrecorded-claimed", v1.ClaimClaimed),
		claim("unrecorded-s3", "s3", "t.unrecorded-s3", v1.ClaimCreated),
	}
	got := sweepTargets(list, claims, set, "kafka")
	var names []string
	for _, tg := range got {
		names = append(names, tg.buckety.Name+"="+tg.resource.Name)
		if tg.resource.Parameters["partitions"] != "1" {
			t.Errorf("%s: want spec.parameters passed as they are, got %v", tg.buckety.Name, tg.resource.Parameters)
		}
	}
	want := "by-claim=t.by-claim by-status=t.by-status claim-elsewhere=t.claim-elsewhere"
	if strings.Join(names, " ") != want {
		t.Errorf("want targets %q, got %q", want, strings.Join(names, " "))
	}
	// The drift sweep also takes a Buckety whose status records no backend
	// yet once its claim on this backend is settled; the usage refresh
	// (sweepTargets) does not.
	names = nil
	for _, tg := range driftTargets(list, claims, set, "kafka") {
		names = append(names, tg.buckety.Name+"="+tg.resource.Name)
	}
	want = "by-claim=t.by-claim by-status=t.by-status claim-elsewhere=t.claim-elsewhere unrecorded=t.unrecorded"
	if strings.Join(names, " ") != want {
		t.Errorf("drift sweep: want targets %q, got %q", want, strings.Join(names, " "))
	}
}

func TestSweepDecision(t *testing.T) {
	drift := &drivers.DriftError{Parameter: "partitions", Current: "5", Desired: "2", Reason: "cannot shrink"}
	reported := func(msg string) []metav1.Condition {
		return []metav1.Condition{{Type: v1.ConditionParameterDrift, Status: metav1.ConditionTrue, Reason: v1.ReasonDriftUnrepairable, Message: msg}}
	}
	clear := []metav1.Condition{{Type: v1.ConditionParameterDrift, Status: metav1.ConditionFalse, Reason: "InSync"}}
	cases := []struct {
		name    string
		conds   []metav1.Condition
		verdict drivers.SweepVerdict
		want    bool
	}{
		{"in sync", clear, drivers.SweepVerdict{}, false},
		{"in sync, no conditions yet", nil, drivers.SweepVerdict{}, false},
		{"Ensure would write", clear, drivers.SweepVerdict{Changes: []string{`config retention.ms "1" -> "2"`}}, true},
		{"missing", clear, drivers.SweepVerdict{Changes: []string{"topic t.a does not exist"}}, true},
		{"not judged", clear, drivers.SweepVerdict{Err: errors.New("topic authorization failed")}, false},
		{"new unrepairable drift", clear, drivers.SweepVerdict{Drift: drift}, true},
		{"unrepairable drift already reported", reported(drift.Error()), drivers.SweepVerdict{Drift: drift}, false},
		{"unrepairable drift changed", reported("parameter partitions: service has 4, spec wants 2: cannot shrink"), drivers.SweepVerdict{Drift: drift}, true},
		{"reported drift gone", reported(drift.Error()), drivers.SweepVerdict{}, true},
		{"reported drift, and a config to repair", reported(drift.Error()), drivers.SweepVerdict{Drift: drift, Changes: []string{"x"}}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := &v1.Buckety{Status: v1.BucketyStatus{Conditions: c.conds}}
			got, why := sweepDecision(b, c.verdict)
			if got != c.want {
				t.Errorf("want enqueue %v, got %v (%s)", c.want, got, why)
			}
			if got && why == "" {
				t.Error("want a reason for enqueueing")
			}
		})
	}
}

func TestRecheckPerBackend(t *testing.T) {
	set := testSet(t)
	kafka, _ := set.Get("kafka")
	s3, _ := set.Get("s3")
	cases := []struct {
		name  string
		swept time.Duration
		e     *backends.Entry
		want  time.Duration
	}{
		{"complete sweep: the safety net", 6 * time.Hour, kafka, 6 * time.Hour},
		{"partial sweep: the ordinary re-check", 6 * time.Hour, s3, 5 * time.Minute},
		{"sweeping off", 0, kafka, 5 * time.Minute},
		{"no backend resolved", 6 * time.Hour, nil, 5 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &Reconciler{Recheck: 5 * time.Minute, SweptRecheck: c.swept}
			if got := r.recheck(c.e); got != c.want {
				t.Errorf("want %s, got %s", c.want, got)
			}
		})
	}
}
