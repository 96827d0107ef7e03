package operatormetrics

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

var created = metav1.NewTime(time.Date(2026, 11, 25, 8, 0, 0, 0, time.UTC))

type probes []Probe

func (p probes) LastProbes() []Probe { return p }

func elected() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}

func secondaryScheduler(name string, status v1.SecondarySchedulerStatus) *v1.SecondaryScheduler {
	return &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: name}, Status: status}
}

func TestCollector(t *testing.T) {
	expires := time.Date(2026, 11, 26, 8, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		schedulers []*v1.SecondaryScheduler
		probes     probes
		tokens     map[types.NamespacedName][2]time.Time
		leading    bool
		metrics    []string
		want       string
	}{
		{
			name: "a healthy bin-packing scheduler: info, conditions, replicas, no pending pods",
			schedulers: []*v1.SecondaryScheduler{secondaryScheduler("packer", v1.SecondarySchedulerStatus{
				ObservedGeneration: 1, SchedulerName: "packer", SchedulerNames: []string{"packer"}, Profile: v1.BinPackingProfile,
				ReadyReplicas: 1, Replicas: 1,
				Conditions: []metav1.Condition{
					{Type: "Available", Status: metav1.ConditionTrue, Reason: "SchedulerReady"},
					{Type: "Degraded", Status: metav1.ConditionFalse, Reason: "AsExpected"},
				}})},
			leading: true,
			metrics: []string{"scheduler_info", "scheduler_condition", "scheduler_ready_replicas", "scheduler_replicas", "scheduler_pending_pods",
				"scheduler_oldest_pending_pod_timestamp_seconds", "scheduler_scoring_by_requests", "metrics_nodes"},
			want: `
# HELP secondary_scheduler_operator_metrics_nodes Load-aware schedulers only: the nodes the last metrics probe looked for (status.metrics.nodes).
# TYPE secondary_scheduler_operator_metrics_nodes gauge
# HELP secondary_scheduler_operator_scheduler_condition One series per condition of a SecondaryScheduler's status, with its status (True, False, Unknown) and reason.
# TYPE secondary_scheduler_operator_scheduler_condition gauge
secondary_scheduler_operator_scheduler_condition{condition="Available",namespace="platform",reason="SchedulerReady",secondary_scheduler="packer",status="True"} 1
secondary_scheduler_operator_scheduler_condition{condition="Degraded",namespace="platform",reason="AsExpected",secondary_scheduler="packer",status="False"} 1
# HELP secondary_scheduler_operator_scheduler_info One series per scheduler name a SecondaryScheduler serves (status.schedulerNames), with its profile type: kube-scheduler's profile label on the scheduler's own metrics is that name.
# TYPE secondary_scheduler_operator_scheduler_info gauge
secondary_scheduler_operator_scheduler_info{namespace="platform",profile="BinPacking",scheduler_name="packer",secondary_scheduler="packer"} 1
# HELP secondary_scheduler_operator_scheduler_pending_pods Pods naming the scheduler that have waited longer than spec.pendingPodThreshold for a node (status.pendingPods.count).
# TYPE secondary_scheduler_operator_scheduler_pending_pods gauge
secondary_scheduler_operator_scheduler_pending_pods{namespace="platform",secondary_scheduler="packer"} 0
# HELP secondary_scheduler_operator_scheduler_ready_replicas Ready scheduler pods (status.readyReplicas).
# TYPE secondary_scheduler_operator_scheduler_ready_replicas gauge
secondary_scheduler_operator_scheduler_ready_replicas{namespace="platform",secondary_scheduler="packer"} 1
# HELP secondary_scheduler_operator_scheduler_replicas Scheduler pods wanted (status.replicas).
# TYPE secondary_scheduler_operator_scheduler_replicas gauge
secondary_scheduler_operator_scheduler_replicas{namespace="platform",secondary_scheduler="packer"} 1
`,
		},
		{
			name: "pending pods, the failsafe scoring by requests, every served name of a Custom configuration",
			schedulers: []*v1.SecondaryScheduler{secondaryScheduler("custom", v1.SecondarySchedulerStatus{
				ObservedGeneration: 3, SchedulerName: "custom", SchedulerNames: []string{"custom", "custom-spread"}, Profile: v1.CustomProfile,
				PendingPods: &v1.PendingPodsStatus{Count: 4, OldestSince: &created, Examples: []string{"team/a"}},
				Metrics:     &v1.MetricsStatus{Nodes: 8, NodesWithMetrics: 3, Scoring: v1.ScoringByRequests}})},
			leading: true,
			metrics: []string{"scheduler_info", "scheduler_pending_pods", "scheduler_oldest_pending_pod_timestamp_seconds",
				"scheduler_scoring_by_requests", "metrics_nodes", "metrics_nodes_with_metrics"},
			want: `
# HELP secondary_scheduler_operator_metrics_nodes Load-aware schedulers only: the nodes the last metrics probe looked for (status.metrics.nodes).
# TYPE secondary_scheduler_operator_metrics_nodes gauge
secondary_scheduler_operator_metrics_nodes{namespace="platform",secondary_scheduler="custom"} 8
# HELP secondary_scheduler_operator_metrics_nodes_with_metrics Load-aware schedulers only: of metrics_nodes, those with every series load-watcher reads, fresh (status.metrics.nodesWithMetrics).
# TYPE secondary_scheduler_operator_metrics_nodes_with_metrics gauge
secondary_scheduler_operator_metrics_nodes_with_metrics{namespace="platform",secondary_scheduler="custom"} 3
# HELP secondary_scheduler_operator_scheduler_info One series per scheduler name a SecondaryScheduler serves (status.schedulerNames), with its profile type: kube-scheduler's profile label on the scheduler's own metrics is that name.
# TYPE secondary_scheduler_operator_scheduler_info gauge
secondary_scheduler_operator_scheduler_info{namespace="platform",profile="Custom",scheduler_name="custom",secondary_scheduler="custom"} 1
secondary_scheduler_operator_scheduler_info{namespace="platform",profile="Custom",scheduler_name="custom-spread",secondary_scheduler="custom"} 1
# HELP secondary_scheduler_operator_scheduler_oldest_pending_pod_timestamp_seconds Creation time of the oldest pod counted by scheduler_pending_pods, in Unix seconds; absent when none.
# TYPE secondary_scheduler_operator_scheduler_oldest_pending_pod_timestamp_seconds gauge
secondary_scheduler_operator_scheduler_oldest_pending_pod_timestamp_seconds{namespace="platform",secondary_scheduler="custom"} 1.7955936e+09
# HELP secondary_scheduler_operator_scheduler_pending_pods Pods naming the scheduler that have waited longer than spec.pendingPodThreshold for a node (status.pendingPods.count).
# TYPE secondary_scheduler_operator_scheduler_pending_pods gauge
secondary_scheduler_operator_scheduler_pending_pods{namespace="platform",secondary_scheduler="custom"} 4
# HELP secondary_scheduler_operator_scheduler_scoring_by_requests Load-aware schedulers only: 1 while the failsafe scores nodes by requests (status.metrics.scoring ByRequests), else 0.
# TYPE secondary_scheduler_operator_scheduler_scoring_by_requests gauge
secondary_scheduler_operator_scheduler_scoring_by_requests{namespace="platform",secondary_scheduler="custom"} 1
`,
		},
		{
			name:       "a resource not reconciled yet has no series: nothing was observed",
			schedulers: []*v1.SecondaryScheduler{secondaryScheduler("new", v1.SecondarySchedulerStatus{})},
			leading:    true,
			metrics:    []string{"scheduler_info", "scheduler_pending_pods", "scheduler_replicas"},
			want:       ``,
		},
		{
			name: "the last probe, with and without data, and a token's expiry",
			probes: probes{
				{Scheduler: types.NamespacedName{Namespace: "platform", Name: "tlp"}, Finished: created.Time, Duration: 1500 * time.Millisecond,
					Available: false, Reason: v1.ReasonMetricsStale, DataAge: 7 * time.Minute, HasData: true},
				{Scheduler: types.NamespacedName{Namespace: "platform", Name: "down"}, Finished: created.Time, Duration: 10 * time.Second,
					Reason: v1.ReasonPrometheusUnreachable},
			},
			tokens:  map[types.NamespacedName][2]time.Time{{Namespace: "platform", Name: "tlp"}: {expires, expires.Add(-4 * time.Hour)}},
			leading: true,
			metrics: []string{"metrics_probe_success", "metrics_probe_result", "metrics_probe_duration_seconds", "metrics_data_age_seconds",
				"metrics_token_expiry_timestamp_seconds", "metrics_token_renewal_timestamp_seconds"},
			want: `
# HELP secondary_scheduler_operator_metrics_data_age_seconds Age of the stalest node's newest sample at the last probe, by Prometheus' clock; absent when no node had any.
# TYPE secondary_scheduler_operator_metrics_data_age_seconds gauge
secondary_scheduler_operator_metrics_data_age_seconds{namespace="platform",secondary_scheduler="tlp"} 420
# HELP secondary_scheduler_operator_metrics_probe_duration_seconds How long the last metrics probe took.
# TYPE secondary_scheduler_operator_metrics_probe_duration_seconds gauge
secondary_scheduler_operator_metrics_probe_duration_seconds{namespace="platform",secondary_scheduler="down"} 10
secondary_scheduler_operator_metrics_probe_duration_seconds{namespace="platform",secondary_scheduler="tlp"} 1.5
# HELP secondary_scheduler_operator_metrics_probe_result The last metrics probe's result, as the MetricsAvailable reason it gave.
# TYPE secondary_scheduler_operator_metrics_probe_result gauge
secondary_scheduler_operator_metrics_probe_result{namespace="platform",reason="MetricsStale",secondary_scheduler="tlp"} 1
secondary_scheduler_operator_metrics_probe_result{namespace="platform",reason="PrometheusUnreachable",secondary_scheduler="down"} 1
# HELP secondary_scheduler_operator_metrics_probe_success 1 when the last probe of the scheduler's Prometheus found usable metrics for every node, else 0.
# TYPE secondary_scheduler_operator_metrics_probe_success gauge
secondary_scheduler_operator_metrics_probe_success{namespace="platform",secondary_scheduler="down"} 0
secondary_scheduler_operator_metrics_probe_success{namespace="platform",secondary_scheduler="tlp"} 0
# HELP secondary_scheduler_operator_metrics_token_expiry_timestamp_seconds When the bound token the scheduler presents to its metrics provider expires, in Unix seconds.
# TYPE secondary_scheduler_operator_metrics_token_expiry_timestamp_seconds gauge
secondary_scheduler_operator_metrics_token_expiry_timestamp_seconds{namespace="platform",secondary_scheduler="tlp"} 1.79568e+09
# HELP secondary_scheduler_operator_metrics_token_renewal_timestamp_seconds When the operator renews the bound token the scheduler presents (at 80% of its lifetime), in Unix seconds: past it, renewal is overdue.
# TYPE secondary_scheduler_operator_metrics_token_renewal_timestamp_seconds gauge
secondary_scheduler_operator_metrics_token_renewal_timestamp_seconds{namespace="platform",secondary_scheduler="tlp"} 1.7956656e+09
`,
		},
		{
			name: "a replica that does not lead serves nothing: the leader does",
			schedulers: []*v1.SecondaryScheduler{secondaryScheduler("packer", v1.SecondarySchedulerStatus{
				ObservedGeneration: 1, SchedulerName: "packer", ReadyReplicas: 1})},
			probes:  probes{{Scheduler: types.NamespacedName{Namespace: "platform", Name: "packer"}, Available: true, Reason: v1.ReasonMetricsAvailable}},
			leading: false,
			metrics: []string{"scheduler_info", "scheduler_ready_replicas", "metrics_probe_success"},
			want:    ``,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			if err := v1.AddToScheme(scheme); err != nil {
				t.Fatal(err)
			}
			reader := fake.NewClientBuilder().WithScheme(scheme)
			for _, cr := range tt.schedulers {
				reader = reader.WithObjects(cr)
			}
			tokens := &TokenExpiries{}
			for key, lifetime := range tt.tokens {
				tokens.Observe(key, lifetime[0], lifetime[1])
			}
			collector := &Collector{Schedulers: reader.Build(), Probes: tt.probes, Tokens: tokens, Elected: make(chan struct{})}
			if tt.leading {
				collector.Elected = elected()
			}
			names := make([]string, 0, len(tt.metrics))
			for _, metric := range tt.metrics {
				names = append(names, Prefix+metric)
			}
			if err := testutil.CollectAndCompare(collector, strings.NewReader(tt.want), names...); err != nil {
				t.Error(err)
			}
		})
	}
}

