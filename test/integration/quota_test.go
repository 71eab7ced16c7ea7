package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/wait"
)

// budgetTopic is a Buckety on backend kafka of partitions × retention.
func budgetTopic(ns, name string, partitions int, retention string) *v1.Buckety {
	params := map[string]string{"partitions": fmt.Sprint(partitions)}
	if retention != "" {
		// Each partition counts its retention and its active segment.
		params["config.retention.bytes"] = retention
		params["config.segment.bytes"] = "1048576"
	}
	return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1.BucketySpec{Backend: "kafka", Name: ns + "." + name, Parameters: params}}
}

// settled waits until b is Ready or not Ready for a reason other than
// progress, and returns its Ready condition.
func settled(t *testing.T, b *v1.Buckety) metav1.Condition {
	t.Helper()
	var c metav1.Condition
	wait.For(t, waitTimeout, "Buckety "+b.Name+" to settle", func() (bool, string) {
		got := getBuckety(t, b.Namespace, b.Name)
		r := meta.FindStatusCondition(got.Status.Conditions, v1.ConditionReady)
		if r == nil || r.ObservedGeneration != got.Generation || r.Reason == v1.ReasonProgressing || r.Reason == v1.ReasonNotDetermined {
			return false, condString(got.Status.Conditions)
		}
		c = *r
		return true, ""
	})
	return c
}

