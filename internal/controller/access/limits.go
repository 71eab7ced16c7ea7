package access

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/controller/retry"
	"github.com/Yolean/buckety-controller/internal/sharing"
)

// LimitRetry is how soon an access waiting for its namespace's or its
// Buckety's access limit looks again: a deleted access frees a place, and
// nothing else wakes the next in line.
const LimitRetry = time.Minute

// limitRetry is the Reconciler's LimitRetry, or the default.
func (r *Reconciler) limitRetry() time.Duration {
	if r.LimitRetry > 0 {
		return r.LimitRetry
	}
	return LimitRetry
}

// withinLimits checks the backend's limits.accessesPerBuckety and
// limits.accessesPerNamespace before an access is granted for the first
// time. Accesses that hold a place (granted once: status.bucketyGeneration
// set; or let through the gate by this process and not shown granted by
// the cache yet) keep it, even under a limit lowered later; the others of
// the namespace on the backend are taken oldest first (by creation, then
// name), each while its Buckety and the namespace are under their limits
// (admit).
//
// The decision runs under the namespace's gate on the backend (grantGates),
// and an access let through is counted as holding its place from then on:
// creationTimestamp has second precision, so two accesses created in the
// same second are ordered by name, not by the order the cache saw them; a
// pass that found only "z" grants it, and one for "a" that found "z" not
// granted yet (its status not cached yet) and not older would grant "a"
// too. All is read from the cache.
func (r *Reconciler) withinLimits(ctx context.Context, a *v1.BucketyAccess, on *grantedOn, e *backends.Entry, f *facts) (bool, error) {
	if e.Config.Limits == nil {
		return true, nil
	}
	// Each namespace's limits on the backend, its limits.namespaces entry
	// applied: a's own for accessesPerNamespace, each Buckety's owner's
	// for that Buckety's accessesPerBuckety (a namespace a Buckety is
	// shared with sets no limit on it).
	lim := namespaceLimits{ctx: ctx, c: r.Client, base: e, of: map[string]*config.Backend{}}
	own, err := lim.get(a.Namespace)
	if err != nil {
		return false, err
	}
	l := own.Limits
	limited := l.AccessesPerNamespace > 0
	for _, t := range on.targets {
		cfg, err := lim.get(t.b.Namespace)
		if err != nil {
			return false, err
		}
		limited = limited || cfg.Limits.AccessesPerBuckety > 0
	}
	if !limited {
		return true, nil
	}
	var back []int
	if a.Status.BucketyGeneration != 0 && grantedHere(a, on, e.Name) {
		// The cache shows the grant: it holds the place from now on, on
		// the Bucketies its Secret was written for. One it gave up when
		// its owner stopped sharing (status.withdrawn) and that shares
		// with it again is placed anew (regain).
		r.gates.settle(a.UID)
		if back = regained(a, on); len(back) == 0 {
			return true, nil
		}
	} else if r.gates.placedOn(a.UID, gateKey(e.Name, a.Namespace)) {
		return true, nil
	}
	// A shared Buckety's accesses of every namespace count toward its
	// accessesPerBuckety: the decision then also takes the gate of the
	// Buckety's namespace (with the access's own, in key order, so two
	// namespaces sharing with each other never wait on each other).
	keys := []string{gateKey(e.Name, a.Namespace)}
	var across []*v1.Buckety
	for _, t := range on.targets {
		// The owner's own access to a Buckety it shares counts the
		// other namespaces' accesses too.
		if t.b.Namespace != a.Namespace || len(t.b.Spec.Sharing) > 0 {
			across = append(across, t.b)
			keys = append(keys, gateKey(e.Name, t.b.Namespace))
		}
	}
	slices.Sort(keys)
	keys = slices.Compact(keys)
	// Another shard's shared Buckety: its owner's own accesses carry
	// their namespace's slot, and this shard's cache does not hold them
	// (those of other namespaces naming it are everywhere). Read from the
	// API server, before the gates: this shard's gates do not order that
	// shard's grants anyway.
	fresh := map[string][]v1.BucketyAccess{}
	for _, b := range across {
		if r.Serves.Namespace(b.Namespace) {
			continue
		}
		own, err := r.ownAccessesOf(ctx, b)
		if err != nil {
			return false, err
		}
		fresh[objects.RefKey(b.Namespace, b.Name)] = own
	}
	unlock := r.gates.lock(keys...)
	defer unlock()
	if len(back) > 0 {
		return r.regain(ctx, a, on, back, e, &lim, keys, across, fresh, f)
	}
	if held, err := r.issuedOn(ctx, a.UID, e.Name); err != nil || held {
		// Issued a credential before a crash lost the gate's memory and
		// its status: it holds its place.
		if held {
			r.gates.place(a.UID, keys...)
		}
		return held, err
	}
	// The accesses these gates let through: each holds its place until the
	// cache shows it granted (counted from the cache from then on) or
	// deleted (counted no more); those are forgotten. Read before the
	// lists: one a pass forgets meanwhile (its access's own pass, finding
	// it granted) is granted in the lists too.
	placed := r.gates.placedIn(keys...)
	others, settled, err := r.contenders(ctx, a, on, e.Config, placed, across, fresh)
	if err != nil {
		return false, err
	}
	r.gates.forget(settled)
	refs := make([]string, len(on.targets))
	for i, t := range on.targets {
		refs[i] = objects.RefKey(t.b.Namespace, t.b.Name)
	}
	q, err := quotasOf(&lim, a, refs, others)
	if err != nil {
		return false, err
	}
	full, perBuckety, total, ok := admit(q, contender{refs: refs, created: a.CreationTimestamp, name: a.Namespace + "/" + a.Name, local: true}, others)
	switch {
	case ok:
		r.gates.place(a.UID, keys...)
		return true, nil
	case full != "":
		ns, _, _ := strings.Cut(full, "/")
		cfg, err := lim.get(ns)
		if err != nil {
			return false, err
		}
		f.limitExceeded = fmt.Sprintf("Buckety %s already has %d BucketyAccesses granted or ahead of this one, the most backend %s allows per Buckety (%s: %d in buckety-controller.yaml); this one gets no credential and no Secret until one of them is deleted", shortRef(a, full), perBuckety, e.Name, cfg.LimitsKey("accessesPerBuckety"), cfg.Limits.AccessesPerBuckety)
	default:
		f.limitExceeded = fmt.Sprintf("namespace %s already has %d BucketyAccesses on backend %s granted or ahead of this one, the most its limits allow (%s: %d in buckety-controller.yaml); this one gets no credential and no Secret until one of them is deleted", a.Namespace, total, e.Name, own.LimitsKey("accessesPerNamespace"), l.AccessesPerNamespace)
	}
	return false, nil
}

