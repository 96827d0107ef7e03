package render

import (
	"slices"
	"strconv"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// EffectiveNodeSelector is the node selector of the scheduler's own pods: spec.nodeSelector,
// else the deprecated highlyAvailableTopology.nodeSelector (the API refuses both at once).
func EffectiveNodeSelector(cr *v1.SecondaryScheduler) map[string]string {
	if len(cr.Spec.NodeSelector) > 0 {
		return cr.Spec.NodeSelector
	}
	if ha := highlyAvailableTopology(cr); ha != nil {
		return ha.NodeSelector
	}
	return nil
}

// EffectiveTolerations are the tolerations of the scheduler's own pods: spec.tolerations,
// else the deprecated highlyAvailableTopology.tolerations (the API refuses both at once).
func EffectiveTolerations(cr *v1.SecondaryScheduler) []corev1.Toleration {
	if len(cr.Spec.Tolerations) > 0 {
		return cr.Spec.Tolerations
	}
	if ha := highlyAvailableTopology(cr); ha != nil {
		return ha.Tolerations
	}
	return nil
}

func highlyAvailableTopology(cr *v1.SecondaryScheduler) *v1.HighlyAvailableTopology {
	if cr.Spec.Topology == nil {
		return nil
	}
	return cr.Spec.Topology.HighlyAvailableTopology
}

func isHighlyAvailable(cr *v1.SecondaryScheduler) bool {
	return cr.Spec.Topology != nil && cr.Spec.Topology.Mode == v1.HighlyAvailable
}

// PlacementMatches reports whether the scheduler's own pods may run on node: it is Ready
// and not cordoned, matches their node selector and required node affinity, and they
// tolerate each of its NoSchedule and NoExecute taints. The operator counts such nodes
// for Facts.PlacementNodes. It follows the default scheduler's filters for these fields,
// but counts a cordoned node out even when a toleration would let a pod on it: a cordoned
// node is about to be drained, and no replica should be planned for it.
func PlacementMatches(cr *v1.SecondaryScheduler, node *corev1.Node) bool {
	if node == nil || node.Spec.Unschedulable || !NodeReady(node) {
		return false
	}
	for key, value := range EffectiveNodeSelector(cr) {
		if label, found := node.Labels[key]; !found || label != value {
			return false
		}
	}
	if affinity := cr.Spec.Affinity; affinity != nil && affinity.NodeAffinity != nil {
		if required := affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution; required != nil &&
			!slices.ContainsFunc(required.NodeSelectorTerms, func(term corev1.NodeSelectorTerm) bool { return termMatches(term, node) }) {
			return false
		}
	}
	tolerations := EffectiveTolerations(cr)
	for _, taint := range node.Spec.Taints {
		if taint.Effect != corev1.TaintEffectNoSchedule && taint.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		if !slices.ContainsFunc(tolerations, func(toleration corev1.Toleration) bool {
			// Lt and Gt tolerations exist only where the API server accepts them, so
			// comparing is right wherever a pod can carry one; the logger is discarded
			// because rendering does not log.
			return toleration.ToleratesTaint(logr.Discard(), &taint, true)
		}) {
			return false
		}
	}
	return true
}

// NodeReady reports whether node's Ready condition is True.
func NodeReady(node *corev1.Node) bool {
	return NodeReadyStatus(node) == corev1.ConditionTrue
}

// NodeReadyStatus is the status of node's Ready condition, Unknown when it has none.
func NodeReadyStatus(node *corev1.Node) corev1.ConditionStatus {
	for _, condition := range node.Status.Conditions {
		if condition.Type == corev1.NodeReady {
			return condition.Status
		}
	}
	return corev1.ConditionUnknown
}

// termMatches reports whether node matches every requirement of a node selector term, as
// kube-scheduler's NodeAffinity filter decides: a term without requirements, or with one
// that cannot be read (an unknown operator, a Gt value that is no integer), matches no node.
func termMatches(term corev1.NodeSelectorTerm, node *corev1.Node) bool {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return false
	}
	for _, requirement := range term.MatchExpressions {
		value, found := node.Labels[requirement.Key]
		if !requirementMatches(requirement, value, found) {
			return false
		}
	}
	for _, requirement := range term.MatchFields {
		// metadata.name is the only field a node selector can match.
		if requirement.Key != metav1.ObjectNameField ||
			(requirement.Operator != corev1.NodeSelectorOpIn && requirement.Operator != corev1.NodeSelectorOpNotIn) ||
			!requirementMatches(requirement, node.Name, true) {
			return false
		}
	}
	return true
}

