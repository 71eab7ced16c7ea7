package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	s3driver "github.com/Yolean/buckety-controller/drivers/s3"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	appcontroller "github.com/Yolean/buckety-controller/internal/app/controller"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/controlplane"
	"github.com/Yolean/buckety-controller/test/harness"
	s3test "github.com/Yolean/buckety-controller/test/s3"
	"github.com/Yolean/buckety-controller/test/seaweedfs"
	"github.com/Yolean/buckety-controller/test/wait"
)

// ownedCase is one backend of the ownership tests: a scoped backend named
// "owned" on a server of its own, and how a Secret reaches its resource.
type ownedCase struct {
	name string
	// backend starts the server and returns the backend, and how the
	// server's admin sees whether a resource exists.
	backend func(t *testing.T) (config.Backend, func(resource string) bool)
	// resource is the backend resource name for namespace ns.
	resource func(ns string) string
	// write puts data into the resource with a Secret's credentials.
	write func(t *testing.T, data map[string][]byte, resource string) error
	// read reads the data back with a Secret's credentials.
	read func(t *testing.T, data map[string][]byte, resource string) error
}

func ownedCases() []ownedCase {
	readers := 0
	kafkaCase := ownedCase{name: "kafka",
		backend: func(t *testing.T) (config.Backend, func(string) bool) {
			b, _ := scopedBroker(t, 0)
			be := superuserBackend(b, 0)
			be.Name = "owned"
			admin := secretKafka(t, map[string][]byte{"bootstrap": []byte(b.Bootstrap()), "sasl.mechanism": []byte("SCRAM-SHA-512"), "sasl.username": []byte("buckety"), "sasl.password": []byte("s3cr3t")})
			return be, func(topic string) bool {
				td, err := kadm.NewClient(admin).ListTopics(context.Background(), topic)
				if err != nil {
					t.Fatal(err)
				}
				return td.Has(topic) && td[topic].Err == nil
			}
		},
		resource: func(ns string) string { return ns + ".orders" },
		write:    func(t *testing.T, data map[string][]byte, topic string) error { return produceWith(t, data, topic) },
		// Each read in a group of its own: a group that consumed once
		// starts after what it committed.
		read: func(t *testing.T, data map[string][]byte, topic string) error {
			readers++
			return consumeWith(t, data, topic, fmt.Sprintf("%sreader-%d", data["group.id.prefix"], readers))
		},
	}
	s3Write := func(_ *testing.T, data map[string][]byte, bucket string) error {
		_, err := s3With(data).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("order-1"), Body: strings.NewReader("the first cluster's")})
		return err
	}
	s3Read := func(_ *testing.T, data map[string][]byte, bucket string) error {
		_, err := s3With(data).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String(bucket), Key: aws.String("order-1")})
		return err
	}
	cases := []ownedCase{kafkaCase}
	for _, impl := range s3test.Implementations {
		cases = append(cases, ownedCase{name: impl,
			backend: func(t *testing.T) (config.Backend, func(string) bool) {
				srv, be := scopedS3(t, impl)
				be.Name = "owned"
				return be, bucketOn(srv.Endpoint, srv.Region, srv.AccessKey, srv.SecretKey)
			},
			resource: func(ns string) string { return ns + "-orders" },
			write:    s3Write, read: s3Read,
		})
	}
	cases = append(cases, ownedCase{name: "seaweedfs",
		backend: func(t *testing.T) (config.Backend, func(string) bool) {
			srv := seaweedfs.Start(t, seaweedfs.Options{})
			sc := s3driver.Config{Implementation: s3driver.ImplSeaweedFS, Endpoint: srv.Endpoint, Region: "us-east-1", ForcePathStyle: true,
				AccessKeyID: srv.AccessKey, SecretAccessKey: srv.SecretKey, RequestTimeout: harness.Duration(10 * time.Second), Credentials: &s3driver.Credentials{}}
			be := harness.S3("owned", sc)
			be.Credentials = harness.Grace(3 * time.Second)
			return be, bucketOn(srv.Endpoint, "us-east-1", srv.AccessKey, srv.SecretKey)
		},
		resource: func(ns string) string { return ns + "-orders" },
		write:    s3Write, read: s3Read,
	})
	return cases
}

// bucketOn reports, with a server's root keys, whether a bucket exists.
func bucketOn(endpoint, region, key, secret string) func(string) bool {
	cl := s3.New(s3.Options{Region: region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(key, secret, "")})
	return func(bucket string) bool {
		_, err := cl.HeadBucket(context.Background(), &s3.HeadBucketInput{Bucket: aws.String(bucket)})
		return err == nil
	}
}

// installationYAML is buckety-controller.yaml of installation inst with
// backends.
func installationYAML(inst string, backends ...config.Backend) string {
	return "installation: " + inst + "\n" + harness.ConfigYAML(backends...)
}

