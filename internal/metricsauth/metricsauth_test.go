package metricsauth

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"github.com/google/go-cmp/cmp"
	"golang.org/x/time/rate"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// FilterProvider must fit where main.go puts it.
var _ = metricsserver.Options{FilterProvider: FilterProvider}

const (
	goodToken  = "good-token"
	otherToken = "other-token"
	badToken   = "bad-token"
)

// unboundUser is a user the fake API server authenticates but allows nothing.
var unboundUser = authenticationv1.UserInfo{Username: "system:serviceaccount:monitoring:unbound"}

// scraper is the user goodToken and otherToken authenticate as.
var scraper = authenticationv1.UserInfo{
	Username: "system:serviceaccount:monitoring:prometheus",
	UID:      "4f1c3a2e-0000-4000-8000-000000000001",
	Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:monitoring", "system:authenticated"},
	Extra:    map[string]authenticationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
}

// scraperReview is the SubjectAccessReview the filter should send for scraper's verb on path.
func scraperReview(verb, path string) authorizationv1.SubjectAccessReviewSpec {
	return authorizationv1.SubjectAccessReviewSpec{
		User:                  scraper.Username,
		UID:                   scraper.UID,
		Groups:                scraper.Groups,
		Extra:                 map[string]authorizationv1.ExtraValue{"authentication.kubernetes.io/pod-name": {"prometheus-0"}},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}
}

// fakeAPIServer answers TokenReviews and SubjectAccessReviews as a kube-apiserver would,
// and records them.
type fakeAPIServer struct {
	t *testing.T

	mu sync.Mutex
	// users maps the tokens it authenticates to their users.
	users map[string]authenticationv1.UserInfo
	// allowed maps the "verb path" pairs it allows to every authenticated user.
	allowed map[string]bool
	// fail makes it answer every review with 500.
	fail bool

	tokenReviews  []authenticationv1.TokenReviewSpec
	accessReviews []authorizationv1.SubjectAccessReviewSpec
}

func newFakeAPIServer(t *testing.T) (*fakeAPIServer, *httptest.Server) {
	api := &fakeAPIServer{
		t:       t,
		users:   map[string]authenticationv1.UserInfo{goodToken: scraper, otherToken: scraper},
		allowed: map[string]bool{"get /metrics": true, "head /metrics": true},
	}
	server := httptest.NewServer(api)
	t.Cleanup(server.Close)
	return api, server
}

func (a *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.Method != http.MethodPost {
		a.t.Errorf("API server got %s %s, want POST", r.Method, r.URL.Path)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if a.fail {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		_ = json.NewEncoder(w).Encode(metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
			Message: "etcd is on holiday",
		})
		return
	}
	var answer any
	switch r.URL.Path {
	case "/apis/authentication.k8s.io/v1/tokenreviews":
		var review authenticationv1.TokenReview
		if !a.decode(r, &review) {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		a.tokenReviews = append(a.tokenReviews, review.Spec)
		user, ok := a.users[review.Spec.Token]
		review.Status = authenticationv1.TokenReviewStatus{Authenticated: ok, User: user}
		if !ok {
			review.Status.Error = "invalid bearer token"
		}
		answer = review
	case "/apis/authorization.k8s.io/v1/subjectaccessreviews":
		var review authorizationv1.SubjectAccessReview
		if !a.decode(r, &review) {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		a.accessReviews = append(a.accessReviews, review.Spec)
		if attributes := review.Spec.NonResourceAttributes; attributes != nil && review.Spec.User == scraper.Username {
			review.Status.Allowed = a.allowed[attributes.Verb+" "+attributes.Path]
		}
		answer = review
	default:
		a.t.Errorf("API server got POST %s, want a review", r.URL.Path)
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(answer)
}

// decode reads r's JSON body into into and reports whether that worked.
func (a *fakeAPIServer) decode(r *http.Request, into any) bool {
	if contentType := r.Header.Get("Content-Type"); contentType != "application/json" {
		a.t.Errorf("API server got a review of type %q, want JSON", contentType)
		return false
	}
	if err := json.NewDecoder(r.Body).Decode(into); err != nil {
		a.t.Errorf("API server could not decode a review: %v", err)
		return false
	}
	return true
}

// tokenReviewsOf returns how many TokenReviews of token the API server answered.
func (a *fakeAPIServer) tokenReviewsOf(token string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	n := 0
	for _, review := range a.tokenReviews {
		if review.Token == token {
			n++
		}
	}
	return n
}

// authenticate makes the API server authenticate token as user.
func (a *fakeAPIServer) authenticate(token string, user authenticationv1.UserInfo) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.users[token] = user
}

// reviews returns how many reviews of each kind the API server answered.
func (a *fakeAPIServer) reviews() (tokenReviews, accessReviews int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.tokenReviews), len(a.accessReviews)
}

func (a *fakeAPIServer) setFail(fail bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.fail = fail
}

func (a *fakeAPIServer) allow(verbAndPath string, allowed bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.allowed[verbAndPath] = allowed
}

// metricsHandler stands for the metrics handler the filter wraps, and records what it saw.
type metricsHandler struct {
	mu                   sync.Mutex
	calls                int
	sawAuthorization     bool
	lastMethod, lastPath string
}

func (h *metricsHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	h.calls++
	h.sawAuthorization = h.sawAuthorization || r.Header.Get("Authorization") != ""
	h.lastMethod, h.lastPath = r.Method, r.URL.Path
	h.mu.Unlock()
	_, _ = io.WriteString(w, "metrics")
}

// logBuffer collects what the filter logs, at every verbosity.
type logBuffer struct {
	mu    sync.Mutex
	lines []string
}

func (b *logBuffer) logger() logr.Logger {
	return funcr.New(func(prefix, args string) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.lines = append(b.lines, prefix+" "+args)
	}, funcr.Options{Verbosity: 10})
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.lines, "\n")
}

