package routing

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// checkRoute refuses a route that the API server would not take, or whose pods it would
// refuse: the CRD's schema cannot check a label selector's keys, values and operators,
// nor a toleration as the API server validates a pod's. A pod that a route made invalid
// would not be created at all: failurePolicy Ignore covers a failing policy, not that.
func checkRoute(routing *v1.Routing) error {
	if _, err := metav1.LabelSelectorAsSelector(&routing.NamespaceSelector); err != nil {
		return fmt.Errorf("spec.routing.namespaceSelector: %w", err)
	}
	if _, err := metav1.LabelSelectorAsSelector(routing.PodSelector); err != nil {
		return fmt.Errorf("spec.routing.podSelector: %w", err)
	}
	if err := CheckSelectorBounds(&routing.NamespaceSelector); err != nil {
		return fmt.Errorf("spec.routing.namespaceSelector: %w", err)
	}
	if err := CheckSelectorBounds(routing.PodSelector); err != nil {
		return fmt.Errorf("spec.routing.podSelector: %w", err)
	}
	for i := range routing.Tolerations {
		if problem := tolerationProblem(&routing.Tolerations[i]); problem != "" {
			return fmt.Errorf("spec.routing.tolerations[%d]: %s", i, problem)
		}
	}
	return nil
}

// CheckSelectorBounds refuses a selector (nil selects everything) larger than a
// RoutingTable carries: the bounds keep what the routing policy evaluates for each pod
// created small.
func CheckSelectorBounds(selector *metav1.LabelSelector) error {
	if selector == nil {
		return nil
	}
	if len(selector.MatchLabels) > v1.MaxRouteSelectorLabels {
		return fmt.Errorf("%d matchLabels, more than the %d a route may have", len(selector.MatchLabels), v1.MaxRouteSelectorLabels)
	}
	if len(selector.MatchExpressions) > v1.MaxRouteSelectorRequirements {
		return fmt.Errorf("%d matchExpressions, more than the %d a route may have", len(selector.MatchExpressions), v1.MaxRouteSelectorRequirements)
	}
	for i, requirement := range selector.MatchExpressions {
		if len(requirement.Values) > v1.MaxRouteSelectorValues {
			return fmt.Errorf("matchExpressions[%d]: %d values, more than the %d a route may have", i, len(requirement.Values), v1.MaxRouteSelectorValues)
		}
	}
	return nil
}

// tolerationProblem is what the API server's validation of a pod would find wrong with
// toleration, "" when nothing.
func tolerationProblem(toleration *corev1.Toleration) string {
	if toleration.Key != "" {
		if errs := validation.IsQualifiedName(toleration.Key); len(errs) > 0 {
			return "key " + strconv.Quote(toleration.Key) + ": " + strings.Join(errs, "; ")
		}
	}
	switch toleration.Operator {
	case corev1.TolerationOpEqual, "":
		if toleration.Key == "" {
			return "operator must be Exists when key is empty"
		}
		if errs := validation.IsValidLabelValue(toleration.Value); len(errs) > 0 {
			return "value " + strconv.Quote(toleration.Value) + ": " + strings.Join(errs, "; ")
		}
	case corev1.TolerationOpExists:
		if toleration.Value != "" {
			return "value must be empty when operator is Exists"
		}
	default:
		return "operator " + strconv.Quote(string(toleration.Operator)) + " is neither Equal nor Exists"
	}
	switch toleration.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return "effect " + strconv.Quote(string(toleration.Effect)) + " is none of NoSchedule, PreferNoSchedule and NoExecute"
	}
	if toleration.TolerationSeconds != nil && toleration.Effect != corev1.TaintEffectNoExecute {
		return "tolerationSeconds is only for effect NoExecute"
	}
	return ""
}

// mayOverlap reports whether two routes may select one pod: unless their namespace
// selectors, or their pod selectors, can match no set of labels together. It looks at
// the selectors, not at the namespaces and pods that exist: a route must not start to
// race another when a namespace is labelled.
func mayOverlap(a, b *v1.Routing) bool {
	return selectorsMayOverlap(&a.NamespaceSelector, &b.NamespaceSelector) && selectorsMayOverlap(a.PodSelector, b.PodSelector)
}

// selectorsMayOverlap reports whether some set of labels matches both selectors (nil
// matches everything). Selectors it cannot parse are taken to overlap: checkSelectors
// refuses them before.
func selectorsMayOverlap(a, b *metav1.LabelSelector) bool {
	first, err := requirementsOf(a)
	if err != nil {
		return true
	}
	second, err := requirementsOf(b)
	if err != nil {
		return true
	}
	keys := map[string]bool{}
	for key := range first {
		keys[key] = true
	}
	for key := range second {
		keys[key] = true
	}
	for key := range keys {
		if !first[key].and(second[key]).satisfiable() {
			return false
		}
	}
	return true
}

// constraint is what the requirements of a selector ask of one label: to be absent, or
// present with a value in allowed (nil: any value) and not in denied.
type constraint struct {
	absent, present bool
	allowed         []string
	denied          []string
}

// and is the constraint of both.
func (c constraint) and(other constraint) constraint {
	both := constraint{absent: c.absent || other.absent, present: c.present || other.present,
		denied: append(slices.Clone(c.denied), other.denied...)}
	switch {
	case c.allowed == nil:
		both.allowed = slices.Clone(other.allowed)
	case other.allowed == nil:
		both.allowed = slices.Clone(c.allowed)
	default:
		both.allowed = []string{}
		for _, value := range c.allowed {
			if slices.Contains(other.allowed, value) {
				both.allowed = append(both.allowed, value)
			}
		}
	}
	return both
}

// satisfiable reports whether a label can meet the constraint.
func (c constraint) satisfiable() bool {
	if c.absent {
		// Absent: only a constraint that needs no value is met.
		return !c.present && c.allowed == nil
	}
	if c.allowed == nil {
		return true
	}
	return slices.ContainsFunc(c.allowed, func(value string) bool { return !slices.Contains(c.denied, value) })
}

// requirementsOf folds a selector's requirements into one constraint per label key.
func requirementsOf(selector *metav1.LabelSelector) (map[string]constraint, error) {
	parsed, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return nil, err
	}
	requirements, _ := parsed.Requirements()
	constraints := map[string]constraint{}
	for _, requirement := range requirements {
		constraints[requirement.Key()] = constraints[requirement.Key()].and(constraintOf(requirement))
	}
	return constraints, nil
}

func constraintOf(requirement labels.Requirement) constraint {
	values := requirement.ValuesUnsorted()
	switch requirement.Operator() {
	case selection.In, selection.Equals, selection.DoubleEquals:
		return constraint{present: true, allowed: values}
	case selection.NotIn, selection.NotEquals:
		return constraint{denied: values}
	case selection.Exists:
		return constraint{present: true}
	case selection.DoesNotExist:
		return constraint{absent: true}
	}
	// Gt and Lt: no label selector of a route has them; taken as any value.
	return constraint{present: true}
}
