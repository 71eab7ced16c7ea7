package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kadm"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
	"github.com/Yolean/buckety-controller/test/harness"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/wait"
)

// Hostile tenants, round two: each test is one attack of the issue, on the
// real control plane and the real backends, run as a tenant would (a user
// bound to the namespace's edit role where the attack goes through the
// API).

// r2YAML adds an R2 backend whose eu jurisdiction is a second real S3
// server with the same keys (as R2's account and jurisdiction endpoints
// share them); its account endpoint is the shared MinIO, so it shares the
// s3 backend's claim space.
func r2YAML(eu *s3test.Server) string {
	c := sharedS3()
	c.Implementation, c.JurisdictionEndpoints = s3driver.ImplR2, map[string]string{"eu": eu.Endpoint}
	r2 := harness.S3("r2", c)
	r2.Service = "s3"
	return harness.ConfigYAML(append(sharedBackends("kafka", "s3"), r2)...)
}

// readyR2Bucket starts a second MinIO as the r2 backend's eu jurisdiction
// and a controller, and in a new namespace the Buckety "data" (bucket
// <namespace><suffix>, retentionPolicy Delete, params) with the access
// "reader" holding it, Ready.
func readyR2Bucket(t *testing.T, suffix string, params map[string]string) (*s3test.Server, string, *v1.Buckety) {
	t.Helper()
	needInfra(t)
	eu := s3test.Start(t, "minio", s3test.Options{AccessKey: minio.AccessKey, SecretKey: minio.SecretKey, Region: minio.Region})
	startController(t, r2YAML(eu), nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: ns}, Spec: v1.BucketySpec{
		Backend: "r2", Name: ns + suffix, RetentionPolicy: v1.RetentionDelete, Parameters: params}}
	create(t, b)
	create(t, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "data"}, CredentialsSecretName: "reader"}})
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	return eu, ns, b
}

// TestDeleteGoesWhereTheClaimSays (item 2): a tenant deletes a Buckety an
// access holds, then changes spec.parameters.jurisdiction while it waits
// (no webhook here: the controller must hold on its own), then deletes the
// access. The deletion empties and deletes the bucket buckety created, in
// the EU, and never the same-named bucket on the account endpoint, which
// it never inspected or claimed.
func TestDeleteGoesWhereTheClaimSays(t *testing.T) {
	eu, ns, b := readyR2Bucket(t, "-eu-data", map[string]string{"jurisdiction": "eu"})
	ctx, name := context.Background(), b.Spec.Name
	if cl, ok := claimOn(t, "r2", name); !ok || cl.Spec.Location["jurisdiction"] != "eu" {
		t.Fatalf("want the claim to record jurisdiction eu, got %+v", cl)
	}
	euS3 := s3Client(t, eu.Endpoint, eu.Region, eu.AccessKey, eu.SecretKey)
	if _, err := euS3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String("mine"), Body: strings.NewReader("eu")}); err != nil {
		t.Fatal(err)
	}
	// Someone else's bucket of the same name on the account endpoint.
	if _, err := rootS3(t).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	if _, err := rootS3(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String("victim"), Body: strings.NewReader("not buckety's")}); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, b, v1.ConditionBlockedByAccesses, metav1.ConditionTrue, "", waitTimeout)
	patch(t, b, `{"spec":{"parameters":{"jurisdiction":null}}}`)
	if err := k8s.Delete(ctx, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "Buckety deleted", func() (bool, string) { return gone(t, b) })
	if _, err := rootS3(t).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(name), Key: aws.String("victim")}); err != nil {
		t.Errorf("want the account endpoint's bucket and object untouched, got %v", err)
	}
	if _, err := euS3.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)}); err == nil {
		t.Error("want the EU bucket buckety created deleted")
	}
}