// requirementMatches applies one requirement to a label's value (found says whether the
// node has the label at all).
func requirementMatches(requirement corev1.NodeSelectorRequirement, value string, found bool) bool {
	switch requirement.Operator {
	case corev1.NodeSelectorOpIn:
		return found && slices.Contains(requirement.Values, value)
	case corev1.NodeSelectorOpNotIn:
		return !found || !slices.Contains(requirement.Values, value)
	case corev1.NodeSelectorOpExists:
		return found
	case corev1.NodeSelectorOpDoesNotExist:
		return !found
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if !found || len(requirement.Values) != 1 {
			return false
		}
		have, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return false
		}
		bound, err := strconv.ParseInt(requirement.Values[0], 10, 64)
		if err != nil {
			return false
		}
		if requirement.Operator == corev1.NodeSelectorOpGt {
			return have > bound
		}
		return have < bound
	default:
		return false
	}
}

// topologySpread spreads HighlyAvailable replicas one per node, so that losing a node
// loses at most one candidate for the lease, and over zones where it can. Only nodes the
// pods may run on count as domains (Honor for node affinity and taints): an excluded node
// would otherwise be an empty domain that DoNotSchedule waits forever to fill. Only pods
// of the same template count (matchLabelKeys pod-template-hash), so that a rollout spreads
// the new replicas among themselves rather than around the old ones it is replacing.
func topologySpread(cr *v1.SecondaryScheduler) []corev1.TopologySpreadConstraint {
	selector := &metav1.LabelSelector{MatchLabels: PodSelector(cr)}
	honor := corev1.NodeInclusionPolicyHonor
	return []corev1.TopologySpreadConstraint{
		{
			MaxSkew:            1,
			TopologyKey:        corev1.LabelHostname,
			WhenUnsatisfiable:  corev1.DoNotSchedule,
			LabelSelector:      selector,
			MatchLabelKeys:     []string{"pod-template-hash"},
			NodeAffinityPolicy: &honor,
			NodeTaintsPolicy:   &honor,
		},
		{
			MaxSkew:           1,
			TopologyKey:       corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector:     selector,
			MatchLabelKeys:    []string{"pod-template-hash"},
		},
	}
}

// setPlacement sets where the scheduler's pods run and what they may use, in both
// topology modes: the user's resources, node selector, tolerations and affinity, the
// priority class, and for HighlyAvailable mode the spread of its replicas.
func setPlacement(deployment *yaml.RNode, cr *v1.SecondaryScheduler, result *Result) error {
	podSpec := []string{"spec", "template", "spec"}
	// The asset's requests are the default; the user's resources replace them whole, so
	// that giving only limits does not keep requests the user did not ask for.
	if cr.Spec.Resources != nil {
		container, err := lookup(deployment, append(podSpec, "containers", "[name=kube-scheduler]")...)
		if err != nil {
			return err
		}
		if err := setValue(container, *cr.Spec.Resources, "resources"); err != nil {
			return err
		}
	}
	settings := []struct {
		field string
		value any
		set   bool
	}{
		{"nodeSelector", EffectiveNodeSelector(cr), len(EffectiveNodeSelector(cr)) > 0},
		{"tolerations", EffectiveTolerations(cr), len(EffectiveTolerations(cr)) > 0},
		{"affinity", cr.Spec.Affinity, cr.Spec.Affinity != nil},
		{"priorityClassName", result.priorityClassName, result.priorityClassName != ""},
		{"topologySpreadConstraints", topologySpread(cr), isHighlyAvailable(cr)},
	}
	for _, setting := range settings {
		if !setting.set {
			continue
		}
		if err := setValue(deployment, setting.value, append(podSpec, setting.field)...); err != nil {
			return err
		}
	}
	return nil
}
