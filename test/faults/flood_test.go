package faults

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/kafka"
)

// floodPart is the accesses of the flood on one of mallory's Bucketies.
type floodPart struct {
	prefix, buckety, backend string
	n                        int
}

// floodParts splits the flood in three: a third on flood-a (kafka-b),
// which exists when they are created, so admission counts them; a third
// on flood-b (kafka-b) and a third on flood-s (s3), created before their
// Bucketies, so admission cannot tell their backend and the controller
// alone holds them to the limits once the Bucketies appear.
func floodParts(n int) []floodPart {
	return []floodPart{{"fa", "flood-a", "kafka-b", n / 3}, {"fb", "flood-b", "kafka-b", n / 3}, {"fs", "flood-s", "s3", n - 2*(n/3)}}
}

// floodCount is one look at mallory's accesses during the flood.
type floodCount struct {
	// granted and minted count her Ready accesses, and those whose
	// credential exists on the backend, by Buckety and by "backend NAME";
	// only accesses whose Buckety exists count, as the limits count them.
	granted, minted map[string]int
	// settled counts the flood's accesses that are Ready or wait with
	// LimitExceeded, of total.
	settled, total int
	// waiting are the flood's accesses with LimitExceeded.
	waiting []string
	// principals are the principals of mallory's accesses, by access name.
	principals map[string][]string
}

// flood: mallory creates p.AttackAccesses BucketyAccesses (floodParts);
// the controller must grant the oldest within limits.accessesPerBuckety
// and accessesPerNamespace and hold the rest (Ready=False, LimitExceeded,
// no credential, no Secret), admission must refuse those it can count,
// and alice's workload must not notice.
func (a *attack) flood() {
	t, ctx := a.t, a.ctx
	perB, perNS := accessLimits(a.p)
	parts := floodParts(a.p.AttackAccesses)
	bucketyOf := func(p floodPart) *v1.Buckety {
		b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: a.malloryNS, Name: p.buckety}, Spec: v1.BucketySpec{Backend: p.backend, RetentionPolicy: v1.RetentionDelete}}
		if p.backend == "s3" {
			b.Spec.Name = "${namespace}-${name}"
		} else {
			b.Spec.Name = "${namespace}.${name}"
			b.Spec.Parameters = map[string]string{"partitions": "1"}
		}
		return b
	}
	a.create(a.mallory, bucketyOf(parts[0]))
	waitReady(t, a.e, bucketyOf(parts[0]), 2*time.Minute)
	start := time.Now()
	// One at a time, as admission's count from its cache is meant to hold
	// against; in parallel it may lag a burst (see Bucketies beyond
	// limits.perNamespace).
	admitted := make([]int, len(parts))
	for i, p := range parts {
		for j := range p.n {
			name := fmt.Sprintf("%s-%03d", p.prefix, j)
			err := a.mallory.Create(ctx, &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: a.malloryNS, Name: name},
				Spec: v1.BucketyAccessSpec{BucketyRef: v1.BucketyReference{Name: p.buckety}, CredentialsSecretName: name}})
			switch {
			case err == nil:
				admitted[i]++
			case admitted[i] == j:
				t.Logf("%s: admission refused %s, the first refused on %s: %v", a.run, name, p.buckety, err)
			}
		}
	}
	for _, p := range parts[1:] {
		a.create(a.mallory, bucketyOf(p))
	}
	t.Logf("%s: flood of %d BucketyAccesses written in %s", a.run, a.p.AttackAccesses, time.Since(start).Round(time.Millisecond))

	kcl, err := kgo.NewClient(a.e.superuser()...)
	if err != nil {
		t.Fatal(err)
	}
	defer kcl.Close()
	beyond := func(m map[string]int) int {
		n := 0
		for _, p := range parts {
			n += max(0, m[p.buckety]-perB)
		}
		for _, be := range []string{"kafka-b", "s3"} {
			n += max(0, m["backend "+be]-perNS)
		}
		return n
	}
	// Settled twice in a row (a second apart), or the deadline; beyond the
	// limits is the most any look saw.
	var last floodCount
	grantedBeyond, mintedBeyond, calm := 0, 0, 0
	deadline := time.Now().Add(a.p.Converge)
	for calm < 2 {
		c, err := a.floodCount(ctx, kcl, parts)
		if err != nil {
			t.Logf("%s: flood count: %v", a.run, err)
		} else {
			last = c
			grantedBeyond, mintedBeyond = max(grantedBeyond, beyond(c.granted)), max(mintedBeyond, beyond(c.minted))
			if c.settled == c.total {
				calm++
			} else {
				calm = 0
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Second)
	}
	end := time.Now()
	// The held back keep nothing: no Secret, no credential.
	var holding []string
	for _, name := range last.waiting {
		err := a.e.k8s.Get(ctx, client.ObjectKey{Namespace: a.malloryNS, Name: name}, &corev1.Secret{})
		if err == nil {
			holding = append(holding, name+": Secret")
		} else if !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if len(last.principals[name]) > 0 {
			holding = append(holding, name+": credential "+strings.Join(last.principals[name], ","))
		}
	}

	a.tb.add(t, a.run, fmt.Sprintf("access flood: accesses admitted on an existing Buckety (accessesPerBuckety %d)", perB), fmt.Sprintf("%d of %d", admitted[0], parts[0].n), admitted[0] <= perB+2)
	a.tb.add(t, a.run, "access flood: accesses admitted before their Buckety existed (the controller's limits alone)", fmt.Sprintf("%d of %d", admitted[1]+admitted[2], parts[1].n+parts[2].n), true)
	a.tb.add(t, a.run, fmt.Sprintf("access flood: mallory's accesses granted beyond the limits (accessesPerBuckety %d, accessesPerNamespace %d)", perB, perNS), grantedBeyond, grantedBeyond == 0)
	a.tb.add(t, a.run, "access flood: users and keys minted for mallory beyond the limits", mintedBeyond, mintedBeyond == 0)
	var granted []string
	for _, p := range parts {
		granted = append(granted, fmt.Sprint(last.granted[p.buckety]))
	}
	a.tb.add(t, a.run, "access flood: accesses settled (granted a/b/s, LimitExceeded)", fmt.Sprintf("%d of %d (%s, %d)", last.settled, last.total, strings.Join(granted, "/"), len(last.waiting)),
		last.total > 0 && last.settled == last.total)
	a.tb.add(t, a.run, "access flood: accesses with LimitExceeded holding a Secret or a credential", len(holding), len(holding) == 0)
	if len(holding) > 0 {
		t.Logf("%s: held back, yet holding: %v", a.run, first(holding, 10))
	}
	rounds, requests, failed, p50, worst := a.vic.stats(start, end)
	a.tb.add(t, a.run, "access flood: alice's failed requests", fmt.Sprintf("%d of %d", len(failed), requests), len(failed) == 0)
	a.tb.add(t, a.run, "access flood: alice's round trip, p50/max (ms)", fmt.Sprintf("%d/%d over %d rounds", p50.Milliseconds(), worst.Milliseconds(), rounds), rounds > 0)
}

