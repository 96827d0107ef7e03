package render

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/routing"
)

const (
	// RoutingPolicyName names the MutatingAdmissionPolicy, and its binding, that routes
	// new pods to secondary schedulers (bindata/assets/routing): one for the cluster,
	// carrying every route.
	RoutingPolicyName = "secondary-scheduler-operator-routing"
	// AnnotationRoutes is the routing policy's annotation listing the routes it carries
	// (a JSON list of CarriedRoute), so that each SecondaryScheduler's Routing condition tells what the
	// policy in the API server does, not what the operator meant it to.
	AnnotationRoutes = "routing.secondary-scheduler.io/routes"
)

// SecondarySchedulerCRDName names the CustomResourceDefinition of the SecondaryScheduler
// API, which owns the routing policy and its binding (RoutingPolicyOwner).
const SecondarySchedulerCRDName = "secondaryschedulers.operator.secondary-scheduler.io"

// RoutingPolicyOwner is the owner reference of the routing policy and its binding: the
// SecondaryScheduler CustomResourceDefinition, whose UID is crdUID. Routing must not
// outlive the installation, and the objects an installer removes are namespaced (the
// operator's Deployment, which cannot own a cluster-scoped object) or cluster-scoped
// under names OLM generates anew at each upgrade (its roles); the CRD keeps its name and
// UID through upgrades and goes on uninstall, and the garbage collector then deletes
// what it owns, with or without the operator. It neither controls nor blocks the CRD's
// deletion.
func RoutingPolicyOwner(crdUID types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition",
		Name: SecondarySchedulerCRDName, UID: crdUID}
}

// routingAssets are the routing policy and its binding, in the order they are applied.
var routingAssets = []string{"routing/policy.yaml", "routing/binding.yaml"}

// AlwaysNeverRouted are the namespaces whose pods no route changes, beside the operator's
// and the schedulers' own: the cluster's system namespaces.
var AlwaysNeverRouted = []string{"kube-node-lease", "kube-public", "kube-system"}

// CarriedRoute is what AnnotationRoutes says of one route.
type CarriedRoute struct {
	// SecondaryScheduler is the route's owner, as namespace/name.
	SecondaryScheduler string `json:"secondaryScheduler"`
	// Generation is the owner's generation whose spec.routing the policy carries.
	Generation int64          `json:"generation"`
	Mode       v1.RoutingMode `json:"mode"`
}

// RoutingPolicy renders the routing policy and its binding for routes (at least one),
// never routing the pods of neverRouted (beside AlwaysNeverRouted). Routes are carried
// in the order of their owners' names, so that a rendering depends on the set alone.
func RoutingPolicy(routes []routing.Route, neverRouted []string) ([]*unstructured.Unstructured, error) {
	if len(routes) == 0 {
		return nil, fmt.Errorf("render the routing policy: no route")
	}
	routes = slices.Clone(routes)
	slices.SortFunc(routes, func(a, b routing.Route) int { return strings.Compare(a.Owner.String(), b.Owner.String()) })
	return renderAssets(routingAssets, map[string]string{LabelManagedBy: ManagedByValue, LabelName: NameValue}, func(_ string, node *yaml.RNode) error {
		if node.GetKind() != "MutatingAdmissionPolicy" {
			return nil
		}
		return setRoutes(node, routes, neverRouted)
	})
}

