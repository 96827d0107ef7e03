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
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/failsafe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/operatormetrics"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/report"
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

	probeNotifier

	mu      sync.Mutex
	last    map[types.NamespacedName]probeRecord
	running map[types.NamespacedName]probeRequest
}

// probeRequest is what a probe asks: the same request gets the same answer until it is
// older than the interval.
type probeRequest struct {
	address    string
	accessHash [32]byte // of token and CA: the token itself is not kept
	// nodesHash is of the nodes' names: a node replaced by another, the count unchanged,
	// is a node the last probe did not ask about.
	nodesHash  [32]byte
	staleAfter time.Duration
}

// sameSource reports whether r and other ask the same Prometheus, with the same
// credentials, for data of the same age.
func (r probeRequest) sameSource(other probeRequest) bool {
	return r.address == other.address && r.accessHash == other.accessHash && r.staleAfter == other.staleAfter
}

type probeRecord struct {
	at      time.Time
	took    time.Duration
	request probeRequest
	result  metricsprobe.Result
}

// probe returns the last probe result for key when it answers this very request, and
// starts a probe in the background when there is none or it is older than interval. ok
// is false when no result answers the request yet: one is on its way.
func (p *MetricsProber) probe(key types.NamespacedName, address string, access *gather.MetricsAccess, nodes []string,
	staleAfter, interval time.Duration) (result metricsprobe.Result, ok bool) {
	request := probeRequest{
		address:    address,
		accessHash: sha256.Sum256([]byte(fmt.Sprintf("%s\x00%s\x00%t", access.BearerToken(), access.CAPEM, access.InsecureSkipVerify))),
		nodesHash:  sha256.Sum256([]byte(strings.Join(slices.Sorted(slices.Values(nodes)), "\x00"))),
		staleAfter: staleAfter,
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	last, found := p.last[key]
	if found && last.request == request && time.Since(last.at) < interval {
		return last.result, true
	}
	// A result about the same source still answers while a new probe runs: only the
	// nodes differ, or it is older than the interval.
	answers := found && last.request.sameSource(request)
	if running, isRunning := p.running[key]; !isRunning || running != request {
		if p.running == nil {
			p.running = map[types.NamespacedName]probeRequest{}
		}
		p.running[key] = request
		// The probe outlives the reconcile that asked for it: its own deadline bounds it,
		// two queries of Timeout each.
		go p.runProbe(key, request, p.httpClient(access), access.BearerToken(), slices.Clone(nodes))
	}
	return last.result, answers
}

// runProbe probes and keeps the result, unless the request was replaced or forgotten
// meanwhile, then reports the resource for a reconcile.
func (p *MetricsProber) runProbe(key types.NamespacedName, request probeRequest, httpClient *http.Client, token string, nodes []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*p.Timeout+time.Second)
	defer cancel()
	started := time.Now()
	result := metricsprobe.Probe(ctx, httpClient, request.address, token, nodes, request.staleAfter)
	took := time.Since(started)
	p.mu.Lock()
	if p.running[key] != request {
		p.mu.Unlock()
		return
	}
	delete(p.running, key)
	if p.last == nil {
		p.last = map[types.NamespacedName]probeRecord{}
	}
	p.last[key] = probeRecord{at: time.Now(), took: took, request: request, result: result}
	p.mu.Unlock()
	p.finished(key)
}

// httpClient queries with the TLS settings the scheduler has: the CA bundle it trusts
// (else the system roots), or no verification when the user turned it off.
func (p *MetricsProber) httpClient(access *gather.MetricsAccess) *http.Client {
	tlsConfig := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: access.InsecureSkipVerify} //nolint:gosec // the user's explicit choice, as the scheduler makes it
	if access.CAPEM != nil {
		tlsConfig.RootCAs = x509.NewCertPool()
		tlsConfig.RootCAs.AppendCertsFromPEM(access.CAPEM)
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

// LastProbes implements operatormetrics.ProbeSource: the last probe of each
// SecondaryScheduler whose metrics are probed.
func (p *MetricsProber) LastProbes() []operatormetrics.Probe {
	p.mu.Lock()
	defer p.mu.Unlock()
	probes := make([]operatormetrics.Probe, 0, len(p.last))
	for key, record := range p.last {
		probes = append(probes, operatormetrics.Probe{Scheduler: key, Finished: record.at, Duration: record.took,
			Available: record.result.Available, Reason: record.result.Reason,
			DataAge: record.result.DataAge, HasData: !record.result.NewestSample.IsZero()})
	}
	return probes
}

func (p *MetricsProber) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
	delete(p.running, key)
}

