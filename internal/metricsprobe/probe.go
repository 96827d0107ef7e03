// Package metricsprobe asks a Prometheus endpoint, with the credentials a load-aware
// scheduler will use, for the series that scheduler-plugins' load-watcher reads, and says
// precisely what is wrong when they are not usable. A load-aware scheduler whose metrics
// are missing scores every node 0 without a word; the probe is how the operator notices.
//
// Present is not enough: load-watcher averages the series over ranges of up to 15
// minutes, so a series that stopped being written (a recording rule or a scrape that
// stopped, leaving a staleness marker, or a source whose timestamps stopped advancing)
// still feeds the scheduler for that long, and scheduler-plugins' Trimaran keeps the
// last metrics it fetched forever once the queries fail. An instant query of the series
// name cannot tell such a series from a missing one, nor say how old its data is. So the
// probe asks, per series, for the timestamp of each instance's newest sample within
// those 15 minutes, and measures its age with Prometheus' own clock (the query's
// evaluation time): a node has metrics when every series has a sample for it no older
// than staleAfter.
package metricsprobe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// Series are the recording rules load-watcher queries, keyed by an instance label that
// must equal the Node name. Load-watcher reads them with range functions over 5m, 10m
// and 15m windows (avg_over_time(instance:node_cpu:ratio{instance="node"}[15m]) and
// the like), so a series that stopped being written still counts for the scheduler
// until its last sample leaves the 15-minute window: the probe reports it as stale,
// not missing, for as long.
var Series = []string{"instance:node_cpu:ratio", "instance:node_memory_utilisation:ratio"}

// DefaultStaleAfter is how old the newest sample of a node's series may be, when Probe
// is given no staleAfter: the default of profile.metrics.staleAfter, a few scrape and
// rule intervals.
const DefaultStaleAfter = v1.DefaultStaleAfter

// window is how far back the probe looks for a series' newest sample: the longest range
// load-watcher reads.
const window = v1.LoadWatcherWindow

// resolution is the step of the subquery that finds the series without a current
// sample (after a staleness marker, or beyond the 5-minute lookback of an instant
// query): their newest sample is the last one before a step, at most a step and the
// series' own interval older than the true last, and a series that lived only between
// two steps is not seen at all. Subquery steps are aligned to multiples of resolution.
const resolution = 30 * time.Second

// newestSampleQuery asks for the timestamp of each instance's newest sample of series
// within window: exact for the series an instant query sees, to within resolution for
// the others.
func newestSampleQuery(series string) string {
	return fmt.Sprintf("max by (instance) (timestamp(%[1]s) or max_over_time(timestamp(%[1]s)[%[2]ds:%[3]ds]))",
		series, int(window.Seconds()), int(resolution.Seconds()))
}

// Result is what a probe found.
type Result struct {
	// Available is true when every node has every series, with a sample no older than
	// staleAfter.
	Available bool
	// Reason is the MetricsAvailable condition's reason.
	Reason v1.ConditionReason
	// Message says what was found, and what to fix.
	Message string
	// NodesWithMetrics counts the nodes that have every series with a sample no older
	// than staleAfter, of Nodes.
	NodesWithMetrics, Nodes int
	// StaleNodes counts the nodes for which the newest sample of some series is older
	// than staleAfter, of Nodes.
	StaleNodes int
	// DataAge is the age of the oldest of the nodes' newest samples (the stalest series
	// of the stalest node, among those with a sample within the 15 minutes load-watcher
	// reads), by Prometheus' clock; 0 when no node has any. Set once every series answered.
	DataAge time.Duration
	// NewestSample is the timestamp of the sample DataAge is the age of, by Prometheus'
	// clock; zero when no node has any.
	NewestSample time.Time
}

