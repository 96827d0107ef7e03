package report

import (
	"fmt"
	"strings"
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
	// NotInEffect says, while a pod of an earlier configuration leads, why the current
	// configuration is not in effect yet; nil otherwise. Progressing reports it, whatever
	// the Deployment's status says: its controller may count a rollout done before the
	// new pod leads, or before the operator's cache sees that pod ready.
	NotInEffect *reasons.Finding
	// RequeueAfter asks to look again for what no watch reports (a leader elected, a
	// pod's containers).
	RequeueAfter time.Duration
	// Leader is the ready pod that holds the scheduler's Lease, of whatever
	// configuration; "" when none does.
	Leader string
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
// scheduler, and says when to look again. Available says whether the scheduler serves
// its name: whether a ready pod of it holds the Lease, whatever the configuration that
// pod runs. An edit that has not rolled out, or cannot, leaves the earlier scheduler
// serving: Available stays True (reason ServingPreviousConfiguration), and Progressing
// and Degraded tell how the rollout goes. So the routing failover and the pending-pod
// watchdog, which read Available, judge by the scheduler that serves.
func Available(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, conditions *Conditions, seen observe.Scheduler) Availability {
	availability := available(cr, status, conditions, seen)
	if seen.Serves() {
		availability.Leader = holderPod(seen.LeaseHolder)
	}
	return availability
}

// available is Available but for the leader's name.
func available(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, conditions *Conditions, seen observe.Scheduler) Availability {
	deployment := seen.Deployment
	if deployment == nil {
		key := types.NamespacedName{Namespace: cr.Namespace, Name: render.WorkloadName(cr)}
		status.ReadyReplicas = 0
		conditions.Set(v1.ConditionAvailable, false, v1.ReasonSchedulerNotDeployed, "the scheduler's Deployment "+key.String()+" does not exist")
		return Availability{}
	}
	// Counted from the pods seen now, as Available is: the Deployment's own count lags
	// the pods by a sync of its controller, and READY 0 beside AVAILABLE True was seen.
	// A leader being deleted is counted too: it is ready, and schedules until it stops.
	status.ReadyReplicas = int32(seen.Current + seen.Old)
	if seen.LeaderStopping() {
		status.ReadyReplicas++
	}
	current, want := seen.Current, ptrValue(deployment.Spec.Replicas)
	switch {
	case seen.Leads() && seen.LeaderStopping():
		conditions.Set(v1.ConditionAvailable, true, v1.ReasonSchedulerReady, fmt.Sprintf(
			"%s, a pod of the current configuration being deleted, holds Lease %s/%s and schedules pods with spec.schedulerName: %s "+
				"until it stops; %d of %d other scheduler pods are ready, one of which takes the Lease then, within the lease duration (15 s)",
			holderPod(seen.LeaseHolder), cr.Namespace, render.LeaseName(cr), status.SchedulerName, current, want))
		return Availability{Deployment: deployment, RequeueAfter: leaderPoll}
	case seen.Leads():
		conditions.Set(v1.ConditionAvailable, true, v1.ReasonSchedulerReady, fmt.Sprintf(
			"%d of %d scheduler pods ready with the current configuration, one of them leading; pods with spec.schedulerName: %s are scheduled by it",
			current, want, status.SchedulerName))
		if want > 1 {
			// A leader that stops renewing changes no object the operator watches.
			return Availability{Deployment: deployment, RequeueAfter: leaderRecheck}
		}
		return Availability{Deployment: deployment}
	case seen.OldLeads():
		return servingPrevious(cr, status, conditions, seen)
	case current == 0:
		reportNoReadyPod(cr, status, conditions, seen)
		return Availability{Deployment: deployment, PodProblem: seen.Problem, RequeueAfter: leaderPollIf(seen.Old > 0 || seen.UnreadyLeads())}
	case seen.LeaseHolder == "":
		conditions.Set(v1.ConditionAvailable, false, v1.ReasonNoLeader, fmt.Sprintf(
			"%d of %d scheduler pods are ready but none holds Lease %s/%s yet, so none schedules; a replica takes it within the lease duration (15 s)",
			current, want, cr.Namespace, render.LeaseName(cr)))
	case seen.UnreadyLeads():
		conditions.Set(v1.ConditionAvailable, false, v1.ReasonNoLeader, fmt.Sprintf(
			"%d of %d scheduler pods are ready, but Lease %s/%s is held by %s, a pod of the scheduler that is not ready: "+
				"it may still place pods while it renews the Lease, and a ready pod takes it once it stops, within the lease duration (15 s)",
			current, want, cr.Namespace, render.LeaseName(cr), holderPod(seen.LeaseHolder)))
	default:
		conditions.Set(v1.ConditionAvailable, false, v1.ReasonNoLeader, fmt.Sprintf(
			"%d of %d scheduler pods are ready, but Lease %s/%s is held by %s, which is none of the scheduler's pods (one that stopped without "+
				"giving it up), so none schedules; a ready pod takes it when it expires, within the lease duration (15 s)",
			current, want, cr.Namespace, render.LeaseName(cr), seen.LeaseHolder))
	}
	return Availability{Deployment: deployment, RequeueAfter: leaderPoll}
}

// servingPrevious sets Available while a ready pod of an earlier configuration leads: it
// serves the scheduler's name, as that configuration says. What keeps the current one
// from taking over is Progressing's (a rollout, a hand-over) or Degraded's (a pod that
// cannot run) to say.
func servingPrevious(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, conditions *Conditions, seen observe.Scheduler) Availability {
	deployment := seen.Deployment
	current, want := seen.Current, ptrValue(deployment.Spec.Replicas)
	var notYet string
	notInEffect := &reasons.Finding{Reason: v1.ReasonRollingOut, Message: fmt.Sprintf(
		"no pod of the current configuration (hash %s) is ready yet; %s, of an earlier configuration, holds Lease %s/%s and schedules meanwhile",
		status.ConfigHash, holderPod(seen.LeaseHolder), cr.Namespace, render.LeaseName(cr))}
	switch {
	case current > 0:
		notYet = fmt.Sprintf("%d of its pods are ready and one takes the Lease when the old pod stops, seconds from now", current)
		notInEffect = &reasons.Finding{Reason: v1.ReasonHandingOver, Message: fmt.Sprintf(
			"%d of %d scheduler pods run the current configuration (hash %s) and are ready, but %s, of an earlier configuration, "+
				"holds Lease %s/%s and schedules until it stops; a pod of the current configuration takes the Lease then, within the lease duration (15 s)",
			current, want, status.ConfigHash, seen.LeaseHolder, cr.Namespace, render.LeaseName(cr))}
	case seen.Problem != nil:
		notYet = "its pods cannot run: " + seen.Problem.Message + " (Degraded)"
	default:
		notYet = "its pods are starting (Progressing)"
	}
	conditions.Set(v1.ConditionAvailable, true, v1.ReasonServingPreviousConfiguration, fmt.Sprintf(
		"%s, a pod of an earlier configuration, holds Lease %s/%s and schedules pods with spec.schedulerName: %s as that configuration says; "+
			"the current configuration (hash %s) is not in effect yet: %s",
		holderPod(seen.LeaseHolder), cr.Namespace, render.LeaseName(cr), status.SchedulerName, status.ConfigHash, notYet))
	return Availability{Deployment: deployment, PodProblem: seen.Problem, NotInEffect: notInEffect, RequeueAfter: leaderPoll}
}

// holderPod is the pod name in a Lease's holder identity (the pod's hostname, an
// underscore and a unique suffix).
func holderPod(holder string) string {
	if i := strings.LastIndex(holder, "_"); i > 0 {
		return holder[:i]
	}
	return holder
}

// leaderPollIf is leaderPoll when poll, else zero: ready pods without a leader, and an
// unready leader, are looked at again, since a Lease that expires changes no object the
// operator watches.
func leaderPollIf(poll bool) time.Duration {
	if poll {
		return leaderPoll
	}
	return 0
}

// reportNoReadyPod sets Available when no pod of the current template is ready and
// none of an earlier one leads: with the reason the pods give, if they give one, and who
// schedules meanwhile: an unready pod of the scheduler that holds the Lease may, else none.
func reportNoReadyPod(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, conditions *Conditions, seen observe.Scheduler) {
	seePods := fmt.Sprintf("see kubectl -n %s get pods -l %s=%s", cr.Namespace, render.LabelInstance, cr.Name)
	lease := fmt.Sprintf("Lease %s/%s", cr.Namespace, render.LeaseName(cr))
	meanwhile := fmt.Sprintf("pods with spec.schedulerName: %s stay Pending until one is", status.SchedulerName)
	noneHolds := "none holds " + lease + ", so none schedules"
	if seen.UnreadyLeads() {
		meanwhile = fmt.Sprintf("%s, which is not ready, holds %s and may still place pods with spec.schedulerName: %s while it renews it",
			holderPod(seen.LeaseHolder), lease, status.SchedulerName)
		noneHolds = "none holds " + lease + ": " + meanwhile
	}
	switch problem := seen.Problem; {
	case problem != nil && seen.Old > 0:
		conditions.Set(v1.ConditionAvailable, false, problem.Reason, fmt.Sprintf(
			"no pod running the current configuration (hash %s) is ready: %s. %d pods of an earlier configuration are ready, but %s",
			status.ConfigHash, problem.Message, seen.Old, noneHolds))
	case problem != nil:
		conditions.Set(v1.ConditionAvailable, false, problem.Reason, fmt.Sprintf(
			"no scheduler pod is ready: %s. Meanwhile %s", problem.Message, meanwhile))
	case seen.Old > 0:
		conditions.Set(v1.ConditionAvailable, false, v1.ReasonNoLeader, fmt.Sprintf(
			"no pod running the current configuration (hash %s) is ready yet, and of the %d ready pods of an earlier configuration %s; %s",
			status.ConfigHash, seen.Old, noneHolds, seePods))
	default:
		conditions.Set(v1.ConditionAvailable, false, v1.ReasonNoReadyScheduler, fmt.Sprintf(
			"no scheduler pod is ready; %s; %s", meanwhile, seePods))
	}
}

// ptrValue is a replica count, 1 when unset as the API defaults it.
func ptrValue(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
