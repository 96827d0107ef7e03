// Package routing decides which SecondarySchedulers' routes the routing table (the
// parameters of the API server's routing policy) carries, and why the others are left
// out: a route sends the new pods it selects to its scheduler (spec.routing), so a route
// to a scheduler that does not run would strand them, and two routes selecting the same
// pods would race. Decide is a pure function of the SecondarySchedulers (their spec, and
// their observed Available and Routing conditions), the cluster's facts and the time: the
// controller that writes the table and the reconciler that reports each route's
// condition both call it, and agree.
package routing

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// Route is one SecondaryScheduler's route, as the routing table carries it.
type Route struct {
	// Owner is the SecondaryScheduler, and Generation the generation whose spec.routing
	// this is.
	Owner      types.NamespacedName
	Generation int64
	// SchedulerName is the name the routed pods get.
	SchedulerName        string
	Mode                 v1.RoutingMode
	NamespaceSelector    metav1.LabelSelector
	PodSelector          *metav1.LabelSelector
	IncludeDaemonSetPods bool
	Tolerations          []corev1.Toleration
}

// Verdict is what Decide says of one SecondaryScheduler's route.
type Verdict struct {
	// Route is what the routing table should carry for it; nil when it carries nothing.
	Route *Route
	// Reason and Message say why, for the Routing condition.
	Reason  v1.ConditionReason
	Message string
	// RecheckAfter is when the verdict changes with time alone (a failover coming due);
	// zero when it does not.
	RecheckAfter time.Duration
}

// Facts are what Decide needs to know of the cluster and the operator.
type Facts struct {
	// Supported is whether the API server serves MutatingAdmissionPolicy v1.
	Supported bool
	// Allowed reports whether schedulers run in a namespace (internal/tenancy).
	Allowed func(namespace string) bool
	Now     time.Time
}

// Decide gives a verdict for each of secondarySchedulers that has spec.routing, by its
// namespace and name. Of two routes that may select the same pods, the older resource's
// is kept (creation time, then namespace and name).
func Decide(secondarySchedulers []v1.SecondaryScheduler, facts Facts) map[types.NamespacedName]Verdict {
	verdicts := map[types.NamespacedName]Verdict{}
	var candidates []*v1.SecondaryScheduler
	for i := range secondarySchedulers {
		cr := &secondarySchedulers[i]
		if cr.Spec.Routing == nil {
			continue
		}
		if verdict, refused := refuse(cr, facts); refused {
			verdicts[keyOf(cr)] = verdict
			continue
		}
		candidates = append(candidates, cr)
	}
	slices.SortFunc(candidates, func(a, b *v1.SecondaryScheduler) int {
		if order := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); order != 0 {
			return order
		}
		return cmp.Compare(keyOf(a).String(), keyOf(b).String())
	})
	var kept []*v1.SecondaryScheduler
	for _, cr := range candidates {
		if older := slices.IndexFunc(kept, func(other *v1.SecondaryScheduler) bool { return mayOverlap(other.Spec.Routing, cr.Spec.Routing) }); older >= 0 {
			verdicts[keyOf(cr)] = Verdict{Reason: v1.ReasonRoutingConflict, Message: fmt.Sprintf(
				"this route may select the same pods as the route of SecondaryScheduler %s, which is older and keeps them: give the two "+
					"routes namespace or pod selectors that no namespace or pod can match both (for example a label with different values), "+
					"or remove one spec.routing", keyOf(kept[older]))}
			continue
		}
		kept = append(kept, cr)
		verdicts[keyOf(cr)] = judge(cr, facts.Now)
	}
	return verdicts
}

// refuse gives the verdict of a route that no table can carry whatever the others are;
// refused is false when the route is a candidate.
func refuse(cr *v1.SecondaryScheduler, facts Facts) (verdict Verdict, refused bool) {
	switch {
	case !facts.Supported:
		return Verdict{Reason: v1.ReasonRoutingUnsupported, Message: "this cluster's API server serves no MutatingAdmissionPolicy " +
			"(admissionregistration.k8s.io/v1, Kubernetes 1.36 and later), through which the operator routes pods; upgrade the cluster, " +
			"or have the workloads name " + cr.EffectiveSchedulerName() + " in spec.schedulerName. The scheduler itself runs as usual"}, true
	case !cr.DeletionTimestamp.IsZero():
		return Verdict{Reason: v1.ReasonNotRouting, Message: "the SecondaryScheduler is being deleted: new pods go to the default scheduler"}, true
	case cr.EffectiveManagementState() != v1.Managed:
		return Verdict{Reason: v1.ReasonNotRouting, Message: fmt.Sprintf("managementState is %s: the operator routes pods only to a scheduler "+
			"it manages; new pods go to the default scheduler", cr.EffectiveManagementState())}, true
	case facts.Allowed != nil && !facts.Allowed(cr.Namespace):
		return Verdict{Reason: v1.ReasonNotRouting, Message: "no scheduler runs for this SecondaryScheduler (Available says why): " +
			"new pods go to the default scheduler"}, true
	case cr.Status.SchedulerName == "" || cr.Status.SchedulerName != cr.EffectiveSchedulerName():
		return Verdict{Reason: v1.ReasonNotRouting, Message: "the scheduler name " + cr.EffectiveSchedulerName() + " is not served by this " +
			"SecondaryScheduler yet (status.schedulerName; Degraded says why when it is refused): new pods go to the default scheduler"}, true
	}
	if err := checkRoute(cr.Spec.Routing); err != nil {
		return Verdict{Reason: v1.ReasonInvalidSpec, Message: err.Error()}, true
	}
	if errs := validation.IsValidLabelValue(cr.Status.SchedulerName); len(errs) > 0 {
		// The pods routed are labelled with the name: a pod the API server would refuse
		// is not created at all, failurePolicy Ignore notwithstanding.
		return Verdict{Reason: v1.ReasonInvalidSpec, Message: "the scheduler name " + cr.Status.SchedulerName + " cannot route pods: " +
			"they are labelled with it, and it is no label value (" + strings.Join(errs, "; ") + "); give spec.schedulerName a name of " +
			"at most 63 characters"}, true
	}
	return Verdict{}, false
}

