package faults

import (
	"fmt"
	"io"
	"math/big"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/wait"
)

// The budget backends of the hostile run (issue 50): the same broker and
// S3 server as kafka and s3, with the budgets a platform for untrusted
// tenants sets. Each escape runs in a namespace of its own.
const (
	budgetKafka = "kafka-budget"
	budgetS3    = "s3-budget"
	// budgetPerNamespace, budgetPartitions and budgetDisk are
	// kafka-budget's limits; budgetQuota is s3-budget's.
	budgetPerNamespace = 2
	budgetPartitions   = 10
	budgetDisk         = 24 << 20
	budgetQuota        = 2 << 30
)

// budgetBackends are kafka-budget and s3-budget, in the claim spaces of
// kafka and s.
func budgetBackends(kafka, s config.Backend) []config.Backend {
	k := kafka
	k.Name, k.Service = budgetKafka, "kafka"
	k.Limits = &config.Limits{PerNamespace: budgetPerNamespace, Partitions: budgetPartitions, DiskBytes: drivers.ByteSize{Bytes: budgetDisk}, AccessesPerNamespace: 1}
	b := s
	b.Name, b.Service = budgetS3, s.Name
	b.Limits = &config.Limits{QuotaBytes: drivers.ByteSize{Bytes: budgetQuota}}
	return []config.Backend{k, b}
}

// budgetEscapes carries out the six escapes of issue 50 as a tenant with
// the edit role who read the code, each in a namespace of her own, and
// adds a row each: what got past the budget, 0 to pass.
func (a *attack) budgetEscapes() {
	t := a.t
	tenant := func(what string) (string, client.Client) {
		ns := a.e.namespace(fmt.Sprintf("f-mb-%s-%d", what, a.id))
		c, err := harness.Tenant(a.ctx, a.e.cp, a.e.k8s, ns, "mallory-"+what)
		if err != nil {
			t.Fatal(err)
		}
		return ns, c
	}
	topic := func(ns, name string, params ...string) *v1.Buckety {
		p := map[string]string{"partitions": "1", "config.retention.bytes": "1024", "config.segment.bytes": "1048576"}
		for i := 0; i+1 < len(params); i += 2 {
			if params[i+1] == "" {
				delete(p, params[i])
				continue
			}
			p[params[i]] = params[i+1]
		}
		return &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.BucketySpec{Backend: budgetKafka, Name: "${namespace}.${name}", Parameters: p}}
	}
	var wg sync.WaitGroup
	for _, f := range []func(){
		func() { a.overflowEscape(tenant("overflow")) },
		func() { a.partitionRemovalEscape(topic)(tenant("parts")) },
		func() { a.retainRepeatEscape(topic)(tenant("retain")) },
		func() { a.sameSecondEscape(topic)(tenant("second")) },
		func() { a.segmentSlackEscape(topic)(tenant("slack")) },
	} {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	wg.Wait()
	a.oversizedSecretEscape(tenant("secret"))
}

// settledBuckety waits until b is Ready or not Ready for a reason other
// than progress (or gone), and says whether it is Ready.
func (a *attack) settledBuckety(b *v1.Buckety) bool {
	ready := false
	wait.Until(time.Now().Add(2*time.Minute), func() bool {
		cur := &v1.Buckety{}
		if err := a.e.k8s.Get(a.ctx, client.ObjectKeyFromObject(b), cur); err != nil {
			return true
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
		ready = c != nil && c.Status == metav1.ConditionTrue
		return c != nil && (ready || c.Reason != v1.ReasonProgressing)
	})
	return ready
}

// overflowEscape (1): a bucket with quota 1, then one with the largest
// int64: the sum wrapped negative and fit every budget. Row: quota Ready
// past limits.quotaBytes, in bytes.
func (a *attack) overflowEscape(ns string, c client.Client) {
	quotas := []string{"1", "9223372036854775807", "9223372036854775807"}
	var bs []*v1.Buckety
	for i, q := range quotas {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("q%d", i)}, Spec: v1.BucketySpec{Backend: budgetS3, Name: "${namespace}-${name}",
			RetentionPolicy: v1.RetentionDelete, Parameters: map[string]string{"quota": q}}}
		if c.Create(a.ctx, b) == nil {
			bs = append(bs, b)
		}
	}
	sum := new(big.Int)
	for _, b := range bs {
		if q, ok := new(big.Int).SetString(b.Spec.Parameters["quota"], 10); ok && a.settledBuckety(b) {
			sum.Add(sum, q)
		}
	}
	over := new(big.Int).Sub(sum, big.NewInt(budgetQuota))
	if over.Sign() < 0 {
		over.SetInt64(0)
	}
	a.tb.add(a.t, a.run, "budget overflow: bucket quota Ready past limits.quotaBytes (bytes)", over.String(), over.Sign() == 0)
}

