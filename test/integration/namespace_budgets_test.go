package integration

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/harness"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// TestNamespaceBudgetsInController (#52), on the broker, without the
// webhook: limits.namespaces gives a namespace named in it, and one
// labelled as its selector asks, its own disk budget in the controller;
// a topic over it is refused naming the entry, with what the namespace
// uses, what the topic asks for and the budget; the budget metrics carry
// each namespace's own budget; and relabelling a namespace into a larger
// budget makes its waiting topic Ready at once, though its retries are an
// hour apart (wakeOnly): the Namespace watch woke it.
func TestNamespaceBudgetsInController(t *testing.T) {
	needInfra(t)
	const mi = 1 << 20
	plain, named, gold := namespace(t), namespace(t), namespace(t)
	relabel(t, gold, "gold")
	namedCount := 20
	k := sharedKafka("kafka")
	k.Limits = &config.Limits{
		DiskBytes:    drivers.ByteSize{Bytes: 8 * mi},
		PerNamespace: 10,
		Namespaces: []config.NamespaceLimits{
			{Names: []string{named}, DiskBytes: &drivers.ByteSize{Bytes: 16 * mi}, PerNamespace: &namedCount},
			{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "gold"}}, DiskBytes: &drivers.ByteSize{Bytes: 32 * mi}},
		},
	}
	startControllerWith(t, harness.ConfigYAML(k), nil, func(o *appcontroller.Options) {
		wakeOnly(o)
		o.Usage = time.Second
	})
	for _, ns := range []string{plain, named, gold} {
		removeWhileRunning(t, ns)
	}

	// 2 partitions × (1 MiB retention + 1 MiB segment): 4 MiB each.
	for _, ns := range []string{plain, named, gold} {
		b := budgetTopic(ns, "small", 2, "1048576")
		create(t, b)
		waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	}
	// Each namespace's own budgets; a figure the entry leaves out (the
	// selector's perNamespace) stays the backend's.
	for _, c := range []struct {
		ns              string
		disk, bucketies int64
	}{{plain, 8 * mi, 10}, {named, 16 * mi, 20}, {gold, 32 * mi, 10}} {
		wantBudget(t, c.ns, "diskBytes", c.disk)
		wantBudget(t, c.ns, "bucketies", c.bucketies)
	}
	if got := gauge(t, "buckety_namespace_budget_used", map[string]string{"backend": "kafka", "namespace": named, "budget": "diskBytes"}); got != 4*mi {
		t.Errorf("want buckety_namespace_budget_used{budget=diskBytes} of %s 4Mi, got %v", named, got)
	}

	// 4 partitions × (3 MiB + 1 MiB): 16 MiB more.
	big := func(ns string) *v1.Buckety { return budgetTopic(ns, "big", 4, "3145728") }
	refused := func(b *v1.Buckety, want string) {
		t.Helper()
		c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBudgetExceeded, waitTimeout)
		if !strings.Contains(c.Message, want) {
			t.Errorf("%s/%s: want %q, got %q", b.Namespace, b.Name, want, c.Message)
		}
	}
	byName := big(named)
	create(t, byName)
	refused(byName, "it uses 4Mi and asks for 16Mi more, over its budget of 16Mi of disk ((retention.bytes + segment.bytes + max.message.bytes set) × partitions) (limits.namespaces[0].diskBytes)")
	inGold := big(gold)
	create(t, inGold)
	waitCondition(t, inGold, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	// 8 partitions × 4 MiB: 32 MiB more, where 20 MiB of 32 are used.
	huge := budgetTopic(gold, "huge", 8, "3145728")
	create(t, huge)
	refused(huge, "it uses 20Mi and asks for 32Mi more, over its budget of 32Mi of disk ((retention.bytes + segment.bytes + max.message.bytes set) × partitions) (limits.namespaces[1].diskBytes)")

	waiting := big(plain)
	create(t, waiting)
	refused(waiting, "it uses 4Mi and asks for 16Mi more, over its budget of 8Mi of disk ((retention.bytes + segment.bytes + max.message.bytes set) × partitions) (limits.diskBytes)")
	relabel(t, plain, "gold")
	waitCondition(t, waiting, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	wantBudget(t, plain, "diskBytes", 32*mi)
	if c := waitCondition(t, byName, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBudgetExceeded, waitTimeout); !strings.Contains(c.Message, "limits.namespaces[0]") {
		t.Errorf("the topic over the named namespace's budget: want it still refused, got %q", c.Message)
	}
}

// relabel sets namespace ns's tier label.
func relabel(t *testing.T, ns, tier string) {
	t.Helper()
	obj := &corev1.Namespace{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: ns}, obj); err != nil {
		t.Fatal(err)
	}
	patch(t, obj, fmt.Sprintf(`{"metadata":{"labels":{"tier":%q}}}`, tier))
}