// TestNamespaceBudgetHoldsUnderBurst (#37): a burst of creates that no
// webhook filters (as when the webhook's cache lags) takes the namespace
// to its partition and disk budget and no further: the controller checks
// every new claim and every growth against the claims, under the
// namespace's gate, and names what the namespace uses, asks and may use.
// Growth past the budget leaves the topic as it is; a release lets a
// waiting Buckety in.
func TestNamespaceBudgetHoldsUnderBurst(t *testing.T) {
	needInfra(t)
	bs := sharedBackends("kafka", "s3")
	bs[0].Limits = &config.Limits{Partitions: 10, DiskBytes: drivers.ByteSize{Bytes: 20 << 20}}
	startController(t, harness.ConfigYAML(bs...), nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)

	const burst = 8 // 3 partitions × (1 MiB + a 1 MiB segment) each: room for 3
	var wg sync.WaitGroup
	bk := make([]*v1.Buckety, burst)
	for i := range burst {
		bk[i] = budgetTopic(ns, fmt.Sprintf("b%d", i), 3, "1048576")
		wg.Add(1)
		go func() { defer wg.Done(); create(t, bk[i]) }()
	}
	wg.Wait()
	var ready, refused []*v1.Buckety
	for _, b := range bk {
		switch c := settled(t, b); c.Reason {
		case v1.ReasonReconciled:
			ready = append(ready, b)
		case v1.ReasonBudgetExceeded:
			refused = append(refused, b)
			if !strings.Contains(c.Message, "over its budget of 10 partitions (limits.partitions)") || !strings.Contains(c.Message, "asks for 3 more") {
				t.Errorf("%s: want the partitions used, asked and budgeted, got %q", b.Name, c.Message)
			}
		default:
			t.Errorf("%s: want Ready or BudgetExceeded, got %s: %s", b.Name, c.Reason, c.Message)
		}
	}
	if len(ready) != 3 {
		t.Fatalf("want exactly 3 of %d topics within the budget of 10 partitions, got %d Ready", burst, len(ready))
	}
	for _, b := range refused {
		if topic(t, b.Spec.Name).exists {
			t.Errorf("%s: want no topic beyond the budget", b.Name)
		}
	}

	// 9 of 10 partitions used: growing one topic to 4 fits, another does not.
	patch(t, ready[0], `{"spec":{"parameters":{"partitions":"4"}}}`)
	wait.For(t, waitTimeout, "the first growth applied", func() (bool, string) {
		n := topic(t, ready[0].Spec.Name).partitions
		return n == 4, fmt.Sprintf("%d partitions", n)
	})
	patch(t, ready[1], `{"spec":{"parameters":{"partitions":"4"}}}`)
	c := waitCondition(t, ready[1], v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBudgetExceeded, waitTimeout)
	if !strings.Contains(c.Message, "it uses 10 and asks for 1 more") || !strings.Contains(c.Message, "keeps its current parameters") {
		t.Errorf("want the growth refused with the numbers, got %q", c.Message)
	}
	if got := topic(t, ready[1].Spec.Name).partitions; got != 3 {
		t.Errorf("want the refused growth not applied: 3 partitions, got %d", got)
	}
	if p := waitCondition(t, ready[1], v1.ConditionProvisioned, metav1.ConditionTrue, "", waitTimeout); p.Status != metav1.ConditionTrue {
		t.Errorf("want the topic still provisioned, got %+v", p)
	}

	// A counted topic whose retention.bytes is removed would keep counting
	// its old figure (budget.Kept) while Ensure set unlimited retention:
	// this controller runs without the webhook, which refuses that update,
	// and must refuse it itself, naming the field, with the topic as it was.
	patch(t, ready[2], `{"spec":{"parameters":{"config.retention.bytes":null}}}`)
	if c := waitCondition(t, ready[2], v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBudgetExceeded, waitTimeout); !strings.Contains(c.Message, "spec.parameters[config.retention.bytes]") || !strings.Contains(c.Message, "keeps its current parameters") {
		t.Errorf("want the removal of a counted topic's retention.bytes refused naming it, got %q", c.Message)
	}
	if got := topic(t, ready[2].Spec.Name).dynamic["retention.bytes"]; got != "1048576" {
		t.Errorf("want the refused removal not applied: retention.bytes 1048576 on the broker, got %q", got)
	}
	patch(t, ready[2], `{"spec":{"parameters":{"config.retention.bytes":"1048576"}}}`)
	waitCondition(t, ready[2], v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)

	// Unbounded retention under a disk budget is refused, not counted as 0.
	open := budgetTopic(ns, "unbounded", 1, "")
	create(t, open)
	if c := waitCondition(t, open, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBudgetExceeded, waitTimeout); !strings.Contains(c.Message, "config.retention.bytes") {
		t.Errorf("want unbounded retention named, got %q", c.Message)
	}

	// Deleting a Ready topic frees 3 partitions and 6 MiB: one waiting
	// Buckety gets in, woken by the release (the refused growth is put
	// back first, or it would compete for the room).
	patch(t, ready[1], `{"spec":{"parameters":{"partitions":"3"}}}`)
	waitCondition(t, ready[1], v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	// Deleted with its topic: a retained one would keep counting.
	patch(t, ready[2], `{"spec":{"retentionPolicy":"Delete"}}`)
	deleteBuckety(t, ready[2])
	wait.For(t, waitTimeout, "a waiting Buckety to take the freed room", func() (bool, string) {
		n := 0
		for _, b := range refused {
			if r := meta.FindStatusCondition(getBuckety(t, ns, b.Name).Status.Conditions, v1.ConditionReady); r != nil && r.Status == metav1.ConditionTrue {
				n++
			}
		}
		return n == 1, fmt.Sprintf("%d of the waiting Bucketies Ready", n)
	})
}

// deleteBuckety deletes a Buckety.
func deleteBuckety(t *testing.T, b *v1.Buckety) {
	t.Helper()
	if err := k8s.Delete(context.Background(), &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: b.Name, Namespace: b.Namespace}}); err != nil {
		t.Fatal(err)
	}
}

