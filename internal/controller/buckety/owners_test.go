package buckety

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/config"
)

// TestJudgeOwner: what each owner record means for a Buckety of
// installation east, on a backend that accepts handovers from west only.
func TestJudgeOwner(t *testing.T) {
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "orders", UID: "new-uid"}}
	e := &backends.Entry{Name: "kafka", Config: &config.Backend{Ownership: &config.Ownership{AcceptFrom: []string{"west"}}}}
	rec := func(inst, ns, name string, state drivers.OwnerState, to string) *drivers.OwnerRecord {
		return &drivers.OwnerRecord{Installation: inst, Namespace: ns, Name: name, UID: "old-uid", State: state, To: to}
	}
	for _, c := range []struct {
		name string
		rec  *drivers.OwnerRecord
		want ownerVerdict
		why  string
	}{
		{"no record", nil, ownerNone, ""},
		{"mine after a rebuild (another UID)", rec("east", "team-a", "orders", drivers.OwnerHeld, ""), ownerMine, ""},
		{"another installation's, same names", rec("north", "team-a", "orders", drivers.OwnerHeld, ""), ownerForeign, "installation north"},
		{"another installation's, retained", rec("north", "team-a", "orders", drivers.OwnerRetained, ""), ownerForeign, "installation north"},
		{"handed to me by an accepted giver", rec("west", "team-a", "orders", drivers.OwnerHandedOver, "east"), ownerHandedToMe, ""},
		{"handed to me by a giver not accepted", rec("north", "team-a", "orders", drivers.OwnerHandedOver, "east"), ownerForeign, "ownership.acceptFrom"},
		{"handed to me for another Buckety", rec("west", "team-b", "orders", drivers.OwnerHandedOver, "east"), ownerForeign, "for a Buckety of another namespace"},
		{"handed to me for another Buckety of this namespace", rec("west", "team-a", "payments", drivers.OwnerHandedOver, "east"), ownerForeign, "for Buckety team-a/payments"},
		{"handed to a third installation", rec("west", "team-a", "orders", drivers.OwnerHandedOver, "south"), ownerForeign, "installation west"},
		{"handed over by me, still on", rec("east", "team-a", "orders", drivers.OwnerHandedOver, "west"), ownerForeign, "handed over by this installation to installation west"},
		{"handed over by me, called off", rec("east", "team-a", "orders", drivers.OwnerHandedOver, "west"), ownerMine, ""},
		{"retained by me", rec("east", "team-a", "orders", drivers.OwnerRetained, ""), ownerRetained, ""},
		{"mine under a former name", rec("cluster-0123456789ab", "team-a", "orders", drivers.OwnerHeld, ""), ownerMine, ""},
		{"mine, another Buckety", rec("east", "team-b", "orders", drivers.OwnerHeld, ""), ownerSibling, "for a Buckety of another namespace"},
		{"mine, another Buckety of this namespace", rec("east", "team-a", "payments", drivers.OwnerHeld, ""), ownerSibling, "for Buckety team-a/payments"},
		{"another installation's, another namespace", rec("north", "team-b", "orders", drivers.OwnerHeld, ""), ownerForeign, "installation north (a Buckety of another namespace)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := e
			if strings.HasSuffix(c.name, "still on") {
				e = &backends.Entry{Name: "kafka", Config: &config.Backend{Ownership: &config.Ownership{HandOverTo: "west", AcceptFrom: []string{"west"}}}}
			}
			got, why := judgeOwner(c.rec, b, e, "east", "cluster-0123456789ab")
			if got != c.want || (c.why != "" && !strings.Contains(why, c.why)) || (c.why == "" && why != "") {
				t.Errorf("want %d %q, got %d %q", c.want, c.why, got, why)
			}
			// A tenant reads why: another namespace's holder is not named.
			if c.rec != nil && c.rec.Namespace != b.Namespace && strings.Contains(why, c.rec.Namespace) {
				t.Errorf("want namespace %s not named to a tenant of %s, got %q", c.rec.Namespace, b.Namespace, why)
			}
		})
	}
}

// TestMissingNameHeld: which registry records keep installation east from
// creating a topic that does not exist, on a backend that accepts west's
// handovers.
func TestMissingNameHeld(t *testing.T) {
	b := &v1.Buckety{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "orders", UID: "new-uid"}}
	e := &backends.Entry{Name: "kafka", Config: &config.Backend{Ownership: &config.Ownership{AcceptFrom: []string{"west"}}}}
	rec := func(inst, ns string, state drivers.OwnerState, to string) *drivers.OwnerRecord {
		return &drivers.OwnerRecord{Installation: inst, Namespace: ns, Name: "orders", UID: "old-uid", State: state, To: to}
	}
	for _, c := range []struct {
		name   string
		rec    *drivers.OwnerRecord
		holder string // "" when the name is free
	}{
		{"no record", nil, ""},
		{"mine", rec("east", "team-a", drivers.OwnerHeld, ""), ""},
		{"mine under a former name", rec("cluster-0123456789ab", "team-a", drivers.OwnerHeld, ""), ""},
		{"mine, another Buckety (the claims decide)", rec("east", "team-b", drivers.OwnerHeld, ""), ""},
		{"held by another installation", rec("north", "team-a", drivers.OwnerHeld, ""), "north"},
		{"held by another installation for another namespace", rec("north", "team-b", drivers.OwnerHeld, ""), "north"},
		{"retained by another installation", rec("north", "team-a", drivers.OwnerRetained, ""), ""},
		{"handed over to a third", rec("west", "team-a", drivers.OwnerHandedOver, "south"), "west"},
		{"handed to me by one not accepted", rec("north", "team-a", drivers.OwnerHandedOver, "east"), "north"},
		{"handed to me by one accepted, for this Buckety", rec("west", "team-a", drivers.OwnerHandedOver, "east"), ""},
		{"handed to me by one accepted, for another namespace", rec("west", "team-b", drivers.OwnerHandedOver, "east"), "west"},
		// A receiver lists the giver before the giver hands over: the
		// giver's names stay its own meanwhile.
		{"held by one this backend accepts handovers from", rec("west", "team-a", drivers.OwnerHeld, ""), "west"},
	} {
		t.Run(c.name, func(t *testing.T) {
			why := missingNameHeld(c.rec, b, e, "east", "cluster-0123456789ab")
			switch {
			case c.holder == "" && why != "":
				t.Fatalf("want the name free, got %q", why)
			case c.holder != "" && !strings.Contains(why, "installation "+c.holder):
				t.Fatalf("want the name held, naming installation %s, got %q", c.holder, why)
			}
		})
	}
}

