package controllers

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
)

// DefaultMetricsProbeInterval is how often the metrics of a load-aware scheduler are
// probed again when nothing else changes.
const DefaultMetricsProbeInterval = 5 * time.Minute

// MetricsProber probes the metrics of load-aware schedulers, at most once per interval
// for one address and set of nodes, so that the many reconciles a rollout causes do not
// each query Prometheus.
type MetricsProber struct {
	// HTTPClient queries the endpoints.
	HTTPClient *http.Client
	// Interval is how long a probe result stands.
	Interval time.Duration

	mu   sync.Mutex
	last map[types.NamespacedName]probeRecord
}

type probeRecord struct {
	at      time.Time
	address string
	nodes   int
	result  metricsprobe.Result
}

// probedAddress is the Prometheus endpoint the operator probes for cr, or "" when its
// scheduler reads no Prometheus (not load-aware, another provider, an external load-watcher).
func probedAddress(cr *v1.SecondaryScheduler) string {
	profile := cr.Spec.Profile
	if profile == nil || !profile.Type.IsLoadAware() || profile.Metrics == nil || profile.Metrics.WatcherAddress != "" {
		return ""
	}
	if provider := profile.Metrics.Provider; provider != "" && provider != v1.PrometheusProvider {
		return ""
	}
	return profile.Metrics.Address
}

// probe returns the metrics probe result for cr, probing again when the last result is
// older than the interval or was about another address or number of nodes.
func (p *MetricsProber) probe(ctx context.Context, key types.NamespacedName, address string, nodes []string) metricsprobe.Result {
	p.mu.Lock()
	if p.last == nil {
		p.last = map[types.NamespacedName]probeRecord{}
	}
	last, ok := p.last[key]
	p.mu.Unlock()
	if ok && last.address == address && last.nodes == len(nodes) && time.Since(last.at) < p.Interval {
		return last.result
	}
	result := metricsprobe.Probe(ctx, p.HTTPClient, address, "", nodes)
	p.mu.Lock()
	p.last[key] = probeRecord{at: time.Now(), address: address, nodes: len(nodes), result: result}
	p.mu.Unlock()
	return result
}

func (p *MetricsProber) forget(key types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.last, key)
}

// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch

// setMetricsConditions probes the metrics cr's scheduler reads and reports them; missing
// metrics degrade the scheduler, since it would score every node 0 without a word.
func (r *SecondarySchedulerReconciler) setMetricsConditions(ctx context.Context, cr *v1.SecondaryScheduler,
	status *v1.SecondarySchedulerStatus, conditions *conditionSetter) error {
	address := probedAddress(cr)
	if address == "" {
		meta.RemoveStatusCondition(&status.Conditions, string(v1.ConditionMetricsAvailable))
		status.Metrics = nil
		r.MetricsProber.forget(client.ObjectKeyFromObject(cr))
		return nil
	}
	nodeList := &metav1.PartialObjectMetadataList{}
	nodeList.SetGroupVersionKind(nodeGVK)
	if err := r.List(ctx, nodeList); err != nil {
		return fmt.Errorf("list nodes: %w", err)
	}
	nodes := make([]string, 0, len(nodeList.Items))
	for _, node := range nodeList.Items {
		nodes = append(nodes, node.Name)
	}
	result := r.MetricsProber.probe(ctx, client.ObjectKeyFromObject(cr), address, nodes)
	status.Metrics = &v1.MetricsStatus{Address: address, NodesWithMetrics: int32(result.NodesWithMetrics), Nodes: int32(result.Nodes)}
	conditions.set(v1.ConditionMetricsAvailable, result.Available, result.Reason, result.Message)
	if !result.Available {
		conditions.set(v1.ConditionDegraded, true, result.Reason,
			"the load-aware scheduler runs but cannot see node load, so it scores every node 0: "+result.Message)
	}
	return nil
}

// loadAwareSchedulers wakes the schedulers whose metrics are probed when nodes come or go.
func (r *SecondarySchedulerReconciler) loadAwareSchedulers(ctx context.Context, _ client.Object) []reconcile.Request {
	list := &v1.SecondarySchedulerList{}
	if err := r.List(ctx, list); err != nil {
		return nil
	}
	var requests []reconcile.Request
	for i := range list.Items {
		if probedAddress(&list.Items[i]) != "" {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return requests
}
