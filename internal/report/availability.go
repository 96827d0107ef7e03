package report

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/observe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// Availability is what the conditions need of what was seen of a running scheduler.
type Availability struct {
	// Deployment is the scheduler's Deployment, nil when there is none.
	Deployment *appsv1.Deployment
	// PodProblem is why no pod of the current template is ready, as its pods tell, nil
	// when they tell nothing.
	PodProblem *reasons.Finding
	// RequeueAfter asks to look again for what no watch reports (a leader elected, a
	// pod's containers).
	RequeueAfter time.Duration
}

// leaderPoll is how soon a scheduler without a leader of its current configuration is
// looked at again: the operator watches a Lease change hands, but not expire.
const leaderPoll = 3 * time.Second

// leaderRecheck is how often a HighlyAvailable scheduler that has a leader is looked at
// again, so that Available does not long outlive a leader that stopped renewing its Lease
// while its pod stays ready (a leader that dies changes its pod, which wakes the operator
// at once). Each look is a whole reconcile, so not more often than this.
const leaderRecheck = time.Minute

// Available sets readyReplicas and the Available condition from what was seen of the
// scheduler, and says when to look again.
func Available(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, conditions *Conditions, seen observe.Scheduler) Availability {
	deployment := seen.Deployment
	if deployment == nil {
		key := types.NamespacedName{Namespace: cr.Namespace, Name: render.WorkloadName(cr)}
		status.ReadyReplicas = 0
		conditions.Set(v1.ConditionAvailable, false, v1.ReasonSchedulerNotDeployed, "the scheduler's Deployment "+key.String()+" does not exist")
		return Availability{}
	}
	// Counted from the pods seen now, as Available is: the Deployment's own count lags
	// the pods by a sync of its controller, and READY 0 beside AVAILABLE True was seen.
	status.ReadyReplicas = int32(seen.Current + seen.Old)
	if seen.Current == 0 {
		reportNoReadyPod(cr, status, conditions, seen)
		return Availability{Deployment: deployment, PodProblem: seen.Problem}
	}
	current, want := seen.Current, ptrValue(deployment.Spec.Replicas)
	// Only the holder of the Lease schedules: until a pod of the current template holds
	// it, pods are placed as an older configuration says, or not at all.
	switch {
	case seen.LeaseHolder == "":
		conditions.Set(v1.ConditionAvailable, false, v1.ReasonNoLeader, fmt.Sprintf(
			"%d of %d scheduler pods are ready but none holds Lease %s/%s yet, so none schedules; a replica takes it within the lease duration (15 s)",
			current, want, cr.Namespace, render.LeaseName(cr)))
		return Availability{Deployment: deployment, RequeueAfter: leaderPoll}
	case !seen.Leads():
		conditions.Set(v1.ConditionAvailable, false, v1.ReasonHandingOver, fmt.Sprintf(
			"%d of %d scheduler pods run the current configuration (hash %s) and are ready, but %s, which is not one of them, holds Lease %s/%s "+
				"and schedules until it stops; a pod of the current configuration takes the Lease then, within the lease duration (15 s)",
			current, want, status.ConfigHash, seen.LeaseHolder, cr.Namespace, render.LeaseName(cr)))
		return Availability{Deployment: deployment, RequeueAfter: leaderPoll}
	}
	conditions.Set(v1.ConditionAvailable, true, v1.ReasonSchedulerReady, fmt.Sprintf(
		"%d of %d scheduler pods ready with the current configuration, one of them leading; pods with spec.schedulerName: %s are scheduled by it",
		current, want, status.SchedulerName))
	if want > 1 {
		// A leader that stops renewing changes no object the operator watches.
		return Availability{Deployment: deployment, RequeueAfter: leaderRecheck}
	}
	return Availability{Deployment: deployment}
}

// reportNoReadyPod sets Available when no pod of the current template is ready: with
// the reason the pods give, if they give one, and what still schedules meanwhile.
func reportNoReadyPod(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, conditions *Conditions, seen observe.Scheduler) {
	seePods := fmt.Sprintf("see kubectl -n %s get pods -l %s=%s", cr.Namespace, render.LabelInstance, cr.Name)
	switch problem := seen.Problem; {
	case problem != nil && seen.Old > 0:
		conditions.Set(v1.ConditionAvailable, false, problem.Reason, fmt.Sprintf(
			"no pod running the current configuration (hash %s) is ready: %s. %d pods of an older configuration still schedule",
			status.ConfigHash, problem.Message, seen.Old))
	case problem != nil:
		conditions.Set(v1.ConditionAvailable, false, problem.Reason, fmt.Sprintf(
			"no scheduler pod is ready: %s. Pods with spec.schedulerName: %s stay Pending until one is",
			problem.Message, status.SchedulerName))
	case seen.Old > 0:
		conditions.Set(v1.ConditionAvailable, false, v1.ReasonNoReadyScheduler, fmt.Sprintf(
			"no pod running the current configuration (hash %s) is ready yet; %d pods of an older configuration still schedule; %s",
			status.ConfigHash, seen.Old, seePods))
	default:
		conditions.Set(v1.ConditionAvailable, false, v1.ReasonNoReadyScheduler, fmt.Sprintf(
			"no scheduler pod is ready; pods with spec.schedulerName: %s stay Pending until one is; %s", status.SchedulerName, seePods))
	}
}

// ptrValue is a replica count, 1 when unset as the API defaults it.
func ptrValue(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
