package access

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// A credential is issued again when the access's Secret no longer holds
// it: someone other than buckety changed its password or deleted the
// Secret (credential.go, secretToAssert). Each such issue is a backend
// write (a SCRAM password, an IAM key, an S3 user's secret), on services
// that may take every IAM request under one lock: a tenant's loop that
// edits or deletes its Secret must not become a loop of those writes for
// every tenant of the backend. The first issue after a quiet spell runs at
// once; each one after it, while the Secret keeps changing, waits twice as
// long as the one before (reissuePace, doubling up to reissueMaxPace),
// and the access says so (Ready False, Progressing, and a ReissuePaced
// event). The same holds for a credential issued but not in the Secret
// yet (a Minting record, a rotation not handed over) whose Secret cannot
// be written (made immutable, a full quota, an admission policy): each
// issue counts as soon as the backend made it, not once the Secret holds
// it, so a write that keeps failing is no loop of backend writes. A
// restart forgets the pacing, at the cost of one issue at once.
const (
	// reissuePace is the wait between the first and the second issue.
	reissuePace = 10 * time.Second
	// reissueMaxPace bounds the wait.
	reissueMaxPace = 5 * time.Minute
	// reissueQuiet is how long after an issue the pacing is forgotten
	// (longer than the longest wait, so a loop at that pace stays paced).
	reissueQuiet = 10 * time.Minute
)

// reissues remembers, per access, when buckety last issued its credential
// again for a Secret that no longer held it, and how many times in a row.
type reissues struct {
	mu     sync.Mutex
	m      map[types.UID]reissued
	pruned time.Time
}

type reissued struct {
	at time.Time
	n  int
	// told: the wait that ends at at+pace(n) has been reported.
	told bool
}

// paceAfter is the wait after the n-th issue in a row.
func paceAfter(n int) time.Duration {
	d := reissuePace
	for i := 1; i < n && d < reissueMaxPace; i++ {
		d *= 2
	}
	return min(d, reissueMaxPace)
}

// next returns when the access's credential may be issued again (at or
// before now: at once), and the last issue, and whether this is the
// first time the wait is asked about (to report it once).
func (p *reissues) next(uid types.UID, now time.Time) (at, last time.Time, first bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.m[uid]
	if !ok || now.Sub(r.at) >= reissueQuiet {
		return time.Time{}, time.Time{}, false
	}
	at = r.at.Add(paceAfter(r.n))
	if !now.Before(at) {
		return at, r.at, false
	}
	first = !r.told
	r.told = true
	p.m[uid] = r
	return at, r.at, first
}

// done records an issue for the access at now.
func (p *reissues) done(uid types.UID, now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m == nil {
		p.m = map[types.UID]reissued{}
	}
	r := p.m[uid]
	if now.Sub(r.at) >= reissueQuiet {
		r.n = 0
	}
	p.m[uid] = reissued{at: now, n: r.n + 1}
	if now.Sub(p.pruned) >= time.Minute {
		p.pruned = now
		for k, v := range p.m {
			if now.Sub(v.at) >= reissueQuiet {
				delete(p.m, k)
			}
		}
	}
}
