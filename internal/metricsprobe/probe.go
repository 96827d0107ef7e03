// Package metricsprobe asks a Prometheus endpoint, with the credentials a load-aware
// scheduler will use, for the series that scheduler-plugins' load-watcher reads, and says
// precisely what is wrong when they are not usable. A load-aware scheduler whose metrics
// are missing scores every node 0 without a word; the probe is how the operator notices.
package metricsprobe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"syscall"
	"time"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// Series are the recording rules load-watcher queries (over 5m, 10m and 15m windows),
// keyed by an instance label that must equal the Node name.
var Series = []string{"instance:node_cpu:ratio", "instance:node_memory_utilisation:ratio"}

// Result is what a probe found.
type Result struct {
	// Available is true when every node has every series.
	Available bool
	// Reason is the MetricsAvailable condition's reason.
	Reason v1.ConditionReason
	// Message says what was found, and what to fix.
	Message string
	// NodesWithMetrics counts the nodes that have every series, of Nodes.
	NodesWithMetrics, Nodes int
}

// Probe queries address (a Prometheus HTTP API root) for Series and compares their
// instance labels with nodeNames. token, when set, is sent as a bearer token. It follows
// no redirect, reads at most maxResponseBytes of an answer, and its messages summarize
// what went wrong without quoting the answer: the endpoint may be hostile, and messages
// end up in status conditions and Events. They name the address without its userinfo,
// query or fragment.
func Probe(ctx context.Context, client *http.Client, address, token string, nodeNames []string) Result {
	where := AddressForStatus(address)
	// A Prometheus API does not redirect queries; following one would send the query, and
	// with some clients the token, to wherever the answer says.
	noRedirects := *client
	noRedirects.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	covered := map[string]int{}
	var example string
	for _, series := range Series {
		instances, err := query(ctx, &noRedirects, address, token, series)
		if err != nil {
			var status *statusError
			if errors.As(err, &status) && (status.code == http.StatusUnauthorized || status.code == http.StatusForbidden) {
				return Result{Reason: v1.ReasonUnauthorized, Nodes: len(nodeNames), Message: fmt.Sprintf(
					"%s refused the scheduler's credentials (%s); give it a token of an identity allowed to query it", where, status)}
			}
			return Result{Reason: v1.ReasonPrometheusUnreachable, Nodes: len(nodeNames), Message: fmt.Sprintf(
				"querying %s for %s failed: %s; check the address and that the scheduler's namespace may reach it", where, series, summarize(err, client.Timeout))}
		}
		if len(instances) == 0 {
			return Result{Reason: v1.ReasonRecordingRuleMissing, Nodes: len(nodeNames), Message: fmt.Sprintf(
				"%s has no series %s, which load-watcher reads; add the node-exporter recording rules (kube-prometheus defines them) with instance set to the node name", where, series)}
		}
		// A node counts once per series, however many series carry its name.
		slices.Sort(instances)
		for _, instance := range slices.Compact(instances) {
			if slices.Contains(nodeNames, instance) {
				covered[instance]++
			} else if example == "" && isPlainInstance(instance) {
				example = instance
			}
		}
	}
	withMetrics := 0
	var lacking []string
	for _, node := range nodeNames {
		if covered[node] == len(Series) {
			withMetrics++
		} else {
			lacking = append(lacking, node)
		}
	}
	result := Result{NodesWithMetrics: withMetrics, Nodes: len(nodeNames)}
	if len(lacking) > 0 {
		result.Reason = v1.ReasonNodeLabelMismatch
		result.Message = fmt.Sprintf("%d of %d nodes have no %s series labelled with their name (for example %s)",
			len(lacking), len(nodeNames), strings.Join(Series, " or "), lacking[0])
		if example != "" {
			result.Message += fmt.Sprintf("; series carry instance=%q, which is no node name: relabel instance to the node name (from __meta_kubernetes_pod_node_name or __meta_kubernetes_node_name)", example)
		}
		return result
	}
	result.Available, result.Reason = true, v1.ReasonMetricsAvailable
	result.Message = fmt.Sprintf("%s serves %s for all %d nodes", where, strings.Join(Series, " and "), len(nodeNames))
	return result
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

// statusError is an answer other than 200 OK. It keeps no byte of the answer: its
// status text is Go's for the code, not the reason phrase the server sent.
type statusError struct {
	code int
	host string
}

func (e *statusError) Error() string {
	text := fmt.Sprintf("HTTP %d", e.code)
	if name := http.StatusText(e.code); name != "" {
		text += " " + name
	}
	text += " from " + e.host
	if e.code >= 300 && e.code < 400 {
		text += " (a redirect, which the probe does not follow: give the API's own address)"
	}
	return text
}

// answerError is a 200 OK whose body is no usable Prometheus API answer; its text is
// fixed, never taken from the body.
type answerError struct{ text string }

func (e *answerError) Error() string { return e.text }

var (
	errNotPrometheus = &answerError{"response is not a Prometheus API response"}
	errTooLarge      = &answerError{fmt.Sprintf("response is larger than %d MiB, which no Prometheus answer to these queries is", maxResponseBytes>>20)}
)

// prometheusErrorTypes are the errorType values of the Prometheus HTTP API: a message
// may name one of these, and no other text the endpoint sends.
var prometheusErrorTypes = []string{"bad_data", "canceled", "execution", "internal", "not_acceptable", "not_found", "timeout", "unavailable"}

// query runs an instant query and returns the instance label of each series.
func query(ctx context.Context, client *http.Client, address, token, series string) ([]string, error) {
	endpoint := strings.TrimRight(address, "/") + "/api/v1/query?query=" + url.QueryEscape(series)
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
		// An instant query of a series name always answers a vector.
		return nil, errNotPrometheus
	}
	instances := make([]string, 0, len(answer.Data.Result))
	for _, result := range answer.Data.Result {
		instances = append(instances, result.Metric["instance"])
	}
	return instances, nil
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