// Probe queries address (a Prometheus HTTP API root) for the newest sample of each of
// Series and compares their instance labels with nodeNames; a node has metrics when
// every series has a sample for it no older than staleAfter (DefaultStaleAfter when
// staleAfter <= 0). token, when set, is sent as a bearer token. It follows no redirect,
// reads at most maxResponseBytes of an answer, and its messages summarize what went wrong
// without quoting the answer: the endpoint may be hostile, and messages end up in status
// conditions and Events. They name the address without its userinfo, query or fragment.
func Probe(ctx context.Context, client *http.Client, address, token string, nodeNames []string, staleAfter time.Duration) Result {
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	where := AddressForStatus(address)
	// A Prometheus API does not redirect queries; following one would send the query, and
	// with some clients the token, to wherever the answer says.
	noRedirects := *client
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	found := newCoverage(nodeNames, staleAfter)
	for _, series := range Series {
		samples, err := query(ctx, &noRedirects, address, token, newestSampleQuery(series))
		if err != nil {
			var status *statusError
			if errors.As(err, &status) && (status.code == http.StatusUnauthorized || status.code == http.StatusForbidden) {
				return Result{Reason: v1.ReasonUnauthorized, Nodes: len(nodeNames), Message: fmt.Sprintf(
					"%s refused the scheduler's credentials (%s); give it a token of an identity allowed to query it", where, status)}
			}
			return Result{Reason: v1.ReasonPrometheusUnreachable, Nodes: len(nodeNames), Message: fmt.Sprintf(
				"querying %s for %s failed: %s; check the address and that the scheduler's namespace may reach it", where, series, summarize(err, client.Timeout))}
		}
		if len(samples) == 0 {
			return Result{Reason: v1.ReasonRecordingRuleMissing, Nodes: len(nodeNames), Message: fmt.Sprintf(
				"%s has no series %s, which load-watcher reads; add the node-exporter recording rules (kube-prometheus defines them) with instance set to the node name", where, series)}
		}
		found.add(series, samples)
	}
	return found.result(nodeNames, where)
}

// nodeCoverage is what the series say about one node.
type nodeCoverage struct {
	// fresh counts the series whose newest sample for the node is no older than staleAfter.
	fresh int
	// stale is set when the newest sample of some series for the node is older.
	stale bool
}

// coverage gathers, series by series, what the answers say about the nodes.
type coverage struct {
	staleAfter time.Duration
	// names are the node names, each once, in the order given.
	names []string
	nodes map[string]*nodeCoverage
	// stalest is the oldest of the nodes' newest samples, of stalestSeries for
	// stalestNode; seen says whether any node has a sample.
	stalest                    newestSample
	stalestSeries, stalestNode string
	seen                       bool
	// foreignFresh is set when a sample no older than staleAfter carries an instance that
	// is no node name; example is the least such instance plain enough to quote.
	foreignFresh bool
	example      string
}

func newCoverage(nodeNames []string, staleAfter time.Duration) *coverage {
	c := &coverage{staleAfter: staleAfter, nodes: make(map[string]*nodeCoverage, len(nodeNames))}
	for _, name := range nodeNames {
		if _, seen := c.nodes[name]; !seen {
			c.nodes[name] = &nodeCoverage{}
			c.names = append(c.names, name)
		}
	}
	return c
}

// add takes in the newest sample of series for each instance.
func (c *coverage) add(series string, samples map[string]newestSample) {
	// Nodes in the order given, so that among equally old samples the first node is named.
	for _, name := range c.names {
		sample, ok := samples[name]
		if !ok {
			continue
		}
		if sample.age <= c.staleAfter {
			c.nodes[name].fresh++
		} else {
			c.nodes[name].stale = true
		}
		if !c.seen || sample.age > c.stalest.age {
			c.seen, c.stalest, c.stalestSeries, c.stalestNode = true, sample, series, name
		}
	}
	for instance, sample := range samples {
		if _, isNode := c.nodes[instance]; isNode || sample.age > c.staleAfter {
			continue
		}
		c.foreignFresh = true
		if isPlainInstance(instance) && (c.example == "" || instance < c.example) {
			c.example = instance
		}
	}
}