// regained are the indexes in on.targets of the Bucketies of access a,
// granted, that its status lists as withdrawn (its rights there taken
// back when their owners stopped sharing) and that share with it again.
func regained(a *v1.BucketyAccess, on *grantedOn) []int {
	if !on.several || len(a.Status.Withdrawn) == 0 {
		return nil
	}
	var out []int
	for i, t := range on.targets {
		if slices.Contains(a.Status.Withdrawn, objects.RefKey(t.b.Namespace, t.b.Name)) {
			out = append(out, i)
		}
	}
	return out
}

// regain decides, under the gates withinLimits holds, for access a,
// granted on the rest of on, whether it may take back each Buckety of
// on.targets[back]: one that stopped sharing with it and shares again
// counts toward its accessesPerBuckety as a new access would. Its place
// under its namespace's accessesPerNamespace it holds already, and its
// credential is no place on that Buckety: were either to let it through,
// every share given again after a withdrawal would pass the limit. One
// at its limit stays without rights there (moved to on.held, with why:
// status.withdrawn keeps naming it), and the access is granted on the rest; ok is false, the reason in f, only when
// none is left.
func (r *Reconciler) regain(ctx context.Context, a *v1.BucketyAccess, on *grantedOn, back []int, e *backends.Entry, lim *namespaceLimits, keys []string, across []*v1.Buckety, fresh map[string][]v1.BucketyAccess, f *facts) (bool, error) {
	placed := r.gates.placedIn(keys...)
	others, settled, err := r.contenders(ctx, a, on, e.Config, placed, across, fresh)
	if err != nil {
		return false, err
	}
	r.gates.forget(settled)
	// The access holds its place in its namespace's count, and on the
	// Bucketies it keeps: counted among the others as granted there, so
	// an older access of its namespace waiting at accessesPerNamespace
	// takes no place ahead of it that it could not be granted.
	self := contender{created: a.CreationTimestamp, name: a.Namespace + "/" + a.Name, held: true, local: true}
	for i, t := range on.targets {
		if !slices.Contains(back, i) {
			self.refs = append(self.refs, objects.RefKey(t.b.Namespace, t.b.Name))
		}
	}
	others = append(others, self)
	var full []int
	var why []string
	for _, i := range back {
		t := on.targets[i]
		ref := objects.RefKey(t.b.Namespace, t.b.Name)
		cfg, err := lim.get(t.b.Namespace)
		if err != nil {
			return false, err
		}
		q, err := quotasOf(lim, a, []string{ref}, others)
		if err != nil {
			return false, err
		}
		// Only the Buckety's limit decides (full): its namespace's place
		// the access holds already (counted as self).
		if at, n, _, _ := admit(q, contender{refs: []string{ref}, created: a.CreationTimestamp, name: a.Namespace + "/" + a.Name, local: true}, others); at != "" {
			full = append(full, i)
			why = append(why, fmt.Sprintf("Buckety %s shares with it again but already has %d BucketyAccesses granted or ahead of this one, the most backend %s allows per Buckety (%s: %d in buckety-controller.yaml), so the access gets no rights there until one of them is deleted", shortRef(a, at), n, e.Name, cfg.LimitsKey("accessesPerBuckety"), cfg.Limits.AccessesPerBuckety))
		}
	}
	if len(full) == 0 {
		return true, nil
	}
	if len(full) == len(on.targets) {
		f.limitExceeded = strings.Join(why, "; ")
		return false, nil
	}
	kept := on.targets[:0:0]
	for i, t := range on.targets {
		if slices.Contains(full, i) {
			on.held = append(on.held, objects.RefKey(t.b.Namespace, t.b.Name))
			continue
		}
		kept = append(kept, t)
	}
	on.targets = kept
	on.heldWhy = append(on.heldWhy, why...)
	// Nothing wakes it when a place frees (a deletion of another
	// namespace's access): it looks again as one held at its limit does.
	f.wakeAt(time.Now().Add(retry.Jitter(r.limitRetry())))
	return true, nil
}

