package controllers

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/failsafe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// DefaultMetricsProbeInterval is how often the metrics of a load-aware scheduler are
// probed again when nothing else changes.
const DefaultMetricsProbeInterval = 5 * time.Minute

// MetricsProber probes the metrics of load-aware schedulers, away from the reconcile: a
// reconcile reads the last result and, when it is older than the interval or was about
// another address, credentials or set of nodes, starts a probe in the background, whose
// result comes back as an event that reconciles the resource again. A Prometheus that
// answers slowly (each query may take up to Timeout) so holds up no reconcile, of its
// resource or of any other.
type MetricsProber struct {
	// Dial opens connections to the endpoints; nil for net.Dialer's.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Timeout bounds each query.
	Timeout time.Duration
	// Interval is how long a probe result stands.
	Interval time.Duration

	mu         sync.Mutex
	last       map[types.NamespacedName]probeRecord
	running    map[types.NamespacedName]probeRequest
	discovered map[discoveryKey]discoveryRecord
	// done carries the SecondarySchedulers whose probe finished.
	done chan event.GenericEvent
}

// probeRequest is what a probe asks: the same request gets the same answer until it is
// older than the interval.
type probeRequest struct {
	address    string
	accessHash [32]byte // of token and CA: the token itself is not kept
	nodes      int
	staleAfter time.Duration
}

// sameSource reports whether r and other ask the same Prometheus, with the same
// credentials, for data of the same age.
func (r probeRequest) sameSource(other probeRequest) bool {
	return r.address == other.address && r.accessHash == other.accessHash && r.staleAfter == other.staleAfter
}

type probeRecord struct {
	at      time.Time
	request probeRequest
	result  metricsprobe.Result
}

// Source is where the prober reports finished probes, for the controller to watch.
func (p *MetricsProber) Source() source.Source {
	return source.Channel(p.doneChannel(), &handler.EnqueueRequestForObject{})
}

func (p *MetricsProber) doneChannel() chan event.GenericEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done == nil {
		p.done = make(chan event.GenericEvent, 1024)
	}
	return p.done
}

// prometheusEndpoint is the Prometheus cr's scheduler reads: the address it gives, or the
// one discovery finds (looked for again once per interval, after a miss within
// discoveryMissTTL), or nil when there is none.
func (r *SecondarySchedulerReconciler) prometheusEndpoint(ctx context.Context, cr *v1.SecondaryScheduler) (*promdiscovery.Endpoint, error) {
	if address := cr.Spec.Profile.LoadMetrics().Address; address != "" {
		return &promdiscovery.Endpoint{URL: address, Source: "spec.profile.metrics.address"}, nil
	}
	return r.MetricsProber.discover(discoveryKey{object: client.ObjectKeyFromObject(cr)}, func() (*promdiscovery.Endpoint, error) {
		endpoint, forbidden, err := promdiscovery.Find(ctx, r.APIReader, r.discoveryNamespaces())
		if err != nil {
			return nil, fmt.Errorf("discover Prometheus: %w", err)
		}
		if endpoint == nil && len(forbidden) > 0 {
			return nil, &forbiddenError{places: forbidden}
		}
		return endpoint, nil
	})
}

// discoveryMissTTL is how long discovery that found nothing is not repeated: each
// discovery lists Services and Prometheus objects in every namespace searched, which a
// reconcile per Deployment status change would repeat for nothing; a Prometheus
// installed meanwhile is found within it, or within the probe interval when shorter.
const discoveryMissTTL = 30 * time.Second

// discoveryKey names what was discovered for a SecondaryScheduler: the Prometheus it
// reads, or the Prometheus Operator's Prometheus its recording rules are for.
type discoveryKey struct {
	object   types.NamespacedName
	operated bool
}

