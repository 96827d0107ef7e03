package outcome

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// Arm is one way of placing the workload: a scheduler, with its pool of nodes and its
// namespace.
type Arm struct {
	// Key names its pool, namespace and scheduler.
	Key string
	// Title says what it is, in tables and plots.
	Title string
	// Profile is its SecondaryScheduler's profile; nil for the default scheduler.
	Profile *v1.Profile
	// Outage is whether it reads the Prometheus that is stopped during the run.
	Outage bool
	// Descheduling is its SecondaryScheduler's spec.descheduling; nil for none.
	Descheduling *v1.Descheduling
	// PodsApart puts its pods in a namespace of their own (PodNamespace), outside the
	// schedulers' namespaces, whose pods no descheduler evicts.
	PodsApart bool
}

// Namespace is where the arm's SecondaryScheduler is, and its pods unless PodsApart.
func (a Arm) Namespace() string { return "outcome-" + a.Key }

// PodNamespace is where the arm's pods are.
func (a Arm) PodNamespace() string {
	if a.PodsApart {
		return a.Namespace() + "-pods"
	}
	return a.Namespace()
}

// namespaces are the arm's namespaces, its pods' among them.
func (a Arm) namespaces() []string {
	if a.PodsApart {
		return []string{a.Namespace(), a.PodNamespace()}
	}
	return []string{a.Namespace()}
}

// SchedulerName is what the arm's pods put in spec.schedulerName.
func (a Arm) SchedulerName() string {
	if a.Profile == nil {
		return corev1.DefaultSchedulerName
	}
	return "outcome-" + a.Key
}

// PoolLabel is the label of every pool's nodes, whose value is the arm's key.
const PoolLabel = "outcome.bench.secondary-scheduler.io/pool"

// Failsafe settings of the outage arms: the shortest staleAfter the API allows, so that
// ScoreByRequests switches within a minute of the outage, and a resumeAfter shorter than
// the default 5 minutes, so that its return to load-aware scoring is within the run.
const (
	outageStaleAfter  = 30 * time.Second
	outageResumeAfter = time.Minute
)

// Arms are the placements compared, in the report's order: the default scheduler, each
// profile with its defaults but for TargetLoadPacking's target, TargetLoadPacking 40 %
// with defaultRequestsMultiplier 1.5 (the plugin's default, and the operator's before
// this benchmark showed 1 to pack closer to the target), and TargetLoadPacking 40 % twice
// more, reading a Prometheus that is stopped mid-run, with each whenUnavailable.
func Arms() []Arm {
	return []Arm{
		{Key: "default", Title: "default scheduler"},
		{Key: "binpacking", Title: "BinPacking", Profile: &v1.Profile{Type: v1.BinPackingProfile}},
		{Key: "tlp40", Title: "TargetLoadPacking 40 %", Profile: targetLoadPacking(40, nil)},
		{Key: "tlp60", Title: "TargetLoadPacking 60 %", Profile: targetLoadPacking(60, nil)},
		{Key: "tlp40-m15", Title: "TargetLoadPacking 40 %, multiplier 1.5", Profile: withMultiplier(targetLoadPacking(40, nil), "1.5")},
		{Key: "lvrb", Title: "LoadVariationRiskBalancing", Profile: &v1.Profile{Type: v1.LoadVariationRiskBalancingProfile, Metrics: &v1.LoadMetrics{}}},
		{Key: "lroc", Title: "LowRiskOverCommitment", Profile: &v1.Profile{Type: v1.LowRiskOverCommitmentProfile, Metrics: &v1.LoadMetrics{}}},
		{Key: "outage-requests", Title: "TargetLoadPacking 40 %, outage, ScoreByRequests", Outage: true,
			Profile: targetLoadPacking(40, &v1.LoadMetrics{WhenUnavailable: v1.ScoreByRequests,
				StaleAfter: &metav1.Duration{Duration: outageStaleAfter}, ResumeAfter: &metav1.Duration{Duration: outageResumeAfter}})},
		{Key: "outage-last", Title: "TargetLoadPacking 40 %, outage, UseLastMetrics", Outage: true,
			Profile: targetLoadPacking(40, &v1.LoadMetrics{WhenUnavailable: v1.UseLastMetrics,
				StaleAfter: &metav1.Duration{Duration: outageStaleAfter}})},
	}
}

func targetLoadPacking(target int32, metrics *v1.LoadMetrics) *v1.Profile {
	if metrics == nil {
		metrics = &v1.LoadMetrics{}
	}
	return &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: metrics,
		TargetLoadPacking: &v1.TargetLoadPackingArgs{TargetUtilization: ptr.To(target)}}
}

func withMultiplier(profile *v1.Profile, multiplier string) *v1.Profile {
	profile.TargetLoadPacking.DefaultRequestsMultiplier = multiplier
	return profile
}

// SecondaryScheduler is the arm's SecondaryScheduler, reading the Prometheus at address
// and placing pods on its pool only; nil for the default scheduler.
func (a Arm) SecondaryScheduler(address string) *v1.SecondaryScheduler {
	if a.Profile == nil {
		return nil
	}
	profile := a.Profile.DeepCopy()
	if profile.Metrics != nil {
		profile.Metrics.Address = address
	}
	return &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Namespace: a.Namespace(), Name: a.Key},
		Spec: v1.SecondarySchedulerSpec{
			SchedulerName: a.SchedulerName(),
			Profile:       profile,
			NodePool:      &metav1.LabelSelector{MatchLabels: map[string]string{PoolLabel: a.Key}},
			Descheduling:  a.Descheduling.DeepCopy(),
		},
	}
}

// Namespaces are every arm's namespace, where the operator must be allowed to run schedulers.
func Namespaces() []string { return namespacesOf(Arms()) }

func namespacesOf(arms []Arm) []string {
	namespaces := make([]string, 0, len(arms))
	for _, arm := range arms {
		if arm.Profile != nil {
			namespaces = append(namespaces, arm.Namespace())
		}
	}
	return namespaces
}