// harness is a filter in front of a metricsHandler, reviewing with a fakeAPIServer, on
// a fake clock.
type harness struct {
	t       *testing.T
	api     *fakeAPIServer
	clock   *clocktesting.FakeClock
	handler *metricsHandler
	logs    *logBuffer
	filter  http.Handler
}

// unlimitedReviews lets tests of the cache review every request, as the worst case a
// review budget allows would over a long enough time.
var unlimitedReviews = reviewLimit{perSecond: rate.Inf}

// newHarness returns a harness reviewing within the budget FilterProvider has.
func newHarness(t *testing.T) *harness {
	t.Helper()
	return newHarnessReviewingWithin(t, defaultReviewLimit)
}

func newHarnessReviewingWithin(t *testing.T, limit reviewLimit) *harness {
	t.Helper()
	api, server := newFakeAPIServer(t)
	h := &harness{
		t:       t,
		api:     api,
		clock:   clocktesting.NewFakeClock(time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)),
		handler: &metricsHandler{},
		logs:    &logBuffer{},
	}
	filter, err := newFilterProvider(h.clock, limit)(jsonConfig(server), server.Client())
	if err != nil {
		t.Fatal(err)
	}
	h.filter, err = filter(h.logs.logger(), h.handler)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, token := range []string{goodToken, otherToken, badToken} {
			if strings.Contains(h.logs.String(), token) {
				t.Errorf("the filter logged token %q:\n%s", token, h.logs)
			}
		}
	})
	return h
}

// do sends method path through the filter with the Authorization header authorization,
// if any, and returns the answer's status and body.
func (h *harness) do(method, path, authorization string) (int, string) {
	h.t.Helper()
	answer := h.send(method, path, authorization)
	return answer.Code, answer.Body.String()
}

// send sends method path through the filter with the Authorization header authorization,
// if any, and returns the whole answer.
func (h *harness) send(method, path, authorization string) *httptest.ResponseRecorder {
	h.t.Helper()
	request := httptest.NewRequestWithContext(h.t.Context(), method, path, nil)
	if authorization != "" {
		request.Header.Set("Authorization", authorization)
	}
	recorder := httptest.NewRecorder()
	h.filter.ServeHTTP(recorder, request)
	return recorder
}