// TestDeleteWithNoJurisdictionStaysHome: the same attack on
// a bucket made without a jurisdiction, on the account endpoint: a
// jurisdiction set while it waits for its access must not point the
// deletion at the same-named bucket in the EU. Its claim recorded no
// location at all, which read as "made before claims recorded it", and
// every call went where the spec said by then.
func TestDeleteWithNoJurisdictionStaysHome(t *testing.T) {
	eu, ns, b := readyR2Bucket(t, "-data", nil)
	ctx, name := context.Background(), b.Spec.Name
	if cl, ok := claimOn(t, "r2", name); !ok || cl.Spec.Location == nil {
		t.Fatalf("want the claim to record that the bucket has no jurisdiction, got %+v", cl)
	}
	// Someone else's bucket of the same name in the EU.
	euS3 := s3Client(t, eu.Endpoint, eu.Region, eu.AccessKey, eu.SecretKey)
	if _, err := euS3.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	if _, err := euS3.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(name), Key: aws.String("victim"), Body: strings.NewReader("not buckety's")}); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, b, v1.ConditionBlockedByAccesses, metav1.ConditionTrue, "", waitTimeout)
	patch(t, b, `{"spec":{"parameters":{"jurisdiction":"eu"}}}`)
	if err := k8s.Delete(ctx, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "reader", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "Buckety deleted", func() (bool, string) { return gone(t, b) })
	if _, err := euS3.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(name), Key: aws.String("victim")}); err != nil {
		t.Errorf("want the EU bucket and its object untouched, got %v", err)
	}
	if _, err := rootS3(t).HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(name)}); err == nil {
		t.Error("want the account endpoint's bucket buckety created deleted")
	}
}

// TestOneServiceOneClaimSpace (item 3): two backends on one Kafka cluster
// share a claim space (`service`): a topic created through one cannot be
// claimed, adopted or deleted through the other, by a tenant of another
// namespace.
func TestOneServiceOneClaimSpace(t *testing.T) {
	needInfra(t)
	kafkaB := sharedKafka("kafka-b")
	kafkaB.Service = "kafka"
	yaml := harness.ConfigYAML(append(sharedBackends("kafka", "s3"), kafkaB)...)
	startController(t, yaml, nil, time.Hour)
	owner, attacker := namespace(t), namespace(t)
	removeWhileRunning(t, owner)
	removeWhileRunning(t, attacker)
	name := owner + ".shared"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "shared", Namespace: owner}, Spec: v1.BucketySpec{Backend: "kafka", Name: name}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	hostile := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "grab", Namespace: attacker}, Spec: v1.BucketySpec{Backend: "kafka-b", Name: name, RetentionPolicy: v1.RetentionDelete}}
	create(t, hostile)
	c := waitCondition(t, hostile, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonNameConflict, waitTimeout)
	if strings.Contains(c.Message, "Buckety "+owner+"/") || !strings.Contains(c.Message, "owned by another Buckety") {
		t.Errorf("want the owner (in another namespace) not named, got %q", c.Message)
	}
	if err := k8s.Delete(context.Background(), hostile); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "the hostile Buckety deleted", func() (bool, string) { return gone(t, hostile) })
	if !topic(t, name).exists {
		t.Error("want the owner's topic to survive the other backend's Buckety")
	}
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
}

// TestAdoptionWithdrawnIsRefused (item 4): an adoption waiting for the
// tenant (AdoptionDrift) is refused, not completed, when the tenant
// withdraws its key, even while matching the parameters in the same edit:
// no Secret, no claim, the records untouched.
func TestAdoptionWithdrawnIsRefused(t *testing.T) {
	needInfra(t)
	startController(t, adoptionConfigYAML(), nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	name := ns + ".legacy"
	legacyTopic(t, name, "theirs")
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns}, Spec: v1.BucketySpec{
		Backend: "kafka-adopt", Name: "${namespace}.legacy", Adoption: v1.AdoptionAdopt,
		Parameters:    map[string]string{"partitions": "3"},
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "legacy-topic"}}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionDrift, waitTimeout)
	patch(t, b, `{"spec":{"adoption":"Refuse","parameters":{"partitions":"2","config.retention.ms":"1000000"}}}`)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
	if _, ok := claimOn(t, "kafka-adopt", name); ok {
		t.Error("want the claim released")
	}
	time.Sleep(2 * time.Second)
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "legacy-topic"}, &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Errorf("want no Secret for a withdrawn adoption, got %v", err)
	}
	if n := records(t, name); n != 1 {
		t.Errorf("want the topic's record untouched, got %d records", n)
	}
}

