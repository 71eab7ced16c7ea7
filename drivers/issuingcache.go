package drivers

import (
	"cmp"
	"context"
	"fmt"
	"sync"
	"time"
)

// IssuingCache keeps a backend's answer to CredentialIssuer.Issuing, so a
// backend is asked at most once per TTL, and a failed probe's error for
// FailTTL. Every access pass asks Issuing first: when a backend hangs,
// the passes queued behind its probe get that probe's error as soon as it
// ends, instead of each probing in turn for up to the request timeout
// (the k-th waiting k timeouts, and the workers every backend shares held
// all that time).
type IssuingCache struct {
	// FailTTL overrides IssuingFailTTL when not zero (tests).
	FailTTL time.Duration

	// sem is held while the cache is read or a probe runs: a lock whose
	// waiters give up with their context (a caller bounding its wait for a
	// probe another caller began on a hung backend).
	once  sync.Once
	sem   chan struct{}
	at    time.Time
	got   Issuing
	errAt time.Time
	err   error
}

// IssuingFailTTL is how long a failed probe's error is answered before the
// backend is asked again.
const IssuingFailTTL = 5 * time.Second

// Get answers from the cache, or calls probe and keeps its answer for ttl
// (an error for FailTTL, unless it is ctx's own end). A caller whose ctx
// ends while another's probe runs gets ctx's error.
func (c *IssuingCache) Get(ctx context.Context, ttl time.Duration, probe func(context.Context) (Issuing, error)) (Issuing, error) {
	c.once.Do(func() { c.sem = make(chan struct{}, 1) })
	select {
	case c.sem <- struct{}{}:
	case <-ctx.Done():
		return Issuing{}, fmt.Errorf("wait for the backend's issuing probe: %w", ctx.Err())
	}
	defer func() { <-c.sem }()
	switch {
	case !c.at.IsZero() && time.Since(c.at) < ttl:
		return c.got, nil
	case c.err != nil && time.Since(c.errAt) < cmp.Or(c.FailTTL, IssuingFailTTL):
		return Issuing{}, c.err
	}
	got, err := probe(ctx)
	if err != nil {
		if ctx.Err() == nil {
			c.err, c.errAt = err, time.Now()
		}
		return Issuing{}, err
	}
	c.at, c.got, c.err = time.Now(), got, nil
	return got, nil
}