// partitions sums the partitions the broker holds for the topics named
// with prefix.
func (a *attack) partitions(prefix string) int {
	cl, err := kgo.NewClient(a.e.superuser()...)
	if err != nil {
		a.t.Fatal(err)
	}
	defer cl.Close()
	td, err := kadm.NewClient(cl).ListTopics(a.ctx)
	if err != nil {
		a.t.Fatal(err)
	}
	n := 0
	for name, d := range td {
		if strings.HasPrefix(name, prefix) {
			n += len(d.Partitions)
		}
	}
	return n
}

// partitionRemovalEscape (2): a topic of 8 partitions, its partitions key
// removed (the budget then counted the broker's default while the topic
// kept 8), then another of 8. Row: partitions on the broker past
// limits.partitions.
func (a *attack) partitionRemovalEscape(topic func(ns, name string, params ...string) *v1.Buckety) func(string, client.Client) {
	return func(ns string, c client.Client) {
		first := topic(ns, "p1", "partitions", "8")
		if err := c.Create(a.ctx, first); err != nil {
			a.t.Fatalf("create %s/p1: %v", ns, err)
		}
		if !a.settledBuckety(first) {
			a.t.Fatalf("%s/p1: want it Ready", ns)
		}
		cur := &v1.Buckety{}
		if err := a.e.k8s.Get(a.ctx, client.ObjectKeyFromObject(first), cur); err != nil {
			a.t.Fatal(err)
		}
		removed := cur.DeepCopy()
		delete(removed.Spec.Parameters, "partitions")
		if c.Update(a.ctx, removed) == nil {
			a.settledBuckety(removed)
		}
		second := topic(ns, "p2", "partitions", "8")
		if c.Create(a.ctx, second) == nil {
			a.settledBuckety(second)
		}
		over := max(0, a.partitions(ns+".")-budgetPartitions)
		a.tb.add(a.t, a.run, "partition removal: partitions on the broker past limits.partitions", over, over == 0)
	}
}

// retainRepeatEscape (3): create a topic, fill it, delete its Buckety
// (retentionPolicy Retain, the default), repeat: each delete released
// the claim while the topic stayed. Row: topics on the broker past
// limits.perNamespace.
func (a *attack) retainRepeatEscape(topic func(ns, name string, params ...string) *v1.Buckety) func(string, client.Client) {
	return func(ns string, c client.Client) {
		cl, err := kgo.NewClient(a.e.superuser()...)
		if err != nil {
			a.t.Fatal(err)
		}
		defer cl.Close()
		for i := range budgetPerNamespace + 3 {
			b := topic(ns, fmt.Sprintf("r%d", i))
			if c.Create(a.ctx, b) != nil {
				continue
			}
			if a.settledBuckety(b) {
				if err := cl.ProduceSync(a.ctx, &kgo.Record{Topic: ns + "." + b.Name, Value: []byte("kept")}).FirstErr(); err != nil {
					a.t.Fatalf("fill %s.%s: %v", ns, b.Name, err)
				}
			}
			if err := c.Delete(a.ctx, b); err != nil {
				a.t.Fatal(err)
			}
			if !wait.Until(time.Now().Add(2*time.Minute), func() bool {
				return a.e.k8s.Get(a.ctx, client.ObjectKeyFromObject(b), &v1.Buckety{}) != nil
			}) {
				a.t.Fatalf("%s/%s not deleted after 2 minutes", ns, b.Name)
			}
		}
		topics, err := a.e.topics(a.ctx)
		if err != nil {
			a.t.Fatal(err)
		}
		held := 0
		for name := range topics {
			if strings.HasPrefix(name, ns+".") {
				held++
			}
		}
		over := max(0, held-budgetPerNamespace)
		a.tb.add(a.t, a.run, "retain and repeat: topics kept past limits.perNamespace", over, over == 0)
	}
}