// TestNothingForeignInStatusOrEvents (item 5): a tenant probing names of
// other tenants learns only that a name is taken or holds content: no
// owner of another namespace, no object key or record count of a resource
// it does not own, in status or in events.
func TestNothingForeignInStatusOrEvents(t *testing.T) {
	needInfra(t)
	startController(t, configYAML("kafka", "s3"), nil, time.Hour)
	victim, attacker := namespace(t), namespace(t)
	removeWhileRunning(t, victim)
	removeWhileRunning(t, attacker)
	ctx := context.Background()
	owned := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "payroll", Namespace: victim}, Spec: v1.BucketySpec{Backend: "kafka", Name: "payroll-" + victim}}
	create(t, owned)
	waitCondition(t, owned, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	bucket := attacker + "-probe"
	if _, err := rootS3(t).CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := rootS3(t).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("q3-salaries.csv"), Body: strings.NewReader("secret")}); err != nil {
		t.Fatal(err)
	}
	probes := []*v1.Buckety{
		{ObjectMeta: metav1.ObjectMeta{Name: "guess", Namespace: attacker}, Spec: v1.BucketySpec{Backend: "kafka", Name: "payroll-" + victim}},
		{ObjectMeta: metav1.ObjectMeta{Name: "peek", Namespace: attacker}, Spec: v1.BucketySpec{Backend: "s3", Name: bucket}},
	}
	for _, p := range probes {
		create(t, p)
	}
	waitCondition(t, probes[0], v1.ConditionReady, metav1.ConditionFalse, v1.ReasonNameConflict, waitTimeout)
	waitCondition(t, probes[1], v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
	waitEvent(t, attacker, v1.EventAdoptionRefused, bucket)
	if leaks := foreignDetails(t, attacker, victim, "payroll", "q3-salaries", "records"); len(leaks) > 0 {
		t.Errorf("want nothing about other tenants' resources, found %q", leaks)
	}
}

// foreignDetails lists the conditions and events in ns that mention any of
// words: what a tenant could read there about others.
func foreignDetails(t *testing.T, ns string, words ...string) []string {
	t.Helper()
	var out []string
	check := func(where, text string) {
		for _, w := range words {
			// The resource name a tenant chose is its own to read.
			if strings.Contains(text, w) && !strings.Contains(w, ns) {
				out = append(out, where+": "+text)
				return
			}
		}
	}
	var bl v1.BucketyList
	if err := k8s.List(context.Background(), &bl, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	// The names the tenant typed are its own to read back.
	var typed []string
	for _, b := range bl.Items {
		typed = append(typed, b.Spec.Name)
	}
	own := func(s string) string {
		for _, n := range typed {
			s = strings.ReplaceAll(s, n, "<its resource>")
		}
		return s
	}
	for _, b := range bl.Items {
		for _, c := range b.Status.Conditions {
			check("Buckety "+b.Name+" "+c.Type, own(c.Message))
		}
	}
	var events eventsv1.EventList
	if err := k8s.List(context.Background(), &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		check("event "+e.Reason, own(e.Note))
	}
	return out
}

// TestLiveEmptyTopicIsNotConverged (item 6): an existing topic no buckety
// installation made, without records (a live topic whose records expired),
// is refused by a Buckety that names it under the default spec.adoption,
// so its tenant gets no credential on what that topic's producers write
// next; with both adoption keys it is adopted, but not converged: its
// configs stay as they are, and the Buckety reports the differences until
// its parameters match. System topics are out of reach.
func TestLiveEmptyTopicIsNotConverged(t *testing.T) {
	needInfra(t)
	startController(t, adoptionConfigYAML(), nil, time.Hour)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	adm, _ := kafkaAdmin(t)
	name := ns + ".connect-offsets"
	if _, err := adm.CreateTopic(context.Background(), 1, -1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}, name); err != nil {
		t.Fatal(err)
	}
	for _, backend := range []string{"kafka", "kafka-adopt"} {
		sneaky := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "sneaky-" + backend, Namespace: ns}, Spec: v1.BucketySpec{Backend: backend, Name: name,
			DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "sneaky-" + backend}}}
		create(t, sneaky)
		c := waitCondition(t, sneaky, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
		if !strings.Contains(c.Message, "made outside buckety") || sneaky.Status.Provenance != "" {
			t.Errorf("%s: want the empty topic refused as made outside buckety, nothing stamped; got %q, provenance %q", backend, c.Message, sneaky.Status.Provenance)
		}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "sneaky-" + backend}, &corev1.Secret{}); err == nil {
			t.Errorf("%s: want no Secret for a refused topic", backend)
		}
		deleteOn(t, k8s, sneaky)
	}
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "offsets", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka-adopt", Name: name, Adoption: v1.AdoptionAdopt}}
	create(t, b)
	c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionDrift, waitTimeout)
	if !strings.Contains(c.Message, "cleanup.policy") {
		t.Errorf("want the difference named, got %q", c.Message)
	}
	time.Sleep(2 * time.Second)
	if got := topic(t, name).dynamic["cleanup.policy"]; got != "compact" {
		t.Errorf("want the live topic's cleanup.policy kept, got %q", got)
	}
	patch(t, b, `{"spec":{"parameters":{"config.cleanup.policy":"compact"}}}`)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if b.Status.Provenance != v1.ProvenanceAdopted {
		t.Errorf("want it Adopted once it matches, got %s", b.Status.Provenance)
	}

	schemas := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "schemas", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: "_schemas"}}
	create(t, schemas)
	if c := waitCondition(t, schemas, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonInvalidName, waitTimeout); !strings.Contains(c.Message, "reserves") {
		t.Errorf("want the reserved name refused, got %q", c.Message)
	}
}

