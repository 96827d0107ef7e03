package render

import (
	"fmt"
	"slices"
	"time"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// LabelSchedulerName is the label the shipped admission policy gives every pod that names a
// scheduler other than the default one, with the name as its value, at creation and at every
// update: the descheduler selects by it the pods of its scheduler, which a descheduler cannot
// otherwise tell (its evictor selects by labels, not by spec.schedulerName).
const LabelSchedulerName = "scheduling.secondary-scheduler.io/scheduler-name"

// deschedulingQuery is the series the descheduler reads, per node: the mean of
// instance:node_cpu:ratio over the window TargetLoadPacking's load-watcher averages it over,
// only for nodes whose newest sample is at most %d seconds old (profile.metrics.staleAfter).
// A node whose series went stale is missing from the answer, and the descheduler then
// evicts nothing in that cycle (it needs a sample for every node it considers): the
// failsafe of the scheduler holds for its descheduler by construction.
const deschedulingQuery = "avg_over_time(instance:node_cpu:ratio[%s]) and on (instance) (time() - timestamp(instance:node_cpu:ratio) <= %d)"

// DeschedulingThresholds are the bounds of a node's CPU use, in percent, that
// LowNodeUtilization compares with: pods are evicted from nodes above EvictAbove, only while
// nodes below ReceiveBelow exist to take them.
type DeschedulingThresholds struct {
	// Deviation says that the bounds are points below and above the nodes' mean use
	// (LoadVariationRiskBalancing), not percentages of a node's CPU (TargetLoadPacking).
	Deviation bool
	// ReceiveBelow and EvictAbove are the bounds.
	ReceiveBelow, EvictAbove int32
}

// Thresholds derives LowNodeUtilization's bounds from cr's profile and spec.descheduling,
// or refuses a setting that would fight the scheduler or never act.
//
// TargetLoadPacking with target T and band (b, a): ReceiveBelow = T - b, EvictAbove = T + a.
// The scheduler scores a node whose predicted use stays at or under T above any node it
// would take beyond T, so a pod evicted from a node above T + a is placed where its use
// keeps the node at most at T, never back on the node it left while that node is above T;
// and the node that takes it stays under T + a, so no cycle evicts it back. Both bounds
// must lie strictly between 0 and 100: a node cannot be below 0 % or above 100 %, and a
// bound out there never evicts.
//
// LoadVariationRiskBalancing has no target: it places pods on the nodes whose use, mean and
// variation, is lowest. Its bounds are b points below and a points above the nodes' mean
// use (the descheduler's deviation thresholds), where the scheduler sends pods anyway.
func Thresholds(cr *v1.SecondaryScheduler) (DeschedulingThresholds, error) {
	descheduling := cr.Spec.Descheduling
	below, above := descheduling.EffectiveBand()
	if interval := descheduling.EffectiveInterval(); interval < v1.DeschedulingWindow {
		return DeschedulingThresholds{}, refusal.New(v1.ReasonDeschedulingFightsScheduler,
			"spec.descheduling.interval %s is shorter than the %s window over which the scheduler and the descheduler average "+
				"a node's CPU use: a node a cycle relieved would still read hot in the next, which would evict from it again; "+
				"set it to %s or more, or leave it out", interval, v1.DeschedulingWindow, v1.DeschedulingWindow)
	}
	if cr.EffectiveProfile() == v1.LoadVariationRiskBalancingProfile {
		return DeschedulingThresholds{Deviation: true, ReceiveBelow: below, EvictAbove: above}, nil
	}
	target := TargetUtilization(cr)
	thresholds := DeschedulingThresholds{ReceiveBelow: target - below, EvictAbove: target + above}
	if thresholds.ReceiveBelow <= 0 || thresholds.EvictAbove >= 100 {
		return DeschedulingThresholds{}, refusal.New(v1.ReasonDeschedulingFightsScheduler,
			"spec.descheduling.band (%d points below and %d above) around the target of %d %% reaches %d %% to %d %%, beyond a node's "+
				"0 to 100 %%: no node could ever be there, so nothing would move; narrow the band to end strictly between 0 and 100",
			below, above, target, thresholds.ReceiveBelow, thresholds.EvictAbove)
	}
	return thresholds, nil
}

// TargetUtilization is the target of cr's TargetLoadPacking profile, its default filled in.
func TargetUtilization(cr *v1.SecondaryScheduler) int32 {
	if profile := cr.Spec.Profile; profile != nil && profile.TargetLoadPacking != nil && profile.TargetLoadPacking.TargetUtilization != nil {
		return *profile.TargetLoadPacking.TargetUtilization
	}
	defaults, _ := profiles[v1.TargetLoadPackingProfile].defaults.(*v1.TargetLoadPackingArgs)
	return *defaults.TargetUtilization
}

// Names of a descheduler's objects, beside its scheduler's in the SecondaryScheduler's
// namespace.

// DeschedulerName is the name of the descheduler's Deployment, ServiceAccount and
// ConfigMap (its policy and kubeconfig).
func DeschedulerName(cr *v1.SecondaryScheduler) string { return cr.Name + "-descheduler" }

// DeschedulerLeaseName is the name of the Lease the descheduler elects its leader with, and
// of the Role and RoleBinding that let it read and renew that Lease alone.
func DeschedulerLeaseName(cr *v1.SecondaryScheduler) string { return cr.Name + "-descheduler-lease" }

// DeschedulerTokenSecretName is the name of the Secret holding the token the descheduler
// presents to Prometheus, under the key the descheduler reads (deschedulerTokenKey).
func DeschedulerTokenSecretName(cr *v1.SecondaryScheduler) string {
	return cr.Name + "-descheduler-token"
}

// The ClusterRoles, shipped in config/rbac, that the operator binds a descheduler to.
const (
	// DeschedulerClusterRole reads nodes, namespaces, pods, PriorityClasses,
	// PodDisruptionBudgets and PersistentVolumeClaims, creates Events and evicts pods.
	DeschedulerClusterRole = "secondary-scheduler-descheduler"
)

// deschedulerTokenKey is the key of the token in its Secret, as the descheduler reads it
// (prometheus_client_controller.go of sigs.k8s.io/descheduler).
const deschedulerTokenKey = "token"

// deschedulerPolicy renders the descheduler's policy for cr
// (bindata/assets/descheduler/policy.yaml): the thresholds Thresholds derives, the
// scheduler's Prometheus and node pool. It names no token Secret: the descheduler then
// reads its token from the ServiceAccount path, where its Deployment projects it, at the
// start of each cycle; with a Secret, v0.36.0 builds its client only once a watch of the
// namespace's Secrets reports it, after its first cycle has run without one.
func deschedulerPolicy(cr *v1.SecondaryScheduler, facts Facts) ([]byte, error) {
	thresholds, err := Thresholds(cr)
	if err != nil {
		return nil, err
	}
	policy, err := loadAsset("descheduler/policy.yaml")
	if err != nil {
		return nil, err
	}
	nodePool, err := NodePoolSelector(cr)
	if err != nil {
		return nil, err
	}
	if nodePool == nil || nodePool.Empty() {
		if _, err := policy.Pipe(yaml.Clear("nodeSelector")); err != nil {
			return nil, fmt.Errorf("render the descheduler's policy: %w", err)
		}
	} else if err := setValue(policy, nodePool.String(), "nodeSelector"); err != nil {
		return nil, err
	}
	perNode, perCycle := cr.Spec.Descheduling.EffectiveEvictionLimits()
	prometheus, err := lookup(policy, "metricsProviders", "[source=Prometheus]", "prometheus")
	if err != nil {
		return nil, err
	}
	for _, field := range []struct {
		node  *yaml.RNode
		value any
		path  []string
	}{
		{policy, int(perNode), []string{"maxNoOfPodsToEvictPerNode"}},
		{policy, int(perCycle), []string{"maxNoOfPodsToEvictTotal"}},
		{prometheus, PrometheusURL(cr, facts), []string{"url"}},
	} {
		if err := setValue(field.node, field.value, field.path...); err != nil {
			return nil, err
		}
	}
	profile, err := lookup(policy, "profiles", "[name=load-aware]")
	if err != nil {
		return nil, err
	}
	selector := map[string]any{"matchExpressions": []map[string]any{{"key": LabelSchedulerName, "operator": "In", "values": []string{cr.EffectiveSchedulerName()}}}}
	if err := setValue(profile, selector, "pluginConfig", "[name=DefaultEvictor]", "args", "labelSelector"); err != nil {
		return nil, err
	}
	args, err := lookup(profile, "pluginConfig", "[name=LowNodeUtilization]", "args")
	if err != nil {
		return nil, err
	}
	query := DeschedulerQuery(cr)
	protected := slices.Compact(slices.Sorted(slices.Values(facts.NeverEvicted)))
	fields := []struct {
		value any
		path  []string
	}{
		{int(thresholds.ReceiveBelow), []string{"thresholds", "MetricResource"}},
		{int(thresholds.EvictAbove), []string{"targetThresholds", "MetricResource"}},
		{protected, []string{"evictableNamespaces", "exclude"}},
		{query, []string{"metricsUtilization", "prometheus", "query"}},
		{int(perNode), []string{"evictionLimits", "node"}},
	}
	if thresholds.Deviation {
		fields = append(fields, struct {
			value any
			path  []string
		}{true, []string{"useDeviationThresholds"}})
	}
	for _, field := range fields {
		if err := setValue(args, field.value, field.path...); err != nil {
			return nil, err
		}
	}
	text, err := policy.String()
	if err != nil {
		return nil, fmt.Errorf("render the descheduler's policy: %w", err)
	}
	return []byte(text), nil
}

// PrometheusURL is the Prometheus a load-aware scheduler of cr reads: its own address, else
// the one discovery found; "" when it reads none.
func PrometheusURL(cr *v1.SecondaryScheduler, facts Facts) string {
	metrics := cr.Spec.Profile.LoadMetrics()
	switch {
	case metrics == nil || !cr.Spec.Profile.ReadsPrometheus():
		return ""
	case metrics.Address != "":
		return metrics.Address
	default:
		return facts.PrometheusAddress
	}
}

// DeschedulerQuery is the query of each node's use the descheduler of cr reads
// (deschedulingQuery), with cr's staleAfter.
func DeschedulerQuery(cr *v1.SecondaryScheduler) string {
	staleAfter := cr.Spec.Profile.LoadMetrics().EffectiveStaleAfter()
	return fmt.Sprintf(deschedulingQuery, promDuration(v1.DeschedulingWindow), int(staleAfter/time.Second))
}

// promDuration is d as PromQL writes a duration (15m).
func promDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%ds", int(d/time.Second))
}