func TestTokenExpiriesForget(t *testing.T) {
	tokens := &TokenExpiries{}
	key := types.NamespacedName{Namespace: "platform", Name: "tlp"}
	tokens.Observe(key, time.Now().Add(time.Hour), time.Now().Add(48*time.Minute))
	collector := &Collector{Schedulers: fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build(), Tokens: tokens, Elected: elected()}
	if got := testutil.CollectAndCount(collector, Prefix+"metrics_token_expiry_timestamp_seconds"); got != 1 {
		t.Fatalf("%d token series after Observe, want 1", got)
	}
	tokens.Forget(key)
	if got := testutil.CollectAndCount(collector, Prefix+"metrics_token_expiry_timestamp_seconds", Prefix+"metrics_token_renewal_timestamp_seconds"); got != 0 {
		t.Fatalf("%d token series after Forget, want 0", got)
	}
	var none *TokenExpiries
	none.Observe(key, time.Now(), time.Now()) // a reconciler without metrics keeps nothing, and does not panic
	none.Forget(key)
}

func TestReconcileErrors(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{name: "a conflict", err: apierrors.NewConflict(schema.GroupResource{Resource: "deployments"}, "d", errors.New("changed")), want: "Conflict"},
		{name: "forbidden, wrapped", err: fmt.Errorf("apply: %w", apierrors.NewForbidden(schema.GroupResource{Resource: "roles"}, "r", errors.New("no"))), want: "Forbidden"},
		{name: "a deadline", err: fmt.Errorf("list: %w", context.DeadlineExceeded), want: "Timeout"},
		{name: "the API server's timeout", err: apierrors.NewServerTimeout(schema.GroupResource{Resource: "pods"}, "list", 1), want: "ServerTimeout"},
		{name: "anything else", err: errors.New("dial tcp: connection refused"), want: "Other"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			counted := NewReconcileErrors()
			counted.Transient(tt.err)
			if got := testutil.ToFloat64(counted.counter.WithLabelValues(KindTransient, tt.want)); got != 1 {
				t.Errorf("reconcile_errors_total{kind=Transient,reason=%s} = %v, want 1", tt.want, got)
			}
		})
	}
	counted := NewReconcileErrors()
	counted.Refused(v1.ReasonConfigMapNotFound)
	counted.Refused(v1.ReasonConfigMapNotFound)
	if got := testutil.ToFloat64(counted.counter.WithLabelValues(KindRefused, string(v1.ReasonConfigMapNotFound))); got != 2 {
		t.Errorf("two refusals counted %v times", got)
	}
	var none *ReconcileErrors
	none.Refused(v1.ReasonInvalidSpec) // a reconciler without metrics counts nothing, and does not panic
	none.Transient(errors.New("x"))
}
