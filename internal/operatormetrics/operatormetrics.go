// Package operatormetrics serves the operator's own metrics about the schedulers it runs
// (docs/monitoring.md lists them): what status says of each SecondaryScheduler, what the
// last probe of its Prometheus found, when its metrics token expires, and why reconciles
// fail. Series of a resource are computed at each scrape from what the operator holds
// (the cache, the prober's last results), so they appear and disappear with it and need
// no bookkeeping of their own; only reconcile errors are counted as they happen.
package operatormetrics

import (
	"context"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/report"
)

// Prefix starts the name of every metric of the operator's own.
const Prefix = "secondary_scheduler_operator_"

// schedulerLabels identify the SecondaryScheduler a series is about. namespace is the
// resource's: a scrape keeps it with honor_labels (docs/monitoring.md).
var schedulerLabels = []string{"namespace", "secondary_scheduler"}

func schedulerDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(Prefix+name, help, append(append([]string{}, schedulerLabels...), extra...), nil)
}

var (
	schedulerInfo = schedulerDesc("scheduler_info",
		"One series per scheduler name a SecondaryScheduler serves (status.schedulerNames), with its profile type: "+
			"kube-scheduler's profile label on the scheduler's own metrics is that name.", "scheduler_name", "profile")
	schedulerCondition = schedulerDesc("scheduler_condition",
		"One series per condition of a SecondaryScheduler's status, with its status (True, False, Unknown) and reason.",
		"condition", "status", "reason")
	readyReplicas = schedulerDesc("scheduler_ready_replicas", "Ready scheduler pods (status.readyReplicas).")
	replicas      = schedulerDesc("scheduler_replicas", "Scheduler pods wanted (status.replicas).")
	pendingPods   = schedulerDesc("scheduler_pending_pods",
		"Pods naming the scheduler that have waited longer than spec.pendingPodThreshold for a node (status.pendingPods.count).")
	oldestPendingPod = schedulerDesc("scheduler_oldest_pending_pod_timestamp_seconds",
		"Creation time of the oldest pod counted by scheduler_pending_pods, in Unix seconds; absent when none.")
	scoringByRequests = schedulerDesc("scheduler_scoring_by_requests",
		"Load-aware schedulers only: 1 while the failsafe scores nodes by requests (status.metrics.scoring ByRequests), else 0.")
	metricsNodes = schedulerDesc("metrics_nodes",
		"Load-aware schedulers only: the nodes the last metrics probe looked for (status.metrics.nodes).")
	metricsNodesWithMetrics = schedulerDesc("metrics_nodes_with_metrics",
		"Load-aware schedulers only: of metrics_nodes, those with every series load-watcher reads, fresh (status.metrics.nodesWithMetrics).")
	probeSuccess = schedulerDesc("metrics_probe_success",
		"1 when the last probe of the scheduler's Prometheus found usable metrics for every node, else 0.")
	probeResult = schedulerDesc("metrics_probe_result",
		"The last metrics probe's result, as the MetricsAvailable reason it gave.", "reason")
	probeDuration  = schedulerDesc("metrics_probe_duration_seconds", "How long the last metrics probe took.")
	probeTimestamp = schedulerDesc("metrics_probe_timestamp_seconds",
		"When the last metrics probe finished, in Unix seconds.")
	dataAge = schedulerDesc("metrics_data_age_seconds",
		"Age of the stalest node's newest sample at the last probe, by Prometheus' clock; absent when no node had any.")
	tokenExpiry = schedulerDesc("metrics_token_expiry_timestamp_seconds",
		"When the bound token the scheduler presents to its metrics provider expires, in Unix seconds.")
	tokenRenewal = schedulerDesc("metrics_token_renewal_timestamp_seconds",
		"When the operator renews the bound token the scheduler presents (at 80% of its lifetime), in Unix seconds: past it, renewal is overdue.")
)