// floodCount looks at mallory's accesses, their Bucketies, buckety's
// credential records and the principals on the broker and the S3 server.
func (a *attack) floodCount(ctx context.Context, kcl *kgo.Client, parts []floodPart) (floodCount, error) {
	c := floodCount{granted: map[string]int{}, minted: map[string]int{}, principals: map[string][]string{}}
	var bl v1.BucketyList
	if err := a.e.k8s.List(ctx, &bl, client.InNamespace(a.malloryNS)); err != nil {
		return c, err
	}
	backendOf := map[string]string{}
	for _, b := range bl.Items {
		if b.DeletionTimestamp == nil {
			be := b.Status.Backend
			if be == "" {
				be = b.Spec.Backend
			}
			backendOf[b.Name] = be
		}
	}
	var al v1.BucketyAccessList
	if err := a.e.k8s.List(ctx, &al, client.InNamespace(a.malloryNS)); err != nil {
		return c, err
	}
	var creds v1.BucketyCredentialList
	if err := a.e.k8s.List(ctx, &creds); err != nil {
		return c, err
	}
	byUID := map[string][]string{}
	for _, cr := range creds.Items {
		byUID[cr.Spec.Owner.UID] = append(byUID[cr.Spec.Owner.UID], cr.Spec.Principal)
	}
	users, _, err := kafka.BucketyCredentials(ctx, kcl)
	if err != nil {
		return c, err
	}
	keys, err := harness.IssuedS3Keys(ctx, a.e.s3)
	if err != nil {
		return c, err
	}
	flooded := map[string]bool{}
	for _, p := range parts {
		flooded[p.buckety] = true
	}
	for _, x := range al.Items {
		if x.DeletionTimestamp != nil {
			continue
		}
		ps := byUID[string(x.UID)]
		c.principals[x.Name] = ps
		be, ok := backendOf[x.Spec.BucketyRef.Name]
		if !ok {
			continue
		}
		granted := ready(x.Status.Conditions, x.Generation)
		minted := false
		for _, p := range ps {
			if d, ok := users[p]; (ok && d.Err == nil && len(d.CredInfos) > 0) || keys[p] {
				minted = true
			}
		}
		for _, k := range []string{x.Spec.BucketyRef.Name, "backend " + be} {
			if granted {
				c.granted[k]++
			}
			if minted {
				c.minted[k]++
			}
		}
		if !flooded[x.Spec.BucketyRef.Name] {
			continue
		}
		c.total++
		r := meta.FindStatusCondition(x.Status.Conditions, v1.ConditionReady)
		waiting := r != nil && r.Status == metav1.ConditionFalse && r.Reason == v1.ReasonLimitExceeded && r.ObservedGeneration == x.Generation
		if waiting {
			c.waiting = append(c.waiting, x.Name)
		}
		if granted || waiting {
			c.settled++
		}
	}
	return c, nil
}
