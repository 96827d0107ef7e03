package controllers

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// DefaultMetricsProbeInterval is how often the metrics of a load-aware scheduler are
// probed again when nothing else changes.
const DefaultMetricsProbeInterval = 5 * time.Minute

// MetricsProber probes the metrics of load-aware schedulers, at most once per interval
// for one address and set of nodes, so that the many reconciles a rollout causes do not
// each query Prometheus.
type MetricsProber struct {
	// Dial opens connections to the endpoints; nil for net.Dialer's.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Timeout bounds each query.
	Timeout time.Duration
	// Interval is how long a probe result stands.
	Interval time.Duration

	mu         sync.Mutex
	last       map[types.NamespacedName]probeRecord
	discovered map[types.NamespacedName]discoveryRecord
}

type probeRecord struct {
	at         time.Time
	address    string
	accessHash [32]byte // of token and CA: the token itself is not kept
	nodes      int
	staleAfter time.Duration
	result     metricsprobe.Result
}

// prometheusEndpoint is the Prometheus cr's scheduler reads: the address it gives, or the
// one discovery finds (looked for again once per interval), or nil when there is none.
func (r *SecondarySchedulerReconciler) prometheusEndpoint(ctx context.Context, cr *v1.SecondaryScheduler) (*promdiscovery.Endpoint, error) {
	if address := cr.Spec.Profile.LoadMetrics().Address; address != "" {
		return &promdiscovery.Endpoint{URL: address, Source: "spec.profile.metrics.address"}, nil
	}
	key := client.ObjectKeyFromObject(cr)
	p := r.MetricsProber
	p.mu.Lock()
	last, ok := p.discovered[key]
	p.mu.Unlock()
	// A miss is not remembered: a Prometheus installed meanwhile is found at the next look.
	if ok && last.endpoint != nil && time.Since(last.at) < p.Interval {
		return last.endpoint, nil
	}
	endpoint, forbidden, err := promdiscovery.Find(ctx, r.APIReader, r.discoveryNamespaces())
	if err != nil {
		return nil, fmt.Errorf("discover Prometheus: %w", err)
	}
	if endpoint == nil && len(forbidden) > 0 {
		return nil, &forbiddenError{places: forbidden}
	}
	p.mu.Lock()
	if p.discovered == nil {
		p.discovered = map[types.NamespacedName]discoveryRecord{}
	}
	p.discovered[key] = discoveryRecord{at: time.Now(), endpoint: endpoint}
	p.mu.Unlock()
	return endpoint, nil
}

// forbiddenError says that discovery found nothing where the operator may look, and
// where it may not.
type forbiddenError struct{ places []string }

func (e *forbiddenError) Error() string {
	return "the operator may not read " + strings.Join(e.places, ", ")
}

type discoveryRecord struct {
	at       time.Time
	endpoint *promdiscovery.Endpoint
}

// probe returns the metrics probe result for cr, probing again when the last result is
// older than the interval or was about another address or number of nodes.
func (p *MetricsProber) probe(ctx context.Context, key types.NamespacedName, address string, access *metricsAccess, nodes []string,
	staleAfter, interval time.Duration) metricsprobe.Result {
	accessHash := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%t", access.bearerToken(), access.caPEM, access.insecureSkipVerify)))
	p.mu.Lock()
	if p.last == nil {
		p.last = map[types.NamespacedName]probeRecord{}
	}
	last, ok := p.last[key]
	p.mu.Unlock()
	if ok && last.address == address && last.accessHash == accessHash && last.nodes == len(nodes) && last.staleAfter == staleAfter &&
		time.Since(last.at) < interval {
		return last.result
	}
	result := metricsprobe.Probe(ctx, p.httpClient(access), address, access.bearerToken(), nodes, staleAfter)
	p.mu.Lock()
	p.last[key] = probeRecord{at: time.Now(), address: address, accessHash: accessHash, nodes: len(nodes), staleAfter: staleAfter, result: result}
	p.mu.Unlock()
	return result
}

