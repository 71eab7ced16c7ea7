package admission

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/config"
	"github.com/Yolean/buckety-controller/internal/paramschema"
)

// Validators holds what both validators share: the config and compiled
// schemas.
type Validators struct {
	cfg      *config.Config
	params   map[string]*paramschema.Validator
	access   map[string]*paramschema.Validator
	lookup   BucketyLookup
	count    BucketyCounter
	accesses AccessCounter
	budget   BudgetCounter
	labels   NamespaceLabels
}

// NamespaceLabels reads a namespace's labels, for the limits.namespaces
// entries that select namespaces by label.
type NamespaceLabels func(ctx context.Context, namespace string) (map[string]string, error)

// CacheNamespaceLabels reads them from a controller-runtime cache.
func CacheNamespaceLabels(r client.Reader) NamespaceLabels {
	return func(ctx context.Context, ns string) (map[string]string, error) {
		n := &corev1.Namespace{}
		if err := r.Get(ctx, client.ObjectKey{Name: ns}, n); err != nil {
			return nil, err
		}
		return n.Labels, nil
	}
}

// WithNamespaceLabels sets how namespace labels are read; without it,
// entries of limits.namespaces that select by label are left to the
// controller.
func (v *Validators) WithNamespaceLabels(l NamespaceLabels) *Validators {
	v.labels = l
	return v
}

// forNamespace is backend b as namespace ns sees it (its limits.namespaces
// entry applied). Labels that cannot be read leave b as it is: the
// controller, which reads them too, enforces the namespace's limits.
func (v *Validators) forNamespace(ctx context.Context, b *config.Backend, ns string) *config.Backend {
	if b.Limits == nil || len(b.Limits.Namespaces) == 0 {
		return b
	}
	var lbls map[string]string
	if b.UsesNamespaceLabels() && v.labels != nil {
		l, err := v.labels(ctx, ns)
		if err == nil {
			lbls = l
		}
	}
	return b.ForNamespace(ns, lbls)
}

// AccessCounter counts the BucketyAccesses of a namespace, for the
// backend's limits.accessesPerBuckety and accessesPerNamespace: those
// naming Buckety bucketyRef, and those whose Buckety is on backend. The
// webhook reads its informer cache (CacheAccessCounter). bucketyRef is the
// Buckety's RefKey.
type AccessCounter func(ctx context.Context, namespace, bucketyRef, backend string) (perBuckety, onBackend int, err error)

// CacheAccessCounter counts BucketyAccesses in a controller-runtime cache,
// finding each one's backend from the Bucketies in the same cache. The
// counters only read: they list the cached objects themselves, not a copy
// of each (a namespace of 10,000 would otherwise be copied per request).
func CacheAccessCounter(r client.Reader) AccessCounter {
	return func(ctx context.Context, ns, ref, backend string) (int, int, error) {
		var al v1.BucketyAccessList
		if err := r.List(ctx, &al, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return 0, 0, err
		}
		var bl v1.BucketyList
		if err := r.List(ctx, &bl, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return 0, 0, err
		}
		backendOf := make(map[string]string, len(bl.Items))
		for i := range bl.Items {
			b := &bl.Items[i]
			backendOf[RefKey(b.Namespace, b.Name)] = backendName(b)
		}
		perBuckety, onBackend := 0, 0
		for i := range al.Items {
			a := &al.Items[i]
			if !a.DeletionTimestamp.IsZero() {
				continue
			}
			for _, r := range a.Refs() {
				if RefKey(a.RefNamespace(r), r.Name) == ref {
					perBuckety++
				}
			}
			// Counted once on its backend, that of its first Buckety
			// that exists: all of an access's are on one, and one whose
			// first is gone still holds its grant on the others.
			be := ""
			for _, ref := range a.Refs() {
				refNS := a.RefNamespace(ref)
				key := RefKey(refNS, ref.Name)
				got, ok := backendOf[key]
				if !ok && refNS != ns {
					// A Buckety another namespace shares: rare, read one
					// by one.
					b := &v1.Buckety{}
					if err := r.Get(ctx, client.ObjectKey{Namespace: refNS, Name: ref.Name}, b); err == nil {
						got = backendName(b)
					}
					backendOf[key] = got
				}
				if got != "" {
					be = got
					break
				}
			}
			if be == backend {
				onBackend++
			}
		}
		return perBuckety, onBackend, nil
	}
}