// TestUsageRefresh (#37): status.usage reports what the broker holds within
// one refresh (partitions, end offsets, bytes from DescribeLogDirs), and
// the usage metrics carry it per resource and per namespace.
func TestUsageRefresh(t *testing.T) {
	needInfra(t)
	startControllerWith(t, configYAML("kafka", "s3"), nil, func(o *appcontroller.Options) { o.Usage = time.Second; o.Recheck = time.Hour })
	ns := namespace(t)
	removeWhileRunning(t, ns)
	b := budgetTopic(ns, "events", 2, "")
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	_, cl := kafkaAdmin(t)
	const n = 25
	for i := range n {
		if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: b.Spec.Name, Partition: int32(i % 2), Value: []byte(strings.Repeat("x", 100))}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	var u *v1.Usage
	wait.For(t, waitTimeout, "status.usage to count the records", func() (bool, string) {
		u = getBuckety(t, ns, b.Name).Status.Usage
		return u != nil && u.EndOffsets != nil && *u.EndOffsets == n, fmt.Sprintf("%+v", u)
	})
	if u.Partitions == nil || *u.Partitions != 2 || u.Bytes <= 0 || u.Source != "DescribeLogDirs" || u.Objects != nil {
		t.Errorf("want 2 partitions, some bytes, source DescribeLogDirs and no objects, got %+v", u)
	}
	want := brokerLogBytes(t, b.Spec.Name)
	if u.Bytes != want {
		t.Errorf("want status.usage.bytes as the broker reports it (%d), got %d", want, u.Bytes)
	}
	wait.For(t, waitTimeout, "the usage metrics", func() (bool, string) {
		r := gauge(t, "buckety_resource_usage_bytes", map[string]string{"namespace": ns, "buckety": b.Name})
		n := gauge(t, "buckety_namespace_usage_bytes", map[string]string{"namespace": ns, "backend": "kafka"})
		return r == float64(want) && n == float64(want), fmt.Sprintf("resource %v, namespace %v", r, n)
	})
	if q := meta.FindStatusCondition(getBuckety(t, ns, b.Name).Status.Conditions, v1.ConditionQuotaWarning); q == nil || q.Status != metav1.ConditionFalse || q.Reason != v1.ReasonBelowQuota {
		t.Errorf("want QuotaWarning False BelowQuota without a quota, got %+v", q)
	}

	// More records: usage is rewritten within a refresh (that its write
	// reconciles nothing is UsageOnly's unit test: this process's counter
	// also counts the other tests' leftover Bucketies).
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: b.Spec.Name, Value: []byte("more")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "status.usage to count the new record", func() (bool, string) {
		u := getBuckety(t, ns, b.Name).Status.Usage
		return u != nil && u.EndOffsets != nil && *u.EndOffsets == n+1, fmt.Sprintf("%+v", u)
	})
}

// brokerLogBytes sums the log bytes of a topic's partitions as the broker
// reports them (one replica each), out of band.
func brokerLogBytes(t *testing.T, name string) int64 {
	t.Helper()
	adm, _ := kafkaAdmin(t)
	dirs, err := adm.DescribeAllLogDirs(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	perPartition := map[int32]int64{}
	dirs.Each(func(d kadm.DescribedLogDir) {
		d.Topics.Each(func(p kadm.DescribedLogDirPartition) {
			if p.Topic == name {
				perPartition[p.Partition] = max(perPartition[p.Partition], p.Size)
			}
		})
	})
	var sum int64
	for _, s := range perPartition {
		sum += s
	}
	return sum
}

// TestKafkaClientQuotasThroughTheController (#37): an access's client
// quotas reach its own user on the broker as the access's parameters say,
// a change converges them (a removed key removed), the backend's default
// applies to an access that sets none, and deleting the access removes
// the user's quotas with the user.
func TestKafkaClientQuotasThroughTheController(t *testing.T) {
	needInfra(t)
	b, _ := scopedBroker(t, 0)
	be := superuserBackend(b, 0)
	opts := map[string]any{}
	if err := json.Unmarshal(be.Config, &opts); err != nil {
		t.Fatal(err)
	}
	opts["quotas"] = map[string]any{"maxProducerByteRate": 10 << 20, "defaultConsumerByteRate": 2 << 20}
	raw, err := json.Marshal(opts)
	if err != nil {
		t.Fatal(err)
	}
	be.Config = raw
	startController(t, harness.ConfigYAML(be), nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	create(t, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".orders"}})
	a := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: ns}, Spec: v1.BucketyAccessSpec{
		BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "orders-rw",
		Parameters: map[string]string{"producerByteRate": "1048576", "requestPercentage": "25"}}}
	create(t, a)
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	user := string(secret(t, ns, "orders-rw").Data["sasl.username"])
	adm := superAdmin(t, b)
	quotasOf := func() map[string]float64 {
		got, err := adm.DescribeClientQuotas(context.Background(), true, []kadm.DescribeClientQuotaComponent{{Type: "user", MatchName: &user}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, e := range got {
			for _, v := range e.Values {
				out[v.Key] = v.Value
			}
		}
		return out
	}
	want := map[string]float64{"producer_byte_rate": 1 << 20, "request_percentage": 25, "consumer_byte_rate": 2 << 20}
	if got := quotasOf(); !reflect.DeepEqual(got, want) {
		t.Fatalf("user %s: want quotas %v (the access's, and the backend's default consumer rate), got %v", user, want, got)
	}

	patch(t, a, `{"spec":{"parameters":{"producerByteRate":"2097152","requestPercentage":null}}}`)
	want = map[string]float64{"producer_byte_rate": 2 << 20, "consumer_byte_rate": 2 << 20}
	wait.For(t, waitTimeout, "the changed quotas on the broker", func() (bool, string) {
		got := quotasOf()
		return reflect.DeepEqual(got, want), fmt.Sprintf("%v", got)
	})

	if err := k8s.Delete(context.Background(), &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "writer", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the revoked user's quotas gone", func() (bool, string) {
		got := quotasOf()
		return len(got) == 0, fmt.Sprintf("%v", got)
	})
}