// junkToken is the i-th of distinct tokens the API server does not authenticate, unless
// told to.
func junkToken(i int) string {
	return fmt.Sprintf("junk-token-%d", i)
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name          string
		method        string
		path          string
		authorization string
		failAPI       bool
		wantStatus    int
		wantBody      string
		// wantTokenReviews are the tokens the filter should have reviewed.
		wantTokenReviews []string
		// wantAccessReviews are the SubjectAccessReviews the filter should have sent.
		wantAccessReviews []authorizationv1.SubjectAccessReviewSpec
	}{
		{
			name: "no Authorization header", method: http.MethodGet, path: "/metrics",
			wantStatus: http.StatusUnauthorized, wantBody: "Unauthorized\n",
		},
		{
			name: "basic authentication", method: http.MethodGet, path: "/metrics", authorization: "Basic dXNlcjpwYXNz",
			wantStatus: http.StatusUnauthorized, wantBody: "Unauthorized\n",
		},
		{
			name: "token without scheme", method: http.MethodGet, path: "/metrics", authorization: goodToken,
			wantStatus: http.StatusUnauthorized, wantBody: "Unauthorized\n",
		},
		{
			name: "bearer without token", method: http.MethodGet, path: "/metrics", authorization: "Bearer ",
			wantStatus: http.StatusUnauthorized, wantBody: "Unauthorized\n",
		},
		{
			name: "bearer with two tokens", method: http.MethodGet, path: "/metrics", authorization: "Bearer " + goodToken + " " + otherToken,
			wantStatus: http.StatusUnauthorized, wantBody: "Unauthorized\n",
		},
		{
			name: "method too long to keep in a decision", method: strings.Repeat("GET", 100), path: "/metrics", authorization: "Bearer " + goodToken,
			wantStatus: http.StatusBadRequest, wantBody: "Bad Request: method or path too long\n",
		},
		{
			name: "path too long to keep in a decision", method: http.MethodGet, path: "/" + strings.Repeat("m", 2000), authorization: "Bearer " + goodToken,
			wantStatus: http.StatusBadRequest, wantBody: "Bad Request: method or path too long\n",
		},
		{
			name: "token not authenticated", method: http.MethodGet, path: "/metrics", authorization: "Bearer " + badToken,
			wantStatus: http.StatusUnauthorized, wantBody: "Unauthorized\n",
			wantTokenReviews: []string{badToken},
		},
		{
			name: "authenticated, not allowed on the path", method: http.MethodGet, path: "/debug/pprof/", authorization: "Bearer " + goodToken,
			wantStatus:        http.StatusForbidden,
			wantBody:          "Forbidden (user=system:serviceaccount:monitoring:prometheus, verb=get, path=/debug/pprof/)\n",
			wantTokenReviews:  []string{goodToken},
			wantAccessReviews: []authorizationv1.SubjectAccessReviewSpec{scraperReview("get", "/debug/pprof/")},
		},
		{
			name: "authenticated, not allowed the verb", method: http.MethodPost, path: "/metrics", authorization: "Bearer " + goodToken,
			wantStatus:        http.StatusForbidden,
			wantBody:          "Forbidden (user=system:serviceaccount:monitoring:prometheus, verb=post, path=/metrics)\n",
			wantTokenReviews:  []string{goodToken},
			wantAccessReviews: []authorizationv1.SubjectAccessReviewSpec{scraperReview("post", "/metrics")},
		},
		{
			name: "allowed", method: http.MethodGet, path: "/metrics", authorization: "Bearer " + goodToken,
			wantStatus: http.StatusOK, wantBody: "metrics",
			wantTokenReviews:  []string{goodToken},
			wantAccessReviews: []authorizationv1.SubjectAccessReviewSpec{scraperReview("get", "/metrics")},
		},
		{
			name: "allowed, scheme in lower case", method: http.MethodGet, path: "/metrics", authorization: "bearer " + goodToken,
			wantStatus: http.StatusOK, wantBody: "metrics",
			wantTokenReviews:  []string{goodToken},
			wantAccessReviews: []authorizationv1.SubjectAccessReviewSpec{scraperReview("get", "/metrics")},
		},
		{
			name: "allowed HEAD is reviewed as head", method: http.MethodHead, path: "/metrics", authorization: "Bearer " + goodToken,
			wantStatus: http.StatusOK, wantBody: "metrics",
			wantTokenReviews:  []string{goodToken},
			wantAccessReviews: []authorizationv1.SubjectAccessReviewSpec{scraperReview("head", "/metrics")},
		},
		{
			name: "API server fails", method: http.MethodGet, path: "/metrics", authorization: "Bearer " + goodToken, failAPI: true,
			wantStatus: http.StatusInternalServerError, wantBody: "Internal Server Error: could not authenticate or authorize the request\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.api.setFail(tt.failAPI)
			status, body := h.do(tt.method, tt.path, tt.authorization)
			if status != tt.wantStatus || body != tt.wantBody {
				t.Errorf("%s %s = %d %q, want %d %q", tt.method, tt.path, status, body, tt.wantStatus, tt.wantBody)
			}

			wantCalls := 0
			if tt.wantStatus == http.StatusOK {
				wantCalls = 1
			}
			if h.handler.calls != wantCalls {
				t.Errorf("wrapped handler ran %d times, want %d", h.handler.calls, wantCalls)
			}
			if wantCalls > 0 && (h.handler.lastMethod != tt.method || h.handler.lastPath != tt.path) {
				t.Errorf("wrapped handler got %s %s, want %s %s", h.handler.lastMethod, h.handler.lastPath, tt.method, tt.path)
			}
			if h.handler.sawAuthorization {
				t.Error("wrapped handler saw the Authorization header; the filter must remove it")
			}

			if tt.failAPI {
				// The fake records nothing while failing; what matters is that nothing
				// was cached, which TestAPIErrorIsNotCached checks.
				return
			}
			var gotTokens []string
			for _, review := range h.api.tokenReviews {
				if len(review.Audiences) != 0 {
					t.Errorf("TokenReview asked for audiences %q, want none", review.Audiences)
				}
				gotTokens = append(gotTokens, review.Token)
			}
			if diff := cmp.Diff(tt.wantTokenReviews, gotTokens); diff != "" {
				t.Errorf("reviewed tokens (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantAccessReviews, h.api.accessReviews); diff != "" {
				t.Errorf("SubjectAccessReviews (-want +got):\n%s", diff)
			}
		})
	}
}