// RefKey is how accesses name a Buckety across namespaces: "namespace/name".
func RefKey(ns, name string) string { return ns + "/" + name }

// backendName is the backend a Buckety is on: the one it recorded, else
// its spec's.
func backendName(b *v1.Buckety) string {
	if b.Status.Backend != "" {
		return b.Status.Backend
	}
	return b.Spec.Backend
}

// WithAccessCounter sets how accesses are counted against the backend's
// access limits; without one those limits are left to the controller.
func (v *Validators) WithAccessCounter(c AccessCounter) *Validators {
	v.accesses = c
	return v
}

// StripAccess is the webhook cache's transform of a BucketyAccess: what
// the access limits count (identity and spec.bucketyRef or bucketyRefs), nothing a
// tenant can grow.
func StripAccess(obj any) (any, error) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		o, err := StripAccess(d.Obj)
		d.Obj = o
		return d, err
	}
	a, ok := obj.(*v1.BucketyAccess)
	if !ok {
		return obj, nil
	}
	return &v1.BucketyAccess{
		TypeMeta: a.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: a.Name, Namespace: a.Namespace, UID: a.UID, ResourceVersion: a.ResourceVersion,
			CreationTimestamp: a.CreationTimestamp, DeletionTimestamp: a.DeletionTimestamp},
		Spec: v1.BucketyAccessSpec{BucketyRef: a.Spec.BucketyRef, BucketyRefs: a.Spec.BucketyRefs},
	}, nil
}

// BucketyCounter counts the Bucketies of a namespace on a backend, for the
// backend's limits.perNamespace; the webhook reads its informer cache
// (CacheCounter).
type BucketyCounter func(ctx context.Context, namespace, backend string) (int, error)

// CacheCounter counts Bucketies in a controller-runtime cache.
func CacheCounter(r client.Reader) BucketyCounter {
	return func(ctx context.Context, ns, backend string) (int, error) {
		var list v1.BucketyList
		if err := r.List(ctx, &list, client.InNamespace(ns), client.UnsafeDisableDeepCopy); err != nil {
			return 0, err
		}
		n := 0
		for i := range list.Items {
			if list.Items[i].Spec.Backend == backend && list.Items[i].DeletionTimestamp.IsZero() {
				n++
			}
		}
		return n, nil
	}
}

// WithCounter sets how Bucketies are counted against limits.perNamespace;
// without one the limit is left to the controller.
func (v *Validators) WithCounter(c BucketyCounter) *Validators {
	v.count = c
	return v
}

// StripBuckety is the webhook cache's transform: of a Buckety it keeps only
// what access validation reads (identity, spec.backend, spec.sharing (at
// most 32 rules), the sticky status fields), so what a tenant puts in a Buckety (parameters, labels,
// annotations, conditions) never grows the webhook's memory. It runs on
// the informer's goroutine, before the object is stored.
func StripBuckety(obj any) (any, error) {
	if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		o, err := StripBuckety(d.Obj)
		d.Obj = o
		return d, err
	}
	b, ok := obj.(*v1.Buckety)
	if !ok {
		return obj, nil
	}
	return &v1.Buckety{
		TypeMeta: b.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: b.Name, Namespace: b.Namespace, UID: b.UID, ResourceVersion: b.ResourceVersion,
			Generation: b.Generation, DeletionTimestamp: b.DeletionTimestamp},
		Spec: v1.BucketySpec{Backend: b.Spec.Backend, Sharing: b.Spec.Sharing},
		Status: v1.BucketyStatus{Backend: b.Status.Backend, Driver: b.Status.Driver, DriverMajor: b.Status.DriverMajor,
			BackendResourceName: b.Status.BackendResourceName},
	}, nil
}