// wantBudget waits until the budget metrics of backend kafka give
// namespace ns limit of budget (diskBytes, bucketies, ...).
func wantBudget(t *testing.T, ns, budget string, limit int64) {
	t.Helper()
	wait.For(t, waitTimeout, fmt.Sprintf("buckety_namespace_budget_limit{budget=%s} of %s", budget, ns), func() (bool, string) {
		got := gauge(t, "buckety_namespace_budget_limit", map[string]string{"backend": "kafka", "namespace": ns, "budget": budget})
		return got == float64(limit), fmt.Sprintf("want %d, got %v", limit, got)
	})
}

// filledUnderQuotaBudget starts MinIO and a controller (opts) with backend
// name on it under a quota budget of 8Mi, and in a new namespace the
// Buckety "filled" with quota 6Mi, Ready and holding 5Mi; bucket makes a
// Buckety of that namespace on the backend with a quota.
func filledUnderQuotaBudget(t *testing.T, name string, opts func(*appcontroller.Options)) (ns string, filled *v1.Buckety, bucket func(name, quota string) *v1.Buckety) {
	t.Helper()
	const mi = 1 << 20
	srv := s3test.Start(t, "minio", s3test.Options{})
	be := harness.S3(name, s3driver.Config{Implementation: s3driver.ImplMinIO, Endpoint: srv.Endpoint, Region: srv.Region, ForcePathStyle: true,
		AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: harness.Duration(10 * time.Second)})
	be.Limits = &config.Limits{QuotaBytes: drivers.ByteSize{Bytes: 8 * mi}}
	startControllerWith(t, harness.ConfigYAML(be), nil, opts)
	ns = namespace(t)
	removeWhileRunning(t, ns)
	bucket = func(bname, quota string) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: bname, Namespace: ns},
			Spec: v1.BucketySpec{Backend: name, Name: ns + "-" + bname, Parameters: map[string]string{"quota": quota}}}
	}
	filled = bucket("filled", "6Mi")
	create(t, filled)
	waitCondition(t, filled, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	root := s3Client(t, srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey)
	if _, err := root.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(filled.Spec.Name), Key: aws.String("data"), Body: bytes.NewReader(make([]byte, 5*mi))}); err != nil {
		t.Fatal(err)
	}
	return ns, filled, bucket
}

// lowerQuota sets b's quota and waits until it is applied (Ready at the
// new generation).
func lowerQuota(t *testing.T, b *v1.Buckety, quota string) {
	t.Helper()
	patch(t, getBuckety(t, b.Namespace, b.Name), fmt.Sprintf(`{"spec":{"parameters":{"quota":%q}}}`, quota))
	wait.For(t, waitTimeout, "the lowered quota applied", func() (bool, string) {
		cur := getBuckety(t, b.Namespace, b.Name)
		c := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
		return cur.Status.EffectiveParameters["quota"] == quota && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == cur.Generation,
			fmt.Sprintf("effective %v, Ready %+v", cur.Status.EffectiveParameters, c)
	})
}

// wantRefused creates b and waits for it refused over its budget, the
// refusal saying msg.
func wantRefused(t *testing.T, b *v1.Buckety, msg string) {
	t.Helper()
	create(t, b)
	c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonBudgetExceeded, waitTimeout)
	if !strings.Contains(c.Message, msg) {
		t.Errorf("want the refusal to give the budget, got %q", c.Message)
	}
}