// namespaceLimits resolves, once per namespace in a decision, the
// backend's config with the namespace's limits.namespaces entry applied.
type namespaceLimits struct {
	ctx  context.Context
	c    ctrl.Reader
	base *backends.Entry
	of   map[string]*config.Backend
}

func (n *namespaceLimits) get(ns string) (*config.Backend, error) {
	if cfg, ok := n.of[ns]; ok {
		return cfg, nil
	}
	e, err := backends.ForNamespace(n.ctx, n.c, n.base, ns)
	if err != nil {
		return nil, err
	}
	n.of[ns] = e.Config
	return e.Config, nil
}

// quotas are the limits a decision counts against: a's namespace's
// accessesPerNamespace and each Buckety's accessesPerBuckety (its
// owner's).
type quotas struct {
	perNamespace int
	// perBuckety is each Buckety's limit (objects.RefKey); 0: none.
	perBuckety map[string]int
}

// quotasOf reads the limits admit counts against. Those of a's own
// Bucketies decide: their namespaces' limits must resolve. Those of the
// other Bucketies the contenders name only decide whether an older
// waiting access of a's namespace takes a place ahead of a: one whose
// namespace's limits cannot be read (a namespace deleted meanwhile, with
// limits.namespaces selecting by label) is taken to have none, which
// lets such an access take its place; a decision on a's Bucketies never
// fails on another namespace's account.
func quotasOf(lim *namespaceLimits, a *v1.BucketyAccess, refs []string, others []contender) (quotas, error) {
	own, err := lim.get(a.Namespace)
	if err != nil {
		return quotas{}, err
	}
	q := quotas{perNamespace: own.Limits.AccessesPerNamespace, perBuckety: map[string]int{}}
	for _, ref := range refs {
		ns, _, _ := strings.Cut(ref, "/")
		cfg, err := lim.get(ns)
		if err != nil {
			return quotas{}, err
		}
		q.perBuckety[ref] = cfg.Limits.AccessesPerBuckety
	}
	for _, o := range others {
		if !o.local || o.held {
			continue
		}
		for _, ref := range o.refs {
			if _, ok := q.perBuckety[ref]; ok {
				continue
			}
			ns, _, _ := strings.Cut(ref, "/")
			q.perBuckety[ref] = 0
			if cfg, err := lim.get(ns); err == nil {
				q.perBuckety[ref] = cfg.Limits.AccessesPerBuckety
			}
		}
	}
	return q, nil
}

