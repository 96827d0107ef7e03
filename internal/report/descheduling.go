package report

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// DeschedulingFacts are what the Descheduling condition is decided by.
type DeschedulingFacts struct {
	// Deployment is the descheduler's Deployment as the cache holds it, nil when there is
	// none yet.
	Deployment *appsv1.Deployment
	// PolicyProblem is why the scheduler-name admission policy is not in place as the
	// installer ships it, nil when it is.
	PolicyProblem error
}

// Descheduling reports the descheduler of spec.descheduling: status.descheduling and the
// Descheduling condition, both absent without spec.descheduling. It is called once the
// descheduler's objects are applied, so the thresholds were derived (a refusal returns
// before).
func Descheduling(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, conditions *Conditions, facts DeschedulingFacts) {
	status.Descheduling = nil
	if cr.Spec.Descheduling == nil {
		meta.RemoveStatusCondition(&status.Conditions, string(v1.ConditionDescheduling))
		return
	}
	thresholds, err := render.Thresholds(cr)
	if err != nil {
		meta.RemoveStatusCondition(&status.Conditions, string(v1.ConditionDescheduling))
		return
	}
	report := &v1.DeschedulingStatus{Deployment: cr.Namespace + "/" + render.DeschedulerName(cr), Mode: cr.Spec.Descheduling.EffectiveMode(),
		ReceiveBelowPercent: thresholds.ReceiveBelow, EvictAbovePercent: thresholds.EvictAbove, RelativeToMean: thresholds.Deviation}
	if deployment := facts.Deployment; deployment != nil {
		report.ReadyReplicas, report.Replicas = deployment.Status.ReadyReplicas, deployment.Status.Replicas
	}
	status.Descheduling = report
	switch {
	case report.ReadyReplicas == 0:
		conditions.Set(v1.ConditionDescheduling, false, v1.ReasonDeschedulerNotReady, fmt.Sprintf(
			"no pod of the descheduler (Deployment %s) is ready: kubectl -n %s describe deployment %s, and the events of its pods, say why",
			report.Deployment, cr.Namespace, render.DeschedulerName(cr)))
	case facts.PolicyProblem != nil:
		conditions.Set(v1.ConditionDescheduling, false, v1.ReasonSchedulerNamePolicyMissing, fmt.Sprintf(
			"the descheduler runs, but selects its scheduler's pods by the label the installer's admission policy gives them, and that "+
				"policy is not in place (%v): it finds no pod it may evict; apply dist/routing.yaml, or with OLM the objects the CSV's "+
				"description lists", facts.PolicyProblem))
	case report.Mode == v1.DeschedulingDryRun:
		conditions.Set(v1.ConditionDescheduling, true, v1.ReasonDeschedulerDryRun, fmt.Sprintf(
			"the descheduler runs in mode DryRun and evicts nothing: it would evict pods of %s from nodes above %s while nodes below %s exist",
			cr.EffectiveSchedulerName(), bound(thresholds.EvictAbove, thresholds.Deviation), bound(thresholds.ReceiveBelow, thresholds.Deviation)))
	default:
		perNode, perCycle := cr.Spec.Descheduling.EffectiveEvictionLimits()
		conditions.Set(v1.ConditionDescheduling, true, v1.ReasonDeschedulerReady, fmt.Sprintf(
			"the descheduler runs: it evicts pods of %s from nodes above %s while nodes below %s exist, at most %d a node and %d a cycle",
			cr.EffectiveSchedulerName(), bound(thresholds.EvictAbove, thresholds.Deviation), bound(thresholds.ReceiveBelow, thresholds.Deviation),
			perNode, perCycle))
	}
}

// bound says a threshold: a percentage of a node's CPU, or points from the nodes' mean.
func bound(percent int32, relativeToMean bool) string {
	if relativeToMean {
		return fmt.Sprintf("%d points from the nodes' mean CPU use", percent)
	}
	return fmt.Sprintf("%d %% of their CPU used", percent)
}
