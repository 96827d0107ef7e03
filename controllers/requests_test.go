package controllers

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

// operatorRequests counts every request the operator's manager sends the API server, by
// what it is about (verb, resource, namespace, name), as the API server itself parses
// a request's path (k8s.io/apiserver's RequestInfoFactory).
var operatorRequests = &requestCounter{
	parse: &request.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")},
}

// requestCounter is an http.RoundTripper wrapper (rest.Config.WrapTransport) that keeps
// what each request was about.
type requestCounter struct {
	parse *request.RequestInfoFactory
	// clock orders the requests' sending and answers: it ticks once at each.
	clock atomic.Int64
	mu    sync.Mutex
	seen  []operatorRequest
	// holds are requests held back before they are sent, by holdKey.
	holds map[string]<-chan struct{}
}

// operatorRequest is one request of the operator, and how the API server answered.
type operatorRequest struct {
	verb, resource, namespace, name string
	status                          int
	// sentAt and answeredAt are the counter's clock when the request was sent and when its
	// answer came: a request sent after another's answer has a larger sentAt.
	sentAt, answeredAt int64
}

// wrap is rest.Config.WrapTransport.
func (c *requestCounter) wrap(base http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		info, parseErr := c.parse.NewRequestInfo(r)
		if parseErr != nil || !info.IsResourceRequest {
			return base.RoundTrip(r)
		}
		resource := info.Resource
		if info.Subresource != "" {
			resource += "/" + info.Subresource
		}
		seen := operatorRequest{verb: info.Verb, resource: resource, namespace: info.Namespace, name: info.Name}
		if seen.name == "" && seen.verb == "create" {
			seen.name = createdName(r)
		}
		c.mu.Lock()
		hold := c.holds[holdKey(seen.verb, seen.resource, seen.namespace, seen.name)]
		c.mu.Unlock()
		if hold != nil {
			<-hold
		}
		seen.sentAt = c.clock.Add(1)
		response, err := base.RoundTrip(r)
		seen.answeredAt = c.clock.Add(1)
		if response != nil {
			seen.status = response.StatusCode
		}
		c.mu.Lock()
		c.seen = append(c.seen, seen)
		c.mu.Unlock()
		return response, err
	})
}

// holdKey names the requests hold holds back.
func holdKey(verb, resource, namespace, name string) string {
	return strings.Join([]string{verb, resource, namespace, name}, " ")
}

// hold holds back every request of verb on resource namespace/name until release is
// closed; the hold ends with the test.
func (c *requestCounter) hold(t *testing.T, verb, resource, namespace, name string, release <-chan struct{}) {
	key := holdKey(verb, resource, namespace, name)
	c.mu.Lock()
	if c.holds == nil {
		c.holds = map[string]<-chan struct{}{}
	}
	c.holds[key] = release
	c.mu.Unlock()
	t.Cleanup(func() {
		c.mu.Lock()
		delete(c.holds, key)
		c.mu.Unlock()
	})
}

// since returns the requests answered since mark.
func (c *requestCounter) since(mark int) []operatorRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.seen[mark:])
}

// createdName is the name in the body of a create, whose path names none; "" when the
// body cannot be read again or is not JSON.
func createdName(r *http.Request) string {
	if r.GetBody == nil {
		return ""
	}
	body, err := r.GetBody()
	if err != nil {
		return ""
	}
	defer func() { _ = body.Close() }()
	var object struct {
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if json.NewDecoder(body).Decode(&object) != nil {
		return ""
	}
	return object.Metadata.Name
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// mark is where a count starts: the number of requests seen so far.
func (c *requestCounter) mark() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.seen)
}

// about counts the requests since mark that are about the scheduler of namespace: those in
// its namespace and those naming its objects elsewhere (cluster-scoped bindings and the
// kube-system RoleBinding carry the namespace in their names), by "verb resource", and
// "verb resource 404" for those answered Not Found. Watches are left out: informers keep
// them open and renew them on their own schedule, whatever a scheduler does.
func (c *requestCounter) about(namespace string, mark int) requestCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	counts := requestCounts{}
	for _, seen := range c.seen[mark:] {
		if seen.verb == "watch" {
			continue
		}
		if seen.namespace != namespace && !strings.Contains(seen.name, ":"+namespace+":") && !strings.Contains(seen.name, "."+namespace+".") {
			continue
		}
		key := seen.verb + " " + seen.resource
		if seen.status == http.StatusNotFound {
			key += " 404"
		}
		counts[key]++
	}
	return counts
}

// requestCounts are requests by "verb resource".
type requestCounts map[string]int

// String lists the counts in order, one "verb resource: n" a line.
func (c requestCounts) String() string {
	keys := make([]string, 0, len(c))
	for key := range c {
		keys = append(keys, key)
	}
	sort.Strings(keys)
	var out strings.Builder
	for _, key := range keys {
		fmt.Fprintf(&out, "%s: %d\n", key, c[key])
	}
	return out.String()
}

// plus returns c with others added.
func (c requestCounts) plus(others ...requestCounts) requestCounts {
	sum := requestCounts{}
	for _, counts := range append([]requestCounts{c}, others...) {
		for key, count := range counts {
			sum[key] += count
		}
	}
	return sum
}

// total is the number of requests counted.
func (c requestCounts) total() int {
	n := 0
	for _, count := range c {
		n += count
	}
	return n
}

// over lists what exceeds budget: every key above its figure, and every key budget lacks.
func (c requestCounts) over(budget requestCounts) []string {
	var over []string
	for key, count := range c {
		if count > budget[key] {
			over = append(over, fmt.Sprintf("%s: %d, budget %d", key, count, budget[key]))
		}
	}
	sort.Strings(over)
	return over
}