// contenders are the live accesses access a competes with for a place
// under the limits of backend: those of its namespace on the backend
// (local, counted toward accessesPerNamespace and their Buckety's
// accessesPerBuckety) and, where the Buckety is shared (across), those of
// other namespaces naming b that it shares with now (counted toward its
// accessesPerBuckety only).
// settled are the accesses of placed the lists show granted or deleted.
// All is read from the cache.
func (r *Reconciler) contenders(ctx context.Context, a *v1.BucketyAccess, on *grantedOn, cfg *config.Backend, placed map[types.UID]struct{}, across []*v1.Buckety, fresh map[string][]v1.BucketyAccess) ([]contender, map[types.UID]struct{}, error) {
	backend := cfg.Name
	var list v1.BucketyAccessList
	// Counted, never written: the cache's own objects, not copies.
	if err := r.Client.List(ctx, &list, ctrl.InNamespace(a.Namespace), ctrl.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("count the accesses of namespace %s: %w", a.Namespace, err)
	}
	items := list.Items
	seen := map[types.UID]bool{}
	for _, b := range across {
		of, err := objects.AccessesOf(ctx, r.Client, b.Namespace, b.Name, ctrl.UnsafeDisableDeepCopy)
		if err != nil {
			return nil, nil, err
		}
		of = append(of, fresh[objects.RefKey(b.Namespace, b.Name)]...)
		for i := range of {
			o := &of[i]
			if o.Namespace == a.Namespace || seen[o.UID] {
				continue
			}
			// One the Buckety does not share with (its owner
			// withdrew, or narrowed the role) holds no place: its
			// rights there go at its own next pass, and only its
			// tenant could delete it.
			if o.Namespace == b.Namespace {
				// The owner's own: no consent to ask.
				seen[o.UID] = true
				items = append(items, *o)
				continue
			}
			if why, err := sharing.Check(ctx, r.Client, cfg, b, o.Namespace, o.Spec.Role); err != nil {
				return nil, nil, err
			} else if why != "" {
				continue
			}
			seen[o.UID] = true
			items = append(items, *o)
		}
	}
	// Settled: those the gates let through that the lists show granted
	// or being deleted. One they do not show stays let through: another
	// Buckety's of a gate's namespace, not in these lists (the orphan
	// sweep forgets those deleted since).
	settled := map[types.UID]struct{}{}
	backendOf := map[string]string{}
	for _, t := range on.targets {
		backendOf[objects.RefKey(t.b.Namespace, t.b.Name)] = backend
	}
	others := make([]contender, 0, len(items))
	for i := range items {
		o := &items[i]
		// Granted here: on this backend (status.backend), as an access
		// judges itself (grantedHere).
		granted := o.Status.BucketyGeneration != 0 && (o.Status.Backend == "" || o.Status.Backend == backend)
		_, letThrough := placed[o.UID]
		if letThrough && (granted || !o.DeletionTimestamp.IsZero()) {
			settled[o.UID] = struct{}{}
		}
		if o.UID == a.UID || !o.DeletionTimestamp.IsZero() {
			continue
		}
		keys := make([]string, 0, len(o.Refs()))
		refs := make([]string, 0, len(o.Refs()))
		for _, ref := range o.Refs() {
			key := objects.RefKey(o.RefNamespace(ref), ref.Name)
			keys = append(keys, key)
			if granted && slices.Contains(o.Status.Withdrawn, key) {
				// Granted on the rest, withdrawn from this one (it
				// stopped sharing, or is held at its limit since it
				// shares again): it holds no place there. Counted,
				// two accesses withdrawn from one Buckety under a
				// limit lowered since would each keep the other out
				// for good, the Buckety holding neither.
				continue
			}
			refs = append(refs, key)
		}
		// The backend of its first Buckety that exists: all of an
		// access's are on one, and one whose first is gone (deleted, or
		// out of this shard's cache once it stopped sharing) still
		// holds its grant on the others.
		be := ""
		for j, ref := range o.Refs() {
			got, ok := backendOf[keys[j]]
			if !ok {
				got = r.backendOf(ctx, o.RefNamespace(ref), ref.Name)
				backendOf[keys[j]] = got
			}
			if got != "" {
				be = got
				break
			}
		}
		if be != backend && !letThrough {
			continue
		}
		held := granted || letThrough
		if !held {
			// A credential recorded and no grant shown: a controller
			// crashed between issuing it and the status write, and this
			// process never let it through. Its user may work: it holds
			// its place.
			var err error
			if held, err = r.issuedOn(ctx, o.UID, backend); err != nil {
				return nil, nil, err
			}
		}
		if !held && judgedInvalid(o) {
			// Waiting behind an access its driver refuses would be
			// waiting for ever: that one takes no place ahead (it takes
			// its turn again once an edit of its spec is judged valid).
			continue
		}
		others = append(others, contender{refs: refs, created: o.CreationTimestamp, name: o.Namespace + "/" + o.Name, held: held, local: o.Namespace == a.Namespace})
	}
	return others, settled, nil
}

