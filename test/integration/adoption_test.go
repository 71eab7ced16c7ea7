package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/wait"
)

// adoptionConfigYAML adds, to the shared backends (which do not allow
// adoption), backends on the same services (one claim space with them:
// `service`) that do, each with the name
// policy the README recommends beside adoption: kafka-adopt and s3-adopt
// retain adopted resources; kafka-adopt-del sets deleteAdopted.
func adoptionConfigYAML() string {
	adopt := func(b config.Backend, service string, deleteAdopted bool) config.Backend {
		b = harness.Tenancy(b, "$${namespace}.", true)
		b.Service, b.Adoption.DeleteAdopted = service, deleteAdopted
		return b
	}
	return harness.ConfigYAML(append(sharedBackends("kafka", "s3"),
		adopt(sharedKafka("kafka-adopt"), "kafka", false),
		adopt(sharedKafka("kafka-adopt-del"), "kafka", true),
		adopt(harness.S3("s3-adopt", sharedS3()), "s3", false))...)
}

// legacyTopic creates a topic out of band, as a team moving in has it:
// two partitions, a retention set by hand, and a record.
func legacyTopic(t *testing.T, name, record string) {
	t.Helper()
	adm, cl := kafkaAdmin(t)
	ctx := context.Background()
	if _, err := adm.CreateTopic(ctx, 2, -1, map[string]*string{"retention.ms": kadm.StringPtr("1000000")}, name); err != nil {
		t.Fatal(err)
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: name, Partition: 1, Value: []byte(record)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
}

// records counts the records on a topic (high watermarks).
func records(t *testing.T, name string) int64 {
	t.Helper()
	adm, _ := kafkaAdmin(t)
	offs, err := adm.ListEndOffsets(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	offs.Each(func(o kadm.ListedOffset) { n += o.Offset })
	return n
}

func patchSpec(t *testing.T, b *v1.Buckety, mutate func(*v1.BucketySpec)) {
	t.Helper()
	cur := getBuckety(t, b.Namespace, b.Name)
	before := cur.DeepCopy()
	mutate(&cur.Spec)
	if err := k8s.Patch(context.Background(), cur, client.MergeFrom(before)); err != nil {
		t.Fatal(err)
	}
}

// TestAdoptionNeedsBothKeys: a topic holding records is refused when only
// the tenant asks (the backend does not allow adoption) and when only the
// maintainer allows it (the Buckety does not ask); the refusal says which
// key is missing, and nothing is claimed.
func TestAdoptionNeedsBothKeys(t *testing.T) {
	needInfra(t)
	startController(t, adoptionConfigYAML(), nil, time.Hour)
	ns := namespace(t)
	name := ns + ".legacy"
	legacyTopic(t, name, "theirs")
	for _, c := range []struct {
		obj, backend string
		adoption     v1.Adoption
		hint         string
	}{
		{"tenant-only", "kafka", v1.AdoptionAdopt, `spec.adoption is Adopt, but backend kafka does not allow adoption`},
		{"maintainer-only", "kafka-adopt", "", "set spec.adoption: Adopt to take it over"},
	} {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: c.obj, Namespace: ns}, Spec: v1.BucketySpec{Backend: c.backend, Name: name, Adoption: c.adoption}}
		create(t, b)
		got := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
		if !strings.Contains(got.Message, c.hint) || !strings.Contains(got.Message, "already exists and holds content") {
			t.Errorf("%s: want the content and %q in the message, got %q", c.obj, c.hint, got.Message)
		}
		// A refused Buckety's later passes claim, inspect and release
		// again (on its backoff, and once more after its own status write),
		// so the claim may be seen for a moment: it must not stay.
		wait.For(t, waitTimeout, c.obj+": claim released", func() (bool, string) {
			_, held := claimOn(t, c.backend, name)
			return !held, "claim held"
		})
		if p := getBuckety(t, ns, c.obj).Status.Provenance; p != "" {
			t.Errorf("%s: want nothing stamped, got provenance %q", c.obj, p)
		}
	}
	if records(t, name) != 1 {
		t.Error("want the refused topic's records untouched")
	}
}

