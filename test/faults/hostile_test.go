package faults

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kadmdriver "github.com/Yolean/buckety-controller/drivers/kadm"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
	"github.com/Yolean/buckety-controller/test/logdir"
	"github.com/Yolean/buckety-controller/test/proc"
	"github.com/Yolean/buckety-controller/test/wait"
)

// runHostile is the hostile-tenant run: mallory, with nothing but the edit
// role in her namespace, carries out the attacks of issue 24 while alice,
// with the same role in hers, provisions and uses a topic and a bucket.
// The controller and the webhook are the real binaries under a memory
// limit (a cgroup, GOMEMLIMIT set to it, as the Deployments run), with a
// config a platform for untrusted tenants would write: a per-namespace
// limit and a partitions limit, and a second backend on the same broker
// sharing the first one's claim space.
//
// Her Secrets are her own keys on every backend (a SCRAM user; a MinIO
// user, a VersityGW user or a SeaweedFS IAM user), and while mallory
// attacks, alice's workload uses them (victim_test.go); mallory then goes
// after those keys (attacker_test.go: admin or IAM API calls with her own
// key, a stripped Buckety whose name alice claims, an access flood, a
// backend whose admin API answers 501).
//
// Figures: alice's Ready latency quiet and under attack; restarts and OOM
// kills of both processes; alice's resources changed or deleted; details
// of alice's resources in mallory's status and events; the attacks the
// webhook refused; the claim left without an owner, as the maintainer sees
// it; each attack's own; alice's failed requests, foreign credentials that
// work on her resources, and root keys in tenant Secrets; and SeaweedFS's
// IAM users without an access, or Ready accesses without their own user's
// key, after it all.
func runHostile(t *testing.T, e *env, p params, tb *table) {
	const run = "hostile-tenant"
	r := rng(p.Seed, run)
	ctx := context.Background()
	id := r.Intn(1e6)
	aliceNS, malloryNS := e.namespace(fmt.Sprintf("f-alice-%d", id)), e.namespace(fmt.Sprintf("f-mallory-%d", id))
	limit := int64(p.AttackLimitMiB) << 20

	// The run's own controller and webhook, with the platform's config.
	e.stopController()
	s3x := e.startAttackS3(t)
	cfgDir := filepath.Join(e.dir, "hostile-config")
	if err := os.MkdirAll(cfgDir, 0o755); err != nil {
		t.Fatal(err)
	}
	yaml := e.hostileConfigYAML(p, s3x)
	if err := os.WriteFile(filepath.Join(cfgDir, config.Filename), []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMEMLIMIT", strconv.FormatInt(limit, 10))
	ctrl, err := harness.StartController(harness.ControllerOptions{
		Dir: filepath.Join(e.dir, "hostile-controller"), Bin: e.ctrlBin, Kubeconfig: e.kubeconfig, ConfigDir: cfgDir,
		Args: []string{"--leader-elect=false", "--owner-check-interval=1s"}, MetricsInsecure: true, Pprof: true,
		Env: append(e.controllerEnv(), s3x.env()...),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := ctrl.P.Stop(30 * time.Second); err != nil {
			t.Errorf("stop the hostile run's controller: %v", err)
		}
	})
	// A failed run keeps the controller's goroutines (registered last, so
	// taken before it is stopped): where a reconcile that never ended was.
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		// Beside the controller's log, which a failed run keeps.
		out := filepath.Join(e.dir, "hostile-controller", logdir.Dir, "goroutines.txt")
		resp, err := http.Get("http://" + ctrl.Pprof + "/debug/pprof/goroutine?debug=2")
		if err != nil {
			t.Logf("goroutines of the hostile run's controller: %v", err)
			return
		}
		defer func() {
			if err := resp.Body.Close(); err != nil {
				t.Logf("goroutines: %v", err)
			}
		}()
		b, err := io.ReadAll(resp.Body)
		if err == nil {
			err = os.WriteFile(out, b, 0o644)
		}
		if err != nil {
			t.Logf("goroutines of the hostile run's controller: %v", err)
			return
		}
		t.Logf("the hostile run's controller's goroutines: %s", out)
	})
	whBin := filepath.Join(e.dir, "buckety-webhook")
	if err := harness.Build(harness.WebhookPackage, whBin, ""); err != nil {
		t.Fatal(err)
	}
	wh, err := harness.StartWebhook(filepath.Join(e.dir, "hostile-webhook"), whBin, e.cp.Kubeconfig, yaml)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := wh.P.Stop(15 * time.Second); err != nil {
			t.Errorf("stop the webhook: %v", err)
		}
	})
	vwc, err := wh.Register(ctx, e.k8s, "buckety-webhook-hostile")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := vwc.Delete(context.Background(), e.k8s); err != nil {
			t.Errorf("unregister the webhook: %v", err)
		}
	})
	limits := map[string]*proc.MemoryLimit{}
	procs := map[string]*proc.Process{"controller": ctrl.P, "webhook": wh.P}
	for name, pr := range procs {
		m, err := proc.LimitMemory(pr.PID(), limit)
		if err != nil {
			t.Fatal(err)
		}
		limits[name] = m
		t.Cleanup(func() {
			if err := m.Remove(); err != nil {
				t.Errorf("remove the %s's memory cgroup: %v", name, err)
			}
		})
	}
	alice, err := harness.Tenant(ctx, e.cp, e.k8s, aliceNS, "alice")
	if err != nil {
		t.Fatal(err)
	}
	mallory, err := harness.Tenant(ctx, e.cp, e.k8s, malloryNS, "mallory")
	if err != nil {
		t.Fatal(err)
	}

	// Alice, quiet: a topic and a bucket, each with its Secret, in use.
	ready := func(c client.Client, b *v1.Buckety) time.Duration {
		t.Helper()
		start := time.Now()
		if err := c.Create(ctx, b); err != nil {
			t.Fatalf("create %s/%s: %v", b.Namespace, b.Name, err)
		}
		if !wait.Until(time.Now().Add(readyBackstop), func() bool {
			cur := &v1.Buckety{}
			return e.k8s.Get(ctx, client.ObjectKeyFromObject(b), cur) == nil && meta.IsStatusConditionTrue(cur.Status.Conditions, v1.ConditionReady)
		}) {
			cur := &v1.Buckety{}
			if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(b), cur); err != nil {
				t.Fatalf("%s/%s not Ready after %s, and not read: %v", b.Namespace, b.Name, readyBackstop, err)
			}
			t.Fatalf("%s/%s not Ready after %s (a backstop that ends a hung run, not a speed goal); its conditions: %+v", b.Namespace, b.Name, readyBackstop, cur.Status.Conditions)
		}
		return time.Since(start)
	}
	topicOf := func(name string) *v1.Buckety {
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: aliceNS}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}",
			Parameters: map[string]string{"partitions": "2", "config.retention.ms": "86400000"}, DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: name + "-topic"}}}
	}
	quiet := ready(alice, topicOf("orders"))
	ready(alice, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: "files", Namespace: aliceNS}, Spec: v1.BucketySpec{Backend: "s3", Name: "${namespace}-files",
		RetentionPolicy: v1.RetentionDelete, DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: "files-bucket"}}})
	aliceTopic, aliceBucket := aliceNS+".orders", aliceNS+"-files"
	e.useAlice(t, aliceNS, "orders-topic", "files-bucket", "before")
	before := e.fingerprint(t, aliceTopic, aliceBucket)
	vic := e.startVictim(t, aliceNS, "orders-topic", "files-bucket")

	// Mallory.
	attacks := &attackLog{}
	start := time.Now()
	blob := []byte(strings.Repeat("x", 1<<20-4096))
	parallelN(t, p.AttackSecrets, func(i int) error {
		return mallory.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: malloryNS, Name: fmt.Sprintf("bait-%04d", i),
			Labels: map[string]string{v1.ManagedByLabel: v1.ManagedByValue, v1.AccessLabel: "orders"}}, Data: map[string][]byte{"blob": blob}})
	})
	junk := strings.Repeat("y", 200<<10)
	admitted := 0
	for i := range p.TenantLimit + 5 {
		err := mallory.Create(ctx, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: malloryNS, Name: fmt.Sprintf("junk-%04d", i), Annotations: map[string]string{"junk": junk}},
			Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}"}})
		if err == nil {
			admitted++
		}
	}
	// The webhook counts from its cache, which may lag a burst by a
	// create or two; the controller counts claims, authoritatively (below).
	attacks.add("Bucketies beyond limits.perNamespace", admitted <= p.TenantLimit+2)
	over := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: malloryNS, Name: "huge"}, Spec: v1.BucketySpec{Backend: "kafka-b", Name: "${namespace}.huge", Parameters: map[string]string{"partitions": "2147483647"}}}
	attacks.add("partitions 2^31-1", mallory.Create(ctx, over) != nil)
	attacks.add("a reserved name (_schemas)", mallory.Create(ctx, &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: malloryNS, Name: "schemas"}, Spec: v1.BucketySpec{Backend: "kafka-b", Name: "_schemas"}}) != nil)
	// Alice's topic through the other backend of the same broker, and her
	// bucket; then delete them, retentionPolicy Delete.
	probes := []*v1.Buckety{
		{ObjectMeta: metav1.ObjectMeta{Namespace: malloryNS, Name: "grab-topic"}, Spec: v1.BucketySpec{Backend: "kafka-b", Name: aliceTopic, RetentionPolicy: v1.RetentionDelete}},
		{ObjectMeta: metav1.ObjectMeta{Namespace: malloryNS, Name: "grab-bucket"}, Spec: v1.BucketySpec{Backend: "s3", Name: aliceBucket, RetentionPolicy: v1.RetentionDelete}},
	}
	for _, b := range probes {
		if err := mallory.Create(ctx, b); err != nil {
			t.Fatalf("create %s: %v", b.Name, err)
		}
	}
	// Her own bucket, held by an access, deleted, then edited: the
	// location is immutable in every state.
	mine := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: malloryNS, Name: "mine"}, Spec: v1.BucketySpec{Backend: "s3", Name: "${namespace}-mine", RetentionPolicy: v1.RetentionDelete, Parameters: map[string]string{"region": e.s3.Region}}}
	if err := mallory.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	if err := mallory.Create(ctx, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: malloryNS, Name: "holder"}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "mine"}, CredentialsSecretName: "holder"}}); err != nil {
		t.Fatal(err)
	}
	waitReady(t, e, mine, 2*time.Minute)
	if err := mallory.Delete(ctx, mine); err != nil {
		t.Fatal(err)
	}
	cur := &v1.Buckety{}
	if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(mine), cur); err != nil {
		t.Fatal(err)
	}
	edited := cur.DeepCopy()
	edited.Spec.Parameters = map[string]string{"region": "eu-north-1"}
	attacks.add("an immutable parameter edited during deletion", mallory.Patch(ctx, edited, client.MergeFrom(cur)) != nil)
	// Then her finalizer, patched away while the deletion waits.
	if err := e.k8s.Get(ctx, client.ObjectKeyFromObject(mine), cur); err != nil {
		t.Fatal(err)
	}
	unfinalized := cur.DeepCopy()
	unfinalized.Finalizers = nil
	if err := mallory.Patch(ctx, unfinalized, client.MergeFrom(cur)); err != nil {
		t.Fatalf("patch the finalizer away: %v", err)
	}
	t.Logf("%s: attack written in %s", run, time.Since(start).Round(time.Millisecond))

	// Alice, under attack.
	attacked := ready(alice, topicOf("payments"))
	e.useAlice(t, aliceNS, "orders-topic", "files-bucket", "during")
	for _, b := range probes {
		if !wait.Until(time.Now().Add(2*time.Minute), func() bool {
			cur := &v1.Buckety{}
			if e.k8s.Get(ctx, client.ObjectKeyFromObject(b), cur) != nil {
				return false
			}
			c := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
			return c != nil && c.Reason == v1.ReasonNameConflict
		}) {
			t.Errorf("%s: want NameConflict", b.Name)
		}
	}
	// Mallory goes after the keys (issue 33 §6).
	atk := &attack{t: t, e: e, p: p, tb: tb, r: r, ctx: ctx, run: run, id: id, alice: alice, mallory: mallory, ctrl: ctrl,
		aliceNS: aliceNS, malloryNS: malloryNS, s3x: s3x, vic: vic}
	atk.runAttacks()
	// What mallory can read, while her probes exist (the names she typed
	// are hers to read back).
	leaks := e.foreignDetails(t, malloryNS, aliceNS, "orders", "payments", "files", "alice")
	for _, b := range probes {
		if err := mallory.Delete(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	// The maintainer sees the claim mallory left: in the gauge, and
	// stamped on the claim (kubectl get bucketyclaims, Owner-Gone).
	orphaned := 0
	wait.Until(time.Now().Add(time.Minute), func() bool {
		var cl v1.BucketyClaimList
		if err := e.k8s.List(ctx, &cl); err != nil {
			t.Fatal(err)
		}
		stamped := 0
		for _, c := range cl.Items {
			if c.Spec.Owner.Namespace == malloryNS && c.Spec.Owner.Name == "mine" && c.Status.OwnerGoneSince != nil {
				stamped++
			}
		}
		orphaned = min(stamped, int(metricValue(t, "http://"+ctrl.Metrics+"/metrics", `buckety_claims{backend="s3",owner="gone"}`)))
		return orphaned >= 1
	})
	time.Sleep(3 * time.Second) // let the probes' deletions finish
	var claimList v1.BucketyClaimList
	if err := e.k8s.List(ctx, &claimList); err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, c := range claimList.Items {
		if c.Spec.Owner.Namespace == malloryNS && c.Spec.Backend == "kafka" {
			held++
		}
	}
	after := e.fingerprint(t, aliceTopic, aliceBucket)
	e.useAlice(t, aliceNS, "orders-topic", "files-bucket", "after")

	// Figures. Alice's times are reported, not bounded: the attack loads
	// the API server all her writes go through, and a loaded machine
	// slows both; that she gets there at all is ready's to check.
	tb.add(t, run, "alice Ready, quiet (s)", fmt.Sprintf("%.2f", quiet.Seconds()), true)
	tb.add(t, run, "alice Ready, under attack (s)", fmt.Sprintf("%.2f", attacked.Seconds()), true)
	for _, name := range []string{"controller", "webhook"} {
		kills, err := limits[name].OOMKills()
		if err != nil {
			t.Fatal(err)
		}
		exited, _ := procs[name].Exited()
		restarts := kills
		if exited && restarts == 0 {
			restarts = 1
		}
		peak, err := limits[name].MaxUsage()
		if err != nil {
			t.Fatal(err)
		}
		tb.add(t, run, name+" restarts (OOM kills or exits)", restarts, restarts == 0)
		tb.add(t, run, fmt.Sprintf("%s peak memory charged to its %d MiB limit (MiB)", name, p.AttackLimitMiB), fmt.Sprintf("%.1f", float64(peak)/(1<<20)), peak < limit)
		if hwm, err := peakRSS(procs[name].PID()); err == nil {
			tb.add(t, run, name+" peak RSS (MiB)", fmt.Sprintf("%.1f", float64(hwm)/(1<<20)), true)
		}
	}
	changed := diffFingerprints(before, after)
	tb.add(t, run, "alice's resources changed or deleted", len(changed), len(changed) == 0)
	if len(changed) > 0 {
		t.Logf("changed: %v", changed)
	}
	tb.add(t, run, "alice's details in mallory's status and events", len(leaks), len(leaks) == 0)
	if len(leaks) > 0 {
		t.Logf("leaks: %v", leaks)
	}
	tb.add(t, run, "attacks refused at admission", attacks.String(), attacks.all())
	tb.add(t, run, fmt.Sprintf("mallory's claims on kafka (limit %d)", p.TenantLimit), held, held <= p.TenantLimit)
	tb.add(t, run, "claims without owner, visible to the maintainer", orphaned, orphaned >= 1)
	atk.summary()
	// The IAM users of both tenants on SeaweedFS, after every attack: none
	// without an access, every Ready access with a key of its own user.
	e.s3KeyFigures(t, tb, run, s3x.weed, "seaweedfs, "+s3x.weedBackend, "", time.Minute)
}

// readyBackstop ends a hostile run in which alice's Buckety never turns
// Ready. How long it takes is a figure (alice Ready, quiet and under
// attack); on a loaded 2-core machine it can be a minute or more.
const readyBackstop = 10 * time.Minute

// hostileConfigYAML is the platform's config of the hostile run: every
// backend with limits, and every S3 backend minting a key per access
// (s3-v on VersityGW and s3-w on SeaweedFS unless s3 is that server),
// including s3-noiam, whose admin API answers 501.
func (e *env) hostileConfigYAML(p params, s3x *attackS3) string {
	perB, perNS := accessLimits(p)
	limits := &config.Limits{PerNamespace: p.TenantLimit, AccessesPerNamespace: perNS, AccessesPerBuckety: perB}
	kafkaLimits := *limits
	kafkaLimits.ParameterMax = map[string]int64{"partitions": 64}
	kafka := func(name, service string) config.Backend {
		b := harness.Kadm(name, kadmdriver.Config{SeedBrokers: e.broker.Addrs, RequestTimeout: harness.Duration(5 * time.Second),
			SASL: &kadmdriver.SASL{Mechanism: "SCRAM-SHA-512", Username: "buckety", Password: "${FAULTS_KAFKA_PASSWORD}"}})
		b.Service, b.Limits = service, &kafkaLimits
		return b
	}
	bs := []config.Backend{kafka("kafka", ""), kafka("kafka-b", "kafka"),
		s3Backend("s3", "", p.S3, e.s3.Endpoint, e.s3.Region, "FAULTS_S3", e.s3.AdminEndpoint, limits)}
	bs = append(bs, budgetBackends(bs[0], bs[2])...)
	if s3x.vgwBackend != "s3" {
		bs = append(bs, s3Backend(s3x.vgwBackend, "", "versitygw", s3x.vgw.Endpoint, s3x.vgw.Region, "FAULTS_VGW", s3x.vgw.AdminEndpoint, limits))
	}
	if s3x.weedBackend != "s3" {
		// An IAM user per access, through the IAM API on its S3 port.
		bs = append(bs, s3Backend(s3x.weedBackend, "", "seaweedfs", s3x.weed.Endpoint, s3x.weed.Region, "FAULTS_WEED", "", limits))
	}
	// The gateway's S3 API, with its admin API answering 501: the same
	// service as the backend issuing keys there.
	bs = append(bs, s3Backend(noIAMBackend, s3x.vgwBackend, "versitygw", s3x.vgw.Endpoint, s3x.vgw.Region, "FAULTS_VGW", s3x.noIAM.AdminEndpoint, limits))
	return harness.ConfigYAML(bs...)
}

// useAlice produces and consumes a record, and puts and gets an object,
// with nothing but alice's Secrets.
func (e *env) useAlice(t *testing.T, ns, topicSecret, bucketSecret, tag string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	read := func(name string) map[string][]byte {
		s := &corev1.Secret{}
		if err := e.k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			t.Fatalf("alice's Secret %s: %v", name, err)
		}
		return s.Data
	}
	td := read(topicSecret)
	cl, err := kafka.SecretClient(td, kgo.ConsumeTopics(string(td["topic"])), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: string(td["topic"]), Value: []byte(tag)}).FirstErr(); err != nil {
		t.Fatalf("alice produces (%s): %v", tag, err)
	}
	found := false
	for !found {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("alice consumes %q (%s): %v", tag, tag, err)
		}
		fs.EachRecord(func(r *kgo.Record) { found = found || string(r.Value) == tag })
	}
	bd := read(bucketSecret)
	sc := s3Client(string(bd["endpoint"]), string(bd["region"]), string(bd["accessKeyID"]), string(bd["secretAccessKey"]))
	if _, err := sc.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(string(bd["bucket"])), Key: aws.String(tag), Body: strings.NewReader(tag)}); err != nil {
		t.Fatalf("alice puts (%s): %v", tag, err)
	}
	if _, err := sc.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(string(bd["bucket"])), Key: aws.String(tag)}); err != nil {
		t.Fatalf("alice gets (%s): %v", tag, err)
	}
}

