package render

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// nodeAffinityPlugin is the in-tree filter plugin whose addedAffinity restricts every pod
// of a profile to some nodes, on top of the pod's own node selector and affinity.
const nodeAffinityPlugin = "NodeAffinity"

// NodePoolSelector is spec.nodePool as a label selector, for counting and showing the
// nodes of the pool; nil when the resource has no pool. The error says why an invalid
// selector cannot be used.
func NodePoolSelector(cr *v1.SecondaryScheduler) (labels.Selector, error) {
	if cr.Spec.NodePool == nil {
		return nil, nil
	}
	selector, err := metav1.LabelSelectorAsSelector(cr.Spec.NodePool)
	if err != nil {
		return nil, fmt.Errorf("spec.nodePool: %w", err)
	}
	return selector, nil
}

// nodePoolRequirements turns a node pool's label selector into the requirements of a node
// selector term: matchLabels k=v become k In [v] (sorted by key, for a stable config
// hash), and matchExpressions keep their operator, the four of a label selector being
// node selector operators too. An empty result (no pool, or one selecting every node)
// restricts nothing.
func nodePoolRequirements(pool *metav1.LabelSelector) ([]corev1.NodeSelectorRequirement, error) {
	if pool == nil {
		return nil, nil
	}
	// The label selector's own validation, so that an invalid pool is refused with the
	// message kubectl users know, before any of it reaches the configuration.
	if _, err := metav1.LabelSelectorAsSelector(pool); err != nil {
		return nil, fmt.Errorf("spec.nodePool: %w", err)
	}
	requirements := make([]corev1.NodeSelectorRequirement, 0, len(pool.MatchLabels)+len(pool.MatchExpressions))
	for _, key := range slices.Sorted(maps.Keys(pool.MatchLabels)) {
		requirements = append(requirements, corev1.NodeSelectorRequirement{
			Key: key, Operator: corev1.NodeSelectorOpIn, Values: []string{pool.MatchLabels[key]}})
	}
	for i, expression := range pool.MatchExpressions {
		var operator corev1.NodeSelectorOperator
		switch expression.Operator {
		case metav1.LabelSelectorOpIn:
			operator = corev1.NodeSelectorOpIn
		case metav1.LabelSelectorOpNotIn:
			operator = corev1.NodeSelectorOpNotIn
		case metav1.LabelSelectorOpExists:
			operator = corev1.NodeSelectorOpExists
		case metav1.LabelSelectorOpDoesNotExist:
			operator = corev1.NodeSelectorOpDoesNotExist
		default:
			return nil, fmt.Errorf("spec.nodePool.matchExpressions[%d]: operator %q is not In, NotIn, Exists or DoesNotExist", i, expression.Operator)
		}
		requirements = append(requirements, corev1.NodeSelectorRequirement{
			Key: expression.Key, Operator: operator, Values: slices.Clone(expression.Values)})
	}
	return requirements, nil
}

// restrictToNodePool makes every profile of config place pods only on nodes of
// spec.nodePool, through the NodeAffinity plugin's addedAffinity. A profile that already
// adds an affinity keeps it, ANDed with the pool; the rest of the user's configuration is
// left as written.
func restrictToNodePool(config *yaml.RNode, cr *v1.SecondaryScheduler) error {
	requirements, err := nodePoolRequirements(cr.Spec.NodePool)
	if err != nil || len(requirements) == 0 {
		return err
	}
	profiles, err := config.Pipe(yaml.Lookup("profiles"))
	if err != nil {
		return fmt.Errorf("read profiles: %w", err)
	}
	if yaml.IsMissingOrNull(profiles) {
		return nil
	}
	elements, err := profiles.Elements()
	if err != nil {
		return fmt.Errorf("read profiles: %w", err)
	}
	for i, profile := range elements {
		if point := nodeAffinityDisabledAt(profile); point != "" {
			return fmt.Errorf("profile %d disables the %s plugin (plugins.%s.disabled), which is what keeps its pods inside spec.nodePool: "+
				"enable it there, or remove spec.nodePool", i, nodeAffinityPlugin, point)
		}
		if err := addNodePoolAffinity(profile, requirements); err != nil {
			return fmt.Errorf("add spec.nodePool to profile %d: %w", i, err)
		}
	}
	return nil
}

// nodeAffinityDisabledAt is the extension point (filter or multiPoint) where a profile
// disables the NodeAffinity plugin, by name or with "*" without enabling it again; "" when
// the plugin filters nodes.
func nodeAffinityDisabledAt(profile *yaml.RNode) string {
	for _, point := range []string{"multiPoint", "filter"} {
		names := func(list string) []string {
			var found []string
			entries, err := profile.Pipe(yaml.Lookup("plugins", point, list))
			if err != nil || yaml.IsMissingOrNull(entries) {
				return nil
			}
			elements, _ := entries.Elements()
			for _, entry := range elements {
				if name := fieldValue(entry, "name"); name != nil {
					found = append(found, yaml.GetValue(name))
				}
			}
			return found
		}
		disabled, enabled := names("disabled"), names("enabled")
		if slices.Contains(disabled, nodeAffinityPlugin) || (slices.Contains(disabled, "*") && !slices.Contains(enabled, nodeAffinityPlugin)) {
			return point
		}
	}
	return ""
}