// discover returns what find finds for key, remembered for the probe interval, and a
// miss for discoveryMissTTL at most. Errors are not remembered.
func (p *MetricsProber) discover(key discoveryKey, find func() (*promdiscovery.Endpoint, error)) (*promdiscovery.Endpoint, error) {
	p.mu.Lock()
	last, ok := p.discovered[key]
	p.mu.Unlock()
	ttl := p.Interval
	if ok && last.endpoint == nil {
		ttl = min(ttl, discoveryMissTTL)
	}
	if ok && time.Since(last.at) < ttl {
		return last.endpoint, nil
	}
	endpoint, err := find()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.discovered == nil {
		p.discovered = map[discoveryKey]discoveryRecord{}
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

// probe returns the last probe result for key when it answers this very request, and
// starts a probe in the background when there is none or it is older than interval. ok
// is false when no result answers the request yet: one is on its way.
func (p *MetricsProber) probe(key types.NamespacedName, address string, access *metricsAccess, nodes []string,
	staleAfter, interval time.Duration) (result metricsprobe.Result, ok bool) {
	request := probeRequest{
		address:    address,
		accessHash: sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%t", access.bearerToken(), access.caPEM, access.insecureSkipVerify))),
		nodes:      len(nodes),
		staleAfter: staleAfter,
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last, found := p.last[key]
	if found && last.request == request && time.Since(last.at) < interval {
		return last.result, true
	}
	// A result about the same source still answers while a new probe runs: only the
	// number of nodes differs, or it is older than the interval.
	answers := found && last.request.sameSource(request)
	if running, isRunning := p.running[key]; !isRunning || running != request {
		if p.running == nil {
			p.running = map[types.NamespacedName]probeRequest{}
		}
		p.running[key] = request
		// The probe outlives the reconcile that asked for it: its own deadline bounds it,
		// two queries of Timeout each.
		go p.runProbe(key, request, p.httpClient(access), access.bearerToken(), slices.Clone(nodes))
	}
	return last.result, answers
}

// runProbe probes and keeps the result, unless the request was replaced or forgotten
// meanwhile, then reports the resource for a reconcile.
func (p *MetricsProber) runProbe(key types.NamespacedName, request probeRequest, httpClient *http.Client, token string, nodes []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*p.Timeout+time.Second)
	defer cancel()
	result := metricsprobe.Probe(ctx, httpClient, request.address, token, nodes, request.staleAfter)
	p.mu.Lock()
	if p.running[key] != request {
		p.mu.Unlock()
		return
	}
	delete(p.running, key)
	if p.last == nil {
		p.last = map[types.NamespacedName]probeRecord{}
	}
	p.last[key] = probeRecord{at: time.Now(), request: request, result: result}
	p.mu.Unlock()
	done := &v1.SecondaryScheduler{}
	done.SetNamespace(key.Namespace)
	done.SetName(key.Name)
	p.doneChannel() <- event.GenericEvent{Object: done}
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

func (p *MetricsProber) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
	delete(p.running, key)
	delete(p.discovered, discoveryKey{object: key})
	delete(p.discovered, discoveryKey{object: key, operated: true})
}

// setMetricsConditions probes the metrics cr's scheduler reads, reports them, and advances
// the failsafe of profile.metrics.whenUnavailable. It returns the problem that degrades
// the scheduler, nil for none: unusable metrics do, since it would score every node
// alike, or by old data, without a word, and so does scoring by requests. It returns
// when to look again too: zero when the scheduler reads no probed metrics.
func (r *SecondarySchedulerReconciler) setMetricsConditions(ctx context.Context, cr *v1.SecondaryScheduler, desired *gathered,
	status *v1.SecondarySchedulerStatus, conditions *conditionSetter) (*reasons.Finding, time.Duration, error) {
	endpoint := desired.prometheus
	if endpoint == nil {
		meta.RemoveStatusCondition(&status.Conditions, string(v1.ConditionMetricsAvailable))
		status.Metrics = nil
		r.MetricsProber.forget(client.ObjectKeyFromObject(cr))
		return nil, 0, nil
	}
	nodeList := &corev1.NodeList{}
	if err := r.List(ctx, nodeList); err != nil {
		return nil, 0, fmt.Errorf("list nodes: %w", err)
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
	result, probed := r.MetricsProber.probe(client.ObjectKeyFromObject(cr), endpoint.URL, desired.access, nodes, staleAfter, interval)
	previous := failsafe.StateOf(status.Metrics)
	status.Metrics = metricsStatusOf(cr, endpoint, desired)
	if !probed {
		previous.Store(status.Metrics)
		// The probe's result brings the next reconcile.
		return reportProbing(status, metrics, previous, conditions), 0, nil
	}
	status.Metrics.NodesWithMetrics, status.Metrics.Nodes = int32(result.NodesWithMetrics), int32(result.Nodes)
	if result.Reason == v1.ReasonMetricsStale && !result.NewestSample.IsZero() {
		status.Metrics.NewestSample = &metav1.Time{Time: result.NewestSample.Truncate(time.Second)}
	}
	decision := failsafe.Decide(metrics, previous, result, r.now())
	decision.State.Store(status.Metrics)
	result = explainProbe(cr, desired, result)
	conditions.set(v1.ConditionMetricsAvailable, result.Available, result.Reason, result.Message)
	var degraded *reasons.Finding
	switch found := func() string {
		return strings.TrimSuffix(result.Message, ".") + "." + failsafe.Note(metrics, decision.State)
	}; {
	case !result.Available && result.Reason == v1.ReasonMetricsStale:
		degraded = &reasons.Finding{Reason: result.Reason, Message: "the load-aware scheduler scores nodes by old data: " + found()}
	case !result.Available:
		degraded = &reasons.Finding{Reason: result.Reason,
			Message: "the load-aware scheduler runs but cannot see node load, so it scores every node alike: " + found()}
	case decision.State.Scoring == v1.ScoringByRequests:
		degraded = &reasons.Finding{Reason: v1.ReasonScoringByRequests, Message: failsafe.ResumingMessage(metrics, decision.State)}
	}
	if scoresByRequests := decision.State.Scoring == v1.ScoringByRequests; scoresByRequests != desired.facts.ScoreByRequests {
		// The configuration just applied is the other one: render the new one at once.
		return degraded, time.Millisecond, nil
	}
	if result.Reason == v1.ReasonUnauthorized && desired.access.identity != nil && !reportedUnauthorized(cr) {
		// The operator's own token was refused: once this is reported, the next reconcile
		// asks the API server, once, whether the token is still valid, and replaces it if not.
		return degraded, time.Second, nil
	}
	return degraded, minPositive(interval, decision.RecheckAfter), nil
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

// metricsStatusOf is what status.metrics says before any probe: where the metrics come
// from and how the scheduler reaches them.
func metricsStatusOf(cr *v1.SecondaryScheduler, endpoint *promdiscovery.Endpoint, desired *gathered) *v1.MetricsStatus {
	metrics := &v1.MetricsStatus{Address: metricsprobe.AddressForStatus(endpoint.URL), Source: endpoint.Source,
		Credentials: desired.access.credentials, RecordingRules: desired.recordingRules(cr)}
	if identity := desired.access.identity; identity != nil {
		metrics.TokenRenewTime = &metav1.Time{Time: identity.Token.RenewAt.Truncate(time.Second)}
	}
	if ca := desired.access.trustedCA; ca != nil {
		metrics.TrustedCA = fmt.Sprintf("ConfigMap %s/%s, key %s", cr.Namespace, ca.ConfigMap, ca.Key)
	}
	return metrics
}

// reportProbing says, while the first probe of these metrics runs, that nothing is known
// of them yet. How the scheduler scores (the failsafe's state) stays as it was: it
// returns the problem of scoring by requests, nil when the scheduler scores by load.
func reportProbing(status *v1.SecondarySchedulerStatus, metrics *v1.LoadMetrics, state failsafe.State, conditions *conditionSetter) *reasons.Finding {
	conditions.setUnknown(v1.ConditionMetricsAvailable, v1.ReasonMetricsProbing, fmt.Sprintf(
		"probing the metrics at %s (from %s); the result follows within the probe timeout", status.Metrics.Address, status.Metrics.Source))
	if state.Scoring == v1.ScoringByRequests {
		return &reasons.Finding{Reason: v1.ReasonScoringByRequests, Message: failsafe.ResumingMessage(metrics, state)}
	}
	return nil
}
