package render

import (
	"fmt"
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// ServiceMonitorGVK is the Prometheus Operator's kind of scrape targets. The cluster may
// not have it.
var ServiceMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}

// AlertRulesAsset is the rule file of the alerts on the operator's and the schedulers'
// metrics (docs/runbooks.md); config/prometheus/alert-rules.yaml is its copy, for a
// Prometheus without the Prometheus Operator.
const AlertRulesAsset = "monitoring/alert-rules.yaml"

// schedulersServiceMonitorAsset is the ServiceMonitor of every scheduler's metrics, the
// one monitoring object that selects outside the operator's namespace.
const schedulersServiceMonitorAsset = "monitoring/servicemonitor-schedulers.yaml"

// monitoringAssets are the objects MonitoringObjects renders, in the order they are
// applied.
var monitoringAssets = []string{
	"monitoring/servicemonitor-operator.yaml",
	schedulersServiceMonitorAsset,
	"monitoring/prometheusrule-alerts.yaml",
}

// operatorNameValue is the name label of the operator's own objects, as config/ sets it.
const operatorNameValue = "secondary-scheduler-operator"

// MonitoringObjects renders what the operator applies in its own namespace when the
// cluster has the Prometheus Operator's API (docs/monitoring.md): a ServiceMonitor of the
// operator's metrics, one of the schedulers' in schedulerNamespaces, and a PrometheusRule
// of the alert rules. They are the operator's, labelled so, and carry labels too, by
// which a Prometheus's serviceMonitorSelector and ruleSelector select them
// (CheckMonitoringLabels).
//
// schedulerNamespaces are the namespaces where the operator runs schedulers
// (tenancy.Policy): Prometheus sends its token to every target the schedulers'
// ServiceMonitor selects, by labels anyone who may create a Service can set, so it selects
// in those namespaces only, never in every one.
func MonitoringObjects(namespace string, schedulerNamespaces []string, labels map[string]string) ([]*unstructured.Unstructured, error) {
	if namespace == "" {
		return nil, fmt.Errorf("render monitoring objects: no namespace")
	}
	scraped, err := scrapedSchedulerNamespaces(schedulerNamespaces)
	if err != nil {
		return nil, fmt.Errorf("render monitoring objects: %w", err)
	}
	if err := CheckMonitoringLabels(labels); err != nil {
		return nil, fmt.Errorf("render monitoring objects: %w", err)
	}
	own := map[string]string{LabelManagedBy: ManagedByValue, LabelName: operatorNameValue}
	maps.Copy(own, labels)
	return renderAssets(monitoringAssets, own, func(asset string, node *yaml.RNode) error {
		if err := setJSONValue(node, namespace, yaml.MetadataField, yaml.NamespaceField); err != nil {
			return err
		}
		switch {
		case asset == schedulersServiceMonitorAsset:
			return setJSONValue(node, scraped, "spec", "namespaceSelector", "matchNames")
		case node.GetKind() == PrometheusRuleGVK.Kind:
			groups, err := alertRuleGroups()
			if err != nil {
				return err
			}
			return setNode(node, groups, "spec", "groups")
		}
		return nil
	})
}

// scrapedSchedulerNamespaces are the namespaces the schedulers' ServiceMonitor selects:
// schedulerNamespaces, sorted and without duplicates. None, or an empty name (which to
// Prometheus' service discovery means every namespace), is refused rather than widened.
func scrapedSchedulerNamespaces(schedulerNamespaces []string) ([]string, error) {
	if len(schedulerNamespaces) == 0 {
		return nil, fmt.Errorf("no namespace where schedulers run, and the schedulers' ServiceMonitor selects in those only")
	}
	for _, namespace := range schedulerNamespaces {
		if problems := validation.IsDNS1123Label(namespace); len(problems) > 0 {
			return nil, fmt.Errorf("scheduler namespace %q is no namespace name: %s", namespace, problems[0])
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(schedulerNamespaces))), nil
}

// alertRuleGroups are the groups of the alert rule file.
func alertRuleGroups() (*yaml.RNode, error) {
	rules, err := loadAsset(AlertRulesAsset)
	if err != nil {
		return nil, err
	}
	return lookup(rules, "groups")
}

// CheckMonitoringLabels says why the monitoring objects cannot carry labels: a key or a
// value the API server would refuse, or a label the operator sets itself.
func CheckMonitoringLabels(labels map[string]string) error {
	for _, key := range slices.Sorted(maps.Keys(labels)) {
		if err := checkLabel(key, labels[key]); err != nil {
			return fmt.Errorf("the monitoring objects cannot carry %w", err)
		}
		if key == LabelManagedBy || key == LabelName {
			return fmt.Errorf("monitoring label %s is the operator's own, by which it knows its objects", key)
		}
	}
	return nil
}
