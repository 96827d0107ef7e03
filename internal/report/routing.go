package report

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/routing"
)

// Routing reports cr's route in the Routing condition: what the routing policy in the
// API server does for it (carried: the policy's entry for cr, nil when it has none), and
// when that is not what the verdict wants, why. Pods are routed (True) exactly while the
// policy carries the route in mode Enforce, whichever generation of it. Without
// spec.routing the condition is removed. audited is how many pods a route in mode
// Audit labelled (status.routing.auditedPods), negative when not counted.
func Routing(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, conditions *Conditions, verdict routing.Verdict,
	carried *render.CarriedRoute, audited int) {
	status.Routing = nil
	if cr.Spec.Routing == nil {
		meta.RemoveStatusCondition(&status.Conditions, string(v1.ConditionRouting))
		return
	}
	if audited >= 0 {
		status.Routing = &v1.RoutingStatus{AuditedPods: ptr.To(int32(audited))}
	}
	routes := carried != nil && carried.Mode == v1.RoutingEnforce
	wanted := verdict.Route
	switch {
	case wanted != nil && carried != nil && carried.Generation == wanted.Generation && carried.Mode == wanted.Mode:
		if wanted.Mode == v1.RoutingAudit {
			message := verdict.Message
			if audited >= 0 {
				message = fmt.Sprintf("%s; %d %s labelled so far (status.routing.auditedPods)", message, audited, plural(audited, "pod", "pods"))
			}
			conditions.Set(v1.ConditionRouting, false, v1.ReasonAuditing, message)
			return
		}
		conditions.Set(v1.ConditionRouting, true, v1.ReasonRouted, routedMessage(wanted))
	case wanted != nil:
		conditions.Set(v1.ConditionRouting, routes, v1.ReasonRoutingPolicyPending, fmt.Sprintf(
			"the routing policy (MutatingAdmissionPolicy %s) does not carry this route as of generation %d yet; it %s",
			render.RoutingPolicyName, wanted.Generation, carriedSentence(carried)))
	case carried != nil:
		conditions.Set(v1.ConditionRouting, routes, v1.ReasonRoutingPolicyPending, fmt.Sprintf(
			"the routing policy (MutatingAdmissionPolicy %s) still %s, and is being changed because %s",
			render.RoutingPolicyName, carriedSentence(carried), verdict.Message))
	default:
		conditions.Set(v1.ConditionRouting, false, verdict.Reason, verdict.Message)
	}
}

// routedMessage says which new pods route sends to its scheduler.
func routedMessage(route *routing.Route) string {
	pods := "new pods"
	if route.PodSelector != nil && (len(route.PodSelector.MatchLabels) > 0 || len(route.PodSelector.MatchExpressions) > 0) {
		pods = "new pods with labels matching " + selectorText(route.PodSelector)
	}
	namespaces := "of every namespace"
	if len(route.NamespaceSelector.MatchLabels) > 0 || len(route.NamespaceSelector.MatchExpressions) > 0 {
		namespaces = "of namespaces with labels matching " + selectorText(&route.NamespaceSelector)
	}
	daemonSets := ", DaemonSet pods excepted"
	if route.IncludeDaemonSetPods {
		daemonSets = ", DaemonSet pods included"
	}
	return fmt.Sprintf("%s %s%s get spec.schedulerName %s and the label %s; pods created before keep their scheduler "+
		"(kubectl get pods -A -l %s=%s lists those routed)", pods, namespaces, daemonSets, route.SchedulerName, v1.LabelRoutedTo,
		v1.LabelRoutedTo, route.SchedulerName)
}

// carriedSentence says what the policy does for a route, as a predicate.
func carriedSentence(carried *render.CarriedRoute) string {
	if carried == nil {
		return "carries no route of this SecondaryScheduler"
	}
	what := "routes pods"
	if carried.Mode == v1.RoutingAudit {
		what = "only labels pods (mode Audit)"
	}
	return fmt.Sprintf("carries its route of generation %d, which %s", carried.Generation, what)
}

// selectorText is a label selector as kubectl's -l takes it.
func selectorText(selector *metav1.LabelSelector) string {
	return metav1.FormatLabelSelector(selector)
}