// judge gives the verdict of a route that conflicts with no older one: carried in Audit
// mode whatever the scheduler's state (it changes no pod's scheduling). In Enforce mode
// it is carried while the scheduler is Available, and for failoverAfter after it stopped
// being Available while the route was carried; never for a scheduler that has not been
// Available since, such as one whose resource was refused before it ever ran.
func judge(cr *v1.SecondaryScheduler, now time.Time) Verdict {
	route := routeOf(cr)
	if route.Mode == v1.RoutingAudit {
		return Verdict{Route: route, Reason: v1.ReasonAuditing, Message: "mode Audit: new pods the route selects are labelled " +
			v1.LabelWouldRouteTo + "=" + route.SchedulerName + ", and keep their scheduler; set mode Enforce to route them"}
	}
	available := meta.FindStatusCondition(cr.Status.Conditions, string(v1.ConditionAvailable))
	if available != nil && available.Status == metav1.ConditionTrue {
		return Verdict{Route: route, Reason: v1.ReasonRouted}
	}
	stopped, wasRouted := stoppedWhileRouted(cr.Status.Conditions)
	if !wasRouted {
		return Verdict{Reason: v1.ReasonSchedulerNotAvailable, Message: "the scheduler is not Available, and was not while this route " +
			"routed pods: a route sends no pod to a scheduler that has not run (the Available condition says why, and Degraded when the " +
			"resource is refused). New pods go to the default scheduler; they are routed once the scheduler is Available"}
	}
	grace := cr.Spec.Routing.EffectiveFailoverAfter()
	if due := stopped.Add(grace).Sub(now); due > 0 {
		return Verdict{Route: route, Reason: v1.ReasonRouted, RecheckAfter: due}
	}
	return Verdict{Reason: v1.ReasonFailedOver, Message: fmt.Sprintf("the scheduler has not been Available since %s, longer than "+
		"spec.routing.failoverAfter (%v): new pods go to the default scheduler until it is Available again; pods routed before keep "+
		"its name and wait for it (status.pendingPods counts them)", stopped.UTC().Format(time.RFC3339), grace)}
}

// stoppedWhileRouted is when a scheduler that is not Available stopped being Available,
// on the evidence of status that the route routed pods to it while it was: the Routing
// condition True since no later than the Available condition turned False, or False with
// reason FailedOver (which only a scheduler that stopped while routed gets, and keeps
// until it is Available again). wasRouted is false without that evidence: the scheduler
// has not been Available while the route was carried (it never ran, its resource was
// refused, or the route was carried only while it was down), so there is nothing to fail
// over from.
func stoppedWhileRouted(conditions []metav1.Condition) (stopped time.Time, wasRouted bool) {
	available := meta.FindStatusCondition(conditions, string(v1.ConditionAvailable))
	routed := meta.FindStatusCondition(conditions, string(v1.ConditionRouting))
	if available == nil || routed == nil {
		return time.Time{}, false
	}
	stopped = available.LastTransitionTime.Time
	switch {
	case routed.Status == metav1.ConditionTrue:
		// Routing turns True only while the scheduler is Available (judge), so it is
		// evidence unless Available turned False before it did, as an older operator's
		// Routing written for a scheduler that never ran is. The API server keeps a
		// condition's time to the second: compared at that precision, a status about to
		// be written and the same status read back give one answer, and a scheduler that
		// stops within the second its route started (which a test's, or a fast crash's,
		// timing may make happen) counts as routed, as it was.
		return stopped, !stopped.Truncate(time.Second).Before(routed.LastTransitionTime.Truncate(time.Second))
	case routed.Reason == string(v1.ReasonFailedOver):
		return stopped, true
	}
	return time.Time{}, false
}

// routeOf is cr's route, as the routing table carries it.
func routeOf(cr *v1.SecondaryScheduler) *Route {
	routing := cr.Spec.Routing
	return &Route{
		Owner:                keyOf(cr),
		Generation:           cr.Generation,
		SchedulerName:        cr.Status.SchedulerName,
		Mode:                 routing.EffectiveMode(),
		NamespaceSelector:    *routing.NamespaceSelector.DeepCopy(),
		PodSelector:          routing.PodSelector.DeepCopy(),
		IncludeDaemonSetPods: routing.IncludeDaemonSetPods,
		Tolerations:          slices.Clone(routing.Tolerations),
	}
}

func keyOf(cr *v1.SecondaryScheduler) types.NamespacedName {
	return types.NamespacedName{Namespace: cr.Namespace, Name: cr.Name}
}