// addNodePoolAffinity ANDs the pool's requirements into one profile's NodeAffinity args.
func addNodePoolAffinity(profile *yaml.RNode, requirements []corev1.NodeSelectorRequirement) error {
	poolAffinity := corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: requirements}},
	}}
	pluginConfig := fieldValue(profile, "pluginConfig")
	entry, err := nodeAffinityPluginConfig(pluginConfig)
	if err != nil {
		return err
	}
	if entry == nil {
		entry = yaml.NewMapRNode(nil)
		if err := setNode(entry, yaml.NewStringRNode(nodeAffinityPlugin), "name"); err != nil {
			return err
		}
		// A new list rather than one appended to: an empty one may be null or [].
		if pluginConfig, err = ensureField(profile, "pluginConfig", yaml.NewListRNode()); err != nil {
			return err
		}
		if err := pluginConfig.PipeE(yaml.Append(entry.YNode())); err != nil {
			return fmt.Errorf("add the %s plugin config: %w", nodeAffinityPlugin, err)
		}
	}
	newArgs := yaml.NewMapRNode(nil)
	for _, field := range []struct{ name, value string }{
		{"kind", "NodeAffinityArgs"}, {"apiVersion", schedulerconfigv1.SchemeGroupVersion.String()},
	} {
		if err := setNode(newArgs, yaml.NewStringRNode(field.value), field.name); err != nil {
			return err
		}
	}
	args, err := ensureField(entry, "args", newArgs)
	if err != nil {
		return err
	}
	added := fieldValue(args, "addedAffinity")
	if added == nil {
		return setValue(args, poolAffinity, "addedAffinity")
	}
	required := fieldValue(added, "requiredDuringSchedulingIgnoredDuringExecution")
	if required == nil {
		// Only preferences so far: the pool becomes the requirement, the preferences stay.
		return setValue(added, poolAffinity.RequiredDuringSchedulingIgnoredDuringExecution,
			"requiredDuringSchedulingIgnoredDuringExecution")
	}
	terms := fieldValue(required, "nodeSelectorTerms")
	if terms == nil {
		// No term matches no node; ANDed with the pool it still matches none.
		return nil
	}
	return andTerms(terms, requirements)
}

// andTerms adds the requirements to every node selector term. Terms are ORed and the
// requirements of a term ANDed, so (t1 OR t2) AND pool is (t1 AND pool) OR (t2 AND pool).
func andTerms(terms *yaml.RNode, requirements []corev1.NodeSelectorRequirement) error {
	elements, err := terms.Elements()
	if err != nil {
		return fmt.Errorf("read nodeSelectorTerms: %w", err)
	}
	for _, term := range elements {
		// A term without requirements matches no node, and so does it ANDed with the
		// pool: adding the pool's requirements to it would widen it to the whole pool.
		if fieldValue(term, "matchExpressions") == nil && fieldValue(term, "matchFields") == nil {
			continue
		}
		expressions, err := ensureField(term, "matchExpressions", yaml.NewListRNode())
		if err != nil {
			return err
		}
		for _, requirement := range requirements {
			value, err := valueNode(requirement)
			if err != nil {
				return err
			}
			if err := expressions.PipeE(yaml.Append(value.YNode())); err != nil {
				return fmt.Errorf("add %s to a node selector term: %w", requirement.Key, err)
			}
		}
	}
	return nil
}

// nodeAffinityPluginConfig is the entry of the NodeAffinity plugin in a profile's
// pluginConfig, nil when it has none.
func nodeAffinityPluginConfig(pluginConfig *yaml.RNode) (*yaml.RNode, error) {
	if pluginConfig == nil {
		return nil, nil
	}
	entries, err := pluginConfig.Elements()
	if err != nil {
		return nil, fmt.Errorf("read pluginConfig: %w", err)
	}
	for _, entry := range entries {
		if name := fieldValue(entry, "name"); name != nil && yaml.GetValue(name) == nodeAffinityPlugin {
			return entry, nil
		}
	}
	return nil, nil
}

// ensureField is the value of a mapping's field, set to value first when it is unset (see
// fieldValue).
func ensureField(node *yaml.RNode, field string, value *yaml.RNode) (*yaml.RNode, error) {
	if existing := fieldValue(node, field); existing != nil {
		return existing, nil
	}
	if err := setNode(node, value, field); err != nil {
		return nil, err
	}
	// Read back: setting a field that exists (as null or []) copies value into its node.
	pair := node.Field(field)
	if pair == nil {
		return nil, fmt.Errorf("set %s: not a mapping", field)
	}
	return pair.Value, nil
}

// fieldValue is the value of a mapping's field, nil when the field is missing, null, an
// empty list, or node is not a mapping: the cases the configuration reads as unset.
func fieldValue(node *yaml.RNode, field string) *yaml.RNode {
	if yaml.IsMissingOrNull(node) {
		return nil
	}
	pair := node.Field(field)
	if pair == nil || yaml.IsMissingOrNull(pair.Value) {
		return nil
	}
	if value := pair.Value.YNode(); value.Kind == yaml.SequenceNode && len(value.Content) == 0 {
		return nil
	}
	return pair.Value
}