// TestLoweredQuotaCountsWhatTheBucketHolds (MinIO): a bucket filled under
// its quota, then given a quota below what it holds, keeps counting what
// it holds against the namespace's quota budget (MinIO keeps the data
// over a lowered quota): a second bucket the budget has no room for
// beside that data is refused. Before, the lowered quota was what
// counted, and a tenant could fill bucket after bucket under one budget.
func TestLoweredQuotaCountsWhatTheBucketHolds(t *testing.T) {
	needInfra(t)
	const mi = 1 << 20
	ns, filled, bucket := filledUnderQuotaBudget(t, "quota-budget", func(o *appcontroller.Options) {
		o.Usage = time.Second
	})
	wait.For(t, waitTimeout, "status.usage to count the 5Mi written", func() (bool, string) {
		u := getBuckety(t, ns, filled.Name).Status.Usage
		return u != nil && u.Bytes >= 5*mi, fmt.Sprintf("%+v", u)
	})
	lowerQuota(t, filled, "1Mi")
	// 5Mi held + 6Mi asked > 8Mi: no room. Counting the lowered quota,
	// 1Mi + 6Mi, there was.
	wantRefused(t, bucket("second", "6Mi"), "over its budget of 8Mi")
}

// TestQuotaLoweredJustAfterAMeasurementKeepsItsCount (MinIO): a bucket
// measured empty (its status.usage fresh: here written as the usage
// refresh would, a moment before the tenant's upload), then filled, then
// given a quota below what it now holds, before the next measurement. The
// fresh 0 bytes say nothing of what was written since: the lowered quota
// keeps counting what it counted before, and a second bucket the budget
// has no room for beside the data is refused. Before, the fresh 0 bytes
// let the lowered quota count as asked, and a tenant timing its uploads
// after each measurement filled bucket after bucket under one budget.
func TestQuotaLoweredJustAfterAMeasurementKeepsItsCount(t *testing.T) {
	needInfra(t)
	ns, filled, bucket := filledUnderQuotaBudget(t, "quota-after-measure", func(o *appcontroller.Options) {
		o.RESTConfig, o.Recheck, o.Usage = cp.RESTConfig, time.Hour, time.Hour
	})
	cur := getBuckety(t, ns, filled.Name)
	if cur.Status.Usage != nil {
		t.Fatalf("want the bucket not measured by the refresh (every hour here), got %+v", cur.Status.Usage)
	}
	empty := fmt.Sprintf(`{"status":{"usage":{"bytes":0,"objects":0,"measuredAt":%q,"source":"minio data usage"}}}`, time.Now().Add(-time.Minute).UTC().Format(time.RFC3339))
	if err := k8s.Status().Patch(context.Background(), cur, client.RawPatch(types.MergePatchType, []byte(empty))); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "status.usage to say the bucket held nothing a minute ago", func() (bool, string) {
		u := getBuckety(t, ns, filled.Name).Status.Usage
		return u != nil && u.Bytes == 0, fmt.Sprintf("%+v", u)
	})
	lowerQuota(t, filled, "1Mi")
	// 6Mi counted before + 6Mi asked > 8Mi: no room. Counting the lowered
	// quota by the measurement taken before the upload, 1Mi + 6Mi, there
	// was.
	wantRefused(t, bucket("second", "6Mi"), "over its budget of 8Mi")
}

// TestUnmeasuredQuotaKeepsItsCount (MinIO): a
// tenant fills a bucket and lowers its quota below the data before buckety
// has measured what the bucket holds (here usage is measured every hour;
// elsewhere a bucket listed past the usage listing's cap, whose figure the
// refresh cannot renew, or a measurement older than three refreshes). Not
// knowing what it holds, the lowered quota counts what it counted before,
// and a second bucket the budget has no room for beside the data is
// refused. Before, an unknown usage let the lowered quota count as asked,
// for good (the next pass found it already counted), and the tenant could
// repeat it bucket after bucket.
func TestUnmeasuredQuotaKeepsItsCount(t *testing.T) {
	needInfra(t)
	ns, filled, bucket := filledUnderQuotaBudget(t, "quota-unmeasured", func(o *appcontroller.Options) {
		o.RESTConfig, o.Recheck, o.Usage = cp.RESTConfig, time.Hour, time.Hour
	})
	lowerQuota(t, filled, "1Mi")
	if u := getBuckety(t, ns, filled.Name).Status.Usage; u != nil {
		t.Fatalf("want the bucket not measured yet (usage every hour here), got %+v", u)
	}
	// 6Mi counted before + 6Mi asked > 8Mi: no room. Counting the lowered
	// quota, 1Mi + 6Mi, there was.
	wantRefused(t, bucket("second", "6Mi"), "over its budget of 8Mi")
}
