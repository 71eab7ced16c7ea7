package access

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/budget"
	"github.com/Yolean/buckety-controller/internal/controller/claims"
	"github.com/Yolean/buckety-controller/internal/controller/objects"
	"github.com/Yolean/buckety-controller/internal/sharing"
)

// An access naming several Bucketies (spec.bucketyRefs) holds one
// credential with its role's rights on each of their resources, on one
// backend. Each Buckety is checked as an access naming one checks its
// own (bucketyOf): all must exist, be provisioned and claimed before
// anything is granted. One of another namespace that stops sharing is
// left out, not the whole access: its rights are taken away (Access.Drop),
// its keys leave the Secret, and status.withdrawn names it, so its
// deletion does not wait for this access. When every one has stopped
// sharing, the access is withdrawn as one naming one is.

// target is one Buckety an access names, resolved: the Buckety and,
// once found, the claim through which it holds its resource.
type target struct {
	ref v1.BucketyReference
	b   *v1.Buckety
	cl  *v1.BucketyClaim
}

// grantedOn is what an access's credential is granted on: its one
// Buckety, or each of several that shares with it. The first is the
// primary: Access.Resource, the record's Resource and BucketyUID.
type grantedOn struct {
	targets []target
	several bool
	// withdrawn are the Bucketies (namespace/name) of an access naming
	// several that stopped sharing with it, and why, in the order named.
	withdrawn, why []string
	// held are those that share with it again after a withdrawal but are
	// at their accessesPerBuckety (regain), and why: the access holds no
	// rights there, as on a withdrawn one, but nothing is to be taken
	// away, so a pass that does not get as far as the Secret does not
	// give up the rest (giveUp) nor skip the backend's breaker for them.
	held, heldWhy []string
}

// without are the Bucketies the access holds no rights on though it names
// them (withdrawn, then held), and why.
func (g *grantedOn) without() (keys, why []string) {
	return append(slices.Clip(g.withdrawn), g.held...), append(slices.Clip(g.why), g.heldWhy...)
}

func (g *grantedOn) b() *v1.Buckety             { return g.targets[0].b }
func (g *grantedOn) cl() *v1.BucketyClaim       { return g.targets[0].cl }
func single(b *v1.Buckety) *grantedOn           { return &grantedOn{targets: []target{{b: b}}} }
func (t target) key(a *v1.BucketyAccess) string { return a.RefKey(t.ref) }

// resolveSeveral is buckety for an access naming several Bucketies: each
// resolved by bucketyOf, all on one backend. ok is false, the reason in f,
// when the access must wait or is invalid (f.invalid: its Bucketies on
// more than one backend), or is withdrawn (f.notShared): from every one,
// or from one while another waits or the access is invalid.
func (r *Reconciler) resolveSeveral(ctx context.Context, a *v1.BucketyAccess, f *facts) (*grantedOn, *backends.Entry, bool, error) {
	on := &grantedOn{several: true}
	var e *backends.Entry
	waiting, invalid := false, false
	// elsewhereWhy keeps why the first Buckety whose resource is not this
	// installation's revokes the access (f.elsewhere), which a later
	// one's wait would otherwise overwrite.
	// replacedWhy keeps the same of the first Buckety that is not the
	// one the access's credentials were granted on (f.bucketyReplaced).
	elsewhereWhy, replacedWhy := "", ""
	defer func() {
		switch {
		case elsewhereWhy != "":
			f.bucketyWaiting = elsewhereWhy
		case replacedWhy != "":
			f.bucketyWaiting = replacedWhy
		}
	}()
	for i, ref := range a.Spec.BucketyRefs {
		b, be, ok, err := r.bucketyOf(ctx, a, ref, f)
		if err != nil {
			return nil, nil, false, err
		}
		if f.elsewhere && elsewhereWhy == "" {
			elsewhereWhy = f.bucketyWaiting
		}
		if f.bucketyReplaced && replacedWhy == "" {
			replacedWhy = f.bucketyWaiting
		}
		if f.notShared != "" {
			on.withdrawn = append(on.withdrawn, objects.RefKey(a.RefNamespace(ref), ref.Name))
			on.why = append(on.why, f.notShared)
			f.notShared = ""
			continue
		}
		if !ok {
			// The others are still looked at: one that stopped sharing
			// is taken back now, whatever the others wait for.
			waiting = true
			continue
		}
		if e != nil && be.Name != e.Name {
			// The others are still looked at, as for one that waits: one
			// that stopped sharing is taken back now (below), not kept
			// for as long as the access stays invalid.
			if !invalid {
				f.invalid = field.Invalid(field.NewPath("spec", "bucketyRefs").Index(i), ref.Name, fmt.Sprintf("Buckety %s is on backend %s and %s on backend %s: the Bucketies of one access share one backend", refNameOf(a, ref), be.Name, refNameOf(a, on.targets[0].ref), e.Name)).Error()
			}
			invalid = true
			continue
		}
		e = be
		on.targets = append(on.targets, target{ref: ref, b: b})
	}
	switch {
	case len(on.withdrawn) > 0 && (waiting || invalid || len(on.targets) == 0):
		// Every one stopped sharing, or the rest cannot be granted now
		// (one waits, or they are on more than one backend) to take the
		// one that did away alone: the access gives up everything, and
		// is granted afresh once they can be.
		why := strings.Join(on.why, "; ")
		if waiting || invalid {
			// What holds the rest, as giveUp says it (readiness names
			// it while f.notShared is empty).
			why += fmt.Sprintf("; and the access cannot be granted on the rest now (%s), so it gives up all of them until it can", readiness(a, f).ready.Message)
		}
		f.notShared = why
		return nil, nil, false, nil
	case waiting, invalid:
		return nil, nil, false, nil
	}
	return on, e, true, nil
}