// otherCluster is a second control plane, with a client, for a second
// installation (or a cluster rebuilt from git).
func otherCluster(t *testing.T) (*rest.Config, client.Client) {
	t.Helper()
	other := controlplane.StartT(t, controlplane.Options{CRDDirs: []string{controlplane.CRDDir()}})
	return other.RESTConfig, clientOn(t, other.RESTConfig)
}

// clientOn is a client of the controller's scheme on the API server rc
// reaches.
func clientOn(t *testing.T, rc *rest.Config) client.Client {
	t.Helper()
	scheme, err := appcontroller.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(rc, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// applyOn creates objs on the API server c reaches, as kubectl apply of
// the same manifests would on every cluster.
func applyOn(t *testing.T, c client.Client, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := c.Create(context.Background(), o); err != nil {
			t.Fatalf("create %T %s/%s: %v", o, o.GetNamespace(), o.GetName(), err)
		}
	}
}

// tenantManifests are the manifests of one tenant as git holds them: a
// namespace, a Buckety orders on resource, and an access app.
func tenantManifests(ns, resource string, adoption v1.Adoption) (*corev1.Namespace, *v1.Buckety, *v1.BucketyAccess) {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "owned", Name: resource, Adoption: adoption, RetentionPolicy: v1.RetentionDelete}},
		&v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "app"}}
}

func secretOn(t *testing.T, c client.Client, ns, name string) map[string][]byte {
	t.Helper()
	s := &corev1.Secret{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
		t.Fatal(err)
	}
	return s.Data
}

