// Package metricsauth guards the operator's metrics endpoint: a caller's bearer token is
// authenticated with a TokenReview and the caller authorized with a SubjectAccessReview
// (verb and path of a non-resource request, such as get on /metrics), both answered by
// the API server, as controller-runtime's metrics filter does.
//
// It exists because controller-runtime's filter
// (sigs.k8s.io/controller-runtime/pkg/metrics/filters) builds on k8s.io/apiserver, whose
// delegating authenticator and authorizer bring OpenTelemetry, gRPC and cel-go into the
// binary, and with them megabytes of resident memory the operator pays from the start
// for two API requests. This package makes the same two requests with client-go's typed
// clients alone, and caches the decisions so that a scraping Prometheus does not cost two
// API requests per scrape. The operator links none of those packages (rendering offline,
// which validates with the API server's libraries, is the kubectl plugin's,
// cmd/kubectl-secondary_scheduler), and test/depfence fails when it does.
//
// Whoever reaches the endpoint's port may send requests, with or without credentials, so
// what such requests can cost is bounded:
//   - A request without a bearer token is refused with 401 before any review.
//   - Allowed and refused decisions are cached apart, each in a least-recently-used cache
//     of its own (MaxAllowedDecisions, MaxRefusedDecisions). Only a token the API server
//     authenticated and authorized makes an allowed entry; a junk token, or the token of a
//     user who may not read the metrics, can only evict other refusals. A flood of junk
//     therefore leaves a scraper's allowed decision in place.
//   - A request no unexpired decision covers is reviewed only if a token bucket
//     (ReviewsPerSecond, ReviewBurst) has a review to spare; otherwise it is answered 429
//     with Retry-After and the API server is not asked. A request an unexpired decision
//     covers does not draw from the bucket, and re-reviewing a key whose allowed decision
//     expired draws from a bucket of its own, which only tokens the API server allowed
//     can reach: a flood of junk does not throttle a scraper that was allowed before.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

const (
	// AllowedTTL is how long an allowed request's decision is reused: long enough that a
	// Prometheus scraping every 15 to 30 seconds costs the API server two reviews a
	// minute, short enough that a revoked token or permission stops working soon.
	AllowedTTL = time.Minute
	// DeniedTTL is how long a decision to refuse (401 or 403) is reused. It is short so
	// that a permission granted to a refused caller takes effect at its next scrape or
	// the one after, while a caller retrying in a loop still costs few reviews.
	DeniedTTL = 10 * time.Second
	// MaxAllowedDecisions bounds the allowed decisions kept, so that memory stays bounded
	// however many tokens are allowed. Only a token the API server authenticated and
	// authorized adds one, so junk cannot push a scraper's decision out: only many callers
	// allowed to read the metrics could, far more than scrape one operator. An allowed
	// decision that expired stays until evicted, least recently used first, as the mark
	// that its key may be re-reviewed from the renewal budget.
	MaxAllowedDecisions = 1024
	// MaxRefusedDecisions bounds the refusals (401 and 403) kept, so that callers sending
	// ever new tokens or paths cannot grow the operator's memory. When it is full the
	// least recently used refusal goes, never an allowed decision. Each review draws from
	// one of two buckets of ReviewBurst plus ReviewsPerSecond a second, so no more than
	// 2 * (ReviewBurst + ReviewsPerSecond * DeniedTTL), 120, refusals are unexpired at
	// once: the bound is reached by expired ones.
	MaxRefusedDecisions = 1024
	// ReviewsPerSecond is the rate at which the token buckets reviews draw from refill:
	// one for keys no decision was made for (a new token, most often junk), one for
	// re-reviewing keys whose allowed decision expired. A request finding its bucket empty
	// is answered 429 with Retry-After, without a review. A scraper costs one renewal per
	// AllowedTTL, so five a second renew some three hundred scrapers' tokens a minute, and
	// admit as many new ones, far more than scrape one operator; a caller sending ever new
	// tokens costs the API server at most five TokenReviews (and as many
	// SubjectAccessReviews) a second per operator replica, instead of one per request. The
	// buckets are apart so that junk emptying the first cannot lock out a scraper allowed
	// before, which only renews.
	ReviewsPerSecond = 5
	// ReviewBurst is how many reviews each bucket holds: enough for a few scrapers that
	// start together to be reviewed at once, few enough that a flood costs the API server
	// little more than ReviewsPerSecond.
	ReviewBurst = 10
	// reviewTimeout bounds each review, as controller-runtime's filter does, so that a
	// slow API server fails a scrape rather than piling up requests.
	reviewTimeout = 10 * time.Second
	// maxMethodLength and maxPathLength bound what a request may make the guard keep:
	// the verb and path are part of a cached decision's key, and Go's server accepts a
	// method or path of up to the header limit (a megabyte), so that 1024 refusals of
	// garbage tokens could pin a gigabyte. No method is longer than 7 bytes, and the
	// metrics server serves one short path.
	maxMethodLength = 16
	maxPathLength   = 1024
)