// Probe is the last metrics probe of one SecondaryScheduler's Prometheus.
type Probe struct {
	// Scheduler is the SecondaryScheduler.
	Scheduler types.NamespacedName
	// Finished is when the probe finished.
	Finished time.Time
	// Duration is how long it took.
	Duration time.Duration
	// Available is true when every node had fresh metrics.
	Available bool
	// Reason is the MetricsAvailable reason it gave.
	Reason v1.ConditionReason
	// DataAge is the stalest node's newest sample's age; HasData is false when no node had any.
	DataAge time.Duration
	HasData bool
}

// ProbeSource gives the last probe of each SecondaryScheduler whose metrics are probed.
type ProbeSource interface {
	LastProbes() []Probe
}

// Collector collects the series of every SecondaryScheduler at each scrape: from status,
// read from Schedulers (the manager's cache), the last probes from Probes and the token
// expiries from Tokens. Only the leading replica serves them (Elected is closed once it
// leads): every replica's cache holds the same status, and series served twice would
// fire every alert twice.
type Collector struct {
	Schedulers client.Reader
	Probes     ProbeSource
	Tokens     *TokenExpiries
	Elected    <-chan struct{}
}

// Leading reports whether elected, a manager's Elected channel, is closed: this replica
// leads (or leader election is off).
func Leading(elected <-chan struct{}) bool {
	select {
	case <-elected:
		return true
	default:
		return false
	}
}

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, desc := range []*prometheus.Desc{schedulerInfo, schedulerCondition, readyReplicas, replicas, pendingPods, oldestPendingPod,
		scoringByRequests, metricsNodes, metricsNodesWithMetrics, probeSuccess, probeResult, probeDuration, probeTimestamp, dataAge, tokenExpiry, tokenRenewal} {
		ch <- desc
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	if !Leading(c.Elected) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &v1.SecondarySchedulerList{}
	// A failed read yields no series of status rather than a failed scrape: the probe and
	// token series below still tell.
	// Read only, so the cached objects themselves: no copy of every resource per scrape.
	if err := c.Schedulers.List(ctx, list, client.UnsafeDisableDeepCopy); err == nil {
		for i := range list.Items {
			collectStatus(ch, &list.Items[i])
		}
	}
	if c.Probes != nil {
		for _, probe := range c.Probes.LastProbes() {
			collectProbe(ch, probe)
		}
	}
	c.Tokens.collect(ch)
}

func gauge(ch chan<- prometheus.Metric, desc *prometheus.Desc, value float64, labels ...string) {
	ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, value, labels...)
}

// collectStatus emits the series status says of cr.
func collectStatus(ch chan<- prometheus.Metric, cr *v1.SecondaryScheduler) {
	status := &cr.Status
	if status.ObservedGeneration == 0 {
		// Not reconciled yet: there is nothing observed to tell.
		return
	}
	ns, name := cr.Namespace, cr.Name
	for _, schedulerName := range report.ServedNames(status) {
		gauge(ch, schedulerInfo, 1, ns, name, schedulerName, string(status.Profile))
	}
	for _, condition := range status.Conditions {
		gauge(ch, schedulerCondition, 1, ns, name, condition.Type, string(condition.Status), condition.Reason)
	}
	gauge(ch, readyReplicas, float64(status.ReadyReplicas), ns, name)
	gauge(ch, replicas, float64(status.Replicas), ns, name)
	var pending float64
	if status.PendingPods != nil {
		pending = float64(status.PendingPods.Count)
		if since := status.PendingPods.OldestSince; since != nil && status.PendingPods.Count > 0 {
			gauge(ch, oldestPendingPod, unixSeconds(*since), ns, name)
		}
	}
	gauge(ch, pendingPods, pending, ns, name)
	if metrics := status.Metrics; metrics != nil {
		gauge(ch, metricsNodes, float64(metrics.Nodes), ns, name)
		gauge(ch, metricsNodesWithMetrics, float64(metrics.NodesWithMetrics), ns, name)
		if metrics.Scoring != "" {
			gauge(ch, scoringByRequests, boolValue(metrics.Scoring == v1.ScoringByRequests), ns, name)
		}
	}
}