// claims finds each target's settled claim (resource); false, the reason
// in f, while one is not found.
func (r *Reconciler) claims(ctx context.Context, on *grantedOn, e *backends.Entry, f *facts) (bool, error) {
	for i := range on.targets {
		cl, ok, err := r.resource(ctx, on.targets[i].b, e, f)
		if err != nil || !ok {
			return false, err
		}
		on.targets[i].cl = cl
	}
	return true, nil
}

// access is what the driver is asked to grant.
func (on *grantedOn) access(a *v1.BucketyAccess, e *backends.Entry) drivers.Access {
	params := func(t target) map[string]string {
		return claims.Effective(drivers.LocationParameters(e.Driver), t.cl, budget.EffectiveParameters(e.Config, t.b))
	}
	acc := drivers.Access{
		Resource: on.cl().Spec.ResourceName, Namespace: a.Namespace, Name: a.Name, UID: string(a.UID),
		Role: drivers.Role(a.Spec.Role), Parameters: a.Spec.Parameters, SecretFormats: a.Spec.SecretFormats,
		ResourceParameters: params(on.targets[0]),
	}
	if on.several {
		for _, t := range on.targets {
			acc.Several = append(acc.Several, drivers.AccessResource{Key: t.key(a), Name: t.cl.Spec.ResourceName, Parameters: params(t)})
		}
	}
	return acc
}

// credentialResources are the record's resources for an access naming
// several; nil for one naming one.
func (on *grantedOn) credentialResources() []v1.CredentialResource {
	if !on.several {
		return nil
	}
	out := make([]v1.CredentialResource, len(on.targets))
	for i, t := range on.targets {
		out[i] = v1.CredentialResource{Resource: t.cl.Spec.ResourceName, Buckety: objects.RefKey(t.b.Namespace, t.b.Name), BucketyUID: string(t.b.UID), Claim: t.cl.Name}
	}
	return out
}

// boundTo reports whether credential c was granted on what on names, or
// on less (a Grant adds the rest): each resource it records is on's, or
// one of a Buckety that stopped sharing (dropped). A record from before
// credentials were bound (no BucketyUID) is taken to be, and is bound
// when next activated.
func (on *grantedOn) boundTo(c *v1.BucketyCredential) bool {
	if c.Spec.BucketyUID == "" {
		return true
	}
	if !on.several || len(c.Spec.Resources) == 0 {
		return len(c.Spec.Resources) == 0 && c.Spec.BucketyUID == string(on.b().UID) && c.Spec.Claim == on.cl().Name
	}
	for _, cr := range c.Spec.Resources {
		ok := slices.Contains(on.withdrawn, cr.Buckety) || slices.Contains(on.held, cr.Buckety) || slices.ContainsFunc(on.targets, func(t target) bool {
			return cr.BucketyUID == string(t.b.UID) && cr.Claim == t.cl.Name
		})
		if !ok {
			return false
		}
	}
	return true
}

