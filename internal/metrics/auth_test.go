package metrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// TestMetricsAuthDecisions covers what the filter decides itself: the
// header it accepts, the question it asks, and how long it remembers the
// answer. The API server's answers stand in here; TestBinaryWithGenerated
// RBACAndDriverVersions (test/integration) asks a real one.
func TestMetricsAuthDecisions(t *testing.T) {
	reviews := 0
	var asked *authzv1.SubjectAccessReviewSpec
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			switch o := obj.(type) {
			case *authnv1.TokenReview:
				reviews++
				if o.Spec.Token == "reader" || o.Spec.Token == "nobody" {
					o.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: o.Spec.Token, Groups: []string{"g"}, Extra: map[string]authnv1.ExtraValue{"k": {"v"}}}}
				}
			case *authzv1.SubjectAccessReview:
				spec := o.Spec
				asked = &spec
				o.Status.Allowed = o.Spec.User == "reader"
			}
			return nil
		},
	})
	now := time.Unix(0, 0)
	a := &authFilter{c: c, now: func() time.Time { return now }, cache: map[[32]byte]authDecision{}}
	req := func(header string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if header != "" {
			r.Header.Set("Authorization", header)
		}
		return r
	}
	cases := []struct {
		name, header string
		want         int
		wantReviews  int
	}{
		{"no header", "", http.StatusUnauthorized, 0},
		{"not a bearer token", "Basic cmVhZGVyOng=", http.StatusUnauthorized, 0},
		{"empty token", "Bearer ", http.StatusUnauthorized, 0},
		{"unknown token", "Bearer stranger", http.StatusUnauthorized, 1},
		{"user without get /metrics", "Bearer nobody", http.StatusForbidden, 2},
		{"allowed", "Bearer reader", http.StatusOK, 3},
		{"allowed, remembered", "bearer reader", http.StatusOK, 3},
	}
	for _, c := range cases {
		if got, err := a.decide(req(c.header)); err != nil || got != c.want {
			t.Errorf("%s: want %d, got %d (%v)", c.name, c.want, got, err)
		}
		if reviews != c.wantReviews {
			t.Errorf("%s: want %d token reviews so far, got %d", c.name, c.wantReviews, reviews)
		}
	}
	if asked == nil || asked.NonResourceAttributes == nil || asked.NonResourceAttributes.Path != "/metrics" || asked.NonResourceAttributes.Verb != "get" ||
		asked.User != "reader" || len(asked.Groups) != 1 || asked.Extra["k"][0] != "v" {
		t.Errorf("want get /metrics asked for the reviewed user with groups and extra, got %+v", asked)
	}
	now = now.Add(metricsAllowTTL)
	if got, _ := a.decide(req("Bearer reader")); got != http.StatusOK || reviews != 4 {
		t.Errorf("want an allowance asked again after %s, got %d with %d reviews", metricsAllowTTL, got, reviews)
	}
}

// TestMetricsAuthReviewsAreBounded: a pod sending random tokens to the
// metrics port gets metricsReviewBurst reviews at once and
// metricsReviewsPerSecond after, each further one answered 429 without a
// review (each is a TokenReview sent as the controller); a scraper whose
// allowance is remembered is served all along, and strangers filling the
// cache do not push its allowance out.
func TestMetricsAuthReviewsAreBounded(t *testing.T) {
	reviews := 0
	c := interceptor.NewClient(fake.NewClientBuilder().Build(), interceptor.Funcs{
		Create: func(_ context.Context, _ client.WithWatch, obj client.Object, _ ...client.CreateOption) error {
			switch o := obj.(type) {
			case *authnv1.TokenReview:
				reviews++
				if o.Spec.Token == "prometheus" {
					o.Status = authnv1.TokenReviewStatus{Authenticated: true, User: authnv1.UserInfo{Username: "prometheus"}}
				}
			case *authzv1.SubjectAccessReview:
				o.Status.Allowed = o.Spec.User == "prometheus"
			}
			return nil
		},
	})
	now := time.Unix(0, 0)
	a := &authFilter{c: c, now: func() time.Time { return now }, cache: map[[32]byte]authDecision{}, cacheMax: 8}
	req := func(token string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		r.Header.Set("Authorization", "Bearer "+token)
		return r
	}
	if got, _ := a.decide(req("prometheus")); got != http.StatusOK {
		t.Fatalf("the scraper: want 200, got %d", got)
	}
	limited := 0
	for i := range 3 * metricsReviewBurst {
		switch got, _ := a.decide(req(fmt.Sprintf("stranger-%d", i))); got {
		case http.StatusTooManyRequests:
			limited++
		case http.StatusUnauthorized:
		default:
			t.Fatalf("stranger %d: want 401 or 429, got %d", i, got)
		}
	}
	if reviews != metricsReviewBurst || limited != 3*metricsReviewBurst-(metricsReviewBurst-1) {
		t.Errorf("%d strangers at once: want %d reviews in all (the scraper's and a burst), got %d reviews and %d answered 429", 3*metricsReviewBurst, metricsReviewBurst, reviews, limited)
	}
	if got, _ := a.decide(req("prometheus")); got != http.StatusOK || reviews != metricsReviewBurst {
		t.Errorf("the scraper while strangers are refused: want 200 from its remembered allowance, got %d with %d reviews", got, reviews)
	}
	now = now.Add(time.Second)
	before := reviews
	for i := range 2 * metricsReviewsPerSecond {
		if _, err := a.decide(req(fmt.Sprintf("later-%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	if got := reviews - before; got != metricsReviewsPerSecond {
		t.Errorf("a second later: want %d reviews, got %d", metricsReviewsPerSecond, got)
	}
}