// metricsJudgement is what the reconcile found of the metrics cr's scheduler reads: the
// failsafe's verdict, and how long the probe result it comes from stands.
type metricsJudgement struct {
	verdict  failsafe.Verdict
	interval time.Duration
}

// judgeMetrics looks up the probe of the metrics cr's scheduler reads, starting one in
// the background when no result answers them (MetricsProber), and has the failsafe
// decide from it how the scheduler scores nodes. It runs before the scheduler is
// rendered for apply, with the credentials the scheduler will present, so that a switch
// of scoring is applied in the same reconcile. Nil when the scheduler reads no probed
// metrics.
func (r *SecondarySchedulerReconciler) judgeMetrics(cr *v1.SecondaryScheduler, desired *gather.Facts) *metricsJudgement {
	if desired.Prometheus == nil {
		r.metricsProber.forget(client.ObjectKeyFromObject(cr))
		return nil
	}
	metrics := cr.Spec.Profile.LoadMetrics()
	staleAfter := metrics.EffectiveStaleAfter()
	interval := r.metricsProber.intervalFor(staleAfter)
	result, probed := r.metricsProber.probe(client.ObjectKeyFromObject(cr), desired.Prometheus.URL, desired.Access, desired.NodeNames, staleAfter, interval)
	return &metricsJudgement{verdict: failsafe.Judge(metrics, cr.Status.Metrics, result, probed, r.now()), interval: interval}
}

// reportMetrics reports the metrics cr's scheduler reads (internal/report): it returns
// the problem that degrades the scheduler, nil for none, and when to look again, zero
// when the scheduler reads no probed metrics or the probe's result will bring the next
// reconcile.
func reportMetrics(cr *v1.SecondaryScheduler, desired *gather.Facts, judged *metricsJudgement,
	status *v1.SecondarySchedulerStatus, conditions *report.Conditions) (*reasons.Finding, time.Duration) {
	if judged == nil {
		report.NoMetrics(status)
		return nil, 0
	}
	return report.Metrics(cr, desired, status, conditions, judged.verdict, judged.interval)
}

// announceScoring emits an Event when the failsafe switched how the scheduler scores
// nodes, once the status that says so is written. cr holds the status as it was read.
func (r *SecondarySchedulerReconciler) announceScoring(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus) {
	if status.Metrics == nil || cr.Status.Metrics == nil || status.Metrics.Scoring == cr.Status.Metrics.Scoring || cr.Status.Metrics.Scoring == "" {
		return
	}
	metrics := cr.Spec.Profile.LoadMetrics()
	if status.Metrics.Scoring == v1.ScoringByRequests {
		r.recorder.Eventf(cr, nil, corev1.EventTypeWarning, string(v1.ReasonScoringByRequests), "Scoring",
			"the metrics have been unusable since %s: the scheduler now scores nodes by their requests (whenUnavailable: ScoreByRequests), "+
				"until they have been healthy for %s", status.Metrics.UnavailableSince.UTC().Format(time.RFC3339), metrics.EffectiveResumeAfter())
		return
	}
	reason := fmt.Sprintf("the metrics have been healthy for %s", metrics.EffectiveResumeAfter())
	if !metrics.ScoresByRequestsWhenUnavailable() {
		reason = "whenUnavailable is no longer ScoreByRequests"
	}
	r.recorder.Eventf(cr, nil, corev1.EventTypeNormal, string(v1.ReasonLoadAwareScoringResumed), "Scoring",
		"%s: the scheduler scores nodes by their measured load again", reason)
}

// probeNotifier reports the SecondarySchedulers whose probe finished in the background,
// as events for the controller to watch, which reconcile them with the result.
type probeNotifier struct {
	once sync.Once
	done chan event.GenericEvent
}

// Source is where finished probes are reported, for the controller to watch.
func (n *probeNotifier) Source() source.Source {
	return source.Channel(n.channel(), &handler.EnqueueRequestForObject{})
}

func (n *probeNotifier) channel() chan event.GenericEvent {
	n.once.Do(func() { n.done = make(chan event.GenericEvent, 1024) })
	return n.done
}

// finished reports that a probe of key's SecondaryScheduler finished.
func (n *probeNotifier) finished(key types.NamespacedName) {
	done := &v1.SecondaryScheduler{}
	done.SetNamespace(key.Namespace)
	done.SetName(key.Name)
	n.channel() <- event.GenericEvent{Object: done}
}