// BucketyLookup finds a Buckety for access validation; the webhook reads
// its informer cache (CacheLookup), never the API server.
type BucketyLookup func(ctx context.Context, namespace, name string) (*v1.Buckety, bool)

// CacheLookup looks Bucketies up in a controller-runtime cache.
func CacheLookup(r client.Reader) BucketyLookup {
	return func(ctx context.Context, ns, name string) (*v1.Buckety, bool) {
		b := &v1.Buckety{}
		if err := r.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b); err != nil {
			return nil, false
		}
		return b, true
	}
}

// New compiles every driver's schemas used by the config's backends.
func New(cfg *config.Config, lookup BucketyLookup) (*Validators, error) {
	v := &Validators{cfg: cfg, params: map[string]*paramschema.Validator{}, access: map[string]*paramschema.Validator{}, lookup: lookup}
	// Every driver of the build, not only those the config uses: a
	// Buckety whose backend left the config still has its parameters'
	// immutability checked against its driver's schema.
	for _, n := range cfg.Registry().Names() {
		d, _ := cfg.Registry().Get(n)
		s := d.Schemas()
		pv, err := paramschema.Compile(s.Parameters)
		if err != nil {
			return nil, fmt.Errorf("driver %s parameters schema: %w", d.Name(), err)
		}
		av, err := paramschema.Compile(s.AccessParameters)
		if err != nil {
			return nil, fmt.Errorf("driver %s access parameters schema: %w", d.Name(), err)
		}
		v.params[d.Name()], v.access[d.Name()] = pv, av
	}
	return v, nil
}

