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

// RoutingFacts are what the Routing condition of one SecondaryScheduler is reported from.
type RoutingFacts struct {
	// Verdict is what internal/routing decided of its route.
	Verdict routing.Verdict
	// Carried is the routing table's entry for it, nil when the table has none.
	Carried *v1.TableRoute
	// InEffect is its entry among the routes the routing policy was seen applying (the
	// table's status), nil when there is none: a route written is in effect a moment later.
	InEffect *v1.RouteInEffect
	// ProbeProblem says why the operator could not observe the routing policy applying
	// the table, nil when it could.
	ProbeProblem error
	// PolicyProblem says why the routing policy and its binding are not in place as the
	// installer ships them; nil when they are.
	PolicyProblem error
	// Audited is how many pods a route in mode Audit labelled (status.routing.auditedPods),
	// negative when not counted.
	Audited int
}

// Routing reports cr's route in the Routing condition: what the routing policy in the
// API server does for it (the route it was seen applying, the table's entry for cr, and
// whether the policy is in place), and when that is not what the verdict wants, why. Pods
// are routed (True) exactly while the policy is in place and was seen applying the route
// in mode Enforce, whichever generation of it; the reason is Routed once it applies the
// current one. A route written to the table is not in effect yet: the API server reads
// the table through a watch of its own, so a pod created at once may not be routed; the
// operator observes it with a probe (RoutingTable status). Without spec.routing the
// condition is removed.
func Routing(cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus, conditions *Conditions, facts RoutingFacts) {
	status.Routing = nil
	if cr.Spec.Routing == nil {
		meta.RemoveStatusCondition(&status.Conditions, string(v1.ConditionRouting))
		return
	}
	audited, carried, inEffect, verdict := facts.Audited, facts.Carried, facts.InEffect, facts.Verdict
	if audited >= 0 {
		status.Routing = &v1.RoutingStatus{AuditedPods: ptr.To(int32(audited))}
	}
	routes := inEffect != nil && inEffect.Mode == v1.RoutingEnforce && facts.PolicyProblem == nil
	wanted := verdict.Route
	switch {
	case wanted != nil && facts.PolicyProblem != nil:
		conditions.Set(v1.ConditionRouting, false, v1.ReasonRoutingPolicyMissing, policyMissingMessage(facts.PolicyProblem, carried, wanted))
	case wanted != nil && inEffect != nil && appliesAsWanted(inEffect, wanted):
		if wanted.Mode == v1.RoutingAudit {
			message := verdict.Message
			if audited >= 0 {
				message = fmt.Sprintf("%s; %d %s labelled so far (status.routing.auditedPods)", message, audited, plural(audited, "pod", "pods"))
			}
			conditions.Set(v1.ConditionRouting, false, v1.ReasonAuditing, message)
			return
		}
		conditions.Set(v1.ConditionRouting, true, v1.ReasonRouted, routedMessage(wanted))
	case wanted != nil && carried != nil && carried.Generation == wanted.Generation && carried.Mode == wanted.Mode:
		conditions.Set(v1.ConditionRouting, routes, v1.ReasonRoutingPolicyPending, fmt.Sprintf(
			"the routing table (RoutingTable %s) carries this route as of generation %d, and the API server's routing policy has not been "+
				"seen applying it yet (it does within seconds of the table's change); it %s%s",
			v1.RoutingTableName, wanted.Generation, inEffectSentence(inEffect), probeSentence(facts.ProbeProblem)))
	case wanted != nil:
		conditions.Set(v1.ConditionRouting, routes, v1.ReasonRoutingPolicyPending, fmt.Sprintf(
			"the routing table (RoutingTable %s) does not carry this route as of generation %d yet; it %s",
			v1.RoutingTableName, wanted.Generation, carriedSentence(carried)))
	case (carried != nil || inEffect != nil) && facts.PolicyProblem == nil:
		conditions.Set(v1.ConditionRouting, routes, v1.ReasonRoutingPolicyPending, fmt.Sprintf(
			"the routing table (RoutingTable %s) still %s, and is being changed because %s",
			v1.RoutingTableName, carriedSentence(carried), verdict.Message))
	default:
		conditions.Set(v1.ConditionRouting, false, verdict.Reason, verdict.Message)
	}
}

// appliesAsWanted reports whether the route the routing policy was seen applying does
// what wanted does: the same digest (render.RouteDigest), whatever the generation, so
// that an edit that leaves spec.routing alone leaves the route Routed throughout.
func appliesAsWanted(inEffect *v1.RouteInEffect, wanted *routing.Route) bool {
	digest, err := render.WantedRouteDigest(wanted)
	return err == nil && inEffect.Digest == digest
}

// inEffectSentence says what the routing policy was seen applying of a route, as a
// predicate.
func inEffectSentence(inEffect *v1.RouteInEffect) string {
	switch {
	case inEffect == nil:
		return "was seen applying no route of this SecondaryScheduler"
	case inEffect.Mode == v1.RoutingAudit:
		return fmt.Sprintf("was seen applying its route of generation %d, which only labels pods (mode Audit)", inEffect.Generation)
	}
	return fmt.Sprintf("was seen applying its route of generation %d, which routes pods", inEffect.Generation)
}

// probeSentence says why the operator cannot observe the routing policy applying the
// table, when it cannot.
func probeSentence(problem error) string {
	if problem == nil {
		return ""
	}
	return fmt.Sprintf(". The operator cannot observe it: %v", problem)
}

// policyMissingMessage says that the routing policy is not in place (problem says how),
// so that the route, carried or about to be, routes nothing, and what a cluster admin does.
func policyMissingMessage(problem error, carried *v1.TableRoute, wanted *routing.Route) string {
	table := "the routing table carries this route"
	if carried == nil || carried.Generation != wanted.Generation || carried.Mode != wanted.Mode {
		table = "the routing table is being written with this route"
	}
	return fmt.Sprintf("the routing policy is not in place (%v), so no pod is provably routed (a policy that differs may route as an "+
		"older release's did); %s meanwhile. The operator neither creates nor changes a MutatingAdmissionPolicy: a cluster admin "+
		"applies the MutatingAdmissionPolicy and MutatingAdmissionPolicyBinding %s that the installer ships (dist/routing.yaml, or, "+
		"installed with OLM, the objects the ClusterServiceVersion's description lists), as they are, labels included",
		problem, table, render.RoutingPolicyName)
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

// carriedSentence says what the table carries for a route, as a predicate.
func carriedSentence(carried *v1.TableRoute) string {
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