// TestClaimWithoutOwnerIsVisibleAndReclaimable (item 7): a tenant deletes a
// Buckety an access holds, then patches away its finalizer while the
// deletion waits. Its claim and topic remain (retentionPolicy Delete never
// ran); the claim is stamped, counted in buckety_claims{owner="gone"}, and
// a new Buckety of the same name takes it over.
func TestClaimWithoutOwnerIsVisibleAndReclaimable(t *testing.T) {
	needInfra(t)
	startControllerWith(t, configYAML("kafka", "s3"), nil, func(o *appcontroller.Options) {
		o.Recheck, o.OwnerCheck = time.Hour, 200*time.Millisecond
	})
	ns := namespace(t)
	removeWhileRunning(t, ns)
	ed := tenant(t, ns, "tenant-"+ns)
	name := ns + ".abandoned"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "abandoned", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: name, RetentionPolicy: v1.RetentionDelete}}
	if err := ed.Create(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if err := ed.Create(context.Background(), &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "holder", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "abandoned"}, CredentialsSecretName: "holder"}}); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if err := ed.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, b, v1.ConditionBlockedByAccesses, metav1.ConditionTrue, "", waitTimeout)
	cur := getBuckety(t, ns, "abandoned")
	before := cur.DeepCopy()
	cur.Finalizers = nil
	if err := ed.Patch(context.Background(), cur, client.MergeFrom(before)); err != nil {
		t.Fatalf("edit may patch the finalizer away (that is the attack): %v", err)
	}
	wait.For(t, waitTimeout, "the Buckety gone", func() (bool, string) { return gone(t, b) })
	wait.For(t, waitTimeout, "the claim stamped owner-gone", func() (bool, string) {
		cl, ok := claimOn(t, "kafka", name)
		return ok && cl.Status.OwnerGoneSince != nil, fmt.Sprintf("%+v", cl)
	})
	// The gauge counts again at most every few seconds (metrics.collectEvery).
	wait.For(t, waitTimeout, "buckety_claims{owner=gone} at least 1", func() (bool, string) {
		got := gauge(t, "buckety_claims", map[string]string{"backend": "kafka", "owner": "gone"})
		return got >= 1, fmt.Sprint(got)
	})
	if !topic(t, name).exists {
		t.Error("want the topic of a claim whose owner is gone retained")
	}
	again := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "reclaimed", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: name}}
	if err := ed.Create(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, again, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if cl, ok := claimOn(t, "kafka", name); !ok || cl.Spec.Owner.UID != string(again.UID) || cl.Status.OwnerGoneSince != nil {
		t.Errorf("want the claim taken over by the new Buckety, got %+v", cl)
	}
}