// FilterProvider returns a metrics filter that lets a request through only when the API
// server config reaches, over httpClient, authenticates its bearer token and allows its
// user the request's verb on its path. It is a
// sigs.k8s.io/controller-runtime/pkg/metrics/server.Options.FilterProvider.
//
// The operator's own user needs to create tokenreviews (authentication.k8s.io) and
// subjectaccessreviews (authorization.k8s.io); a scraper needs, for example, get on the
// non-resource URL /metrics.
func FilterProvider(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	return newFilterProvider(clock.RealClock{}, defaultReviewLimit)(config, httpClient)
}

// reviewLimit is a token bucket of reviews: perSecond added, up to burst kept.
type reviewLimit struct {
	perSecond rate.Limit
	burst     int
}

// defaultReviewLimit is the bucket FilterProvider reviews from.
var defaultReviewLimit = reviewLimit{perSecond: ReviewsPerSecond, burst: ReviewBurst}

// newFilterProvider is FilterProvider reading the time from clk, so that tests can let
// cached decisions expire and the review budget refill without waiting, and reviewing
// within limit, so that tests of the cache can review without one.
func newFilterProvider(clk clock.PassiveClock, limit reviewLimit) func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	return func(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
		authentication, err := authenticationclient.NewForConfigAndClient(config, httpClient)
		if err != nil {
			return nil, fmt.Errorf("create authentication.k8s.io/v1 client for the metrics filter: %w", err)
		}
		authorization, err := authorizationclient.NewForConfigAndClient(config, httpClient)
		if err != nil {
			return nil, fmt.Errorf("create authorization.k8s.io/v1 client for the metrics filter: %w", err)
		}
		// One guard for every handler the metrics server wraps: decisions are per path, and
		// the review budget is the operator's, whatever the path.
		g := newGuard(clk, limit)
		g.tokenReviews = authentication.TokenReviews()
		g.subjectAccessReviews = authorization.SubjectAccessReviews()
		return func(log logr.Logger, handler http.Handler) (http.Handler, error) {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				g.serveHTTP(log, handler, w, r)
			}), nil
		}, nil
	}
}

// outcome is what the guard decided about a request.
type outcome int

const (
	// unauthenticated is a 401: no usable bearer token, or one the API server rejects.
	unauthenticated outcome = iota
	// forbidden is a 403: the token's user may not use the verb on the path.
	forbidden
	// allowed passes the request to the wrapped handler.
	allowed
)

// decisionKey identifies a decision. The token is kept only as its SHA-256, so that the
// cache holds nothing that would let whoever reads the operator's memory use it.
type decisionKey struct {
	tokenHash  [sha256.Size]byte
	verb, path string
}

// decision is a cached outcome with the user it concerns, for the 403 message.
type decision struct {
	outcome outcome
	user    string
	expires time.Time
}

// reviewBudgetSpentError is the refusal to review a request because its token bucket is
// empty: the caller should retry after retryAfter.
type reviewBudgetSpentError struct {
	retryAfter time.Duration
}

