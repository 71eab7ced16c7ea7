package access

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/backends"
	"github.com/Yolean/buckety-controller/internal/metrics"
)

// Unaccounted principals. A record (BucketyCredential) is written before
// its principal is created on the service and deleted only after the
// principal is revoked, so a principal that carries this installation's
// marker and has no record is one no live access accounts for: the
// installation was rebuilt from git after its etcd was lost (every record
// went with it), or a record was deleted by hand. Nothing will ever revoke
// it but this check, and its secret may still be in a Secret of the old
// cluster, a backup, a laptop.
//
// It is revoked only after the backend's credentials.orphanGrace, counted
// from when this process first saw it unaccounted, and only after a fresh
// read finds no record: a record just written may not be in the cache yet.
// Nothing records a principal that already exists (record() reports
// PrincipalConflict instead), so no record can appear for it between that
// read and the revocation: on a rebuild the accesses applied again from
// git get new UIDs and so new principals, and an access whose record was
// deleted by hand waits in PrincipalConflict until its old principal is
// revoked here, then issues it afresh. Principals of other
// installations do not carry this one's marker, and those named before
// markers carry none: ListPrincipals returns neither, so neither is
// touched. Two live clusters configured with one installation name would
// revoke each other's principals; the installation name is what tells
// them apart.

// recordedPrincipals are the principals the cached records name, by
// principal, whatever the service (claim scope) their record was written
// under: a backend whose `service:` was changed (or first set) keeps its
// records under the earlier service's names, and their principals are
// still accounted for. Records are written only under the backend's
// current service, so a record the cache has not seen yet is found by the
// fresh read under that service's name.
type recordedPrincipals map[string]bool

// add notes the principal c records.
func (rp recordedPrincipals) add(c *v1.BucketyCredential) {
	rp[c.Spec.Principal] = true
}

// revokeUnaccounted lists this installation's principals on e, and revokes
// those no record names once they have been unaccounted for e's
// credentials.orphanGrace; it returns how many it revoked. records are
// the cache's, of every backend.
func (o *Orphans) revokeUnaccounted(ctx context.Context, e *backends.Entry, records []v1.BucketyCredential) (int, error) {
	r := o.Reconciler
	inst := r.Backends.Installation()
	if inst == "" {
		return 0, nil // no marker to tell this installation's principals by
	}
	// A backend that issues no principal now (its config asks for none,
	// or its service cannot: an admin API that answers 501) has none to
	// list; its accesses report why.
	if e.Issuer == nil {
		return 0, nil
	}
	if sc, err := e.Issuer.Issuing(ctx); err != nil || !sc.PerAccess {
		return 0, nil
	}
	// Every shard lists the same principals, and each caches only its own
	// records: one shard's view counts every other shard's principal
	// unaccounted. So the check runs in shard 0 alone, which confirms what
	// its cache does not show from one fresh list of every record (any
	// service's) instead of a read by name: a record written under an
	// earlier service has another name, and a read by the current
	// service's name would miss it and revoke a live credential.
	partial := r.Serves != nil && r.Serves.N > 1
	if partial && r.Serves.K != 0 {
		return 0, nil
	}
	// Its principals under the names it had before are its own too.
	var listed []string
	for _, name := range append([]string{inst}, r.Backends.FormerInstallations()...) {
		ps, err := e.Principals.ListPrincipals(ctx, name)
		if err != nil {
			return 0, fmt.Errorf("list the principals of installation %s: %w", name, err)
		}
		listed = append(listed, ps...)
	}
	recorded := make(recordedPrincipals, len(records))
	for i := range records {
		recorded.add(&records[i])
	}
	service, grace := e.Config.ClaimScope(), e.Config.OrphanGrace()
	var unaccounted []string
	for _, p := range listed {
		if !recorded[p] {
			unaccounted = append(unaccounted, p)
		}
	}
	due := o.unaccounted.observe(e.Name, unaccounted, o.clock(), grace)
	var everyRecord recordedPrincipals
	if partial && len(due) > 0 {
		var err error
		if everyRecord, err = o.everyRecord(ctx); err != nil {
			return 0, err
		}
	}
	n := 0
	var errs []error
	for _, d := range due {
		found := everyRecord[d.principal]
		if everyRecord == nil {
			err := r.APIReader.Get(ctx, types.NamespacedName{Name: CredentialName(service, d.principal)}, &v1.BucketyCredential{})
			if err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("read the record of principal %s: %w", d.principal, err))
				continue
			}
			found = err == nil
		}
		if found {
			// Written after the cache's list, or another shard's:
			// accounted for.
			o.unaccounted.forget(e.Name, d.principal)
			continue
		}
		// No Resource: revoked wherever it has rights.
		if err := e.Backend.Revoke(ctx, drivers.Access{Principal: d.principal}); err != nil {
			errs = append(errs, fmt.Errorf("revoke unaccounted principal %s: %w", d.principal, err))
			if drivers.IsUnavailable(err) || ctx.Err() != nil {
				break // the next would wait as long: at the next check
			}
			continue
		}
		o.unaccounted.forget(e.Name, d.principal)
		n++
		metrics.CredentialsRevoked.WithLabelValues(e.Name, metrics.RevokedUnaccounted).Inc()
		o.Log.Info("revoked a principal of this installation that no BucketyCredential records (a rebuilt cluster, or a record deleted by hand)",
			"principal", d.principal, "backend", e.Name, "installation", inst, "unaccountedSince", d.since, "orphanGrace", grace.String())
	}
	return n, errors.Join(errs...)
}