// step is a request in a sequence: after the clock moves by advance, a GET of path with
// token, answered status, after which the API server has answered wantTokenReviews and
// wantAccessReviews reviews in all.
type step struct {
	advance                             time.Duration
	token, path                         string
	allowMetrics                        *bool
	wantStatus                          int
	wantTokenReviews, wantAccessReviews int
}

func TestCache(t *testing.T) {
	yes, no := true, false
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "allowed is reused for a minute, then reviewed again",
			steps: []step{
				{token: goodToken, path: "/metrics", wantStatus: http.StatusOK, wantTokenReviews: 1, wantAccessReviews: 1},
				{advance: 30 * time.Second, token: goodToken, path: "/metrics", wantStatus: http.StatusOK, wantTokenReviews: 1, wantAccessReviews: 1},
				{advance: 29 * time.Second, token: goodToken, path: "/metrics", wantStatus: http.StatusOK, wantTokenReviews: 1, wantAccessReviews: 1},
				{advance: time.Second, token: goodToken, path: "/metrics", wantStatus: http.StatusOK, wantTokenReviews: 2, wantAccessReviews: 2},
				{advance: 59 * time.Second, token: goodToken, path: "/metrics", wantStatus: http.StatusOK, wantTokenReviews: 2, wantAccessReviews: 2},
			},
		},
		{
			name: "a revoked permission is seen once the allowed decision expires",
			steps: []step{
				{token: goodToken, path: "/metrics", wantStatus: http.StatusOK, wantTokenReviews: 1, wantAccessReviews: 1},
				{advance: 30 * time.Second, allowMetrics: &no, token: goodToken, path: "/metrics", wantStatus: http.StatusOK, wantTokenReviews: 1, wantAccessReviews: 1},
				{advance: 30 * time.Second, token: goodToken, path: "/metrics", wantStatus: http.StatusForbidden, wantTokenReviews: 2, wantAccessReviews: 2},
			},
		},
		{
			name: "denied is reused for 10 seconds, so that a new permission takes effect soon",
			steps: []step{
				{allowMetrics: &no, token: goodToken, path: "/metrics", wantStatus: http.StatusForbidden, wantTokenReviews: 1, wantAccessReviews: 1},
				{advance: 5 * time.Second, allowMetrics: &yes, token: goodToken, path: "/metrics", wantStatus: http.StatusForbidden, wantTokenReviews: 1, wantAccessReviews: 1},
				{advance: 4 * time.Second, token: goodToken, path: "/metrics", wantStatus: http.StatusForbidden, wantTokenReviews: 1, wantAccessReviews: 1},
				{advance: time.Second, token: goodToken, path: "/metrics", wantStatus: http.StatusOK, wantTokenReviews: 2, wantAccessReviews: 2},
			},
		},
		{
			name: "unauthenticated is reused for 10 seconds",
			steps: []step{
				{token: badToken, path: "/metrics", wantStatus: http.StatusUnauthorized, wantTokenReviews: 1},
				{advance: 9 * time.Second, token: badToken, path: "/metrics", wantStatus: http.StatusUnauthorized, wantTokenReviews: 1},
				{advance: time.Second, token: badToken, path: "/metrics", wantStatus: http.StatusUnauthorized, wantTokenReviews: 2},
			},
		},
		{
			name: "decisions are per token and per path",
			steps: []step{
				{token: goodToken, path: "/metrics", wantStatus: http.StatusOK, wantTokenReviews: 1, wantAccessReviews: 1},
				{token: otherToken, path: "/metrics", wantStatus: http.StatusOK, wantTokenReviews: 2, wantAccessReviews: 2},
				{token: goodToken, path: "/other", wantStatus: http.StatusForbidden, wantTokenReviews: 3, wantAccessReviews: 3},
				{token: goodToken, path: "/metrics", wantStatus: http.StatusOK, wantTokenReviews: 3, wantAccessReviews: 3},
				{token: goodToken, path: "/other", wantStatus: http.StatusForbidden, wantTokenReviews: 3, wantAccessReviews: 3},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			for i, s := range tt.steps {
				h.clock.Step(s.advance)
				if s.allowMetrics != nil {
					h.api.allow("get /metrics", *s.allowMetrics)
				}
				status, body := h.do(http.MethodGet, s.path, "Bearer "+s.token)
				if status != s.wantStatus {
					t.Errorf("step %d: GET %s = %d %q, want %d", i, s.path, status, body, s.wantStatus)
				}
				tokenReviews, accessReviews := h.api.reviews()
				if tokenReviews != s.wantTokenReviews || accessReviews != s.wantAccessReviews {
					t.Errorf("step %d: API server answered %d TokenReviews and %d SubjectAccessReviews, want %d and %d",
						i, tokenReviews, accessReviews, s.wantTokenReviews, s.wantAccessReviews)
				}
			}
		})
	}
}