// TestSecondInstallationKeptOut (issue 49) on the real broker, MinIO,
// VersityGW and SeaweedFS: two control planes, a controller each
// (installations east and west), one backend. East's tenant gets a new,
// empty resource; west's tenant, in a namespace of the same name, applies
// the same manifests with spec.adoption AdoptAndConverge on a backend whose
// maintainer allows adoption: refused (OwnedElsewhere, naming east), no
// credential issued. Then a handover, which needs both sides: east hands
// the backend over (ownership.handOverTo: west), west accepts it
// (ownership.acceptFrom: [east]); west's Buckety takes the resource over
// with its data, and east's credential stops working.
func TestSecondInstallationKeptOut(t *testing.T) {
	needInfra(t)
	westREST, west := otherCluster(t)
	westRun := func(t *testing.T, be config.Backend) *controllerRun {
		return startControllerWith(t, installationYAML("west", be), nil, func(o *appcontroller.Options) {
			fastLoops(o)
			o.RESTConfig = westREST
		})
	}
	for _, c := range ownedCases() {
		t.Run(c.name, func(t *testing.T) {
			be, exists := c.backend(t)
			eastRun := startControllerWith(t, installationYAML("east", be), nil, fastLoops)
			adopting := be
			adopting.Adoption = &config.Adoption{Allow: true}
			westCtl := westRun(t, adopting)

			ns := namespace(t)
			removeWhileRunning(t, ns)
			resource := c.resource(ns)
			_, eb, ea := tenantManifests(ns, resource, "")
			create(t, eb)
			create(t, ea)
			waitCondition(t, ea, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			eastSecret := secret(t, ns, "app").Data

			wnsObj, wb, wa := tenantManifests(ns, resource, v1.AdoptionAndConverge)
			applyOn(t, west, wnsObj, wb, wa)
			got := waitConditionOn(t, west, wb, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonOwnedElsewhere, waitTimeout)
			if !strings.Contains(got.Message, "installation east") {
				t.Errorf("want the refusal to name the owning installation, got %q", got.Message)
			}
			if err := c.write(t, eastSecret, resource); err != nil {
				t.Fatalf("east's Secret on its own resource: %v", err)
			}
			// West's tenant holds no right on it: no credential was issued.
			waitConditionOn(t, west, wa, v1.ConditionReady, metav1.ConditionFalse, "", waitTimeout)
			var creds v1.BucketyCredentialList
			if err := west.List(context.Background(), &creds); err != nil {
				t.Fatal(err)
			}
			if len(creds.Items) != 0 {
				t.Errorf("want no credential issued by west, got %d", len(creds.Items))
			}
			if err := west.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "app"}, &corev1.Secret{}); err == nil {
				t.Errorf("want no Secret written by west")
			}

			// The handover: both sides.
			eastRun.stop(t)
			westCtl.stop(t)
			giving := be
			giving.Ownership = &config.Ownership{HandOverTo: "west"}
			startControllerWith(t, installationYAML("east", giving), nil, fastLoops)
			waitCondition(t, eb, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonHandedOver, waitTimeout)
			receiving := be
			receiving.Ownership = &config.Ownership{AcceptFrom: []string{"east"}}
			westRun(t, receiving)
			waitConditionOn(t, west, wb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			if wb.Status.Provenance != v1.ProvenanceCreated {
				t.Errorf("want the handed-over resource provenance Created (Delete deletes it), got %q", wb.Status.Provenance)
			}
			waitConditionOn(t, west, wa, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			if err := c.read(t, secretOn(t, west, ns, "app"), resource); err != nil {
				t.Errorf("west's Secret on the data handed over: %v", err)
			}
			wait.For(t, waitTimeout, "east's credential revoked", func() (bool, string) {
				err := c.write(t, eastSecret, resource)
				return err != nil, fmt.Sprintf("east's Secret still works: %v", err)
			})
			// West owns it now: east's Buckety (retentionPolicy Delete too)
			// lets go without deleting anything; west's deletes it.
			deleteOn(t, k8s, ea)
			deleteOn(t, k8s, eb)
			if !exists(resource) {
				t.Fatalf("east's Delete deleted %s, which west holds", resource)
			}
			if err := c.read(t, secretOn(t, west, ns, "app"), resource); err != nil {
				t.Errorf("west's Secret after east's Buckety went: %v", err)
			}
			deleteOn(t, west, wa)
			deleteOn(t, west, wb)
			wait.For(t, waitTimeout, resource+" deleted by west's retentionPolicy Delete", func() (bool, string) {
				return !exists(resource), "still there"
			})
			// East, still handing the backend over, is asked for the
			// name again: nothing is left to hand over, and nothing is
			// marked (a mark of a name that does not exist would hold it
			// for west for good where records outlive their resources).
			_, again, _ := tenantManifests(ns, resource, "")
			create(t, again)
			got = waitCondition(t, again, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonHandedOver, waitTimeout)
			if !strings.Contains(got.Message, "does not exist there now") {
				t.Errorf("a handed-over name that is gone: want it said, got %q", got.Message)
			}
			if exists(resource) {
				t.Errorf("want %s not created by the installation handing it over", resource)
			}
			deleteOn(t, k8s, again)
		})
	}
}

func deleteOn(t *testing.T, c client.Client, o client.Object) {
	t.Helper()
	if err := c.Delete(context.Background(), o); err != nil {
		t.Fatalf("delete %T %s: %v", o, o.GetName(), err)
	}
	wait.For(t, waitTimeout, fmt.Sprintf("%T %s gone", o, o.GetName()), func() (bool, string) {
		err := c.Get(context.Background(), client.ObjectKeyFromObject(o), o)
		return err != nil && client.IgnoreNotFound(err) == nil, fmt.Sprint(err)
	})
}

// TestRebuiltInstallationReattaches (issue 49) on the real broker, MinIO,
// VersityGW and SeaweedFS: an installation's tenant fills its resource;
// the cluster is lost (its controller stopped, its etcd never seen again)
// and rebuilt: a new control plane, buckety reinstalled with the same
// installation name and the same manifests. The Buckety is Ready on its
// data with provenance Created and no adoption key; the new Secret reads
// the data; the old principal (its record lost with the old etcd) is
// revoked after credentials.orphanGrace; retentionPolicy Delete deletes
// the resource.
func TestRebuiltInstallationReattaches(t *testing.T) {
	needInfra(t)
	for _, c := range ownedCases() {
		t.Run(c.name, func(t *testing.T) {
			be, exists := c.backend(t)
			grace := harness.Duration(2 * time.Second)
			be.Credentials = &config.Credentials{OrphanGrace: &grace, RotationGrace: &grace}
			lost := startControllerWith(t, installationYAML("north", be), nil, fastLoops)
			ns := namespace(t)
			resource := c.resource(ns)
			_, b, a := tenantManifests(ns, resource, "")
			create(t, b)
			create(t, a)
			waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			old := secret(t, ns, "app").Data
			if err := c.write(t, old, resource); err != nil {
				t.Fatalf("the Secret on its resource: %v", err)
			}
			// A second Buckety, deleted with Retain before the loss: its
			// record says retained, so the rebuilt cluster does not
			// re-attach it without the adoption keys.
			archived := c.resource(ns + "-archive")
			_, ab, aa := tenantManifests(ns, archived, "")
			ab.Name, aa.Name, aa.Spec.BucketyRef.Name, aa.Spec.CredentialsSecretName = "archive", "archive", "archive", "archive"
			ab.Spec.RetentionPolicy = v1.RetentionRetain
			create(t, ab)
			create(t, aa)
			waitCondition(t, aa, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			if err := c.write(t, secret(t, ns, "archive").Data, archived); err != nil {
				t.Fatalf("the archive's Secret: %v", err)
			}
			deleteOn(t, k8s, aa)
			deleteOn(t, k8s, ab)
			if !exists(archived) {
				t.Fatalf("want %s retained", archived)
			}
			// A third, empty: the rebuilt cluster's tenants of another
			// namespace name it before it is restored.
			spare := c.resource(ns + "-spare")
			_, sb, _ := tenantManifests(ns, spare, "")
			sb.Name = "spare"
			create(t, sb)
			waitCondition(t, sb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			lost.stop(t)

			rebuiltREST, rebuilt := otherCluster(t)
			// The rebuilt cluster's backend lets tenants adopt: the
			// maintainer's key, which a squatter below pairs with its own.
			be.Adoption = &config.Adoption{Allow: true}
			// On two of the servers the rebuilt cluster also renames the
			// installation, listing the old name in formerInstallations:
			// its records and principals stay its own.
			yaml := installationYAML("north", be)
			if c.name == "versitygw" || c.name == "seaweedfs" {
				yaml = "formerInstallations: [north]\n" + installationYAML("north-2", be)
			}
			startControllerWith(t, yaml, nil, func(o *appcontroller.Options) {
				fastLoops(o)
				o.RESTConfig = rebuiltREST
			})
			nsObj, rb, ra := tenantManifests(ns, resource, "")
			applyOn(t, rebuilt, nsObj, rb, ra)
			waitConditionOn(t, rebuilt, rb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			if rb.Status.Provenance != v1.ProvenanceCreated {
				t.Errorf("want the re-attached resource provenance Created, got %q", rb.Status.Provenance)
			}
			waitConditionOn(t, rebuilt, ra, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			if err := c.read(t, secretOn(t, rebuilt, ns, "app"), resource); err != nil {
				t.Errorf("the new Secret on the data: %v", err)
			}
			wait.For(t, waitTimeout, "the lost cluster's credential revoked", func() (bool, string) {
				err := c.write(t, old, resource)
				return err != nil, fmt.Sprintf("the old Secret still works: %v", err)
			})
			// Another namespace's Buckety names the empty resource whose
			// Buckety is not restored yet: refused, not handed the name.
			sqNS, sq, _ := tenantManifests(ns+"-squat", spare, "")
			applyOn(t, rebuilt, sqNS, sq)
			got := waitConditionOn(t, rebuilt, sq, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonOwnedElsewhere, waitTimeout)
			if !strings.Contains(got.Message, "a Buckety of another namespace") || !strings.Contains(got.Message, "does not have") {
				t.Errorf("a name held for a Buckety not restored yet: want the refusal to say so, got %q", got.Message)
			}
			if strings.Contains(got.Message, ns+"/spare") {
				t.Errorf("another namespace's refusal: want the holder's namespace not named, got %q", got.Message)
			}
			deleteOn(t, rebuilt, sq)
			if !exists(spare) {
				t.Fatalf("the refused Buckety's deletion deleted %s", spare)
			}
			// The same with both adoption keys: they take over a resource
			// the claims decide between two Bucketies this cluster has,
			// not one kept for a Buckety it does not have yet.
			akNS, ak, _ := tenantManifests(ns+"-adopter", spare, "")
			ak.Spec.Adoption = v1.AdoptionAdopt
			applyOn(t, rebuilt, akNS, ak)
			got = waitConditionOn(t, rebuilt, ak, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonOwnedElsewhere, waitTimeout)
			if !strings.Contains(got.Message, "a Buckety of another namespace") || !strings.Contains(got.Message, "does not have") {
				t.Errorf("a name held for a Buckety not restored yet, asked with both adoption keys: want the refusal to say so, got %q", got.Message)
			}
			deleteOn(t, rebuilt, ak)
			if !exists(spare) {
				t.Fatalf("the refused adopter's deletion deleted %s", spare)
			}
			_, rsb, _ := tenantManifests(ns, spare, "")
			rsb.Name = "spare"
			applyOn(t, rebuilt, rsb)
			waitConditionOn(t, rebuilt, rsb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			if rsb.Status.Provenance != v1.ProvenanceCreated {
				t.Errorf("want the restored Buckety re-attached (provenance Created), got %q", rsb.Status.Provenance)
			}
			deleteOn(t, rebuilt, rsb)
			_, rab, _ := tenantManifests(ns, archived, "")
			rab.Name, rab.Spec.RetentionPolicy = "archive", v1.RetentionRetain
			applyOn(t, rebuilt, rab)
			waitConditionOn(t, rebuilt, rab, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonAdoptionRefused, waitTimeout)
			deleteOn(t, rebuilt, rab)
			deleteOn(t, rebuilt, ra)
			deleteOn(t, rebuilt, rb)
			wait.For(t, waitTimeout, resource+" deleted by retentionPolicy Delete", func() (bool, string) {
				return !exists(resource), "still there"
			})
			// The lost cluster's objects: strip them, as its etcd is gone.
			for _, o := range []client.Object{a, b, sb} {
				patch(t, o, `{"metadata":{"finalizers":null}}`)
			}
		})
	}
}

// TestDrainReadsTheOwnerRecordFresh (kafka): east's Buckety holds a topic,
// which is deleted out of band, and its record removed from the registry
// by hand; west (another installation on the same broker) creates the
// topic anew for its own Buckety, with its own owner record. East's tenant then asks for a drain: east's process
// still remembers the topic as its own, but the drain reads the record
// afresh before its step, as a deletion does, and is refused: west's
// records are kept.
func TestDrainReadsTheOwnerRecordFresh(t *testing.T) {
	needInfra(t)
	westREST, west := otherCluster(t)
	b, _ := scopedBroker(t, 0)
	be := superuserBackend(b, 0)
	be.Name = "owned"
	allow := true
	be.Drain = &config.Drain{Allow: &allow}
	startControllerWith(t, installationYAML("east", be), nil, func(o *appcontroller.Options) { o.Recheck = time.Hour })
	startControllerWith(t, installationYAML("west", be), nil, func(o *appcontroller.Options) { o.RESTConfig, o.Recheck = westREST, time.Hour })
	ns := namespace(t)
	removeWhileRunning(t, ns)
	topic := ns + ".orders"
	eb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "owned", Name: topic}}
	create(t, eb)
	waitCondition(t, eb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)

	cl := secretKafka(t, map[string][]byte{"bootstrap": []byte(b.Bootstrap()), "sasl.mechanism": []byte("SCRAM-SHA-512"), "sasl.username": []byte("buckety"), "sasl.password": []byte("s3cr3t")})
	adm := kadm.NewClient(cl)
	deleteTopicOutOfBand(t, adm, topic)
	// East's record outlives its topic (the registry): a maintainer
	// removes it by hand (TestResourceCreatedAgainElsewhere).
	forgetOwnerRecord(t, cl, topic)

	wb := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns}, Spec: v1.BucketySpec{Backend: "owned", Name: topic}}
	applyOn(t, west, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, wb)
	waitConditionOn(t, west, wb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	produce(t, cl, topic, 5)

	requestDrain(t, eb, &v1.DrainSpec{Request: "r1"})
	cur := waitDrain(t, eb, "r1", v1.DrainPhaseRefused, waitTimeout)
	if msg := cur.Status.Drain.Message; !strings.Contains(msg, "not this Buckety's to drain") || !strings.Contains(msg, "west") {
		t.Errorf("want the refusal to say the resource is west's, got %q", msg)
	}
	if got := topicRecords(t, adm, topic); got != 5 {
		t.Errorf("want west's 5 records kept, got %d", got)
	}
}

// TestResourceCreatedAgainElsewhere on the real broker and MinIO: east's
// tenant holds a resource, with a credential of its own; the resource is
// deleted out of band, and west (another installation on the same
// backend) applies a Buckety of the same name.
//
//   - kafka: east's owner record outlives the topic (the registry), so
//     west is refused (OwnedElsewhere, naming east, saying the topic does
//     not exist now), though west's maintainer accepts east's handovers,
//     until a maintainer removes east's record by hand; then west creates
//     it anew.
//   - s3: the record went with the bucket (its tags); west creates it.
//
// West's tenant writes to the new resource. East's process still
// remembers the resource as its own; its tenant then edits the Buckety's
// parameters. That pass reads the record again, finds west's, writes
// nothing to west's resource (the parameter is not applied) and reports
// OwnedElsewhere naming west; east's access has its credential revoked,
// since it was granted on the name and would reach west's data.
func TestResourceCreatedAgainElsewhere(t *testing.T) {
	needInfra(t)
	westREST, west := otherCluster(t)
	type againCase struct {
		name string
		// backend starts the server; remove deletes a resource out of
		// band, free removes its registry record by hand (kafka; nil where
		// the record went with the resource), applied reads the edited
		// parameter's value on the server.
		backend  func(t *testing.T) (be config.Backend, remove, free func(resource string), param, value string, applied func(resource string) string)
		resource func(ns string) string
		write    func(t *testing.T, data map[string][]byte, resource string) error
	}
	cases := []againCase{{name: "kafka",
		backend: func(t *testing.T) (config.Backend, func(string), func(string), string, string, func(string) string) {
			b, _ := scopedBroker(t, 0)
			be := superuserBackend(b, 0)
			be.Name = "owned"
			cl := secretKafka(t, map[string][]byte{"bootstrap": []byte(b.Bootstrap()), "sasl.mechanism": []byte("SCRAM-SHA-512"), "sasl.username": []byte("buckety"), "sasl.password": []byte("s3cr3t")})
			adm := kadm.NewClient(cl)
			remove := func(topic string) { deleteTopicOutOfBand(t, adm, topic) }
			applied := func(topic string) string { return topicWith(t, adm, cl, topic).dynamic["retention.ms"] }
			return be, remove, func(topic string) { forgetOwnerRecord(t, cl, topic) }, "config.retention.ms", "3600000", applied
		},
		resource: func(ns string) string { return ns + ".orders" },
		write:    func(t *testing.T, data map[string][]byte, topic string) error { return produceWith(t, data, topic) },
	}, {name: "minio",
		backend: func(t *testing.T) (config.Backend, func(string), func(string), string, string, func(string) string) {
			srv, be := scopedS3(t, "minio")
			be.Name = "owned"
			root := s3.New(s3.Options{Region: srv.Region, BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true,
				Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, "")})
			remove := func(bucket string) {
				ctx := context.Background()
				list, err := root.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range list.Contents {
					if _, err := root.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key}); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := root.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
					t.Fatalf("delete %s out of band: %v", bucket, err)
				}
			}
			applied := func(bucket string) string {
				out, err := root.GetBucketVersioning(context.Background(), &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
				if err != nil {
					t.Fatal(err)
				}
				return string(out.Status)
			}
			return be, remove, nil, "versioning", "true", applied
		},
		resource: func(ns string) string { return ns + "-orders" },
		write: func(_ *testing.T, data map[string][]byte, bucket string) error {
			return putWith(data, bucket, "order-1")
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			be, remove, free, param, value, applied := c.backend(t)
			// East makes no pass of its own (no sweep, no re-check) but
			// for its tenant's edit: what it remembers is all it has.
			startControllerWith(t, installationYAML("east", be), nil, func(o *appcontroller.Options) {
				fastLoops(o)
				o.DriftSweep = 0
			})
			westOpts := func(o *appcontroller.Options) {
				fastLoops(o)
				o.RESTConfig = westREST
			}
			ns := namespace(t)
			removeWhileRunning(t, ns)
			resource := c.resource(ns)
			_, eb, ea := tenantManifests(ns, resource, "")
			create(t, eb)
			create(t, ea)
			waitCondition(t, ea, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			// The Buckety's own Ready, written by the pass its access's
			// status wakes: east's last pass before the edit.
			waitCondition(t, eb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			eastSecret := secret(t, ns, "app").Data
			if err := c.write(t, eastSecret, resource); err != nil {
				t.Fatalf("east's Secret on its resource: %v", err)
			}
			// The passes the access's last status write wakes come first
			// (each would create a missing resource again).
			time.Sleep(3 * time.Second)
			remove(resource)

			wnsObj, wb, wa := tenantManifests(ns, resource, "")
			// West's maintainer accepts east's handovers (a migration's
			// first step, east still running): that frees none of the
			// names east holds.
			westBe := be
			westBe.Ownership = &config.Ownership{AcceptFrom: []string{"east"}}
			startControllerWith(t, installationYAML("west", westBe), nil, westOpts)
			applyOn(t, west, wnsObj, wb, wa)
			if free != nil {
				got := waitConditionOn(t, west, wb, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonOwnedElsewhere, waitTimeout)
				if !strings.Contains(got.Message, "installation east") || !strings.Contains(got.Message, "does not exist now") {
					t.Errorf("want the refusal to name east and say the topic is gone, got %q", got.Message)
				}
				// A maintainer who takes east for gone removes its
				// record by hand, while east still runs.
				free(resource)
			}
			waitConditionOn(t, west, wb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			waitConditionOn(t, west, wa, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
			westSecret := secretOn(t, west, ns, "app")
			if err := c.write(t, westSecret, resource); err != nil {
				t.Fatalf("west's Secret on the resource it created: %v", err)
			}

			patch(t, eb, fmt.Sprintf(`{"spec":{"parameters":{%q:%q}}}`, param, value))
			got := waitCondition(t, eb, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonOwnedElsewhere, waitTimeout)
			if !strings.Contains(got.Message, "installation west") {
				t.Errorf("want east's Buckety to name west, got %q", got.Message)
			}
			if v := applied(resource); strings.EqualFold(v, value) || (value == "true" && v == "Enabled") {
				t.Errorf("east wrote %s=%s to west's %s (%q)", param, value, resource, v)
			}
			wait.For(t, waitTimeout, "east's credential revoked", func() (bool, string) {
				err := c.write(t, eastSecret, resource)
				return err != nil, fmt.Sprintf("east's Secret still reaches west's %s: %v", resource, err)
			})
			if err := c.write(t, westSecret, resource); err != nil {
				t.Errorf("west's Secret after east stood back: %v", err)
			}
			// East's Buckety (retentionPolicy Delete) lets go without
			// deleting west's resource.
			deleteOn(t, k8s, ea)
			deleteOn(t, k8s, eb)
			if err := c.write(t, westSecret, resource); err != nil {
				t.Errorf("west's Secret after east's Buckety went: %v", err)
			}
			deleteOn(t, west, wa)
			deleteOn(t, west, wb)
		})
	}
}

// forgetOwnerRecord removes topic's owner record from the kadm registry by
// hand, as a maintainer would with kcat: a tombstone keyed by its name.
func forgetOwnerRecord(t *testing.T, cl *kgo.Client, topic string) {
	t.Helper()
	if err := cl.ProduceSync(context.Background(), &kgo.Record{Topic: "__buckety-owners", Key: []byte(topic)}).FirstErr(); err != nil {
		t.Fatalf("remove the owner record of %s: %v", topic, err)
	}
}

// eastOnMinIO starts a MinIO server with IAM, backend "owned" on it, and a
// controller of installation east (fastLoops), and returns the server's
// root client.
func eastOnMinIO(t *testing.T) *s3.Client {
	t.Helper()
	srv, be := scopedS3(t, "minio")
	be.Name = "owned"
	startControllerWith(t, installationYAML("east", be), nil, fastLoops)
	return s3.New(s3.Options{Region: srv.Region, BaseEndpoint: aws.String(srv.Endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(srv.AccessKey, srv.SecretKey, "")})
}

// remakeBucket empties and deletes bucket with root's keys, and creates
// it again empty and untagged, as someone outside buckety would.
func remakeBucket(ctx context.Context, root *s3.Client, bucket string) error {
	if list, err := root.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)}); err == nil {
		for _, o := range list.Contents {
			if _, err := root.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(bucket), Key: o.Key}); err != nil {
				return err
			}
		}
	}
	if _, err := root.DeleteBucket(ctx, &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	if _, err := root.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		return fmt.Errorf("create: %w", err)
	}
	return nil
}

// TestBucketCreatedAgainCarriesItsRecord (MinIO): a bucket deleted out of
// band takes its owner record (its tags) with it. The drift sweep wakes its
// Buckety, whose pass creates it again; that pass writes the record again,
// though the process remembers having written it: otherwise another
// installation would find the bucket empty and unrecorded, and take it.
func TestBucketCreatedAgainCarriesItsRecord(t *testing.T) {
	needInfra(t)
	root := eastOnMinIO(t)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bucket := ns + "-orders"
	_, b, _ := tenantManifests(ns, bucket, "")
	create(t, b)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	installationTag := func() string {
		out, err := root.GetBucketTagging(context.Background(), &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
		if err != nil {
			return fmt.Sprintf("(%v)", err)
		}
		for _, tag := range out.TagSet {
			if aws.ToString(tag.Key) == s3driver.TagInstallation {
				return aws.ToString(tag.Value)
			}
		}
		return "(none)"
	}
	if got := installationTag(); got != "east" {
		t.Fatalf("want the new bucket recorded as east's, got %s", got)
	}
	if _, err := root.DeleteBucket(context.Background(), &s3.DeleteBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatalf("delete %s out of band: %v", bucket, err)
	}
	wait.For(t, waitTimeout, bucket+" created again, with east's record", func() (bool, string) {
		got := installationTag()
		return got == "east", "its installation tag: " + got
	})
}

// TestDriftedBucketReadsItsRecordAgain (MinIO): east's bucket (versioning
// false) is deleted out of band and created again by another installation
// (west's record in its tags), which then turns versioning on. To east the
// bucket looks drifted. The pass that would repair it must not trust the
// record east remembers from before the delete (for half the re-check
// interval, half an hour here): the repair would write east's settings to
// west's bucket and keep east's credential granted on it. The record is
// read again before the first write: OwnedElsewhere, nothing written
// (versioning stays on), east's Secret refused.
func TestDriftedBucketReadsItsRecordAgain(t *testing.T) {
	needInfra(t)
	root := eastOnMinIO(t)
	ctx := context.Background()
	ns := namespace(t)
	removeWhileRunning(t, ns)
	bucket := ns + "-orders"
	_, b, a := tenantManifests(ns, bucket, "")
	b.Spec.Parameters = map[string]string{"versioning": "false"}
	create(t, b)
	create(t, a)
	waitCondition(t, a, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, b, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	eastSecret := secret(t, ns, "app").Data
	if err := putWith(eastSecret, bucket, "order-1"); err != nil {
		t.Fatalf("east's Secret on its bucket: %v", err)
	}

	// West's bucket under the same name, its record in its tags. East's
	// sweep (every second) may find the bucket missing first and create it
	// again: then the bucket is deleted and made again.
	wait.For(t, waitTimeout, bucket+" made again as west's", func() (bool, string) {
		if err := remakeBucket(ctx, root, bucket); err != nil {
			return false, err.Error()
		}
		tags := []s3types.Tag{}
		for k, v := range map[string]string{s3driver.TagInstallation: "west", s3driver.TagNamespace: ns, s3driver.TagName: "orders", s3driver.TagUID: "uid-of-west", s3driver.TagState: string(drivers.OwnerHeld)} {
			tags = append(tags, s3types.Tag{Key: aws.String(k), Value: aws.String(v)})
		}
		if _, err := root.PutBucketTagging(ctx, &s3.PutBucketTaggingInput{Bucket: aws.String(bucket), Tagging: &s3types.Tagging{TagSet: tags}}); err != nil {
			return false, "tag: " + err.Error()
		}
		// East's pass may have come between the create and the tags:
		// then it wrote its own record, and this starts over.
		out, err := root.GetBucketTagging(ctx, &s3.GetBucketTaggingInput{Bucket: aws.String(bucket)})
		if err != nil {
			return false, "read the tags: " + err.Error()
		}
		for _, tag := range out.TagSet {
			if aws.ToString(tag.Key) == s3driver.TagInstallation {
				return aws.ToString(tag.Value) == "west", "installation tag " + aws.ToString(tag.Value)
			}
		}
		return false, "no installation tag"
	})
	// Nothing drifted yet (a new bucket is unversioned): west turns
	// versioning on.
	if _, err := root.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{Bucket: aws.String(bucket),
		VersioningConfiguration: &s3types.VersioningConfiguration{Status: s3types.BucketVersioningStatusEnabled}}); err != nil {
		t.Fatal(err)
	}
	// An S3 drift sweep finds only missing buckets (SweepPartial): the
	// versioning drift waits for the Buckety's next pass, an hour here.
	// A new access wakes it now, at the same generation (the record east
	// remembers is for it). East's sweep may also have found the bucket
	// missing during the delete and woken it then; a CI run whose delete
	// and create came between two sweeps waited out the hour.
	wake := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Name: "wake", Namespace: ns},
		Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "orders"}, CredentialsSecretName: "wake"}}
	create(t, wake)
	got := waitCondition(t, b, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonOwnedElsewhere, waitTimeout)
	if !strings.Contains(got.Message, "installation west") {
		t.Errorf("want east's Buckety to name west, got %q", got.Message)
	}
	out, err := root.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != s3types.BucketVersioningStatusEnabled {
		t.Errorf("east wrote its settings to west's bucket: versioning %q", out.Status)
	}
	wait.For(t, waitTimeout, "east's credential revoked", func() (bool, string) {
		err := putWith(eastSecret, bucket, "order-2")
		return err != nil, fmt.Sprintf("east's Secret still reaches west's %s: %v", bucket, err)
	})
	// East's Buckety (retentionPolicy Delete) lets go without deleting
	// west's bucket.
	deleteOn(t, k8s, a)
	deleteOn(t, k8s, wake)
	deleteOn(t, k8s, b)
	if _, err := root.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Errorf("west's bucket after east's Buckety went: %v", err)
	}
}