func (e *reviewBudgetSpentError) Error() string {
	return fmt.Sprintf("metrics request reviews are over budget; a review is to spare in %s", e.retryAfter)
}

// guard authenticates and authorizes requests and remembers its decisions.
type guard struct {
	tokenReviews         authenticationclient.TokenReviewInterface
	subjectAccessReviews authorizationclient.SubjectAccessReviewInterface
	clock                clock.PassiveClock

	// mu makes a lookup or an update of both caches one step, so that a key is never in
	// both: the metrics server serves requests concurrently.
	mu sync.Mutex
	// allowedDecisions and refusedDecisions map a decisionKey to its decision. They are
	// apart so that refusals, which anyone can cause, never evict an allowed decision.
	allowedDecisions, refusedDecisions *lru.Cache

	// newReviews is the budget of reviews of keys not allowed before; renewals that of
	// keys whose allowed decision expired, which junk cannot reach.
	newReviews, renewals *rate.Limiter
}

// newGuard returns a guard without API clients, its decisions and budgets empty.
func newGuard(clk clock.PassiveClock, limit reviewLimit) *guard {
	return &guard{
		clock:            clk,
		allowedDecisions: lru.New(MaxAllowedDecisions),
		refusedDecisions: lru.New(MaxRefusedDecisions),
		newReviews:       rate.NewLimiter(limit.perSecond, limit.burst),
		renewals:         rate.NewLimiter(limit.perSecond, limit.burst),
	}
}

// serveHTTP answers r with 400, 401, 403, 429 or 500, or passes it to handler when allowed.
func (g *guard) serveHTTP(log logr.Logger, handler http.Handler, w http.ResponseWriter, r *http.Request) {
	if len(r.Method) > maxMethodLength || len(r.URL.Path) > maxPathLength {
		// Refused before any review, so neither is cached, logged or echoed.
		http.Error(w, "Bad Request: method or path too long", http.StatusBadRequest)
		return
	}
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		log.V(4).Info("Refused a metrics request without a bearer token", "path", r.URL.Path)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	// kube-apiserver names the verb of a non-resource request by its method in lower
	// case (GET is get, POST is post, HEAD is head, and so on), and RBAC rules for
	// nonResourceURLs are written in those terms.
	key := decisionKey{tokenHash: sha256.Sum256([]byte(token)), verb: strings.ToLower(r.Method), path: r.URL.Path}
	d, err := g.decide(r.Context(), token, key)
	if spent := (*reviewBudgetSpentError)(nil); errors.As(err, &spent) {
		// Routine under a flood of junk, so not an error, and not logged above V(4).
		log.V(4).Info("Refused a metrics request: its review is over budget", "verb", key.verb, "path", key.path)
		// Retry-After counts whole seconds; rounding up keeps a caller that obeys it from
		// coming back before a review is to spare.
		w.Header().Set("Retry-After", strconv.Itoa(max(1, int(math.Ceil(spent.retryAfter.Seconds())))))
		http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
		return
	}
	if err != nil {
		// The error names the review and the API server's answer, never the token.
		log.Error(err, "Could not decide on a metrics request", "verb", key.verb, "path", key.path)
		http.Error(w, "Internal Server Error: could not authenticate or authorize the request", http.StatusInternalServerError)
		return
	}
	switch d.outcome {
	case unauthenticated:
		log.V(4).Info("Refused a metrics request whose token the API server did not authenticate", "path", key.path)
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
	case forbidden:
		log.V(4).Info("Refused a metrics request the API server did not authorize", "user", d.user, "verb", key.verb, "path", key.path)
		http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, path=%s)", d.user, key.verb, key.path), http.StatusForbidden)
	case allowed:
		// The token was for this filter; like kube-apiserver, do not hand it on.
		r.Header.Del("Authorization")
		handler.ServeHTTP(w, r)
	}
}

// bearerToken returns the token of an Authorization header "Bearer <token>", the scheme
// in any case as RFC 7235 allows, and false when the header is missing or not that.
func bearerToken(header string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(header), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	if token == "" || strings.ContainsAny(token, " \t") {
		return "", false
	}
	return token, true
}