// setRoutes fills the policy's named places: the namespaces never routed, the variable
// that picks a pod's route, one mutation per route, and the annotation listing them.
func setRoutes(policy *yaml.RNode, routes []routing.Route, neverRouted []string) error {
	excluded := slices.Concat(AlwaysNeverRouted, neverRouted)
	slices.Sort(excluded)
	excluded = slices.Compact(excluded)
	names, err := lookup(policy, "spec", "matchConstraints", "namespaceSelector", "matchExpressions", "[key=kubernetes.io/metadata.name]")
	if err != nil {
		return err
	}
	if err := setValue(names, excluded, "values"); err != nil {
		return err
	}
	// The API server matches labels before it evaluates any CEL: the requirements every
	// route shares narrow the policy to the namespaces and pods that some route may
	// select, so that a pod no route could select costs its creation no evaluation.
	namespaceSelectors := make([]*metav1.LabelSelector, len(routes))
	podSelectors := make([]*metav1.LabelSelector, len(routes))
	for i := range routes {
		namespaceSelectors[i], podSelectors[i] = &routes[i].NamespaceSelector, routes[i].PodSelector
	}
	for field, selectors := range map[string][]*metav1.LabelSelector{"namespaceSelector": namespaceSelectors, "objectSelector": podSelectors} {
		shared, err := sharedRequirements(selectors)
		if err != nil {
			return err
		}
		expressions, err := lookup(policy, "spec", "matchConstraints", field, "matchExpressions")
		if err != nil {
			return err
		}
		for _, requirement := range shared {
			value, err := valueNode(requirement)
			if err != nil {
				return err
			}
			if err := expressions.PipeE(yaml.Append(value.YNode())); err != nil {
				return fmt.Errorf("add %s requirement on %s: %w", field, requirement["key"], err)
			}
		}
	}
	choices := make([]string, 0, len(routes))
	mutations := make([]any, 0, len(routes))
	carried := make([]CarriedRoute, 0, len(routes))
	for i, route := range routes {
		selects, err := selectsCEL(route)
		if err != nil {
			return fmt.Errorf("route of SecondaryScheduler %s: %w", route.Owner, err)
		}
		choices = append(choices, fmt.Sprintf("(%s) ? %d", selects, i))
		mutations = append(mutations, map[string]any{"patchType": "JSONPatch", "jsonPatch": map[string]any{
			"expression": fmt.Sprintf("variables.route == %d ? %s : []", i, patchesCEL(route))}})
		carried = append(carried, CarriedRoute{SecondaryScheduler: route.Owner.String(), Generation: route.Generation, Mode: route.Mode})
	}
	choose, err := lookup(policy, "spec", "variables", "[name=route]")
	if err != nil {
		return err
	}
	if err := setValue(choose, strings.Join(append(choices, "-1"), " : "), "expression"); err != nil {
		return err
	}
	if err := setValue(policy, mutations, "spec", "mutations"); err != nil {
		return err
	}
	annotation, err := json.Marshal(carried)
	if err != nil {
		return fmt.Errorf("list the routes carried: %w", err)
	}
	return setValue(policy, map[string]any{AnnotationRoutes: string(annotation)}, "metadata", "annotations")
}

// sharedRequirements are label requirements that every selector of selectors implies
// (nil selects everything, and implies none): for a key that each requires, with the
// values each allows when all name them (In), else only that it exists. They are maps of
// a LabelSelectorRequirement's fields, for the policy's YAML, sorted by key.
func sharedRequirements(selectors []*metav1.LabelSelector) ([]map[string]any, error) {
	// values[key] is the union of the values allowed; nil once one selector allows any.
	values := map[string][]string{}
	for i, selector := range selectors {
		parsed, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			return nil, err
		}
		requirements, _ := parsed.Requirements()
		required := map[string][]string{}
		for _, requirement := range requirements {
			key := requirement.Key()
			switch requirement.Operator() {
			case selection.In, selection.Equals, selection.DoubleEquals:
				allowed := requirement.Values().UnsortedList()
				if previous, found := required[key]; found && previous != nil {
					allowed = slices.DeleteFunc(allowed, func(value string) bool { return !slices.Contains(previous, value) })
				}
				required[key] = allowed
			case selection.Exists:
				if _, found := required[key]; !found {
					required[key] = nil
				}
			}
		}
		if i == 0 {
			values = required
			continue
		}
		for key, allowed := range values {
			theirs, found := required[key]
			switch {
			case !found:
				delete(values, key)
			case allowed == nil || theirs == nil:
				values[key] = nil
			default:
				values[key] = append(allowed, theirs...)
			}
		}
	}
	keys := slices.Sorted(maps.Keys(values))
	shared := make([]map[string]any, 0, len(keys))
	for _, key := range keys {
		if values[key] == nil {
			shared = append(shared, map[string]any{"key": key, "operator": string(metav1.LabelSelectorOpExists)})
			continue
		}
		allowed := slices.Compact(slices.Sorted(slices.Values(values[key])))
		shared = append(shared, map[string]any{"key": key, "operator": string(metav1.LabelSelectorOpIn), "values": allowed})
	}
	return shared, nil
}

// selectsCEL is the CEL condition under which route selects a pod, in the policy's
// variables: its namespace's labels, its labels, and whether a DaemonSet owns it.
func selectsCEL(route routing.Route) (string, error) {
	namespaces, err := selectorCEL(&route.NamespaceSelector, "variables.namespaceLabels")
	if err != nil {
		return "", fmt.Errorf("namespaceSelector: %w", err)
	}
	pods, err := selectorCEL(route.PodSelector, "variables.labels")
	if err != nil {
		return "", fmt.Errorf("podSelector: %w", err)
	}
	terms := []string{namespaces, pods}
	if !route.IncludeDaemonSetPods {
		terms = append(terms, "!variables.daemonSetPod")
	}
	return strings.Join(terms, " && "), nil
}