// TestRenamedInstallationKeepsItsCredentials (kafka): an installation
// renamed without formerInstallations finds its own records under the old
// name. Its Buckety writes nothing to the topic and says what to fix
// (InstallationMismatch, naming the old name and formerInstallations),
// but it is not another installation's data: the access keeps its
// credential. Listing the old name brings the Buckety back Ready with the
// same Secret.
func TestRenamedInstallationKeepsItsCredentials(t *testing.T) {
	needInfra(t)
	b, _ := scopedBroker(t, 0)
	be := superuserBackend(b, 0)
	be.Name = "owned"
	north := startControllerWith(t, installationYAML("north", be), nil, fastLoops)
	ns := namespace(t)
	removeWhileRunning(t, ns)
	topic := ns + ".orders"
	_, eb, ea := tenantManifests(ns, topic, "")
	create(t, eb)
	create(t, ea)
	waitCondition(t, ea, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, eb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	before := secret(t, ns, "app").Data
	north.stop(t)

	renamed := startControllerWith(t, installationYAML("north-2", be), nil, fastLoops)
	// A pass of an edit reads the record whatever the process remembers.
	patch(t, eb, `{"spec":{"parameters":{"config.retention.ms":"3600000"}}}`)
	got := waitCondition(t, eb, v1.ConditionReady, metav1.ConditionFalse, v1.ReasonInstallationMismatch, waitTimeout)
	for _, want := range []string{"installation north,", "formerInstallations", "north-2"} {
		if !strings.Contains(got.Message, want) {
			t.Errorf("want the message to contain %q, got %q", want, got.Message)
		}
	}
	// Several owner-check and access passes later, the credential stands.
	time.Sleep(5 * time.Second)
	if err := produceWith(t, before, topic); err != nil {
		t.Errorf("the access's credential under the mistaken name: %v", err)
	}
	renamed.stop(t)
	startControllerWith(t, "formerInstallations: [north]\n"+installationYAML("north-2", be), nil, fastLoops)
	waitCondition(t, eb, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	waitCondition(t, ea, v1.ConditionReady, metav1.ConditionTrue, "", waitTimeout)
	if after := secret(t, ns, "app").Data; string(after["sasl.password"]) != string(before["sasl.password"]) {
		t.Errorf("want the same credential in the Secret once the old name is listed")
	}
	if err := produceWith(t, before, topic); err != nil {
		t.Errorf("the credential once the old name is listed: %v", err)
	}
	// While this controller runs (it stops first at the test's end).
	deleteOn(t, k8s, ea)
	deleteOn(t, k8s, eb)
}

// deleteTopicOutOfBand deletes topic with the broker's admin, as an
// operator would, and waits until the broker no longer lists it.
func deleteTopicOutOfBand(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	res, err := adm.DeleteTopics(context.Background(), topic)
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatalf("delete %s out of band: %v", topic, err)
	}
	wait.For(t, waitTimeout, topic+" deleted", func() (bool, string) {
		td, err := adm.ListTopics(context.Background(), topic)
		return err == nil && !td.Has(topic), fmt.Sprint(err)
	})
}