func TestAPIErrorIsNotCached(t *testing.T) {
	h := newHarness(t)
	h.api.setFail(true)
	if status, body := h.do(http.MethodGet, "/metrics", "Bearer "+goodToken); status != http.StatusInternalServerError {
		t.Fatalf("GET /metrics while the API server fails = %d %q, want 500", status, body)
	}
	if !strings.Contains(h.logs.String(), "etcd is on holiday") {
		t.Errorf("the filter did not log the API server's error; logs:\n%s", h.logs)
	}
	h.api.setFail(false)
	if status, body := h.do(http.MethodGet, "/metrics", "Bearer "+goodToken); status != http.StatusOK {
		t.Fatalf("GET /metrics once the API server works = %d %q, want 200", status, body)
	}
	if tokenReviews, accessReviews := h.api.reviews(); tokenReviews != 1 || accessReviews != 1 {
		t.Errorf("API server answered %d TokenReviews and %d SubjectAccessReviews after it recovered, want 1 and 1", tokenReviews, accessReviews)
	}
}

func TestAuthorizationErrorIsNotCached(t *testing.T) {
	h := newHarness(t)
	// Fail only SubjectAccessReviews, after the token is authenticated.
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/subjectaccessreviews") {
			http.Error(w, "no", http.StatusServiceUnavailable)
			return
		}
		h.api.ServeHTTP(w, r)
	}))
	t.Cleanup(server.Close)
	filter, err := newFilterProvider(h.clock, defaultReviewLimit)(jsonConfig(server), server.Client())
	if err != nil {
		t.Fatal(err)
	}
	h.filter, err = filter(h.logs.logger(), h.handler)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if status, body := h.do(http.MethodGet, "/metrics", "Bearer "+goodToken); status != http.StatusInternalServerError {
			t.Fatalf("GET /metrics while SubjectAccessReviews fail = %d %q, want 500", status, body)
		}
	}
	if tokenReviews, _ := h.api.reviews(); tokenReviews != 2 {
		t.Errorf("API server answered %d TokenReviews for two requests, want 2: a failed decision must not be cached", tokenReviews)
	}
	if h.handler.calls != 0 {
		t.Errorf("wrapped handler ran %d times, want 0", h.handler.calls)
	}
}

func TestAllowedDecisionSurvivesRefusals(t *testing.T) {
	tests := []struct {
		name  string
		limit reviewLimit
		// refusedUser, when set, is the user the API server authenticates the
		// refused tokens as; unset, it authenticates none of them.
		refusedUser *authenticationv1.UserInfo
		// wantAllReviewed says that every refused token is reviewed, and so cached: the
		// cache, not the review budget, is what keeps the allowed decision.
		wantAllReviewed bool
	}{
		{name: "tokens the API server does not authenticate, every one reviewed", limit: unlimitedReviews, wantAllReviewed: true},
		{name: "tokens of a user allowed nothing, every one reviewed", limit: unlimitedReviews, refusedUser: &unboundUser, wantAllReviewed: true},
		{name: "tokens the API server does not authenticate, the review budget spent by them", limit: defaultReviewLimit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarnessReviewingWithin(t, tt.limit)
			if status, body := h.do(http.MethodGet, "/metrics", "Bearer "+goodToken); status != http.StatusOK {
				t.Fatalf("first scrape = %d %q, want 200", status, body)
			}
			// Far more refusals than either cache holds, within DeniedTTL and AllowedTTL.
			refusals := 4 * max(MaxRefusedDecisions, MaxAllowedDecisions)
			for i := range refusals {
				if tt.refusedUser != nil {
					h.api.authenticate(junkToken(i), *tt.refusedUser)
				}
				if status, body := h.do(http.MethodGet, "/metrics", "Bearer "+junkToken(i)); status == http.StatusOK {
					t.Fatalf("refused token %d = %d %q", i, status, body)
				}
			}
			if tokenReviews, _ := h.api.reviews(); tt.wantAllReviewed && tokenReviews != 1+refusals {
				t.Fatalf("API server answered %d TokenReviews, want %d: every refused token should have been reviewed", tokenReviews, 1+refusals)
			}
			h.clock.Step(AllowedTTL - time.Second)
			if status, body := h.do(http.MethodGet, "/metrics", "Bearer "+goodToken); status != http.StatusOK {
				t.Errorf("scrape after %d refusals = %d %q, want 200", refusals, status, body)
			}
			if reviews := h.api.tokenReviewsOf(goodToken); reviews != 1 {
				t.Errorf("the scraper's token was reviewed %d times, want 1: its allowed decision should have been served from the cache", reviews)
			}
		})
	}
}