// result classifies what was found. Series that carry other instance labels while nodes
// lack fresh data come first: when the labels changed, the series keyed by node names
// went stale, and relabelling is the fix.
func (c *coverage) result(nodeNames []string, where string) Result {
	result := Result{Nodes: len(nodeNames)}
	if c.seen {
		result.DataAge, result.NewestSample = c.stalest.age, c.stalest.at
	}
	var lacking []string
	noData := 0
	for _, name := range nodeNames {
		switch node := c.nodes[name]; {
		case node.fresh == len(Series):
			result.NodesWithMetrics++
		case node.stale:
			result.StaleNodes++
			lacking = append(lacking, name)
		default:
			noData++
			lacking = append(lacking, name)
		}
	}
	switch {
	case len(lacking) > 0 && (c.foreignFresh || result.StaleNodes == 0):
		result.Reason = v1.ReasonNodeLabelMismatch
		fresh := ""
		if result.StaleNodes > 0 {
			fresh = "fresh "
		}
		result.Message = fmt.Sprintf("%d of %d nodes have no %s%s series labelled with their name (for example %s)",
			len(lacking), len(nodeNames), fresh, strings.Join(Series, " or "), lacking[0])
		const relabel = "relabel instance to the node name (from __meta_kubernetes_pod_node_name or __meta_kubernetes_node_name)"
		switch {
		case c.example != "":
			result.Message += fmt.Sprintf("; series carry instance=%q, which is no node name: %s", c.example, relabel)
		case c.foreignFresh:
			result.Message += "; series carry instance labels that are no node names: " + relabel
		}
	case result.StaleNodes > 0:
		result.Reason = v1.ReasonMetricsStale
		none := ""
		if noData > 0 {
			none = fmt.Sprintf(", %d no data", noData)
		}
		result.Message = fmt.Sprintf("the newest sample of %s for node %s in %s is %s old (%s), older than staleAfter %s; %d of %d nodes have stale data%s: "+
			"a recording rule or the scrape of node-exporter stopped",
			c.stalestSeries, c.stalestNode, where, wholeSeconds(c.stalest.age), c.stalest.at.UTC().Format(time.RFC3339), c.staleAfter,
			result.StaleNodes, len(nodeNames), none)
	default:
		result.Available, result.Reason = true, v1.ReasonMetricsAvailable
		result.Message = fmt.Sprintf("%s serves %s for all %d nodes", where, strings.Join(Series, " and "), len(nodeNames))
	}
	return result
}

// wholeSeconds is age rounded up to a second, so that a message never says that data
// older than staleAfter is as old as staleAfter.
func wholeSeconds(age time.Duration) time.Duration {
	whole := age.Truncate(time.Second)
	if whole < age && whole <= math.MaxInt64-time.Second {
		whole += time.Second
	}
	return whole
}

// maxResponseBytes bounds what the probe reads of an answer, and so the memory an
// endpoint can make it use: ample for the series of a 10,000-node cluster (a few
// hundred bytes each).
const maxResponseBytes = 8 << 20

// Bounds of what a message quotes of the address, and of the host in it.
const (
	maxAddressInMessage = 80
	maxHostInMessage    = 64
)

// statusError is an answer other than 200 OK. It keeps no byte of the answer, and its
// text names the kind of answer, not its status code: the address is the author's to
// choose, and status is no oracle for what hosts the author could not reach themselves
// answer (the extender probe says as little).
type statusError struct {
	code int
	host string
}

func (e *statusError) Error() string {
	switch {
	case e.code == http.StatusUnauthorized || e.code == http.StatusForbidden:
		return e.host + " refused the request's credentials"
	case e.code >= 300 && e.code < 400:
		return e.host + " answered with a redirect, which the probe does not follow: give the API's own address"
	case e.code == http.StatusNotFound:
		return e.host + " answered that the API's path does not exist: give the address of a Prometheus HTTP API"
	case e.code >= 400 && e.code < 500:
		return e.host + " refused the request"
	}
	return e.host + " answered with an error of its own"
}

// answerError is a 200 OK whose body is no usable Prometheus API answer; its text is
// fixed, never taken from the body.
type answerError struct{ text string }

func (e *answerError) Error() string { return e.text }

var (
	errNotPrometheus = &answerError{"response is not a Prometheus API response"}
	errNoTimestamps  = &answerError{"response holds values that are no timestamps"}
	errTooLarge      = &answerError{fmt.Sprintf("response is larger than %d MiB, which no Prometheus answer to these queries is", maxResponseBytes>>20)}
)

// prometheusErrorTypes are the errorType values of the Prometheus HTTP API: a message
// may name one of these, and no other text the endpoint sends.
var prometheusErrorTypes = []string{"bad_data", "canceled", "execution", "internal", "not_acceptable", "not_found", "timeout", "unavailable"}

// newestSample is the newest sample of a series for one instance.
type newestSample struct {
	// at is the sample's timestamp.
	at time.Time
	// age is how old it was when Prometheus evaluated the query: never negative.
	age time.Duration
}

// sampleValue is the value of a sample of an instant query's vector answer: its
// evaluation time and the sample's value, which newestSampleQuery makes a timestamp.
// Both are seconds since the epoch.
type sampleValue struct{ evaluatedAt, value float64 }

// UnmarshalJSON reads the API's [evaluation time, "value"] pair.
func (v *sampleValue) UnmarshalJSON(data []byte) error {
	var pair []json.RawMessage
	if err := json.Unmarshal(data, &pair); err != nil || len(pair) != 2 {
		return errNotPrometheus
	}
	var text string
	if json.Unmarshal(pair[0], &v.evaluatedAt) != nil || json.Unmarshal(pair[1], &text) != nil {
		return errNotPrometheus
	}
	value, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return errNotPrometheus
	}
	v.value = value
	return nil
}