// selectorCEL is selector as a CEL condition on the labels map named labels, with a
// label selector's meaning: nil or empty selects everything; NotIn and DoesNotExist
// select a map without the key.
func selectorCEL(selector *metav1.LabelSelector, labels string) (string, error) {
	parsed, err := metav1.LabelSelectorAsSelector(selector)
	if err != nil {
		return "", err
	}
	requirements, _ := parsed.Requirements()
	if len(requirements) == 0 {
		return "true", nil
	}
	terms := make([]string, 0, len(requirements))
	for _, requirement := range requirements {
		key := celString(requirement.Key())
		values := requirement.Values().UnsortedList()
		slices.Sort(values)
		quoted := make([]string, len(values))
		for i, value := range values {
			quoted[i] = celString(value)
		}
		list := "[" + strings.Join(quoted, ", ") + "]"
		switch requirement.Operator() {
		case selection.In, selection.Equals, selection.DoubleEquals:
			terms = append(terms, fmt.Sprintf("(%s in %s && %s[%s] in %s)", key, labels, labels, key, list))
		case selection.NotIn, selection.NotEquals:
			terms = append(terms, fmt.Sprintf("!(%s in %s && %s[%s] in %s)", key, labels, labels, key, list))
		case selection.Exists:
			terms = append(terms, fmt.Sprintf("%s in %s", key, labels))
		case selection.DoesNotExist:
			terms = append(terms, fmt.Sprintf("!(%s in %s)", key, labels))
		default:
			return "", fmt.Errorf("operator %s is not one of a label selector", requirement.Operator())
		}
	}
	return strings.Join(terms, " && "), nil
}

// patchesCEL is the CEL list of JSON patches that route makes to a pod it selects: in
// mode Enforce its scheduler name, its tolerations appended, and the label
// LabelRoutedTo; in mode Audit the label LabelWouldRouteTo alone.
func patchesCEL(route routing.Route) string {
	name := celString(route.SchedulerName)
	if route.Mode == v1.RoutingAudit {
		return labelPatchCEL(v1.LabelWouldRouteTo, name)
	}
	patches := fmt.Sprintf(`[JSONPatch{op: "add", path: "/spec/schedulerName", value: %s}] + %s`, name, labelPatchCEL(v1.LabelRoutedTo, name))
	if len(route.Tolerations) == 0 {
		return patches
	}
	tolerations := make([]string, len(route.Tolerations))
	appended := make([]string, len(route.Tolerations))
	for i := range route.Tolerations {
		tolerations[i] = tolerationCEL(&route.Tolerations[i])
		appended[i] = fmt.Sprintf(`JSONPatch{op: "add", path: "/spec/tolerations/-", value: %s}`, tolerations[i])
	}
	return fmt.Sprintf(`%s + (has(object.spec.tolerations) ? [%s] : [JSONPatch{op: "add", path: "/spec/tolerations", value: [%s]}])`,
		patches, strings.Join(appended, ", "), strings.Join(tolerations, ", "))
}

// labelPatchCEL is the CEL list of the JSON patch that sets label key to the CEL string
// value, whether the pod has labels or none.
func labelPatchCEL(key, value string) string {
	pointer := strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
	return fmt.Sprintf(`(has(object.metadata.labels) ? [JSONPatch{op: "add", path: %s, value: %s}] : [JSONPatch{op: "add", path: "/metadata/labels", value: {%s: %s}}])`,
		celString("/metadata/labels/"+pointer), value, celString(key), value)
}

// tolerationCEL is toleration as a CEL map, its values dyn: the API server's CEL takes
// no map literal whose values differ in type (tolerationSeconds is a number).
func tolerationCEL(toleration *corev1.Toleration) string {
	fields := []string{}
	add := func(name, value string) {
		fields = append(fields, fmt.Sprintf("%s: dyn(%s)", celString(name), value))
	}
	if toleration.Key != "" {
		add("key", celString(toleration.Key))
	}
	if toleration.Operator != "" {
		add("operator", celString(string(toleration.Operator)))
	}
	if toleration.Value != "" {
		add("value", celString(toleration.Value))
	}
	if toleration.Effect != "" {
		add("effect", celString(string(toleration.Effect)))
	}
	if toleration.TolerationSeconds != nil {
		add("tolerationSeconds", strconv.FormatInt(*toleration.TolerationSeconds, 10))
	}
	return "{" + strings.Join(fields, ", ") + "}"
}

// celString is s as a CEL string literal. CEL's double-quoted strings take Go's escapes,
// so whatever s holds (a toleration's key comes from a user) stays a string.
func celString(s string) string { return strconv.Quote(s) }
