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
// API requests per scrape.
package metricsauth

import (
	"context"
	"crypto/sha256"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authenticationclient "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationclient "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
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
	// MaxCacheEntries bounds the decisions kept, so that callers sending ever new tokens
	// or paths cannot grow the operator's memory.
	MaxCacheEntries = 1024
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
	return newFilterProvider(clock.RealClock{})(config, httpClient)
}

// newFilterProvider is FilterProvider reading the time from clk, so that tests can let
// cached decisions expire without waiting.
func newFilterProvider(clk clock.PassiveClock) func(*rest.Config, *http.Client) (metricsserver.Filter, error) {
	return func(config *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
		authentication, err := authenticationclient.NewForConfigAndClient(config, httpClient)
		if err != nil {
			return nil, fmt.Errorf("create authentication.k8s.io/v1 client for the metrics filter: %w", err)
		}
		authorization, err := authorizationclient.NewForConfigAndClient(config, httpClient)
		if err != nil {
			return nil, fmt.Errorf("create authorization.k8s.io/v1 client for the metrics filter: %w", err)
		}
		// One cache for every handler the metrics server wraps: decisions are per path.
		g := &guard{
			tokenReviews:         authentication.TokenReviews(),
			subjectAccessReviews: authorization.SubjectAccessReviews(),
			clock:                clk,
			decisions:            map[decisionKey]decision{},
		}
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

// guard authenticates and authorizes requests and remembers its decisions.
type guard struct {
	tokenReviews         authenticationclient.TokenReviewInterface
	subjectAccessReviews authorizationclient.SubjectAccessReviewInterface
	clock                clock.PassiveClock

	// mu guards decisions: the metrics server serves requests concurrently.
	mu        sync.Mutex
	decisions map[decisionKey]decision
}

// serveHTTP answers r with 401, 403 or 500, or passes it to handler when allowed.
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
// A review that fails is not cached, so that the next request tries again.
func (g *guard) decide(ctx context.Context, token string, key decisionKey) (decision, error) {
	if d, ok := g.cached(key); ok {
		return d, nil
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

// cached returns the unexpired decision for key, if any.
func (g *guard) cached(key decisionKey) (decision, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	d, ok := g.decisions[key]
	if !ok {
		return decision{}, false
	}
	if !g.clock.Now().Before(d.expires) {
		delete(g.decisions, key)
		return decision{}, false
	}
	return d, true
}

// remember caches d for key, for AllowedTTL when allowed and DeniedTTL otherwise. When
// the cache is full it drops the expired decisions and, if that is not enough, all of
// them: the cost is a review per caller, once.
func (g *guard) remember(key decisionKey, d decision) {
	now := g.clock.Now()
	ttl := DeniedTTL
	if d.outcome == allowed {
		ttl = AllowedTTL
	}
	d.expires = now.Add(ttl)

	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.decisions[key]; !ok && len(g.decisions) >= MaxCacheEntries {
		for k, old := range g.decisions {
			if !now.Before(old.expires) {
				delete(g.decisions, k)
			}
		}
		if len(g.decisions) >= MaxCacheEntries {
			clear(g.decisions)
		}
	}
	g.decisions[key] = d
}
