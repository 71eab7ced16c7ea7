package faults

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/wait"
)

// rng is a run's own random source, derived from the seed and the run's
// name, so one run replays alone.
func rng(seed int64, run string) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(run)) //nolint:errcheck // hash writes never fail
	return rand.New(rand.NewSource(seed ^ int64(h.Sum64())))
}

// ready reports whether obj's Ready condition is True for its generation.
func ready(conds []metav1.Condition, gen int64) bool {
	c := meta.FindStatusCondition(conds, v1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
}

// runBrokerOutage applies N Bucketies with defaultAccess, half before and
// half during a broker outage: SIGSTOP for the outage (a hung broker), or
// SIGKILL and a restart on the same data dir and ports after it.
func runBrokerOutage(t *testing.T, e *env, p params, tb *table, kill bool) {
	run := "broker-pause"
	if kill {
		run = "broker-kill"
	}
	r := rng(p.Seed, run)
	ns := e.namespace(fmt.Sprintf("f-%s-%d", run, r.Intn(1e6)))
	e.startController()
	ctx := context.Background()
	names := make([]string, p.Bucketies)
	for i := range names {
		names[i] = fmt.Sprintf("t%03d", i)
	}
	// Mid-way: after a random share between a third and two thirds.
	mid := p.Bucketies/3 + r.Intn(p.Bucketies/3+1)
	apply := func(name string) {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: v1.BucketySpec{
			Backend: "kafka", Name: "${namespace}.${name}", Parameters: map[string]string{"partitions": "1"},
			DefaultAccess: &v1.DefaultAccess{CredentialsSecretName: name + "-topic"}}}
		if err := e.k8s.Create(ctx, b); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	for _, n := range names[:mid] {
		apply(n)
		time.Sleep(time.Duration(r.Intn(50)) * time.Millisecond)
	}
	outage := time.Now()
	if kill {
		if err := e.broker.Kill(); err != nil {
			t.Fatal(err)
		}
	} else if err := e.broker.Pause(); err != nil {
		t.Fatal(err)
	}
	for _, n := range names[mid:] {
		apply(n)
	}
	time.Sleep(time.Until(outage.Add(p.Outage)))
	if kill {
		if err := e.broker.StartAgain(); err != nil {
			t.Fatal(err)
		}
	} else if err := e.broker.Resume(); err != nil {
		t.Fatal(err)
	}
	back := time.Now()
	notReady := func() []string {
		var l v1.BucketyList
		if err := e.k8s.List(ctx, &l, client.InNamespace(ns)); err != nil {
			return []string{"list: " + err.Error()}
		}
		var out []string
		for _, b := range l.Items {
			if !ready(b.Status.Conditions, b.Generation) {
				out = append(out, b.Name)
			}
		}
		if len(l.Items) != len(names) {
			out = append(out, fmt.Sprintf("(%d of %d listed)", len(l.Items), len(names)))
		}
		return out
	}
	allReady := wait.Until(back.Add(p.Converge), func() bool { return len(notReady()) == 0 })
	secs := time.Since(back).Seconds()
	left := notReady()
	tb.add(t, run, "Bucketies Ready", fmt.Sprintf("%d/%d", len(names)-len(left), len(names)), allReady)
	if allReady {
		tb.add(t, run, "seconds from broker return to all Ready", fmt.Sprintf("%.1f", secs), true)
	} else {
		tb.add(t, run, "seconds from broker return to all Ready", fmt.Sprintf("> %.0f (not Ready: %s)", p.Converge.Seconds(), strings.Join(first(left, 5), ", ")), false)
	}

	topics, err := e.topics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	creates, wireDups, err := e.wireCreates()
	if err != nil {
		t.Fatal(err)
	}
	dups, dupNames, seen, exist := 0, []string{}, 0, 0
	for _, n := range names {
		if topics[ns+"."+n] {
			exist++
			if creates[ns+"."+n] > 0 {
				seen++
			}
		}
		if d := wireDups[ns+"."+n]; d > 0 {
			dups += d
			dupNames = append(dupNames, fmt.Sprintf("%s×%d", n, d+1))
		}
	}
	sort.Strings(dupNames)
	v := fmt.Sprint(dups)
	if dups > 0 {
		v += " (" + strings.Join(first(dupNames, 5), ", ") + ")"
	}
	// Every topic was created by a request the wire log saw, or the
	// duplicate count below proves nothing.
	tb.add(t, run, "existing topics whose CreateTopics the wire log saw", fmt.Sprintf("%d/%d", seen, exist), seen == exist)
	tb.add(t, run, "duplicate CreateTopics on the wire", v, dups == 0)

	want := map[string]bool{}
	for _, n := range names {
		want[ns+"."+n] = true
	}
	var orphans []string
	for topic := range topics {
		if strings.HasPrefix(topic, ns+".") && !want[topic] {
			orphans = append(orphans, topic)
		}
	}
	var missing []string
	for topic := range want {
		if !topics[topic] {
			missing = append(missing, topic)
		}
	}
	tb.add(t, run, "topics without a Buckety", len(orphans), len(orphans) == 0)
	tb.add(t, run, "Bucketies without their topic", len(missing), len(missing) == 0)
	e.credentialFigures(t, tb, run, ns, p.Converge, true)
}

func first(l []string, n int) []string {
	if len(l) > n {
		return append(l[:n:n], fmt.Sprintf("… %d more", len(l)-n))
	}
	return l
}