// httpClient queries with the TLS settings the scheduler has: the CA bundle it trusts
// (else the system roots), or no verification when the user turned it off.
func (p *MetricsProber) httpClient(access *metricsAccess) *http.Client {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: access.insecureSkipVerify} //nolint:gosec // the user's explicit choice, as the scheduler makes it
	if access.caPEM != nil {
		tlsConfig.RootCAs = x509.NewCertPool()
		tlsConfig.RootCAs.AppendCertsFromPEM(access.caPEM)
	}
	dial := p.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	// Probes are minutes apart: a connection kept open between them would only go stale.
	return &http.Client{Timeout: p.Timeout, Transport: &http.Transport{DialContext: dial, TLSClientConfig: tlsConfig, DisableKeepAlives: true}}
}

// intervalFor is how long a probe result stands for metrics that go stale after
// staleAfter: at most half of it, so that staleness is seen in time.
func (p *MetricsProber) intervalFor(staleAfter time.Duration) time.Duration {
	return min(p.Interval, staleAfter/2)
}

// refused reports whether the last probe for key was refused for its credentials.
func (p *MetricsProber) refused(key types.NamespacedName) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	last, ok := p.last[key]
	return ok && last.result.Reason == v1.ReasonUnauthorized
}

func (p *MetricsProber) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
	delete(p.discovered, key)
}

// setMetricsConditions probes the metrics cr's scheduler reads, reports them, and advances
// the failsafe of profile.metrics.whenUnavailable. Unusable metrics degrade the
// scheduler, since it would score every node alike, or by old data, without a word. It
// returns when to look again: zero when the scheduler reads no probed metrics.
func (r *SecondarySchedulerReconciler) setMetricsConditions(ctx context.Context, cr *v1.SecondaryScheduler, desired *gathered,
	status *v1.SecondarySchedulerStatus, conditions *conditionSetter) (time.Duration, error) {
	endpoint := desired.prometheus
	if endpoint == nil {
		meta.RemoveStatusCondition(&status.Conditions, string(v1.ConditionMetricsAvailable))
		status.Metrics = nil
		r.MetricsProber.forget(client.ObjectKeyFromObject(cr))
		return 0, nil
	}
	nodeList := &corev1.NodeList{}
	if err := r.List(ctx, nodeList); err != nil {
		return 0, fmt.Errorf("list nodes: %w", err)
	}
	nodes := make([]string, 0, len(nodeList.Items))
	for _, node := range nodeList.Items {
		nodes = append(nodes, node.Name)
	}
	// Nil for profile Custom, whose Trimaran args say where metrics come from: the
	// defaults of staleAfter apply, and it has no failsafe.
	metrics := cr.Spec.Profile.LoadMetrics()
	staleAfter := metrics.EffectiveStaleAfter()
	interval := r.MetricsProber.intervalFor(staleAfter)
	result := r.MetricsProber.probe(ctx, client.ObjectKeyFromObject(cr), endpoint.URL, desired.access, nodes, staleAfter, interval)
	previous := scoringStateOf(status.Metrics)
	status.Metrics = &v1.MetricsStatus{Address: metricsprobe.AddressForStatus(endpoint.URL), Source: endpoint.Source,
		NodesWithMetrics: int32(result.NodesWithMetrics), Nodes: int32(result.Nodes), Credentials: desired.access.credentials}
	if identity := desired.access.identity; identity != nil {
		status.Metrics.TokenRenewTime = &metav1.Time{Time: identity.Token.RenewAt.Truncate(time.Second)}
	}
	if ca := desired.access.trustedCA; ca != nil {
		status.Metrics.TrustedCA = fmt.Sprintf("ConfigMap %s/%s, key %s", cr.Namespace, ca.ConfigMap, ca.Key)
	}
	if result.Reason == v1.ReasonMetricsStale && !result.NewestSample.IsZero() {
		status.Metrics.NewestSample = &metav1.Time{Time: result.NewestSample.Truncate(time.Second)}
	}
	status.Metrics.RecordingRules = desired.recordingRules(cr)
	decision := decideScoring(metrics, previous, result, r.now())
	decision.state.store(status.Metrics)
	result = explainProbe(cr, desired, result)
	conditions.set(v1.ConditionMetricsAvailable, result.Available, result.Reason, result.Message)
	switch found := func() string {
		return strings.TrimSuffix(result.Message, ".") + "." + failsafeNote(metrics, decision.state)
	}; {
	case !result.Available && result.Reason == v1.ReasonMetricsStale:
		conditions.set(v1.ConditionDegraded, true, result.Reason, "the load-aware scheduler scores nodes by old data: "+found())
	case !result.Available:
		conditions.set(v1.ConditionDegraded, true, result.Reason,
			"the load-aware scheduler runs but cannot see node load, so it scores every node alike: "+found())
	case decision.state.scoring == v1.ScoringByRequests:
		conditions.set(v1.ConditionDegraded, true, v1.ReasonScoringByRequests, resumingMessage(metrics, decision.state))
	}
	if scoresByRequests := decision.state.scoring == v1.ScoringByRequests; scoresByRequests != desired.facts.ScoreByRequests {
		// The configuration just applied is the other one: render the new one at once.
		return time.Millisecond, nil
	}
	return minPositive(interval, decision.recheckAfter), nil
}

