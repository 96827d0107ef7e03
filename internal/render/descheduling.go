package render

import (
	"fmt"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// DeschedulingFacts are what the descheduler's policy needs beyond the resource.
type DeschedulingFacts struct {
	// PrometheusURL is the Prometheus the scheduler reads.
	PrometheusURL string
	// TokenSecret names the Secret holding the token the scheduler presents to Prometheus,
	// nil when it presents none.
	TokenSecret *metav1.ObjectMeta
	// ProtectedNamespaces are namespaces whose pods are never evicted (kube-system, the
	// operator's, the schedulers').
	ProtectedNamespaces []string
	// NodePool is the scheduler's node pool as a label selector string, "" for every node.
	NodePool string
}

// DeschedulerPolicy renders the descheduler's policy for cr
// (bindata/assets/descheduler/policy.yaml), with the thresholds Thresholds derives.
func DeschedulerPolicy(cr *v1.SecondaryScheduler, facts DeschedulingFacts) ([]byte, error) {
	thresholds, err := Thresholds(cr)
	if err != nil {
		return nil, err
	}
	policy, err := loadAsset("descheduler/policy.yaml")
	if err != nil {
		return nil, err
	}
	perNode, perCycle := cr.Spec.Descheduling.EffectiveEvictionLimits()
	if facts.NodePool == "" {
		if _, err := policy.Pipe(yaml.Clear("nodeSelector")); err != nil {
			return nil, fmt.Errorf("render the descheduler's policy: %w", err)
		}
	} else if err := setValue(policy, facts.NodePool, "nodeSelector"); err != nil {
		return nil, err
	}
	set := []struct {
		value any
		path  []string
	}{
		{int(perNode), []string{"maxNoOfPodsToEvictPerNode"}},
		{int(perCycle), []string{"maxNoOfPodsToEvictTotal"}},
		{facts.PrometheusURL, []string{"metricsProviders", "[source=Prometheus]", "prometheus", "url"}},
	}
	for _, field := range set {
		if err := setValue(policy, field.value, field.path...); err != nil {
			return nil, err
		}
	}
	if facts.TokenSecret != nil {
		reference := map[string]any{"secretReference": map[string]any{"namespace": facts.TokenSecret.Namespace, "name": facts.TokenSecret.Name}}
		if err := setValue(policy, reference, "metricsProviders", "[source=Prometheus]", "prometheus", "authToken"); err != nil {
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
	staleAfter := cr.Spec.Profile.LoadMetrics().EffectiveStaleAfter()
	query := fmt.Sprintf(deschedulingQuery, promDuration(v1.DeschedulingWindow), int(staleAfter/time.Second))
	protected := slices.Compact(slices.Sorted(slices.Values(facts.ProtectedNamespaces)))
	fields := []struct {
		value any
		path  []string
	}{
		{int(thresholds.ReceiveBelow), []string{"thresholds", "MetricResource"}},
		{int(thresholds.EvictAbove), []string{"targetThresholds", "MetricResource"}},
		{protected, []string{"evictableNamespaces", "exclude"}},
		{query, []string{"metricsUtilization", "prometheus", "query"}},
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

// promDuration is d as PromQL writes a duration (15m).
func promDuration(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%ds", int(d/time.Second))
}