// TestAdoptionOnKadm: with both keys a topic holding records is adopted;
// its differences from spec.parameters are reported and not applied until
// the tenant's parameters match; then it is managed like any topic, and
// retentionPolicy Delete keeps it (the backend does not set deleteAdopted).
func TestAdoptionOnKadm(t *testing.T) {
	needInfra(t)
	startController(t, adoptionConfigYAML(), nil, time.Hour)
	ns := namespace(t)
	name := ns + ".legacy"
	legacyTopic(t, name, "before buckety")
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns}, Spec: v1.BucketySpec{
		Backend: "kafka-adopt", Name: "${namespace}.legacy", Adoption: v1.AdoptionAdopt, RetentionPolicy: v1.RetentionDelete,
		Parameters:    map[string]string{"partitions": "3", "config.retention.ms": "2000000"},
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "legacy-topic"},
	}}
	create(t, b)
	got := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionDrift, waitTimeout)
	for _, want := range []string{"partitions 2 -> 3", `config retention.ms "1000000" -> "2000000"`} {
		if !strings.Contains(got.Message, want) {
			t.Errorf("want the drift report to list %q, got %q", want, got.Message)
		}
	}
	if cl, ok := claimOn(t, "kafka-adopt", name); !ok || cl.Spec.Phase != v1.ClaimAdopting {
		t.Errorf("want the claim Adopting while the drift is unsettled, got %+v", cl)
	}
	time.Sleep(time.Second) // further passes must not apply it either
	if info := topic(t, name); info.partitions != 2 || info.dynamic["retention.ms"] != "1000000" {
		t.Fatalf("want nothing applied before the tenant agrees, got %d partitions, %v", info.partitions, info.dynamic)
	}
	if ok, _ := gone(t, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "legacy-topic", Namespace: ns}}); !ok {
		t.Error("want no Secret handed out before the adoption settles")
	}

	patchSpec(t, b, func(s *v1.BucketySpec) {
		s.Parameters = map[string]string{"partitions": "2", "config.retention.ms": "1000000"}
	})
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if b.Status.Provenance != v1.ProvenanceAdopted || b.Status.BackendResourceName != name {
		t.Errorf("want provenance Adopted on %s, got %q on %q", name, b.Status.Provenance, b.Status.BackendResourceName)
	}
	if cl, ok := claimOn(t, "kafka-adopt", name); !ok || cl.Spec.Phase != v1.ClaimAdopted {
		t.Errorf("want the claim Adopted once settled, got %+v", cl)
	}
	// The consumer reads the data that was there before, with the Secret.
	sec := secret(t, ns, "legacy-topic")
	produceConsume(t, string(sec.Data["bootstrap"]), name, "after buckety")
	if n := records(t, name); n != 2 {
		t.Errorf("want the old record kept beside the new one (2), got %d", n)
	}

	// Settled: managed normally, a parameter change is applied.
	patchSpec(t, b, func(s *v1.BucketySpec) { s.Parameters["config.retention.ms"] = "3000000" })
	wait.For(t, waitTimeout, "the new retention applied", func() (bool, string) {
		info := topic(t, name)
		return info.dynamic["retention.ms"] == "3000000", strings.Join([]string{info.dynamic["retention.ms"]}, "")
	})

	if err := k8s.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "adopted Buckety deleted", func() (bool, string) { return gone(t, b) })
	if !topic(t, name).exists || records(t, name) != 2 {
		t.Fatal("retentionPolicy Delete deleted an adopted topic on a backend without adoption.deleteAdopted")
	}
}

// TestAdoptedDeletedOnlyWithDeleteAdopted: on a backend that sets
// adoption.deleteAdopted, retentionPolicy Delete deletes a settled
// adoption, content and all.
func TestAdoptedDeletedOnlyWithDeleteAdopted(t *testing.T) {
	needInfra(t)
	startController(t, adoptionConfigYAML(), nil, time.Hour)
	ns := namespace(t)
	name := ns + ".legacy"
	legacyTopic(t, name, "disposable")
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns}, Spec: v1.BucketySpec{
		Backend: "kafka-adopt-del", Name: name, Adoption: v1.AdoptionAndConverge, RetentionPolicy: v1.RetentionDelete,
		Parameters: map[string]string{"config.retention.ms": "5000000"},
	}}
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if info := topic(t, name); info.dynamic["retention.ms"] != "5000000" || b.Status.Provenance != v1.ProvenanceAdopted {
		t.Errorf("want AdoptAndConverge to apply the spec at once and record Adopted, got %v, %q", info.dynamic, b.Status.Provenance)
	}
	if err := k8s.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "adopted Buckety deleted", func() (bool, string) { return gone(t, b) })
	wait.For(t, waitTimeout, "the adopted topic deleted", func() (bool, string) { return !topic(t, name).exists, "still there" })
}