// decide returns the cached decision for key, or reviews token and caches the result.
// A review that fails is not cached, so that the next request tries again. A review over
// budget is not made: decide returns a *reviewBudgetSpentError.
func (g *guard) decide(ctx context.Context, token string, key decisionKey) (decision, error) {
	d, ok, renewal := g.cached(key)
	if ok {
		return d, nil
	}
	budget := g.newReviews
	if renewal {
		budget = g.renewals
	}
	if now := g.clock.Now(); !budget.AllowN(now, 1) {
		// The bucket holds a fraction of a review; the rest refills at its rate.
		wait := time.Duration((1 - budget.TokensAt(now)) / float64(budget.Limit()) * float64(time.Second))
		return decision{}, &reviewBudgetSpentError{retryAfter: wait}
	}
	d, err := g.review(ctx, token, key)
	if err != nil {
		return decision{}, err
	}
	g.remember(key, d)
	return d, nil
}

// review asks the API server who token belongs to and whether that user may use key's
// verb on key's path.
func (g *guard) review(ctx context.Context, token string, key decisionKey) (decision, error) {
	ctx, cancel := context.WithTimeout(ctx, reviewTimeout)
	defer cancel()

	// No audiences, as controller-runtime's filter: the API server checks the token
	// against its own.
	tokenReview := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	tokenReview, err := g.tokenReviews.Create(ctx, tokenReview, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("create TokenReview: %w", err)
	}
	if !tokenReview.Status.Authenticated {
		return decision{outcome: unauthenticated}, nil
	}

	user := tokenReview.Status.User
	var extra map[string]authorizationv1.ExtraValue
	if len(user.Extra) > 0 {
		extra = make(map[string]authorizationv1.ExtraValue, len(user.Extra))
		for name, values := range user.Extra {
			extra[name] = authorizationv1.ExtraValue(values)
		}
	}
	accessReview := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:                  user.Username,
		Groups:                user.Groups,
		UID:                   user.UID,
		Extra:                 extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: key.path, Verb: key.verb},
	}}
	accessReview, err = g.subjectAccessReviews.Create(ctx, accessReview, metav1.CreateOptions{})
	if err != nil {
		return decision{}, fmt.Errorf("create SubjectAccessReview for user %s, verb %s, path %s: %w", user.Username, key.verb, key.path, err)
	}
	if !accessReview.Status.Allowed {
		return decision{outcome: forbidden, user: user.Username}, nil
	}
	return decision{outcome: allowed}, nil
}

// cached returns the unexpired decision for key, if any; when there is none, renewal
// tells whether key was allowed before, its decision now expired.
func (g *guard) cached(key decisionKey) (d decision, ok, renewal bool) {
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if value, found := g.allowedDecisions.Get(key); found {
		if d := value.(decision); now.Before(d.expires) {
			return d, true, false
		}
		// Kept, not removed: it marks key as one the API server allowed, whose review
		// draws from the renewal budget.
		return decision{}, false, true
	}
	if value, found := g.refusedDecisions.Get(key); found {
		if d := value.(decision); now.Before(d.expires) {
			return d, true, false
		}
		g.refusedDecisions.Remove(key)
	}
	return decision{}, false, false
}

// remember caches d for key: an allowed decision for AllowedTTL among the allowed, any
// other for DeniedTTL among the refused, dropping key's decision from the other cache.
// Each cache, when full, drops its least recently used decision.
func (g *guard) remember(key decisionKey, d decision) {
	now := g.clock.Now()
	g.mu.Lock()
	defer g.mu.Unlock()
	if d.outcome == allowed {
		d.expires = now.Add(AllowedTTL)
		g.refusedDecisions.Remove(key)
		g.allowedDecisions.Add(key, d)
		return
	}
	d.expires = now.Add(DeniedTTL)
	// A revoked permission or token takes the key out of the allowed, and with it the
	// renewal budget.
	g.allowedDecisions.Remove(key)
	g.refusedDecisions.Add(key, d)
}
