package faults

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/test/harness"
	"github.com/Yolean/buckety-controller/test/wait"
)

// sharingAttacks are issue 51's: mallory names a Buckety that does not
// share with her (alice's, and one that does not exist), and compares the
// refusals; she shares, from a second namespace of hers, a Buckety naming
// alice's topic with her first; and she races a new owner's withdrawal of
// the consent it gave her with accesses of her own, copying every Secret
// they get. Rows: accesses admitted without consent, refusals that tell a
// missing Buckety from one that does not share, credentials her own
// consent gave her on alice's topic, and credentials that still work on
// the owner's topic once the consent is withdrawn; each 0.
func (a *attack) sharingAttacks() {
	t := a.t
	tenant := func(what string) (string, client.Client) {
		ns := a.e.namespace(fmt.Sprintf("f-ms-%s-%d", what, a.id))
		c, err := harness.Tenant(a.ctx, a.e.cp, a.e.k8s, ns, "mallory-"+what)
		if err != nil {
			t.Fatal(err)
		}
		return ns, c
	}
	access := func(ns, name, owner, buckety string, role v1.Role) *v1.BucketyAccess {
		return &v1.BucketyAccess{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1.BucketyAccessSpec{
			BucketyRef: v1.BucketyReference{Namespace: owner, Name: buckety}, Role: role, CredentialsSecretName: name}}
	}

	// 1. No consent: alice's topic, and a name that does not exist.
	admitted := 0
	var refusals []string
	for _, name := range []string{"orders", "no-such-buckety"} {
		err := a.mallory.Create(a.ctx, access(a.malloryNS, "unshared-"+name, a.aliceNS, name, v1.RoleReadOnly))
		if err == nil {
			admitted++
			continue
		}
		refusals = append(refusals, strings.ReplaceAll(err.Error(), name, "NAME"))
	}
	// The same Buckety among several: one of them without consent is
	// enough to refuse the access.
	severalRefs := access(a.malloryNS, "unshared-several", a.aliceNS, "orders", v1.RoleReadOnly)
	severalRefs.Spec.BucketyRefs = []v1.BucketyReference{{Name: "mine"}, severalRefs.Spec.BucketyRef}
	severalRefs.Spec.BucketyRef = v1.BucketyReference{}
	if err := a.mallory.Create(a.ctx, severalRefs); err == nil {
		admitted++
	}
	a.tb.add(t, a.run, "sharing: accesses to a Buckety that does not share with the namespace (alone or among several), admitted", admitted, admitted == 0)
	told := 0
	if len(refusals) == 2 && refusals[0] != refusals[1] {
		told = 1
		t.Logf("%s: the refusals differ: %q and %q", a.run, refusals[0], refusals[1])
	}
	a.tb.add(t, a.run, "sharing: refusals that tell a missing Buckety from one that does not share", told, told == 0)

	// 2. Her own consent, on a Buckety naming alice's topic, to a second
	// namespace of hers.
	nsA, ca := tenant("share-a")
	nsB, cb := tenant("share-b")
	steal := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: nsA, Name: "steal"}, Spec: v1.BucketySpec{Backend: "kafka", Name: a.aliceNS + ".orders",
		Sharing: []v1.SharingRule{{Namespace: nsB, Roles: []v1.Role{v1.RoleReadWrite}}}}}
	// The name policy may refuse it at admission, and the controller
	// must otherwise (NameConflict): either way nothing is issued.
	if err := ca.Create(a.ctx, steal); err == nil {
		a.settledBuckety(steal)
	} else {
		t.Logf("%s: her Buckety on alice's topic refused: %v", a.run, err)
	}
	thief := access(nsB, "thief", nsA, "steal", v1.RoleReadWrite)
	if err := cb.Create(a.ctx, thief); err == nil {
		wait.Until(time.Now().Add(2*time.Minute), func() bool {
			cur := &v1.BucketyAccess{}
			if err := a.e.k8s.Get(a.ctx, client.ObjectKeyFromObject(thief), cur); err != nil {
				return true
			}
			c := meta.FindStatusCondition(cur.Status.Conditions, v1.ConditionReady)
			return c != nil && c.Reason != v1.ReasonProgressing
		})
	} else {
		t.Logf("%s: her access to it refused: %v", a.run, err)
	}
	issued := a.issuedIn(nsB)
	a.tb.add(t, a.run, "sharing: credentials her own consent gave her on alice's topic", issued, issued == 0)

	// 3. A new owner shares a topic ReadOnly with her, then withdraws
	// while she creates accesses and copies their Secrets.
	ownerNS, owner := tenant("owner")
	feed := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: ownerNS, Name: "feed"}, Spec: v1.BucketySpec{Backend: "kafka", Name: "${namespace}.${name}",
		RetentionPolicy: v1.RetentionDelete, Sharing: []v1.SharingRule{{Namespace: a.malloryNS, Roles: []v1.Role{v1.RoleReadOnly}}}}}
	a.create(owner, feed)
	waitReady(t, a.e, feed, 2*time.Minute)
	const n = 8
	copies := map[string]map[string][]byte{}
	var mu sync.Mutex
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { // her copier: every Secret of hers the moment it appears
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			for i := range n {
				name := fmt.Sprintf("feed-%d", i)
				if d, err := a.e.secretData(a.ctx, a.malloryNS, name); err == nil && d != nil {
					mu.Lock()
					copies[name] = d
					mu.Unlock()
				}
			}
		}
	})
	withdrawAfter := time.Duration(a.r.Intn(800)) * time.Millisecond
	wg.Go(func() {
		time.Sleep(withdrawAfter)
		if err := owner.Patch(a.ctx, feed.DeepCopy(), client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"sharing":null}}`))); err != nil {
			t.Errorf("withdraw the consent: %v", err)
		}
	})
	var created []*v1.BucketyAccess
	for i := range n {
		x := access(a.malloryNS, fmt.Sprintf("feed-%d", i), ownerNS, "feed", v1.RoleReadOnly)
		if i%2 == 1 {
			// Every other one names it in a list of several.
			x.Spec.BucketyRefs, x.Spec.BucketyRef = []v1.BucketyReference{x.Spec.BucketyRef}, v1.BucketyReference{}
		}
		if a.mallory.Create(a.ctx, x) == nil {
			created = append(created, x)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// Every access she got in settles: withdrawn, nothing held.
	for _, x := range created {
		wait.Until(time.Now().Add(2*time.Minute), func() bool {
			cur := &v1.BucketyAccess{}
			if err := a.e.k8s.Get(a.ctx, client.ObjectKeyFromObject(x), cur); err != nil {
				return true
			}
			return cur.WithdrawnFrom(ownerNS, "feed") && cur.Status.Principal == ""
		})
	}
	close(stop)
	wg.Wait()
	works := 0
	for name, d := range copies {
		if w, _ := reach(a.ctx, d, victimResource{kind: "topic", name: ownerNS + ".feed"}); len(w) > 0 {
			works++
			t.Logf("%s: the copy of Secret %s works on the withdrawn topic: %v", a.run, name, w)
		}
	}
	held := a.issuedIn(a.malloryNS, "feed-")
	t.Logf("%s: consent withdrawn %s into the race; %d of %d accesses admitted, %d Secrets copied", a.run, withdrawAfter, len(created), n, len(copies))
	a.tb.add(t, a.run, fmt.Sprintf("sharing: credentials that work on a topic after its consent was withdrawn (%d copies tried), or still recorded", len(copies)), works+held, works+held == 0)
}

// issuedIn counts the BucketyCredentials of namespace ns's accesses whose
// names start with prefix.
func (a *attack) issuedIn(ns string, prefix ...string) int {
	var list v1.BucketyCredentialList
	if err := a.e.k8s.List(a.ctx, &list); err != nil {
		a.t.Fatal(err)
	}
	n := 0
	for _, c := range list.Items {
		if c.Spec.Owner.Namespace == ns && (len(prefix) == 0 || strings.HasPrefix(c.Spec.Owner.Name, prefix[0])) {
			n++
		}
	}
	return n
}
