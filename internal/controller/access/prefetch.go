package access

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/Yolean/buckety-controller/drivers"
	v1 "github.com/Yolean/buckety-controller/internal/api/v1alpha1"
	"github.com/Yolean/buckety-controller/internal/metrics"
	"github.com/Yolean/buckety-controller/internal/shard"
)

// Secrets after a start. The cache holds Secrets' metadata, not their data
// (see the controller's cacheOptions), and what this controller verified
// of each access's Secret (verifiedSecrets) is in memory. So after a start
// every access would read its Secret fresh once: at 10,000 accesses,
// 10,000 GETs in the first minute, most of a cold start's API requests.
// An access whose status records its Secret's version (status.secret)
// needs no read at all (writeSecret, secret.go); this read is for the
// rest: accesses written before status.secret was, and the credentials of
// backends that issue one per access, which no status holds (secretOf).
// The first pass that needs a fresh read of a Secret it has never
// verified reads every buckety Secret of its shard at once (those its
// cache selects), in pages of prefetchPage, and records what it finds as
// verified at the resourceVersion read: a Secret of type Opaque whose
// controlling owner is a BucketyAccess, under that access's UID, with the
// sum of its data as it is. An access's pass then compares that sum with
// the data it would write (verifiedSecrets.matches), exactly as it would
// have compared the fresh read: equal, nothing is read or written;
// different (edited by hand while no controller ran, or the access
// changed), or edited since the list (another resourceVersion), the
// Secret is read fresh and repaired as before. Data is hashed page by
// page and not kept, except the credential
// a Secret holds for a backend that issues one per access (its principal
// and secret, which the pass's secretOf would otherwise GET): kept as
// read afresh, so it is compared with the record's digest exactly as a
// GET's answer would be (knowScopedSecret).
//
// It runs at most once per reconciler: once per process on the leader
// (only its reconcilers run), once per shard taken. A pass that needs it
// while it runs waits only until the page holding its own Secret is
// recorded (or the read ends), not for the whole read: a shard of 25,000
// is 500 pages. Each page has prefetchPageTimeout, the whole read
// prefetchTimeout; a failed or timed-out list is not retried: the passes
// still waiting read their Secrets one by one instead, as before.
type secretPrefetch struct {
	mu    sync.Mutex
	state prefetchState
	// page is closed when the read records a page or ends, and then
	// replaced: what a waiting pass selects on.
	page chan struct{}
}

type prefetchState int

const (
	prefetchNotRun prefetchState = iota
	prefetchRunning
	prefetchDone
)

// prefetchPage is how many Secrets one list request of the prefetch asks
// for. Any tenant can put buckety's label on Secrets of up to 1 MiB each,
// so a page holds at most prefetchPage MiB of data: 50 keeps that within
// what the 16 workers' own GETs could hold at once (16 MiB) times a few,
// at 200 requests for 10,000 Secrets. prefetchPageTimeout bounds each
// list request: an API server that does not answer one page in that time
// is in trouble, and the passes read their Secrets one by one after it.
// prefetchTimeout bounds the whole read: at 100,000 on four shards, on
// two cores, a shard's 25,000 took more than the minute this was before
// (the 2026-12-01 run, docs/performance.md), and every access of the
// shard then read its own Secret.
const (
	prefetchPage        = 50
	prefetchPageTimeout = 20 * time.Second
	prefetchTimeout     = 10 * time.Minute
	// issuingWait bounds the prefetch's question to each backend whether
	// it scopes credentials now.
	issuingWait = 5 * time.Second
)

// prefetchSecrets runs the prefetch unless it ran or runs. A caller that
// finds it running waits until found() (its own Secret recorded), the
// read ends, or ctx ends; the caller that runs it returns when it ends.
func (r *Reconciler) prefetchSecrets(ctx context.Context, found func() bool) {
	p := &r.prefetch
	p.mu.Lock()
	switch p.state {
	case prefetchDone:
		p.mu.Unlock()
		return
	case prefetchRunning:
		for {
			page := p.page
			p.mu.Unlock()
			if found() {
				return
			}
			select {
			case <-page:
			case <-ctx.Done():
				return
			}
			p.mu.Lock()
			if p.state == prefetchDone {
				p.mu.Unlock()
				return
			}
		}
	}
	p.state, p.page = prefetchRunning, make(chan struct{})
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.state = prefetchDone
		close(p.page)
		p.mu.Unlock()
	}()

	ctx, cancel := context.WithTimeout(ctx, prefetchTimeout)
	defer cancel()
	began := time.Now()
	n, err := r.listSecretsVerified(ctx, p.recorded)
	took := time.Since(began)
	metrics.SecretPrefetchRecorded.Add(float64(n))
	log := logf.FromContext(ctx)
	switch {
	case err != nil && ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded):
		// Stopped (the process, or its shard): nothing to report.
		return
	case err != nil:
		metrics.SecretPrefetchDuration.WithLabelValues("failed").Observe(took.Seconds())
		log.Error(err, "reading every buckety Secret at once failed; accesses read their own Secrets instead", "recorded", n, "took", took)
		return
	}
	metrics.SecretPrefetchDuration.WithLabelValues("done").Observe(took.Seconds())
	log.V(1).Info("read every buckety Secret once after start", "recorded", n, "took", took)
}