// TestOwnerMemoTrustsARecordForAWhile: a remembered record answers only
// passes of the generation that read it, and only for the age asked.
func TestOwnerMemoTrustsARecordForAWhile(t *testing.T) {
	now := time.Unix(1000, 0)
	m := &ownerMemo{now: func() time.Time { return now }}
	e := &backends.Entry{Name: "s3"}
	rec := &drivers.OwnerRecord{Installation: "east", Namespace: "team-a", Name: "orders", State: drivers.OwnerHeld}
	m.put(e, "team-a-orders", rec, 3)
	if got, ok := m.get(e, "team-a-orders", time.Minute, 3); !ok || !got.Same(rec) {
		t.Fatalf("want the record remembered, got %v %v", got, ok)
	}
	if _, ok := m.get(e, "team-a-orders", time.Minute, 4); ok {
		t.Errorf("want a pass of an edited spec (generation 4) to read the record again")
	}
	now = now.Add(time.Minute)
	if _, ok := m.get(e, "team-a-orders", time.Minute, 3); ok {
		t.Errorf("want a record a minute old not trusted for a minute")
	}
	m.put(e, "team-a-orders", nil, 3)
	if _, ok := m.get(e, "team-a-orders", time.Hour, 3); ok {
		t.Errorf("want a removed record forgotten")
	}
}

// TestSettleUnrecorded: an unrecorded resource is adopted only once this
// process has found it so for OwnerSettle; the wait is per resource, ends
// with the adoption, and a wait begun too long ago starts again.
func TestSettleUnrecorded(t *testing.T) {
	const settle = 150 * time.Millisecond
	r := &Reconciler{OwnerSettle: settle}
	e := &backends.Entry{Name: "kafka"}
	f := &facts{resourceName: "team-a.orders"}
	if r.settleUnrecorded(e, f) {
		t.Fatal("first sight: want a wait")
	}
	if f.settleIn <= 0 || f.settleIn > settle || !strings.Contains(f.ownerSettling, "team-a.orders on backend kafka exists and carries no owner record") {
		t.Errorf("first sight: want the wait said and at most %s, got %s and %q", settle, f.settleIn, f.ownerSettling)
	}
	if other := (&facts{resourceName: "team-b.orders"}); r.settleUnrecorded(e, other) {
		t.Error("another resource: want a wait of its own")
	}
	time.Sleep(settle)
	if f := (&facts{resourceName: "team-a.orders"}); !r.settleUnrecorded(e, f) || f.ownerSettling != "" {
		t.Errorf("after the settle: want the adoption to go on, got %q", f.ownerSettling)
	}
	// A wait begun longer ago than the settle and a minute starts again.
	r.unrecorded.Store(memoKey(e, "team-a.orders"), time.Now().Add(-settle-2*time.Minute))
	if r.settleUnrecorded(e, &facts{resourceName: "team-a.orders"}) {
		t.Error("a stale wait: want it begun again")
	}
	// The wait of a Buckety deleted while it waited is forgotten once
	// stale, when another wait begins: a tenant creating and deleting
	// Bucketies on unrecorded names does not grow the map for ever.
	// Pruning runs at most once a minute: the first wait above pruned.
	gone := memoKey(e, "team-c.deleted")
	r.unrecorded.Store(gone, time.Now().Add(-settle-2*time.Minute))
	if r.settleUnrecorded(e, &facts{resourceName: "team-d.orders"}) {
		t.Error("team-d: want a wait")
	}
	if _, ok := r.unrecorded.Load(gone); !ok {
		t.Error("a prune within a minute of the last: want none")
	}
	r.unrecordedPruned.Add(-int64(2 * time.Minute))
	if r.settleUnrecorded(e, &facts{resourceName: "team-e.orders"}) {
		t.Error("team-e: want a wait")
	}
	if _, ok := r.unrecorded.Load(gone); ok {
		t.Error("a stale wait no pass ends: want it pruned when another begins")
	}
	if _, ok := r.unrecorded.Load(memoKey(e, "team-b.orders")); !ok {
		t.Error("a wait begun within the settle and a minute: want it kept")
	}
}
