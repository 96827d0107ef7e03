package report

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/pendingpods"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// PendingPods reports the pods stuck waiting for cr's scheduler: status.pendingPods and
// the PodsPending condition, whose reason says why when the other conditions of status
// (already set) tell: the scheduler is not available, its node pool is empty, or it found
// no node for them. quota is why CapacityScheduling holds the oldest of them, nil when it
// does not. Call it last, once Available and the node pool are reported.
func PendingPods(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, conditions *Conditions,
	pending pendingpods.Pending, quota *pendingpods.QuotaRefusal) {
	threshold := cr.EffectivePendingPodThreshold()
	names := servedNames(status)
	if pending.Count == 0 {
		status.PendingPods = nil
		conditions.Set(v1.ConditionPodsPending, false, v1.ReasonNoPodsPending,
			fmt.Sprintf("no pod naming %s has waited longer than %s (spec.pendingPodThreshold) for a node", names, threshold))
		return
	}
	status.PendingPods = &v1.PendingPodsStatus{Count: int32(pending.Count), Examples: pending.Examples,
		OldestSince: &metav1.Time{Time: pending.OldestSince.Truncate(time.Second)}}
	// The state, in one sentence, then the cause and what to do.
	state := fmt.Sprintf("%d %s naming %s %s waited longer than %s for a node (the oldest since %s: %s%s)",
		pending.Count, plural(pending.Count, "pod", "pods"), names, plural(pending.Count, "has", "have"), threshold,
		pending.OldestSince.UTC().Format(time.RFC3339), strings.Join(pending.Examples, ", "), routedClause(pending))
	available := meta.FindStatusCondition(status.Conditions, string(v1.ConditionAvailable))
	switch {
	case available == nil || available.Status != metav1.ConditionTrue:
		reason := "unknown"
		if available != nil {
			reason = available.Reason
		}
		conditions.Set(v1.ConditionPodsPending, true, v1.ReasonSchedulerNotRunning, fmt.Sprintf(
			"%s: the scheduler is not available (Available is not True, reason %s), so nothing places them; "+
				"the Available condition says what to fix, and they are placed once it runs", state, reason))
	case status.NodePool != nil && status.NodePool.Nodes == 0:
		conditions.Set(v1.ConditionPodsPending, true, v1.ReasonNodePoolEmpty, fmt.Sprintf(
			"%s: spec.nodePool (%s) matches no node, so the scheduler has nowhere to place them; "+
				"label nodes into the pool or change spec.nodePool", state, status.NodePool.Selector))
	case quota != nil:
		conditions.Set(v1.ConditionPodsPending, true, v1.ReasonQuotaExceeded, fmt.Sprintf(
			"%s: CapacityScheduling holds the oldest, %s, to its namespace's ElasticQuota: %s; it is placed once pods "+
				"the quota counts end, or the quota's bounds are raised (kubectl get elasticquotas -A)",
			state, pending.Oldest, quota.Message()))
	case pending.Gang != "":
		account := "it has not said why yet"
		if pending.Unschedulable != "" {
			account = fmt.Sprintf("it says %q", pending.Unschedulable)
		}
		namespace, group, _ := strings.Cut(pending.Gang, "/")
		conditions.Set(v1.ConditionPodsPending, true, v1.ReasonGangWaiting, fmt.Sprintf(
			"%s: they belong to gang %s, whose pods bind all together or not at all, once as many of them as its PodGroup's minimum "+
				"exist and fit; the scheduler's gang plugin holds them (%s); create the rest of the gang, or add room for all of it "+
				"(kubectl get podgroups -n %s %s; kubectl describe pod -n %s)", state, pending.Gang, account, namespace, group,
			strings.Replace(pending.Examples[0], "/", " ", 1)))
	case pending.Unschedulable != "":
		conditions.Set(v1.ConditionPodsPending, true, v1.ReasonPodsUnschedulable, fmt.Sprintf(
			"%s: the scheduler found no node for them: %q; add or free capacity, or relax the pods' requests, "+
				"affinity or tolerations (kubectl describe pod -n %s)", state, pending.Unschedulable,
			strings.Replace(pending.Examples[0], "/", " ", 1)))
	default:
		conditions.Set(v1.ConditionPodsPending, true, v1.ReasonPodsNotScheduled, fmt.Sprintf(
			"%s: the scheduler runs but has neither placed them nor said why; read its log: kubectl logs -n %s deployment/%s",
			state, cr.Namespace, render.WorkloadName(cr)))
	}
}

// HoldsToQuotas reports whether the scheduler status describes runs CapacityScheduling,
// which holds namespaces to their ElasticQuotas, as its configuration (typed or Custom)
// enables it.
func HoldsToQuotas(status *v1.SecondarySchedulerStatus) bool {
	return status.PluginController != nil && slices.Contains(status.PluginController.Plugins, render.QuotaPlugin)
}

// ServedNames are the scheduler names pods use to reach the scheduler status describes:
// status.schedulerNames, or before they are known, status.schedulerName.
func ServedNames(status *v1.SecondarySchedulerStatus) []string {
	if len(status.SchedulerNames) == 0 {
		return []string{status.SchedulerName}
	}
	return status.SchedulerNames
}

// routedClause says how many of the pending pods a route sent, "" for none.
func routedClause(pending pendingpods.Pending) string {
	if pending.Routed == 0 {
		return ""
	}
	return fmt.Sprintf("; %d of them routed here by spec.routing", pending.Routed)
}

// servedNames are ServedNames for a message.
func servedNames(status *v1.SecondarySchedulerStatus) string {
	names := ServedNames(status)
	if len(names) == 1 {
		return "scheduler " + names[0]
	}
	return "scheduler " + strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