func TestReviewBudget(t *testing.T) {
	// burst is as many requests as the budget holds, and more, each with a token no
	// decision covers.
	const burst = ReviewBurst + 40
	tests := []struct {
		name string
		// before runs on a fresh harness, then the clock moves by advance, then the burst.
		before            func(h *harness)
		advance           time.Duration
		wantReviewsBefore int
		// wantReviewsInBurst is how many of the burst's requests the API server reviews;
		// every other one is answered 429.
		wantReviewsInBurst int
	}{
		{name: "a burst is reviewed up to ReviewBurst", wantReviewsInBurst: ReviewBurst},
		{
			name: "a spent budget refills at ReviewsPerSecond",
			before: func(h *harness) {
				for i := range ReviewBurst {
					h.do(http.MethodGet, "/metrics", "Bearer "+junkToken(burst+i))
				}
			},
			advance:            time.Second,
			wantReviewsBefore:  ReviewBurst,
			wantReviewsInBurst: ReviewsPerSecond,
		},
		{
			name: "requests without a bearer token are refused without a review, spending no budget",
			before: func(h *harness) {
				for range burst {
					for _, authorization := range []string{"", "Basic dXNlcjpwYXNz", "Bearer ", goodToken, "Bearer a b"} {
						if status, body := h.do(http.MethodGet, "/metrics", authorization); status != http.StatusUnauthorized {
							h.t.Errorf("Authorization %q = %d %q, want 401", authorization, status, body)
						}
					}
				}
			},
			wantReviewsInBurst: ReviewBurst,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.before != nil {
				tt.before(h)
			}
			h.clock.Step(tt.advance)
			tokenReviews, accessReviews := h.api.reviews()
			if tokenReviews != tt.wantReviewsBefore || accessReviews != 0 {
				t.Fatalf("before the burst the API server answered %d TokenReviews and %d SubjectAccessReviews, want %d and 0",
					tokenReviews, accessReviews, tt.wantReviewsBefore)
			}

			tooMany := 0
			for i := range burst {
				answer := h.send(http.MethodGet, "/metrics", "Bearer "+junkToken(i))
				switch answer.Code {
				case http.StatusUnauthorized:
				case http.StatusTooManyRequests:
					tooMany++
					// At five reviews a second, the next is to spare within a second.
					if retryAfter := answer.Header().Get("Retry-After"); retryAfter != "1" {
						t.Errorf("request %d answered 429 with Retry-After %q, want 1", i, retryAfter)
					}
				default:
					t.Errorf("request %d = %d %q, want 401 or 429", i, answer.Code, answer.Body)
				}
			}
			afterBurst, _ := h.api.reviews()
			if got := afterBurst - tokenReviews; got != tt.wantReviewsInBurst {
				t.Errorf("API server answered %d TokenReviews for %d requests, want %d", got, burst, tt.wantReviewsInBurst)
			}
			if want := burst - tt.wantReviewsInBurst; tooMany != want {
				t.Errorf("%d requests answered 429, want %d", tooMany, want)
			}

			// A refusal cached in the burst is served with the budget spent.
			if status, body := h.do(http.MethodGet, "/metrics", "Bearer "+junkToken(0)); status != http.StatusUnauthorized {
				t.Errorf("a refused token again, budget spent = %d %q, want 401 from the cache", status, body)
			}
			if got, _ := h.api.reviews(); got != afterBurst {
				t.Errorf("a refused token again cost %d TokenReviews, want none", got-afterBurst)
			}
		})
	}
}