// recorded wakes the passes waiting for the read: a page is recorded.
func (p *secretPrefetch) recorded() {
	p.mu.Lock()
	close(p.page)
	p.page = make(chan struct{})
	p.mu.Unlock()
}

// listSecretsVerified lists buckety's Secrets in pages and records each
// that an access controls; it returns how many it recorded.
// After each page it calls paged (nil: nothing).
func (r *Reconciler) listSecretsVerified(ctx context.Context, paged func()) (int, error) {
	n := 0
	cont := ""
	// The Secrets this shard's cache holds: another shard's accesses are
	// not this reconciler's to verify.
	sel, err := shard.ManagedSecrets(r.Serves)
	if err != nil {
		return n, err
	}
	keys := r.issuedKeys(ctx)
	for {
		var list corev1.SecretList
		pctx, cancel := context.WithTimeout(ctx, prefetchPageTimeout)
		err := r.APIReader.List(pctx, &list, ctrl.MatchingLabelsSelector{Selector: sel}, ctrl.Limit(prefetchPage), ctrl.Continue(cont))
		cancel()
		if err != nil {
			return n, err
		}
		for i := range list.Items {
			s := &list.Items[i]
			if s.Type != corev1.SecretTypeOpaque {
				continue
			}
			uid, ok := controllingAccess(s.OwnerReferences)
			if !ok {
				continue
			}
			if r.verified.recordIfAbsent(uid, s.ResourceVersion, s.Data) {
				n++
			}
			r.knowIssuedSecret(keys, uid, s)
		}
		if paged != nil {
			paged()
		}
		if cont = list.Continue; cont == "" {
			return n, nil
		}
	}
}

// issuedKeys are the Secret keys of the backends that issue a credential
// per access now (principal and secret key, once each), for the prefetch
// to remember the credential each Secret holds (knowScopedSecret).
func (r *Reconciler) issuedKeys(ctx context.Context) []issuedKey {
	if r.Backends == nil {
		return nil
	}
	var keys []issuedKey
	for _, name := range r.Backends.Names() {
		e, ok := r.Backends.Get(name)
		if !ok || e.Issuer == nil {
			continue
		}
		// Usually cached (the pass that started the prefetch asked); a
		// backend that does not answer soon only costs its accesses
		// their GETs, not everyone's prefetch.
		sctx, cancel := context.WithTimeout(ctx, issuingWait)
		sc, err := e.Issuer.Issuing(sctx)
		cancel()
		if err != nil || !sc.PerAccess {
			continue
		}
		k := issuedKey{sc: e.Issuer, all: []drivers.CredentialIssuer{e.Issuer}}
		k.principal, k.secret = e.Issuer.CredentialKeys()
		if i := slices.IndexFunc(keys, func(o issuedKey) bool { return o.principal == k.principal && o.secret == k.secret }); i >= 0 {
			keys[i].all = append(keys[i].all, e.Issuer)
		} else {
			keys = append(keys, k)
		}
	}
	return keys
}

// issuedKey is the Secret keys of a kind of issued credential: sc reads
// the secret; all are every backend's issuer of those keys (each kadm
// backend's, which may issue under different settings).
type issuedKey struct {
	sc                drivers.CredentialIssuer
	all               []drivers.CredentialIssuer
	principal, secret string
}

// knowIssuedSecret remembers the credential Secret s holds, under the
// keys of a backend that issues per-access credentials, so its access's
// pass finds it without a GET
// (credential.go, secretOf). The access's backend is not known here: a
// pair that is not its current credential is never asked for (secretOf
// asks by principal). Where the service issues the keys (IAM), the
// Secret names the key, not the principal: such an access misses, and
// reads its Secret on its own as before.
func (r *Reconciler) knowIssuedSecret(keys []issuedKey, uid types.UID, s *corev1.Secret) {
	for _, k := range keys {
		p := s.Data[k.principal]
		// Checked here too (knownSecrets.store would refuse it), so a
		// huge principal is not even copied into a string.
		if len(p) == 0 || len(p) > maxKeptCredential {
			continue
		}
		principal := string(p)
		// Written under a setting an issuer of these keys no longer
		// issues with: kept as read for the others (the Secret does not
		// name its backend), and an access of such an issuer's backend
		// reads it on its own (secretOf), is judged by it, and asserts
		// its credential again.
		var staleFor []drivers.CredentialIssuer
		for _, sc := range k.all {
			if drivers.SecretStale(sc, s.Data) {
				staleFor = append(staleFor, sc)
			}
		}
		if secret := drivers.SecretOf(k.sc, principal, s.Data); secret != "" && len(secret) <= maxKeptCredential {
			r.secrets.putFresh(uid, s.ResourceVersion, principal, secret, staleFor)
			return
		}
	}
}

// controllingAccess is the UID of the BucketyAccess that controls an
// object with refs, if one does.
func controllingAccess(refs []metav1.OwnerReference) (types.UID, bool) {
	for _, ref := range refs {
		if ref.Controller != nil && *ref.Controller && ref.Kind == "BucketyAccess" && ref.APIVersion == v1.GroupVersion.String() {
			return ref.UID, true
		}
	}
	return "", false
}
