package metrics

import (
	"context"
	"crypto/sha256"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// Cache lifetimes of AuthFilter's decisions, as controller-runtime's
// filter sets them: a scraper every 15–30 s costs two API requests per
// minute at most, and a revoked token or binding stops working within a
// minute.
const (
	metricsAllowTTL = time.Minute
	metricsDenyTTL  = 10 * time.Second
	// metricsAuthCacheMax bounds the decisions remembered (one per token,
	// method and path).
	metricsAuthCacheMax = 1024
	// metricsReviewsPerSecond and metricsReviewBurst bound the reviews of
	// tokens the cache does not know: each is a TokenReview (and a
	// SubjectAccessReview) sent as the controller, in the same API
	// priority queue as its reconciles' writes, so a pod sending random
	// tokens to the metrics port must not make the controller flood the
	// API server. A caller past the bound is answered 429 unreviewed; a
	// scraper whose decision is remembered is not affected.
	metricsReviewsPerSecond = 5
	metricsReviewBurst      = 20
)

// AuthFilter is the controller's metrics endpoint filter: the caller's
// bearer token is checked with a TokenReview, and the user it names must be
// allowed the request's verb on the request's path (a SubjectAccessReview for a
// non-resource URL, e.g. get /metrics), as kubebuilder's default does.
//
// It does what controller-runtime's filters.WithAuthenticationAndAuthorization
// does, without that package: it links k8s.io/apiserver and CEL into the
// binary (26 MB of its 66 MB), and the pages of that code its package
// initialisation touches stayed resident for the life of the process.
func AuthFilter(c *rest.Config, hc *http.Client) (metricsserver.Filter, error) {
	cl, err := client.New(c, client.Options{HTTPClient: hc})
	if err != nil {
		return nil, err
	}
	a := &authFilter{c: cl, now: time.Now, cache: map[[32]byte]authDecision{}}
	return func(log logr.Logger, h http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			code, err := a.decide(r)
			if err != nil {
				log.Error(err, "metrics: checking the caller failed")
			}
			if code != http.StatusOK {
				http.Error(w, http.StatusText(code), code)
				return
			}
			h.ServeHTTP(w, r)
		}), nil
	}, nil
}

// authFilter holds the reviewing client and the cached decisions.
type authFilter struct {
	c     client.Client
	now   func() time.Time
	mu    sync.Mutex
	cache map[[32]byte]authDecision
	// cacheMax is metricsAuthCacheMax where 0.
	cacheMax int
	// tokens and filled are the review bucket (metricsReviewsPerSecond).
	tokens float64
	filled time.Time
}

// takeReview spends one review from the bucket, refilled at
// metricsReviewsPerSecond up to metricsReviewBurst; false when it is
// empty.
func (a *authFilter) takeReview(now time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.filled.IsZero() {
		a.tokens = metricsReviewBurst
	} else if now.After(a.filled) {
		a.tokens = min(metricsReviewBurst, a.tokens+now.Sub(a.filled).Seconds()*metricsReviewsPerSecond)
	}
	a.filled = now
	if a.tokens < 1 {
		return false
	}
	a.tokens--
	return true
}

type authDecision struct {
	code    int
	expires time.Time
}

// decide returns 200 for an allowed request, 401 for a request without a
// valid token, 403 for a user not allowed the request, and 500 when the API
// server could not be asked (with the error).
func (a *authFilter) decide(r *http.Request) (int, error) {
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		return http.StatusUnauthorized, nil
	}
	verb := strings.ToLower(r.Method)
	key := sha256.Sum256([]byte(verb + "\x00" + r.URL.Path + "\x00" + token))
	now := a.now()
	a.mu.Lock()
	d, hit := a.cache[key]
	a.mu.Unlock()
	if hit && now.Before(d.expires) {
		return d.code, nil
	}
	if !a.takeReview(now) {
		return http.StatusTooManyRequests, nil
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	code, err := a.review(ctx, token, verb, r.URL.Path)
	if err != nil {
		return http.StatusInternalServerError, err
	}
	ttl := metricsDenyTTL
	if code == http.StatusOK {
		ttl = metricsAllowTTL
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	limit := a.cacheMax
	if limit == 0 {
		limit = metricsAuthCacheMax
	}
	if len(a.cache) >= limit {
		for k, d := range a.cache {
			if !now.Before(d.expires) {
				delete(a.cache, k)
			}
		}
		// Refusals go before allowances: strangers' tokens filling the
		// cache must not cost the scraper its remembered decision.
		for k, d := range a.cache {
			if len(a.cache) < limit {
				break
			}
			if d.code != http.StatusOK {
				delete(a.cache, k)
			}
		}
		if len(a.cache) >= limit {
			a.cache = map[[32]byte]authDecision{}
		}
	}
	a.cache[key] = authDecision{code: code, expires: now.Add(ttl)}
	return code, nil
}

// review asks the API server who holds token and whether they may verb path.
func (a *authFilter) review(ctx context.Context, token, verb, path string) (int, error) {
	tr := &authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}
	if err := a.c.Create(ctx, tr); err != nil {
		return 0, err
	}
	if !tr.Status.Authenticated {
		return http.StatusUnauthorized, nil
	}
	u := tr.Status.User
	extra := make(map[string]authzv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authzv1.ExtraValue(v)
	}
	sar := &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
		User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
		NonResourceAttributes: &authzv1.NonResourceAttributes{Path: path, Verb: verb},
	}}
	if err := a.c.Create(ctx, sar); err != nil {
		return 0, err
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		return http.StatusForbidden, nil
	}
	return http.StatusOK, nil
}