func collectProbe(ch chan<- prometheus.Metric, probe Probe) {
	ns, name := probe.Scheduler.Namespace, probe.Scheduler.Name
	gauge(ch, probeSuccess, boolValue(probe.Available), ns, name)
	gauge(ch, probeResult, 1, ns, name, string(probe.Reason))
	gauge(ch, probeDuration, probe.Duration.Seconds(), ns, name)
	gauge(ch, probeTimestamp, float64(probe.Finished.UnixMilli())/1000, ns, name)
	if probe.HasData {
		gauge(ch, dataAge, probe.DataAge.Seconds(), ns, name)
	}
}

func unixSeconds(t metav1.Time) float64 { return float64(t.UnixMilli()) / 1000 }

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TokenExpiries are the lifetimes of the metrics tokens schedulers present, as the
// reconciles last saw them. The zero value is ready to use; a nil one holds nothing.
type TokenExpiries struct {
	mu     sync.Mutex
	tokens map[types.NamespacedName]tokenLifetime
}

type tokenLifetime struct{ expires, renews time.Time }

// Observe records that key's scheduler presents a token expiring at expires, which the
// operator renews at renews.
func (t *TokenExpiries) Observe(key types.NamespacedName, expires, renews time.Time) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.tokens == nil {
		t.tokens = map[types.NamespacedName]tokenLifetime{}
	}
	t.tokens[key] = tokenLifetime{expires: expires, renews: renews}
}

// Forget drops key: its scheduler presents no bound token any more, or is gone.
func (t *TokenExpiries) Forget(key types.NamespacedName) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.tokens, key)
}

func (t *TokenExpiries) collect(ch chan<- prometheus.Metric) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	keys := make([]types.NamespacedName, 0, len(t.tokens))
	for key := range t.tokens {
		keys = append(keys, key)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	for _, key := range keys {
		lifetime := t.tokens[key]
		gauge(ch, tokenExpiry, float64(lifetime.expires.UnixMilli())/1000, key.Namespace, key.Name)
		gauge(ch, tokenRenewal, float64(lifetime.renews.UnixMilli())/1000, key.Namespace, key.Name)
	}
}

// Reconcile error kinds, the kind label of reconcile_errors_total.
const (
	// KindRefused is a reconcile that reported a problem only the user can fix.
	KindRefused = "Refused"
	// KindTransient is a reconcile that failed and is retried.
	KindTransient = "Transient"
)

// ReconcileErrors counts reconciles that did not reach the desired state, by kind and
// reason.
type ReconcileErrors struct{ counter *prometheus.CounterVec }

// NewReconcileErrors makes the counter; Collector is what to register.
func NewReconcileErrors() *ReconcileErrors {
	return &ReconcileErrors{counter: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: Prefix + "reconcile_errors_total",
		Help: "Reconciles of SecondarySchedulers that did not reach the desired state: kind Refused with the condition reason " +
			"the user must fix, kind Transient with the API error's reason (Other for errors without one), retried.",
	}, []string{"kind", "reason"})}
}

// Refused counts a refusal for reason.
func (e *ReconcileErrors) Refused(reason v1.ConditionReason) {
	if e != nil {
		e.counter.WithLabelValues(KindRefused, string(reason)).Inc()
	}
}

// Transient counts a failed reconcile, by the API error's reason: a bounded set, unlike
// the error's text.
func (e *ReconcileErrors) Transient(err error) {
	if e != nil {
		e.counter.WithLabelValues(KindTransient, TransientReason(err)).Inc()
	}
}

// TransientReason is the reason a transient error is counted under.
func TransientReason(err error) string {
	if errors.Is(err, context.DeadlineExceeded) {
		return string(metav1.StatusReasonTimeout)
	}
	if reason := apierrors.ReasonForError(err); reason != metav1.StatusReasonUnknown {
		return string(reason)
	}
	return "Other"
}

// Collector returns the counter as a prometheus.Collector, to register.
func (e *ReconcileErrors) Collector() prometheus.Collector { return e.counter }
