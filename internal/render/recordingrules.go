package render

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// RecordingRuleTarget is the Prometheus Operator's Prometheus that is to evaluate the
// recording rules.
type RecordingRuleTarget struct {
	// Namespace is the Prometheus object's namespace, where its ruleNamespaceSelector
	// always looks.
	Namespace string
	// Labels are the labels its spec.ruleSelector.matchLabels requires.
	Labels map[string]string
}

// RecordingRuleName is the name of the PrometheusRule of cr's scheduler. It lives in the
// Prometheus's namespace, so the name includes cr's namespace; unlike ClusterBindingName
// it separates with '.', because the name of a custom resource must be a DNS subdomain.
// A namespace cannot contain '.', so no two SecondarySchedulers share a name.
func RecordingRuleName(cr *v1.SecondaryScheduler) string {
	return "secondary-scheduler." + cr.Namespace + "." + cr.Name + ".load-watcher"
}

// RecordingRules renders the PrometheusRule that defines, from node-exporter's metrics,
// the series load-watcher reads (instance:node_cpu:ratio and
// instance:node_memory_utilisation:ratio), with one series per node whose instance label
// is the Node name. It carries cr's owner labels, by which the operator finds it in
// another namespace, and target's labels, by which the Prometheus selects it.
func RecordingRules(cr *v1.SecondaryScheduler, target RecordingRuleTarget) (*unstructured.Unstructured, error) {
	if target.Namespace == "" {
		return nil, fmt.Errorf("render recording rules of %s/%s: no namespace for the Prometheus", cr.Namespace, cr.Name)
	}
	labels := OwnerLabels(cr)
	// Sorted, so that the error names the same label every time.
	for _, key := range slices.Sorted(maps.Keys(target.Labels)) {
		value := target.Labels[key]
		if own, ok := labels[key]; ok && own != value {
			// Either value loses something: the Prometheus would not select the rules, or
			// the operator would no longer find them to delete.
			return nil, fmt.Errorf("render recording rules of %s/%s: the Prometheus's ruleSelector requires label %s=%q, which the operator sets to %q",
				cr.Namespace, cr.Name, key, value, own)
		}
		labels[key] = value
	}
	node, err := newObject(cr, "prometheusrule-load-watcher.yaml", RecordingRuleName(cr), target.Namespace)
	if err != nil {
		return nil, fmt.Errorf("render recording rules of %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	if err := node.SetLabels(labels); err != nil {
		return nil, fmt.Errorf("render recording rules of %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	return toUnstructured(node)
}