func TestRenewalIsNotThrottledByJunk(t *testing.T) {
	h := newHarness(t)
	if status, body := h.do(http.MethodGet, "/metrics", "Bearer "+goodToken); status != http.StatusOK {
		t.Fatalf("first scrape = %d %q, want 200", status, body)
	}
	h.clock.Step(AllowedTTL)
	// Junk keeps the budget of new reviews spent.
	for i := range 10 * ReviewBurst {
		h.do(http.MethodGet, "/metrics", "Bearer "+junkToken(i))
	}
	if status, body := h.do(http.MethodGet, "/metrics", "Bearer "+goodToken); status != http.StatusOK {
		t.Errorf("scrape once its allowed decision expired, junk having spent the budget of new reviews = %d %q, want 200", status, body)
	}
	if reviews := h.api.tokenReviewsOf(goodToken); reviews != 2 {
		t.Errorf("the scraper's token was reviewed %d times, want 2: its expired decision renewed", reviews)
	}
	// A token never allowed before is new, however much it looks like the scraper's.
	if status, body := h.do(http.MethodGet, "/metrics", "Bearer "+otherToken); status != http.StatusTooManyRequests {
		t.Errorf("a new token of the scraper, budget spent = %d %q, want 429", status, body)
	}

	// A renewal refused takes the key out of the allowed: its next review is new again.
	h.api.allow("get /metrics", false)
	h.clock.Step(AllowedTTL)
	if status, body := h.do(http.MethodGet, "/metrics", "Bearer "+goodToken); status != http.StatusForbidden {
		t.Errorf("scrape once its permission was revoked = %d %q, want 403", status, body)
	}
	h.api.allow("get /metrics", true)
	h.clock.Step(DeniedTTL)
	for i := range 10 * ReviewBurst {
		h.do(http.MethodGet, "/metrics", "Bearer "+junkToken(i))
	}
	if status, body := h.do(http.MethodGet, "/metrics", "Bearer "+goodToken); status != http.StatusTooManyRequests {
		t.Errorf("scrape of a token last refused, budget spent = %d %q, want 429: it is no renewal", status, body)
	}
}

func TestCacheIsBounded(t *testing.T) {
	key := func(i int) decisionKey { return decisionKey{verb: "get", path: fmt.Sprintf("/metrics/%d", i)} }
	tests := []struct {
		name string
		// remember is the outcome of each decision remembered, of key(0), key(1) and so on.
		remember []outcome
		// touch are keys looked up, which makes them recently used, once the first
		// MaxAllowedDecisions decisions are remembered.
		touch []int
		// wantAllowed and wantRefused are how many decisions each cache holds after.
		wantAllowed, wantRefused int
		// wantCached and wantGone are keys whose decision is still cached, or not.
		wantCached, wantGone []int
	}{
		{
			name:        "refusals beyond their bound evict the oldest refusals, never an allowed decision",
			remember:    append([]outcome{allowed}, outcomes(forbidden, 2*MaxRefusedDecisions)...),
			wantAllowed: 1, wantRefused: MaxRefusedDecisions,
			wantCached: []int{0, 2 * MaxRefusedDecisions}, wantGone: []int{1, MaxRefusedDecisions},
		},
		{
			name:        "unauthenticated refusals alike",
			remember:    append([]outcome{allowed}, outcomes(unauthenticated, 2*MaxRefusedDecisions)...),
			wantAllowed: 1, wantRefused: MaxRefusedDecisions,
			wantCached: []int{0, 2 * MaxRefusedDecisions}, wantGone: []int{1},
		},
		{
			name:        "allowed decisions beyond their bound evict the least recently used",
			remember:    outcomes(allowed, MaxAllowedDecisions+1),
			wantAllowed: MaxAllowedDecisions,
			wantCached:  []int{1, MaxAllowedDecisions}, wantGone: []int{0},
		},
		{
			name:        "an allowed decision in use is kept",
			remember:    outcomes(allowed, MaxAllowedDecisions+1),
			touch:       []int{0},
			wantAllowed: MaxAllowedDecisions,
			wantCached:  []int{0, MaxAllowedDecisions}, wantGone: []int{1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGuard(clocktesting.NewFakeClock(time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)), defaultReviewLimit)
			for i, o := range tt.remember {
				g.remember(key(i), decision{outcome: o})
				if i == MaxAllowedDecisions-1 {
					for _, k := range tt.touch {
						g.cached(key(k))
					}
				}
			}
			if allowed, refused := g.allowedDecisions.Len(), g.refusedDecisions.Len(); allowed != tt.wantAllowed || refused != tt.wantRefused {
				t.Errorf("caches hold %d allowed and %d refused decisions, want %d and %d", allowed, refused, tt.wantAllowed, tt.wantRefused)
			}
			for _, k := range tt.wantCached {
				if _, ok, _ := g.cached(key(k)); !ok {
					t.Errorf("decision %d is not cached, want it kept", k)
				}
			}
			for _, k := range tt.wantGone {
				if _, ok, _ := g.cached(key(k)); ok {
					t.Errorf("decision %d is cached, want it evicted", k)
				}
			}
		})
	}
}