// gauge reads one series of a gauge from the controller-runtime registry
// (the in-process controller's).
func gauge(t *testing.T, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.(prometheus.Gatherer).Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if want, ok := labels[lp.GetName()]; ok && want != lp.GetValue() {
					continue next
				}
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// TestLimitsPerBackend (item 7): a backend's limits bound what one
// namespace consumes: partitions above parameterMax and a Buckety beyond
// perNamespace are refused by the controller (here without the webhook,
// which refuses them too: internal/admission), with errors naming the
// field and the limit.
func TestLimitsPerBackend(t *testing.T) {
	needInfra(t)
	bs := sharedBackends("kafka", "s3")
	bs[0].Limits = &config.Limits{PerNamespace: 2, ParameterMax: map[string]int64{"partitions": 8}}
	yaml := harness.ConfigYAML(bs...)
	startControllerWith(t, yaml, nil, wakeOnly)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	huge := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "huge", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".huge", Parameters: map[string]string{"partitions": "64"}}}
	create(t, huge)
	if c := waitCondition(t, huge, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonInvalidParameters, waitTimeout); !strings.Contains(c.Message, "spec.parameters[partitions]") || !strings.Contains(c.Message, "at most 8") {
		t.Errorf("want the partitions limit named, got %q", c.Message)
	}
	var third *v1.Buckety
	for i := range 3 {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("t%d", i), Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: fmt.Sprintf("%s.t%d", ns, i)}}
		if i == 0 {
			// Deleted below to free a place: a retained topic would keep it.
			b.Spec.RetentionPolicy = v1.RetentionDelete
		}
		create(t, b)
		if i < 2 {
			waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
		}
		third = b
	}
	if c := waitCondition(t, third, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonLimitExceeded, waitTimeout); !strings.Contains(c.Message, "limits.perNamespace: 2") {
		t.Errorf("want the namespace limit named, got %q", c.Message)
	}
	if topic(t, ns+".t2").exists {
		t.Error("want no topic beyond the limit")
	}
	if err := k8s.Delete(context.Background(), &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "t0", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	// Woken by the release: its retries are an hour apart (wakeOnly).
	waitCondition(t, third, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
}

// wakeOnly runs a controller whose Buckety passes are never retried
// within a test (failures back off for an hour, re-checks are an hour
// apart), so what turns a waiting Buckety Ready is its wake alone, however
// slow the machine.
func wakeOnly(o *appcontroller.Options) {
	o.Recheck = time.Hour
	o.RetryBackoff = &retry.Backoff{TransientBase: time.Hour, TransientMax: time.Hour, PermanentBase: time.Hour, PermanentMax: time.Hour}
}

// TestReleaseWakesOnlyItsWaiters (item 7): releasing a claim reconciles
// the Bucketies waiting for that name, not every Buckety in NameConflict
// in the cluster.
func TestReleaseWakesOnlyItsWaiters(t *testing.T) {
	needInfra(t)
	startControllerWith(t, configYAML("kafka", "s3"), nil, wakeOnly)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	for _, n := range []string{"x", "y"} {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "own-" + n, Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + "." + n}}
		create(t, b)
		waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	}
	const waiters = 30
	for i := range waiters {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("want-x-%02d", i), Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".x"}}
		create(t, b)
		waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonNameConflict, waitTimeout)
	}
	wantY := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "want-y", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: ns + ".y"}}
	create(t, wantY)
	waitCondition(t, wantY, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonNameConflict, waitTimeout)
	waitIdle(t)
	before := reconciles(t, "buckety")
	if err := k8s.Delete(context.Background(), &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "own-y", Namespace: ns}}); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, wantY, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitIdle(t)
	// own-y's deletion passes, want-y's provisioning passes: a handful;
	// waking every Buckety in NameConflict would add the 30 waiting for x.
	if n := reconciles(t, "buckety") - before; n >= waiters {
		t.Errorf("want only the Bucketies waiting for %s.y reconciled, got %v Buckety reconciles", ns, n)
	}
}