// maxTimestampSeconds bounds the timestamps Prometheus can store (int64 milliseconds),
// with room for rounding: NaN, infinities and larger values are no timestamps.
const maxTimestampSeconds = 9e15

// isTimestamp reports whether seconds may be a Prometheus timestamp.
func isTimestamp(seconds float64) bool {
	return !math.IsNaN(seconds) && math.Abs(seconds) <= maxTimestampSeconds
}

// maxAgeSeconds is a little less than the longest time.Duration, about 292 years.
const maxAgeSeconds = 9e9

// newestSampleOf is the sample whose timestamp is value's, aged by Prometheus' clock, in
// whole milliseconds (the precision of Prometheus' timestamps, so that no float rounding
// shows). A sample after the evaluation time, which Prometheus never answers but a
// rounding may make, is of age 0; an age beyond what a Duration holds is its maximum.
func newestSampleOf(value sampleValue) newestSample {
	atMillis := int64(math.Round(value.value * 1000))
	sample := newestSample{at: time.UnixMilli(atMillis)}
	switch age := value.evaluatedAt - value.value; {
	case age >= maxAgeSeconds:
		sample.age = math.MaxInt64
	case age > 0:
		sample.age = max(0, time.Duration(int64(math.Round(value.evaluatedAt*1000))-atMillis)*time.Millisecond)
	}
	return sample
}

// query runs the instant query expr, which must answer one sample per instance whose
// value is a timestamp, and returns the newest sample of each instance.
func query(ctx context.Context, client *http.Client, address, token, expr string) (map[string]newestSample, error) {
	samples, err := queryVector(ctx, client, address, token, expr)
	if err != nil {
		return nil, err
	}
	newest := make(map[string]newestSample, len(samples))
	for _, sample := range samples {
		if !isTimestamp(sample.value.evaluatedAt) || !isTimestamp(sample.value.value) {
			return nil, errNoTimestamps
		}
		newestOfInstance := newestSampleOf(sample.value)
		// Another endpoint than Prometheus may answer an instance twice; its newest sample counts.
		if known, ok := newest[sample.instance]; !ok || newestOfInstance.at.After(known.at) {
			newest[sample.instance] = newestOfInstance
		}
	}
	return newest, nil
}

// instanceSample is a sample of an instant query's vector answer, with its instance label.
type instanceSample struct {
	instance string
	value    sampleValue
}