// TestBudgetSetBelowUseTakesNothingAway: a disk budget set on a backend
// below what a namespace's topics already hold takes nothing away: each
// topic made before it stays Ready and records what it counts. And a topic
// made before the budget, deleted with Retain (while the controller was
// away, so its first pass under the budget is its deletion), keeps
// counting: its claim records its figure before it is retained, so a new
// topic cannot take the room its data still holds.
func TestBudgetSetBelowUseTakesNothingAway(t *testing.T) {
	needInfra(t)
	const mi = 1 << 20
	ns := namespace(t)
	before := startControllerWith(t, harness.ConfigYAML(sharedKafka("kafka")), nil, wakeOnly)
	// 3 partitions × (1 MiB retention + 1 MiB segment): 6 MiB each.
	kept, retained := budgetTopic(ns, "kept", 3, "1048576"), budgetTopic(ns, "retained", 3, "1048576")
	for _, b := range []*v1.Buckety{kept, retained} {
		create(t, b)
		waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	}
	before.stop(t)
	deleteBuckety(t, retained) // Retain, the default: its finalizer holds it

	k := sharedKafka("kafka")
	k.Limits = &config.Limits{DiskBytes: drivers.ByteSize{Bytes: 8 * mi}}
	startControllerWith(t, harness.ConfigYAML(k), nil, wakeOnly)
	removeWhileRunning(t, ns)
	wait.For(t, waitTimeout, "the retained topic's Buckety gone", func() (bool, string) {
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(retained), &v1.Buckety{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if !topic(t, retained.Spec.Name).exists {
		t.Fatalf("the retained topic %s is gone from the broker", retained.Spec.Name)
	}
	// The kept topic's first pass under the budget (12 MiB used of 8)
	// records its figure and leaves it Ready.
	uid := getBuckety(t, ns, kept.Name).UID
	wait.For(t, waitTimeout, "the kept topic's claim to record its figure", func() (bool, string) {
		var l v1.BucketyClaimList
		if err := k8s.List(context.Background(), &l, client.MatchingLabels{v1.ClaimOwnerLabel: string(uid)}); err != nil {
			return false, err.Error()
		}
		for _, cl := range l.Items {
			if cl.Spec.Budgeted != nil {
				return cl.Spec.Budgeted.DiskBytes == 6*mi, fmt.Sprintf("%+v", *cl.Spec.Budgeted)
			}
		}
		return false, fmt.Sprintf("%d claims, none with a figure; Ready: %s", len(l.Items), condString(getBuckety(t, ns, kept.Name).Status.Conditions))
	})
	if c := settled(t, kept); c.Status != metav1.ConditionTrue {
		t.Errorf("a topic made before the budget: want it still Ready, got %s: %s", c.Reason, c.Message)
	}
	small := budgetTopic(ns, "small", 1, "1048576")
	create(t, small)
	if c := waitCondition(t, small, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBudgetExceeded, waitTimeout); !strings.Contains(c.Message, "it uses 12Mi and asks for 2Mi more") {
		t.Errorf("want the retained topic's 6Mi counted with the kept one's, got %q", c.Message)
	}
}