// reconciles reads controller_runtime_reconcile_total of a controller.
func reconciles(t *testing.T, controller string) float64 {
	t.Helper()
	mfs, err := ctrlmetrics.Registry.(prometheus.Gatherer).Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if lp.GetName() == "controller" && lp.GetValue() == controller {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

// TestLaggingCacheDoesNotRecreate (item 8): the controller's cache still
// shows a claim the API server no longer has (its watch of claims is held
// back, as for a leader with a lagging cache). The topic was deleted out of
// band; a pass over the Buckety must not re-create it on the strength of
// the cached claim.
func TestLaggingCacheDoesNotRecreate(t *testing.T) {
	needInfra(t)
	hold := &heldWatches{resource: "bucketyclaims"}
	rc := rest.CopyConfig(cp.RESTConfig)
	rc.Wrap(func(next http.RoundTripper) http.RoundTripper { return hold.transport(next) })
	startControllerREST(t, configYAML("kafka", "s3"), nil, time.Hour, rc)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	name := ns + ".orders"
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "kafka", Name: name}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	cl, ok := claimOn(t, "kafka", name)
	if !ok {
		t.Fatal("want a claim")
	}
	hold.set(true)
	t.Cleanup(func() { hold.set(false) })
	if err := k8s.Delete(context.Background(), cl); err != nil {
		t.Fatal(err)
	}
	adm, _ := kafkaAdmin(t)
	if _, err := adm.DeleteTopic(context.Background(), name); err != nil {
		t.Fatal(err)
	}
	// Wake the Buckety (a change of a mutable field).
	patch(t, b, `{"spec":{"retentionPolicy":"Delete"}}`)
	c := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonProgressing, waitTimeout)
	if !strings.Contains(c.Message, "nothing was written to the backend") {
		t.Errorf("want the lost claim reported, got %q", c.Message)
	}
	if topic(t, name).exists {
		t.Error("want no topic re-created on a claim the API server no longer has")
	}
}

// heldWatches holds back, while set, the watch events of one resource the
// client receives: a lagging cache.
type heldWatches struct {
	resource string
	// selector, when set, picks the watches to hold by their label
	// selector holding it (of any resource) in place of resource.
	selector string
	mu       sync.Mutex
	held     bool
	cond     *sync.Cond
}

func (h *heldWatches) set(held bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.held = held
	if h.cond != nil {
		h.cond.Broadcast()
	}
}

func (h *heldWatches) waitTimeout() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cond == nil {
		h.cond = sync.NewCond(&h.mu)
	}
	for h.held {
		h.cond.Wait()
	}
}

func (h *heldWatches) transport(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		picked := strings.Contains(req.URL.Path, "/"+h.resource)
		if h.selector != "" {
			picked = strings.Contains(req.URL.Query().Get("labelSelector"), h.selector)
		}
		if err != nil || req.URL.Query().Get("watch") != "true" || !picked {
			return resp, err
		}
		resp.Body = &heldBody{ReadCloser: resp.Body, h: h}
		return resp, nil
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// heldBody delivers what it read only while its watch is not held.
type heldBody struct {
	io.ReadCloser
	h *heldWatches
}

func (b *heldBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.h.waitTimeout()
	return n, err
}

// removeWhileRunning deletes the namespace's accesses and Bucketies at the end of the
// test while the test's controller still runs (cleanups run last-in
// first-out, so call it after startController). Later tests' controllers,
// configured without this test's limits, would otherwise reconcile what
// is left: a Buckety refused here for its size would be provisioned there.
func removeWhileRunning(t *testing.T, ns string) {
	t.Helper()
	t.Cleanup(func() {
		// Accesses first: a Buckety's deletion waits for explicit ones.
		if err := k8s.DeleteAllOf(context.Background(), &v1.BucketyAccess{}, client.InNamespace(ns)); err != nil {
			t.Errorf("delete the accesses of %s: %v", ns, err)
		}
		if err := k8s.DeleteAllOf(context.Background(), &v1.Buckety{}, client.InNamespace(ns)); err != nil {
			t.Errorf("delete the Bucketies of %s: %v", ns, err)
		}
		wait.For(t, waitTimeout, "the Bucketies of "+ns+" gone", func() (bool, string) {
			var list v1.BucketyList
			if err := k8s.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
				return false, err.Error()
			}
			return len(list.Items) == 0, fmt.Sprintf("%d left", len(list.Items))
		})
	})
}