// judgedInvalid reports whether o's status, as cached, says its current
// spec is invalid (Ready False, InvalidAccess, at its generation): its
// passes grant it nothing until the spec is edited.
func judgedInvalid(o *v1.BucketyAccess) bool {
	c := meta.FindStatusCondition(o.Status.Conditions, v1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1.ReasonInvalidAccess && c.ObservedGeneration == o.Generation
}

// ownAccessesOf are the accesses of b's namespace naming b, read from the
// API server: for a shard whose cache does not hold that namespace's.
func (r *Reconciler) ownAccessesOf(ctx context.Context, b *v1.Buckety) ([]v1.BucketyAccess, error) {
	var list v1.BucketyAccessList
	if err := r.APIReader.List(ctx, &list, ctrl.InNamespace(b.Namespace)); err != nil {
		return nil, fmt.Errorf("count the accesses of namespace %s naming its shared Buckety %s: %w", b.Namespace, b.Name, err)
	}
	key := objects.RefKey(b.Namespace, b.Name)
	out := list.Items[:0]
	for _, o := range list.Items {
		if slices.Contains(objects.RefKeys(&o), key) {
			out = append(out, o)
		}
	}
	return out, nil
}

// grantedHere reports whether the grant a's status shows (status.
// bucketyGeneration) was made on backend: not on another, where a Buckety
// of the same name was before it was deleted (its finalizer stripped) and
// made again on this one, with no pass seeing the gap (which clears the
// grant). A Buckety made again on the same backend brings nothing past
// its limits: the access was counted there all along. A status written by
// an earlier release, without status.backend, is taken as it says unless
// it records a later generation of its one Buckety than the Buckety has
// (a generation never goes down: it was another Buckety's).
func grantedHere(a *v1.BucketyAccess, on *grantedOn, backend string) bool {
	if a.Status.Backend != "" {
		return a.Status.Backend == backend
	}
	return on.several || a.Status.BucketyGeneration <= on.b().Generation
}

// issuedOn reports whether the access uid has a credential record on
// backend (a principal of its own issued, or about to be), as the cache
// shows: one issued on another backend holds no place on this one.
func (r *Reconciler) issuedOn(ctx context.Context, uid types.UID, backend string) (bool, error) {
	var list v1.BucketyCredentialList
	if err := r.Client.List(ctx, &list, ctrl.MatchingFields{objects.IndexCredentialOwner: string(uid)}, ctrl.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("list the credentials of access %s: %w", uid, err)
	}
	for i := range list.Items {
		if c := &list.Items[i]; c.Spec.Owner.UID == string(uid) && c.Spec.Backend == backend {
			return true, nil
		}
	}
	return false, nil
}

// contender is an access as the access limits count it.
type contender struct {
	// refs are the Bucketies it names (objects.RefKey).
	refs    []string
	created metav1.Time
	// name orders accesses created in the same second: namespace/name.
	name string
	// held: it holds a place (granted, or let through the gate).
	held bool
	// local: of the namespace whose accessesPerNamespace is decided (an
	// access of another namespace counts toward its Buckety's only).
	local bool
}

// admit decides whether access a, not holding a place, may be granted
// under limits q, given the other live accesses of its namespace on its
// backend and those of other namespaces naming a Buckety it names. Those
// holding a place count first, whatever the limits are now; then those
// of a's namespace waiting ahead of a (older, or as old and named before
// it) take a place each while their Bucketies and the namespace are under
// their limits. Another namespace's waiting access takes none: its own
// limits, Bucketies and passes decide whether it is ever granted, and one
// that never will be (held at its namespace's limit, or naming a Buckety
// that never provisions) must not keep a shared Buckety full; between
// namespaces, the first pass through the Buckety's gate takes the place.
// The gates are this process's: with several shards, two shards deciding
// for two namespaces at once may both take the last place (see
// docs/multi-tenancy.md).
// It returns what a's Buckety and the namespace then count, and whether a
// fits; when a's Buckety (or one of a's several) is full, full names it
// and perBuckety is its count, else perBuckety is the highest count of
// a's.
func admit(q quotas, a contender, others []contender) (full string, perBuckety, total int, ok bool) {
	count := map[string]int{}
	var waiting []contender
	take := func(o contender) {
		for _, ref := range o.refs {
			count[ref]++
		}
		if o.local {
			total++
		}
	}
	for _, o := range others {
		switch {
		case o.held:
			take(o)
		case o.local && olderThan(o, a):
			waiting = append(waiting, o)
		}
	}
	fullOf := func(o contender) string {
		for _, ref := range o.refs {
			if n := q.perBuckety[ref]; n > 0 && count[ref] >= n {
				return ref
			}
		}
		return ""
	}
	fits := func(o contender) bool {
		return fullOf(o) == "" && (q.perNamespace == 0 || total < q.perNamespace)
	}
	slices.SortFunc(waiting, func(x, y contender) int {
		if olderThan(x, y) {
			return -1
		}
		return 1
	})
	for _, o := range waiting {
		if fits(o) {
			take(o)
		}
	}
	if full = fullOf(a); full != "" {
		return full, count[full], total, false
	}
	for _, ref := range a.refs {
		perBuckety = max(perBuckety, count[ref])
	}
	return "", perBuckety, total, fits(a)
}

// shortRef names Buckety ref (objects.RefKey) in a message to access a:
// its name when it is of a's namespace.
func shortRef(a *v1.BucketyAccess, ref string) string {
	if ns, name, ok := strings.Cut(ref, "/"); ok && ns == a.Namespace {
		return name
	}
	return ref
}

// olderThan orders accesses by creation, then name: the order in which
// limits grant them.
func olderThan(o, a contender) bool {
	if !o.created.Equal(&a.created) {
		return o.created.Before(&a.created)
	}
	return o.name < a.name
}

// backendOf is the backend of Buckety ns/name as the cache shows it, ""
// when it is not there.
func (r *Reconciler) backendOf(ctx context.Context, ns, name string) string {
	b := &v1.Buckety{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, b); err != nil {
		return ""
	}
	if b.Status.Backend != "" {
		return b.Status.Backend
	}
	return b.Spec.Backend
}

func gateKey(backend, namespace string) string { return backend + "/" + namespace }

// grantGates serialise, per backend and namespace, the decision that an
// access may be granted its first credentials under the access limits,
// and remember the accesses a gate let through (placed) until the cache
// shows them granted: the decisions that follow count them, however far
// the cache lags the status write that records the grant.
//
// Unlike the Buckety controller's claim gate, which a pass holds across
// its backend calls, and so is taken with TryLock lest a tenant's burst
// park every worker behind a slow backend, this gate is held only while
// the decision reads the cache: a pass waits for it no longer than
// another's count, and nothing has to be retried.
type grantGates struct {
	gates sync.Map // gateKey → *sync.Mutex

	mu sync.Mutex
	// byGate: the accesses each gate let through, not cached as granted
	// yet; gateOf is the same, by access, with when.
	byGate map[string]map[types.UID]struct{}
	gateOf map[types.UID]placement
}

type placement struct {
	keys []string
	at   time.Time
}

// lock takes the gates of keys, in the order given (callers sort them),
// and returns their unlock.
func (g *grantGates) lock(keys ...string) func() {
	mus := make([]*sync.Mutex, len(keys))
	for i, key := range keys {
		m, _ := g.gates.LoadOrStore(key, &sync.Mutex{})
		mus[i] = m.(*sync.Mutex)
		mus[i].Lock()
	}
	return func() {
		for i := len(mus) - 1; i >= 0; i-- {
			mus[i].Unlock()
		}
	}
}

// place records that the gates of keys let access uid through.
func (g *grantGates) place(uid types.UID, keys ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byGate == nil {
		g.byGate, g.gateOf = map[string]map[types.UID]struct{}{}, map[types.UID]placement{}
	}
	for _, key := range keys {
		if g.byGate[key] == nil {
			g.byGate[key] = map[types.UID]struct{}{}
		}
		g.byGate[key][uid] = struct{}{}
	}
	g.gateOf[uid] = placement{keys: keys, at: time.Now()}
}

// placedOn reports whether the gate key (a backend and namespace) let
// access uid through.
func (g *grantGates) placedOn(uid types.UID, key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.byGate[key][uid]
	return ok
}

// placedIn returns (a copy of) the accesses the gates of keys let through.
func (g *grantGates) placedIn(keys ...string) map[types.UID]struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[types.UID]struct{}{}
	for _, key := range keys {
		for uid := range g.byGate[key] {
			out[uid] = struct{}{}
		}
	}
	return out
}

// settle forgets access uid: the cache shows it granted, or it is gone.
func (g *grantGates) settle(uid types.UID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.drop(uid)
}

// forget settles every access of uids.
func (g *grantGates) forget(uids map[types.UID]struct{}) {
	if len(uids) == 0 {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for uid := range uids {
		g.drop(uid)
	}
}

// prune forgets the accesses let through before listed that are not live
// as listed then (one deleted with its finalizer removed by hand never
// passes through deletion); one let through since may be newer than the
// list.
func (g *grantGates) prune(live map[types.UID]bool, listed time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for uid, p := range g.gateOf {
		if !live[uid] && p.at.Before(listed) {
			g.drop(uid)
		}
	}
}

func (g *grantGates) drop(uid types.UID) {
	p, ok := g.gateOf[uid]
	if !ok {
		return
	}
	delete(g.gateOf, uid)
	for _, key := range p.keys {
		delete(g.byGate[key], uid)
		if len(g.byGate[key]) == 0 {
			delete(g.byGate, key)
		}
	}
}