// announceScoring emits an Event when the failsafe switched how the scheduler scores
// nodes, once the status that says so is written. cr holds the status as it was read.
func (r *SecondarySchedulerReconciler) announceScoring(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus) {
	if status.Metrics == nil || cr.Status.Metrics == nil || status.Metrics.Scoring == cr.Status.Metrics.Scoring || cr.Status.Metrics.Scoring == "" {
		return
	}
	metrics := cr.Spec.Profile.LoadMetrics()
	if status.Metrics.Scoring == v1.ScoringByRequests {
		r.Recorder.Eventf(cr, nil, corev1.EventTypeWarning, string(v1.ReasonScoringByRequests), "Scoring",
			"the metrics have been unusable since %s: the scheduler now scores nodes by their requests (whenUnavailable: ScoreByRequests), "+
				"until they have been healthy for %s", status.Metrics.UnavailableSince.UTC().Format(time.RFC3339), metrics.EffectiveResumeAfter())
		return
	}
	reason := fmt.Sprintf("the metrics have been healthy for %s", metrics.EffectiveResumeAfter())
	if !metrics.ScoresByRequestsWhenUnavailable() {
		reason = "whenUnavailable is no longer ScoreByRequests"
	}
	r.Recorder.Eventf(cr, nil, corev1.EventTypeNormal, string(v1.ReasonLoadAwareScoringResumed), "Scoring",
		"%s: the scheduler scores nodes by their measured load again", reason)
}

// explainProbe adds to a failed probe what the operator knows of its cause: recording
// rules it could not install or did install, and the identity whose token was refused.
func explainProbe(cr *v1.SecondaryScheduler, desired *gathered, result metricsprobe.Result) metricsprobe.Result {
	if result.Available {
		return result
	}
	switch {
	case desired.recordingRulesPlan.note != "" && (result.Reason == v1.ReasonRecordingRuleMissing || result.Reason == v1.ReasonNodeLabelMismatch):
		result.Reason, result.Message = v1.ReasonRecordingRulesNotInstalled, result.Message+" "+desired.recordingRulesPlan.note
	case result.Reason == v1.ReasonRecordingRuleMissing && desired.recordingRules(cr) != "":
		result.Message += fmt.Sprintf(" The operator installed PrometheusRule %s; the series appear once the Prometheus Operator "+
			"has loaded it into Prometheus and it has been evaluated, usually within a few minutes.", desired.recordingRules(cr))
	case result.Reason == v1.ReasonUnauthorized && desired.access.identity != nil:
		result.Message += fmt.Sprintf(" The token is a bound token of ServiceAccount %s/%s: check that ClusterRole %s lets it read the metrics "+
			"(the proxy in front of Prometheus authorizes it with a SubjectAccessReview). A token that is no longer valid is replaced at the next probe.",
			cr.Namespace, render.MetricsServiceAccountName(cr), desired.access.identity.ClusterRole)
	}
	return result
}