// merge keeps every driver error and the schema errors on fields the driver
// did not flag: the two check one map (a value outside an enum is both's),
// and each field is reported once, in the driver's words, which name more.
func merge(driver, schema field.ErrorList) field.ErrorList {
	flagged := map[string]bool{}
	for _, e := range driver {
		flagged[e.Field] = true
	}
	out := append(field.ErrorList{}, driver...)
	for _, e := range schema {
		if !flagged[e.Field] {
			out = append(out, e)
			flagged[e.Field] = true
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// parameters validates the parameters a tenant wrote (new; old on
// update, nil on create) merged over the backend's defaults that apply to
// the Buckety (defaults, every key): the API's bounds and the backend's
// limits on what the tenant wrote, the schema and the driver on the
// merged map, as the driver will get it. An error the tenant's parameters
// do not make on their own names the defaults: the key's own default, or
// every default merged in.
func (v *Validators) parameters(ctx context.Context, p *field.Path, b *config.Backend, defaults, old, new map[string]string) ([]string, field.ErrorList) {
	if errs := v1.ValidateParameterBounds(p, new); len(errs) > 0 {
		return nil, errs
	}
	effNew := config.Effective(new, defaults)
	var effOld map[string]string
	if old != nil {
		effOld = config.Effective(old, defaults)
	}
	d := b.DriverImpl()
	warnings, errs := d.ValidateParameters(p, b.Options(), effOld, effNew)
	errs = merge(errs, v.params[d.Name()].Validate(ctx, p, effNew, effOld))
	if len(errs) > 0 && len(defaults) > 0 {
		// What the tenant's parameters break on their own is theirs; the
		// rest involves the defaults, which the message names.
		_, alone := d.ValidateParameters(p, b.Options(), old, new)
		alone = merge(alone, v.params[d.Name()].Validate(ctx, p, new, old))
		errs = nameDefaults(p, b, defaults, new, errs, alone)
	}
	return warnings, append(errs, b.CheckParameterLimits(p, new)...)
}

// nameDefaults adds to each error found on the merged parameters and not
// in alone (the tenant's parameters validated without defaults) which of
// the backend's defaults took part: the key's own default, or every
// default merged in.
func nameDefaults(p *field.Path, b *config.Backend, defaults, spec map[string]string, errs, alone field.ErrorList) field.ErrorList {
	own := map[string]bool{}
	for _, e := range alone {
		own[e.Field+"\x00"+e.Detail] = true
	}
	var merged []string
	for _, k := range slices.Sorted(maps.Keys(defaults)) {
		if _, set := spec[k]; !set {
			merged = append(merged, k+"="+strconv.Quote(defaults[k]))
		}
	}
	if len(merged) == 0 {
		return errs
	}
	for _, e := range errs {
		if own[e.Field+"\x00"+e.Detail] {
			continue
		}
		k, fromDefault := "", false
		for dk := range defaults {
			if _, set := spec[dk]; !set && e.Field == p.Key(dk).String() {
				k, fromDefault = dk, true
			}
		}
		if fromDefault {
			e.Detail += fmt.Sprintf(" (this value is backend %s's default: parameters.%s in buckety-controller.yaml; set the key in spec.parameters to override it)", b.Name, k)
			continue
		}
		e.Detail += fmt.Sprintf(" (checked with backend %s's defaults merged in: %s, from parameters in buckety-controller.yaml)", b.Name, strings.Join(merged, ", "))
	}
	return errs
}

// limit refuses a new Buckety beyond its namespace's limits.perNamespace on
// the backend, as the webhook's cache counts (the controller enforces the
// same limit from its claims).
func (v *Validators) limit(ctx context.Context, p *field.Path, b *config.Backend, ns string) field.ErrorList {
	if v.count == nil || b.Limits == nil || b.Limits.PerNamespace == 0 {
		return nil
	}
	n, err := v.count(ctx, ns, b.Name)
	if err != nil || n < b.Limits.PerNamespace {
		return nil
	}
	return field.ErrorList{field.Forbidden(p, fmt.Sprintf("namespace %s already has %d Bucketies on backend %s, the most its limits allow (%s: %d in buckety-controller.yaml): delete one, or ask the cluster maintainer", ns, n, b.Name, b.LimitsKey("perNamespace"), b.Limits.PerNamespace))}
}

// accessLimit refuses a new access beyond its backend's
// limits.accessesPerBuckety (as the Buckety's namespace, owner, has them)
// or accessesPerNamespace (as the access's, own, has them), as the
// webhook's cache counts (the controller enforces the same limits, oldest
// first).
func (v *Validators) accessLimit(ctx context.Context, p *field.Path, own, owner *config.Backend, ns, refNS, ref string) field.ErrorList {
	perNS, perB := 0, 0
	if own.Limits != nil {
		perNS = own.Limits.AccessesPerNamespace
	}
	if owner.Limits != nil {
		perB = owner.Limits.AccessesPerBuckety
	}
	if v.accesses == nil || (perB == 0 && perNS == 0) {
		return nil
	}
	perBuckety, onBackend, err := v.accesses(ctx, ns, RefKey(refNS, ref), own.Name)
	switch {
	case err != nil:
		return nil
	case perB > 0 && perBuckety >= perB:
		if refNS != ns {
			ref = RefKey(refNS, ref)
		}
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf("Buckety %s already has %d BucketyAccesses, the most backend %s allows per Buckety (%s: %d in buckety-controller.yaml): delete one, or ask the cluster maintainer", ref, perBuckety, own.Name, owner.LimitsKey("accessesPerBuckety"), perB))}
	case perNS > 0 && onBackend >= perNS:
		return field.ErrorList{field.Forbidden(p, fmt.Sprintf("namespace %s already has %d BucketyAccesses on backend %s, the most its limits allow (%s: %d in buckety-controller.yaml): delete one, or ask the cluster maintainer", ns, onBackend, own.Name, own.LimitsKey("accessesPerNamespace"), perNS))}
	}
	return nil
}

func (v *Validators) backendList() string {
	names := v.cfg.BackendNames()
	return `"` + strings.Join(names, `", "`) + `"`
}

func prefixAll(p string, ws []string) []string {
	out := make([]string, len(ws))
	for i, w := range ws {
		out[i] = p + w
	}
	return out
}

func nonNil(m map[string]string) map[string]string {
	if m == nil {
		return map[string]string{}
	}
	return m
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