// TestAdoptionOnS3: a bucket holding an object, with versioning enabled by
// hand, is adopted; suspending versioning is reported, not applied, until
// the tenant says to converge; the object stays.
func TestAdoptionOnS3(t *testing.T) {
	needInfra(t)
	startController(t, adoptionConfigYAML(), nil, time.Hour)
	ns := namespace(t)
	ctx := context.Background()
	bucket := ns + ".legacy"
	root := rootS3(t)
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket), VersioningConfiguration: &types.VersioningConfiguration{Status: types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	if _, err := root.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("precious"), Body: strings.NewReader("theirs")}); err != nil {
		t.Fatal(err)
	}
	versioning := func() types.BucketVersioningStatus {
		out, err := root.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
		if err != nil {
			t.Fatal(err)
		}
		return out.Status
	}
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "legacy", Namespace: ns}, Spec: v1.BucketySpec{
		Backend: "s3-adopt", Name: bucket, Adoption: v1.AdoptionAdopt, RetentionPolicy: v1.RetentionDelete,
		Parameters:    map[string]string{"versioning": "false"},
		DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "legacy-bucket"},
	}}
	create(t, b)
	got := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionDrift, waitTimeout)
	if !strings.Contains(got.Message, "versioning Enabled -> Suspended") {
		t.Errorf("want the drift report to list the versioning change, got %q", got.Message)
	}
	time.Sleep(time.Second)
	if st := versioning(); st != types.BucketVersioningStatusEnabled {
		t.Fatalf("want versioning left Enabled before the tenant agrees, got %q", st)
	}

	patchSpec(t, b, func(s *v1.BucketySpec) { s.Adoption = v1.AdoptionAndConverge })
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if st := versioning(); st != types.BucketVersioningStatusSuspended {
		t.Errorf("want versioning Suspended once the tenant said to converge, got %q", st)
	}
	if cl, ok := claimOn(t, "s3-adopt", bucket); !ok || cl.Spec.Phase != v1.ClaimAdopted || b.Status.Provenance != v1.ProvenanceAdopted {
		t.Errorf("want claim and provenance Adopted, got %+v, %q", cl, b.Status.Provenance)
	}
	sec := secret(t, ns, "legacy-bucket")
	putGet(t, sec.Data, "new", "ours")
	if _, err := root.HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String("precious")}); err != nil {
		t.Errorf("want the adopted object kept: %v", err)
	}
	if err := k8s.Delete(ctx, b); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "adopted Buckety deleted", func() (bool, string) { return gone(t, b) })
	if !bucketExists(t, bucket) {
		t.Fatal("retentionPolicy Delete deleted an adopted bucket on a backend without adoption.deleteAdopted")
	}
}

// TestHostileAdoptionRefusedByNamePolicy: a tenant holding both keys still
// cannot adopt another namespace's topic: the name policy refuses the name
// before anything is claimed or read.
func TestHostileAdoptionRefusedByNamePolicy(t *testing.T) {
	needInfra(t)
	startController(t, adoptionConfigYAML(), nil, time.Hour)
	victim, attacker := namespace(t), namespace(t)
	name := victim + ".orders"
	legacyTopic(t, name, "the victim's")
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: attacker}, Spec: v1.BucketySpec{
		Backend: "kafka-adopt", Name: name, Adoption: v1.AdoptionAndConverge, RetentionPolicy: v1.RetentionDelete,
		Parameters: map[string]string{"config.retention.ms": "1"},
	}}
	create(t, b)
	got := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonInvalidName, waitTimeout)
	if !strings.Contains(got.Message, "only allows names starting with") {
		t.Errorf("want the name policy named, got %q", got.Message)
	}
	if _, held := claimOn(t, "kafka-adopt", name); held {
		t.Error("want no claim on another namespace's name")
	}
	if err := k8s.Delete(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	wait.For(t, waitTimeout, "attacker's Buckety deleted", func() (bool, string) { return gone(t, b) })
	if info := topic(t, name); !info.exists || info.dynamic["retention.ms"] != "1000000" || records(t, name) != 1 {
		t.Errorf("want the victim's topic untouched, got %+v", info)
	}
}