// everyRecord reads every record from the API server, in pages, for a
// shard whose cache holds only its own: the principals they name.
func (o *Orphans) everyRecord(ctx context.Context) (recordedPrincipals, error) {
	out := recordedPrincipals{}
	var list v1.BucketyCredentialList
	for {
		if err := o.Reconciler.APIReader.List(ctx, &list, client.Limit(recordPage), client.Continue(list.Continue)); err != nil {
			return nil, fmt.Errorf("list every credential record: %w", err)
		}
		for i := range list.Items {
			out.add(&list.Items[i])
		}
		if list.Continue == "" {
			return out, nil
		}
	}
}

// recordPage is how many records a page of everyRecord's list holds.
const recordPage = 500

// unaccountedSince remembers, per backend, when each unaccounted principal
// was first seen so. It holds at most what the last listing of each
// backend found unaccounted.
type unaccountedSince struct {
	mu sync.Mutex
	m  map[string]map[string]time.Time
}

// duePrincipal is an unaccounted principal past its grace.
type duePrincipal struct {
	principal string
	since     time.Time
}

// observe records that backend's latest listing found principals
// unaccounted at now: it forgets the backend's principals not among them
// (accounted for now, or gone), and returns those unaccounted since at
// least grace ago.
func (u *unaccountedSince) observe(backend string, principals []string, now time.Time, grace time.Duration) []duePrincipal {
	u.mu.Lock()
	defer u.mu.Unlock()
	prev := u.m[backend]
	next := make(map[string]time.Time, len(principals))
	var due []duePrincipal
	for _, p := range principals {
		since, ok := prev[p]
		if !ok {
			since = now
		}
		next[p] = since
		if !now.Before(since.Add(grace)) {
			due = append(due, duePrincipal{p, since})
		}
	}
	if u.m == nil {
		u.m = map[string]map[string]time.Time{}
	}
	if len(next) == 0 {
		delete(u.m, backend)
	} else {
		u.m[backend] = next
	}
	return due
}

// forget drops principal of backend (revoked, or found accounted for).
func (u *unaccountedSince) forget(backend, principal string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	delete(u.m[backend], principal)
	if len(u.m[backend]) == 0 {
		delete(u.m, backend)
	}
}

// since reports when principal of backend was first seen unaccounted.
func (u *unaccountedSince) since(backend, principal string) (time.Time, bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	t, ok := u.m[backend][principal]
	return t, ok
}