// fingerprint is what an attack on alice would change: her topic's
// existence, partitions and dynamic configs, and her bucket's existence.
func (e *env) fingerprint(t *testing.T, topic, bucket string) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	cl, err := kgo.NewClient(e.superuser()...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	td, err := adm.ListTopics(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := td[topic]; ok && d.Err == nil {
		out["topic partitions"] = strconv.Itoa(len(d.Partitions))
		rc, err := adm.DescribeTopicConfigs(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rc {
			for _, c := range r.Configs {
				if c.Source == 1 && c.Value != nil { // DYNAMIC_TOPIC_CONFIG
					out["topic config "+c.Key] = *c.Value
				}
			}
		}
	}
	if _, err := e.s3c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String(bucket)}); err == nil {
		out["bucket"] = "exists"
	}
	return out
}

func diffFingerprints(a, b map[string]string) []string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s: %q -> %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s: (none) -> %q", k, v))
		}
	}
	return out
}

// foreignDetails lists what mallory can read, in her namespace's status
// (Bucketies and accesses) and events, that mentions any of words (alice's
// namespace, names), once the resource names mallory typed herself are
// taken out.
func (e *env) foreignDetails(t *testing.T, ns string, words ...string) []string {
	t.Helper()
	ctx := context.Background()
	var bl v1.BucketyList
	if err := e.k8s.List(ctx, &bl, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var typed []string
	for _, b := range bl.Items {
		typed = append(typed, b.Spec.Name)
	}
	var out []string
	check := func(where, text string) {
		for _, n := range typed {
			text = strings.ReplaceAll(text, n, "<her resource>")
		}
		for _, w := range words {
			if strings.Contains(text, w) {
				out = append(out, where+": "+text)
				return
			}
		}
	}
	for _, b := range bl.Items {
		for _, c := range b.Status.Conditions {
			check(b.Name+" "+c.Type, c.Message)
		}
	}
	// Her accesses too: one whose Buckety she stripped, on a name alice
	// claimed since, must not learn who holds it now.
	var al v1.BucketyAccessList
	if err := e.k8s.List(ctx, &al, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, a := range al.Items {
		for _, c := range a.Status.Conditions {
			check("access "+a.Name+" "+c.Type, c.Message)
		}
	}
	var events eventsv1.EventList
	if err := e.k8s.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, ev := range events.Items {
		check("event "+ev.Reason, ev.Note)
	}
	return out
}

// attackLog records which attacks admission refused.
type attackLog struct {
	names   []string
	refused []bool
}

func (a *attackLog) add(name string, refused bool) {
	a.names = append(a.names, name)
	a.refused = append(a.refused, refused)
}

func (a *attackLog) all() bool {
	for _, r := range a.refused {
		if !r {
			return false
		}
	}
	return true
}

func (a *attackLog) String() string {
	n := 0
	var missed []string
	for i, r := range a.refused {
		if r {
			n++
		} else {
			missed = append(missed, a.names[i])
		}
	}
	s := fmt.Sprintf("%d of %d", n, len(a.refused))
	if len(missed) > 0 {
		s += " (admitted: " + strings.Join(missed, ", ") + ")"
	}
	return s
}

// parallelN runs f(i) for i in [0, n) on 16 goroutines.
func parallelN(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

// waitReady waits until b is Ready.
func waitReady(t *testing.T, e *env, b *v1.Buckety, timeout time.Duration) {
	t.Helper()
	cur := &v1.Buckety{}
	if !wait.Until(time.Now().Add(timeout), func() bool {
		return e.k8s.Get(context.Background(), client.ObjectKeyFromObject(b), cur) == nil && meta.IsStatusConditionTrue(cur.Status.Conditions, v1.ConditionReady)
	}) {
		ready := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
		t.Fatalf("%s/%s not Ready after %s: %+v", b.Namespace, b.Name, timeout, ready)
	}
}

// s3Client is an S3 client with static credentials.
func s3Client(endpoint, region, ak, sk string) *s3.Client {
	return s3.New(s3.Options{Region: region, BaseEndpoint: aws.String(endpoint), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(ak, sk, "")})
}

// metricValue reads one series (name{labels} exactly as exposed) from a
// plain-HTTP metrics endpoint; 0 when absent or unreachable.
func metricValue(t *testing.T, url, series string) float64 {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil {
				return f
			}
		}
	}
	return 0
}

// peakRSS is a process's peak resident set (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status has no VmHWM", pid)
}