// sameSecondEscape (4): two accesses created in the same second, "z"
// then "a", under limits.accessesPerNamespace: 1 (the webhook's cache may
// not show the first yet). Row: accesses granted past the limit.
func (a *attack) sameSecondEscape(topic func(ns, name string, params ...string) *v1.Buckety) func(string, client.Client) {
	return func(ns string, c client.Client) {
		b := topic(ns, "shared")
		if err := c.Create(a.ctx, b); err != nil {
			a.t.Fatalf("create %s/shared: %v", ns, err)
		}
		if !a.settledBuckety(b) {
			a.t.Fatalf("%s/shared: want it Ready", ns)
		}
		var created []*v1.BucketyAccess
		var mu sync.Mutex
		var wg sync.WaitGroup
		for _, name := range []string{"z", "a", "m"} {
			x := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "shared"}, CredentialsSecretName: name}}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if c.Create(a.ctx, x) == nil {
					mu.Lock()
					created = append(created, x)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		granted := 0
		for _, x := range created {
			wait.Until(time.Now().Add(time.Minute), func() bool {
				cur := &v1.BucketyAccess{}
				if a.e.k8s.Get(a.ctx, client.ObjectKeyFromObject(x), cur) != nil {
					return false
				}
				c := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
				return c != nil && (c.Status == metav1.ConditionTrue || c.Reason != v1.ReasonProgressing)
			})
		}
		// Give a second grant, were there one, time to land.
		time.Sleep(3 * time.Second)
		for _, x := range created {
			if _, err := a.e.secretData(a.ctx, ns, x.Spec.CredentialsSecretName); err == nil {
				granted++
			}
		}
		over := max(0, granted-1)
		a.tb.add(a.t, a.run, "same-second accesses: credentials granted past limits.accessesPerNamespace", over, over == 0)
	}
}

// segmentSlackEscape (6): retention.bytes 1 on ten partitions counted ten
// bytes while each partition held a gigabyte segment; deleted segments
// kept a day, and gigabyte index files, were not counted at all. Row:
// such topics Ready.
func (a *attack) segmentSlackEscape(topic func(ns, name string, params ...string) *v1.Buckety) func(string, client.Client) {
	return func(ns string, c client.Client) {
		slack := []*v1.Buckety{
			topic(ns, "s1", "partitions", "10", "config.retention.bytes", "1", "config.segment.bytes", "", "config.preallocate", "true"),
			topic(ns, "s2", "config.file.delete.delay.ms", "86400000"),
			topic(ns, "s3", "config.segment.index.bytes", "1073741824"),
			topic(ns, "s4", "partitions", ""),
		}
		admitted := 0
		for _, b := range slack {
			if c.Create(a.ctx, b) == nil && a.settledBuckety(b) {
				admitted++
			}
		}
		a.tb.add(a.t, a.run, "segment slack: topics Ready holding disk the budget does not count", admitted, admitted == 0)
	}
}

// oversizedSecretEscape (5): the tenant writes a mebibyte into the
// password of each of her accesses' Secrets; the controller kept each for
// the life of the access. Row: MiB of live heap the controller grew by,
// measured after a forced collection (pprof's heap?gc=1), against the
// MiB written.
func (a *attack) oversizedSecretEscape(ns string, c client.Client) {
	t := a.t
	perB, perNS := accessLimits(a.p)
	n := min(perB, perNS)
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "big"}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}", Parameters: map[string]string{"partitions": "1"}}}
	if err := c.Create(a.ctx, b); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		x := &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("x%d", i)}, Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: "big"}, CredentialsSecretName: fmt.Sprintf("x%d", i)}}
		if err := c.Create(a.ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		a.waitSecret(ns, fmt.Sprintf("x%d", i))
	}
	before := a.liveHeap()
	// As much as a Secret takes beside its other keys (1 MiB in all).
	big := strings.Repeat("p", 1<<20-16<<10)
	for i := range n {
		s := &corev1.Secret{}
		if err := c.Get(a.ctx, client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("x%d", i)}, s); err != nil {
			t.Fatal(err)
		}
		s.Data["password"] = []byte(big)
		if err := c.Update(a.ctx, s); err != nil {
			t.Fatalf("write a mebibyte into %s/%s: %v", ns, s.Name, err)
		}
	}
	// Each access's pass reads its edited Secret (and asserts it).
	time.Sleep(10 * time.Second)
	grew := float64(a.liveHeap()-before) / (1 << 20)
	a.tb.add(t, a.run, fmt.Sprintf("oversized secrets: controller live heap grown after %d MiB written into Secrets (MiB)", n), fmt.Sprintf("%.1f", grew), grew < float64(n)/2)
}

// liveHeap is the controller's heap in use right after a collection:
// pprof's heap profile with gc=1 collects first, then the metrics report.
func (a *attack) liveHeap() int64 {
	resp, err := http.Get("http://" + a.ctrl.Pprof + "/debug/pprof/heap?gc=1")
	if err != nil {
		a.t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		a.t.Fatal(err)
	}
	if err := resp.Body.Close(); err != nil {
		a.t.Fatal(err)
	}
	return int64(metricValue(a.t, "http://"+a.ctrl.Metrics+"/metrics", "go_memstats_heap_alloc_bytes"))
}