// widen records in c, before a Grant adds them, the resources on names
// that c does not record yet, keeping those it does; it reports whether c
// changed. A pass cut short between the Grant and activate (which narrows
// the record to what was granted) leaves the record naming every resource
// the principal may hold rights on: a Buckety that then stops sharing is
// dropped from it by the next pass (dropFrom) rather than kept for good
// by a server that writes a grant per bucket (VersityGW).
func (on *grantedOn) widen(c *v1.BucketyCredential) bool {
	if !on.several || c.Spec.BucketyUID == "" || len(c.Spec.Resources) == 0 {
		return false
	}
	changed := false
	for _, cr := range on.credentialResources() {
		if !slices.ContainsFunc(c.Spec.Resources, func(have v1.CredentialResource) bool { return have.BucketyUID == cr.BucketyUID }) {
			c.Spec.Resources = append(c.Spec.Resources, cr)
			changed = true
		}
	}
	return changed
}

// withdrawnFrom reports whether credential c was granted on a Buckety
// the access holds no rights on (on.without: stopped sharing with it, or
// held at its limit).
func (on *grantedOn) withdrawnFrom(c *v1.BucketyCredential) bool {
	keys, _ := on.without()
	return slices.ContainsFunc(c.Spec.Resources, func(cr v1.CredentialResource) bool {
		return slices.Contains(keys, cr.Buckety)
	})
}

// dropFrom lists the resources credential c was granted on that on no
// longer names (their Bucketies stopped sharing).
func (on *grantedOn) dropFrom(c *v1.BucketyCredential) []string {
	var out []string
	for _, cr := range c.Spec.Resources {
		if !slices.ContainsFunc(on.targets, func(t target) bool { return cr.BucketyUID == string(t.b.UID) }) {
			out = append(out, cr.Resource)
		}
	}
	return out
}

// recorded reports whether c records exactly what on names.
func (on *grantedOn) recorded(c *v1.BucketyCredential) bool {
	return c.Spec.BucketyUID != "" && slices.Equal(c.Spec.Resources, on.credentialResources())
}

// bind makes c's record name what on names.
func (on *grantedOn) bind(c *v1.BucketyCredential) {
	c.Spec.Resource, c.Spec.BucketyUID, c.Spec.Claim = on.cl().Spec.ResourceName, string(on.b().UID), on.cl().Name
	c.Spec.Resources = on.credentialResources()
}

// written records in a's status the Bucketies its Secret was just written
// for, on backend. A status written by an earlier release gets its
// backend at its first pass after the upgrade: one status write per
// granted access, once, which closes the window in which its grant is
// judged by its generation alone (grantedHere).
func (on *grantedOn) written(a *v1.BucketyAccess, backend string) {
	a.Status.Backend = backend
	a.Status.BucketyGeneration, a.Status.BucketyUID = on.b().Generation, on.b().UID
	a.Status.BucketyGenerations, a.Status.Withdrawn = nil, nil
	if !on.several {
		return
	}
	a.Status.BucketyGenerations = make(map[string]int64, len(on.targets))
	for _, t := range on.targets {
		a.Status.BucketyGenerations[objects.RefKey(t.b.Namespace, t.b.Name)] = t.b.Generation
	}
	a.Status.Withdrawn, _ = on.without()
}

// validSeveral checks spec.bucketyRefs, on its own and against the
// backend (sharing.ValidateRefs, sharing.ValidateSeveral).
func validSeveral(a *v1.BucketyAccess, e *backends.Entry) field.ErrorList {
	if !a.Several() {
		return nil
	}
	return append(sharing.ValidateRefs(a), sharing.ValidateSeveral(a, e.Driver, e.Name, e.Config.BucketyRefsPerAccess())...)
}

// holdsFor names, in the Ready message, what the Secret holds
// credentials for: the Buckety, or several, and which stopped sharing.
func holdsFor(a *v1.BucketyAccess, f *facts) string {
	if !a.Several() {
		return "Buckety " + refName(a)
	}
	out := "Bucketies " + refName(a)
	if len(f.withdrawnFrom) > 0 {
		out += fmt.Sprintf(" but %s, on which it holds no rights now (they are revoked and the Secret does not name them): %s", strings.Join(f.withdrawnFrom, ", "), strings.Join(f.withdrawnWhy, "; "))
	}
	return out
}
