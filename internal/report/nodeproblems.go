package report

import (
	"fmt"

	"k8s.io/apimachinery/pkg/labels"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// PlacementProblem is what the nodes keep cr's scheduler from doing, nil when nothing.
// These are problems of a scheduler that was applied as specified, not refusals: it
// recovers by itself when nodes change.
func PlacementProblem(cr *v1.SecondaryScheduler, found gather.Placement) *reasons.Finding {
	if found.Matching == 0 {
		return &reasons.Finding{Reason: v1.ReasonNoSchedulableNodes, Message: noSchedulableNodesMessage(cr, found)}
	}
	if found.Pool != nil && found.Pool.Nodes == 0 {
		return &reasons.Finding{Reason: v1.ReasonNodePoolEmpty, Message: fmt.Sprintf(
			"spec.nodePool (%s) matches none of the cluster's %d nodes, so the scheduler places no pod: pods with spec.schedulerName: %s stay Pending. "+
				"Label the nodes meant for it to match the selector, or change spec.nodePool",
			found.Pool.Selector, found.Nodes, cr.EffectiveSchedulerName())}
	}
	return nil
}

// noSchedulableNodesMessage says how many nodes there are and what the scheduler's own
// pods ask of one, so that the user sees which requirement excludes them.
func noSchedulableNodesMessage(cr *v1.SecondaryScheduler, found gather.Placement) string {
	if found.Nodes == 0 {
		return "the cluster has no node: no scheduler pod can start until one joins"
	}
	requirements := fmt.Sprintf("Ready (%d %s not), schedulable (%d %s cordoned)",
		found.NotReady, isOrAre(found.NotReady), found.Cordoned, isOrAre(found.Cordoned))
	if selector := render.EffectiveNodeSelector(cr); len(selector) > 0 {
		requirements += ", matching nodeSelector " + labels.Set(selector).String()
	}
	if affinity := cr.Spec.Affinity; affinity != nil && affinity.NodeAffinity != nil &&
		affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		requirements += ", matching the required node affinity of spec.affinity"
	}
	tolerated := "with no taint of effect NoSchedule or NoExecute (spec.tolerations is empty)"
	if n := len(render.EffectiveTolerations(cr)); n > 0 {
		tolerated = fmt.Sprintf("with every NoSchedule and NoExecute taint tolerated by the %d tolerations given", n)
	}
	return fmt.Sprintf("none of the cluster's %d nodes may run the scheduler's own pods, which need a node that is %s and %s. "+
		"A scheduler pod already running keeps scheduling, but no new one can start: uncordon or add such a node, or change "+
		"spec.nodeSelector, spec.affinity or spec.tolerations", found.Nodes, requirements, tolerated)
}

func isOrAre(n int32) string {
	if n == 1 {
		return "is"
	}
	return "are"
}