func TestKeyIsInOneCache(t *testing.T) {
	g := newGuard(clocktesting.NewFakeClock(time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)), defaultReviewLimit)
	key := decisionKey{verb: "get", path: "/metrics"}
	for _, o := range []outcome{allowed, forbidden, allowed, unauthenticated} {
		g.remember(key, decision{outcome: o})
		d, ok, _ := g.cached(key)
		if !ok || d.outcome != o {
			t.Errorf("after remembering %v, cached %v %v, want %v", o, d.outcome, ok, o)
		}
		if allowed, refused := g.allowedDecisions.Len(), g.refusedDecisions.Len(); allowed+refused != 1 {
			t.Errorf("after remembering %v, caches hold %d allowed and %d refused decisions, want 1 in all", o, allowed, refused)
		}
	}
}

// outcomes returns n times o.
func outcomes(o outcome, n int) []outcome {
	all := make([]outcome, n)
	for i := range all {
		all[i] = o
	}
	return all
}

func TestConcurrentRequests(t *testing.T) {
	// Concurrent requests of one key may each miss the cache and be reviewed, more than
	// ReviewBurst of them; what is checked here is the cache, not the budget.
	h := newHarnessReviewingWithin(t, unlimitedReviews)
	var wg sync.WaitGroup
	statuses := make([]int, 64)
	for i := range statuses {
		wg.Go(func() {
			token, path := goodToken, "/metrics"
			if i%2 == 1 {
				token = otherToken
			}
			if i%4 == 3 {
				path = "/other"
			}
			request := httptest.NewRequestWithContext(t.Context(), http.MethodGet, path, nil)
			request.Header.Set("Authorization", "Bearer "+token)
			recorder := httptest.NewRecorder()
			h.filter.ServeHTTP(recorder, request)
			statuses[i] = recorder.Code
		})
	}
	wg.Wait()
	for i, status := range statuses {
		want := http.StatusOK
		if i%4 == 3 {
			want = http.StatusForbidden
		}
		if status != want {
			t.Errorf("request %d = %d, want %d", i, status, want)
		}
	}
	// Every request after the first of its kind may reuse a decision, or race it; never
	// more reviews than requests.
	if tokenReviews, accessReviews := h.api.reviews(); tokenReviews > len(statuses) || accessReviews > len(statuses) || tokenReviews < 3 {
		t.Errorf("API server answered %d TokenReviews and %d SubjectAccessReviews for %d requests", tokenReviews, accessReviews, len(statuses))
	}
}

func TestFilterProvider(t *testing.T) {
	api, server := newFakeAPIServer(t)
	filter, err := FilterProvider(jsonConfig(server), server.Client())
	if err != nil {
		t.Fatal(err)
	}
	handler := &metricsHandler{}
	guarded, err := filter(logr.Discard(), handler)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		request := httptest.NewRequestWithContext(t.Context(), http.MethodGet, "/metrics", nil)
		request.Header.Set("Authorization", "Bearer "+goodToken)
		recorder := httptest.NewRecorder()
		guarded.ServeHTTP(recorder, request)
		if recorder.Code != http.StatusOK {
			t.Fatalf("GET /metrics = %d %q, want 200", recorder.Code, recorder.Body)
		}
	}
	if tokenReviews, accessReviews := api.reviews(); tokenReviews != 1 || accessReviews != 1 {
		t.Errorf("API server answered %d TokenReviews and %d SubjectAccessReviews for three scrapes, want 1 and 1", tokenReviews, accessReviews)
	}
	if handler.calls != 3 {
		t.Errorf("wrapped handler ran %d times, want 3", handler.calls)
	}
}

// jsonConfig reaches server in JSON: client-go sends built-in types as protobuf unless
// told otherwise, and the fake API server speaks only JSON. The envtest test covers
// client-go's defaults against a real API server. Client-side rate limiting is off so
// that TestConcurrentRequests does not wait for it.
func jsonConfig(server *httptest.Server) *rest.Config {
	return &rest.Config{Host: server.URL, ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeJSON}, QPS: -1}
}