// queryVector runs the instant query expr, which must answer a vector, and returns its
// samples.
func queryVector(ctx context.Context, client *http.Client, address, token, expr string) ([]instanceSample, error) {
	endpoint := strings.TrimRight(address, "/") + "/api/v1/query?query=" + url.QueryEscape(expr)
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, endpoint, nil)
	if err != nil {
		return nil, &answerError{"the address is not a valid http or https URL"}
	}
	if token != "" {
		request.Header.Set("Authorization", "Bearer "+token)
	}
	response, err := client.Do(request)
	if err != nil {
		return nil, err
	}
	// Closed unread when not 200: nothing of an error body is ever used.
	defer func() { _ = response.Body.Close() }()
	if response.StatusCode != http.StatusOK {
		return nil, &statusError{code: response.StatusCode, host: usertext.Cut(request.URL.Host, maxHostInMessage)}
	}
	var answer struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Data      struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  *sampleValue      `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	body := &io.LimitedReader{R: response.Body, N: maxResponseBytes}
	if err := json.NewDecoder(body).Decode(&answer); err != nil {
		var timeout net.Error
		switch {
		case errors.As(err, &timeout) && timeout.Timeout():
			return nil, err
		case body.N == 0:
			return nil, errTooLarge
		}
		return nil, errNotPrometheus
	}
	switch {
	case answer.Status == "error" && slices.Contains(prometheusErrorTypes, answer.ErrorType):
		return nil, &answerError{"Prometheus refused the query (errorType " + answer.ErrorType + ")"}
	case answer.Status == "error":
		return nil, &answerError{"Prometheus refused the query"}
	case answer.Status != "success" || answer.Data.ResultType != "vector":
		// An instant query of an aggregation always answers a vector.
		return nil, errNotPrometheus
	}
	samples := make([]instanceSample, 0, len(answer.Data.Result))
	for _, result := range answer.Data.Result {
		if result.Value == nil {
			// A vector's sample always has a value.
			return nil, errNoTimestamps
		}
		samples = append(samples, instanceSample{instance: result.Metric["instance"], value: *result.Value})
	}
	return samples, nil
}

// NodeUse runs expr, an instant query answering one sample per node between 0 and 1 (a
// share of the node's CPU used) labelled instance with the node's name, as the
// descheduler's policy asks it, with the scheduler's credentials; it returns the share by
// node. Its error says in a few fixed words what went wrong, naming nothing the endpoint
// sent, for a status message.
func NodeUse(ctx context.Context, client *http.Client, address, token, expr string) (map[string]float64, error) {
	noRedirects := *client
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	samples, err := queryVector(ctx, &noRedirects, address, token, expr)
	if err != nil {
		return nil, fmt.Errorf("querying %s for the nodes' use failed: %s", AddressForStatus(address), summarize(err, client.Timeout))
	}
	use := make(map[string]float64, len(samples))
	for _, sample := range samples {
		if math.IsNaN(sample.value.value) || sample.value.value < 0 || sample.value.value > 1 {
			return nil, fmt.Errorf("%s answered a node's use outside 0 to 1, which the descheduler refuses too", AddressForStatus(address))
		}
		use[sample.instance] = sample.value.value
	}
	return use, nil
}

// summarize says in a few fixed words what err is, naming no text from the endpoint:
// a transport error's text may quote what the server sent (a malformed status line,
// say), so only its kind is told.
func summarize(err error, timeout time.Duration) string {
	var (
		status   *statusError
		answer   *answerError
		netError net.Error
		dnsError *net.DNSError
	)
	switch {
	case errors.As(err, &status):
		return status.Error()
	case errors.As(err, &answer):
		return answer.Error()
	case errors.Is(err, context.DeadlineExceeded) || errors.As(err, &netError) && netError.Timeout():
		if timeout > 0 {
			return fmt.Sprintf("timeout after %s", timeout)
		}
		return "timeout"
	case errors.Is(err, context.Canceled):
		return "the probe was canceled"
	}
	if text := summarizeTLS(err); text != "" {
		return text
	}
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return "no route to host"
	case errors.As(err, &dnsError) && dnsError.IsNotFound:
		return "host name not found"
	case errors.As(err, &dnsError):
		return "host name lookup failed"
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed before a complete answer"
	}
	return "no valid HTTP answer"
}

// summarizeTLS says what is wrong with the TLS handshake err reports, or nothing when err
// is about something else.
func summarizeTLS(err error) string {
	var (
		unknownCA    x509.UnknownAuthorityError
		wrongHost    x509.HostnameError
		invalidCert  x509.CertificateInvalidError
		notTLS       tls.RecordHeaderError
		verification *tls.CertificateVerificationError
		alert        tls.AlertError
	)
	switch {
	case errors.As(err, &unknownCA):
		return "TLS: certificate signed by unknown authority"
	case errors.As(err, &wrongHost):
		return "TLS: the certificate is not valid for the address's host name"
	case errors.As(err, &invalidCert) && invalidCert.Reason == x509.Expired:
		return "TLS: the certificate has expired or is not yet valid"
	case errors.As(err, &invalidCert) || errors.As(err, &verification):
		return "TLS: the certificate is not valid"
	// net/http reports this one as text of its own, which quotes nothing of the answer.
	case errors.As(err, &notTLS) || strings.Contains(err.Error(), "server gave HTTP response to HTTPS client"):
		return "TLS: the server does not speak TLS (an http address, perhaps)"
	case errors.As(err, &alert):
		return "TLS: the server refused the handshake"
	}
	return ""
}

// AddressForStatus is address without userinfo, query and fragment, where a token may
// hide, and of bounded length: what messages and status.metrics.address show of it.
func AddressForStatus(address string) string {
	parsed, err := url.Parse(address)
	if err != nil || parsed.Host == "" {
		return "the configured address"
	}
	parsed.User, parsed.RawQuery, parsed.ForceQuery, parsed.Fragment, parsed.RawFragment = nil, "", false, "", ""
	return usertext.Cut(parsed.String(), maxAddressInMessage)
}

// isPlainInstance reports whether instance looks like a host, host:port or IP address,
// and so may serve as an example in a message; other text is not quoted.
func isPlainInstance(instance string) bool {
	if instance == "" || len(instance) > maxHostInMessage {
		return false
	}
	for _, r := range instance {
		plain := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(".-_:[]", r)
		if !plain {
			return false
		}
	}
	return true
}
