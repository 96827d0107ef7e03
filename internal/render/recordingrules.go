package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// PrometheusRuleGVK is the Prometheus Operator's kind of rule files, which RecordingRules
// renders. The cluster may not have it.
var PrometheusRuleGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}

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
// another namespace, and target's labels, by which the Prometheus selects it; labels that
// CheckRuleSelector refuses are an error.
func RecordingRules(cr *v1.SecondaryScheduler, target RecordingRuleTarget) (*unstructured.Unstructured, error) {
	if target.Namespace == "" {
		return nil, fmt.Errorf("render recording rules of %s/%s: no namespace for the Prometheus", cr.Namespace, cr.Name)
	}
	// Callers plan around such a selector; refusing here too keeps a selector that slips
	// through from mislabelling an object the operator must later find and delete.
	if err := CheckRuleSelector(target.Labels); err != nil {
		return nil, fmt.Errorf("render recording rules of %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	labels := OwnerLabels(cr)
	maps.Copy(labels, target.Labels)
	node, err := newObject("prometheusrule-load-watcher.yaml", RecordingRuleName(cr), target.Namespace)
	if err != nil {
		return nil, fmt.Errorf("render recording rules of %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	object, err := ownObject(cr, node)
	if err != nil {
		return nil, fmt.Errorf("render recording rules of %s/%s: %w", cr.Namespace, cr.Name, err)
	}
	object.SetLabels(labels)
	return object, nil
}

// CheckRuleSelector says why no PrometheusRule of the operator can carry the labels that a
// Prometheus's spec.ruleSelector.matchLabels (selector) requires, or returns nil when one
// can: a key that is no valid label key or a value that is no valid label value (the API
// server would refuse the object), a label the operator sets on every object it manages
// to another value, or a label whose value names one SecondaryScheduler (the rules are
// shared by every scheduler reading that Prometheus, and the operator finds and deletes
// its objects by those labels).
func CheckRuleSelector(selector map[string]string) error {
	shared, perScheduler := operatorLabels()
	// Sorted, so that the error names the same label every time.
	for _, key := range slices.Sorted(maps.Keys(selector)) {
		value := selector[key]
		if err := checkLabel(key, value); err != nil {
			return fmt.Errorf("the ruleSelector requires %w", err)
		}
		if own, ok := shared[key]; ok && own != value {
			return fmt.Errorf("the ruleSelector requires label %s=%q, which the operator sets to %q on every object it manages", key, value, own)
		}
		if perScheduler[key] {
			return fmt.Errorf("the ruleSelector requires label %s=%q, which the operator sets to identify the SecondaryScheduler owning each object, "+
				"while the recording rules serve every scheduler that reads this Prometheus", key, value)
		}
	}
	return nil
}

// checkLabel says why the API server would refuse label key=value on an object: a key
// that is no valid label key, or a value that is no valid label value.
func checkLabel(key, value string) error {
	if problems := validation.IsQualifiedName(key); len(problems) > 0 {
		return fmt.Errorf("label key %s, which is no valid label key: %s", quoteBounded(key), strings.Join(problems, "; "))
	}
	if problems := validation.IsValidLabelValue(value); len(problems) > 0 {
		return fmt.Errorf("label %s=%s, which is no valid label value: %s", key, quoteBounded(value), strings.Join(problems, "; "))
	}
	return nil
}

// operatorLabels are the labels OwnerLabels sets: with the value they have on the objects
// of every scheduler, or, in perScheduler, those whose value depends on the scheduler.
// They are derived from OwnerLabels, so that a label added there is checked here too.
func operatorLabels() (shared map[string]string, perScheduler map[string]bool) {
	one := OwnerLabels(&v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "one", Name: "one", UID: "one"}})
	other := OwnerLabels(&v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "other", UID: "other"}})
	shared, perScheduler = map[string]string{}, map[string]bool{}
	for key, value := range one {
		if other[key] == value {
			shared[key] = value
		} else {
			perScheduler[key] = true
		}
	}
	return shared, perScheduler
}

// quoteBounded quotes text for an error, cut to a label value's maximum length: the
// selector comes from another object, whose text an error must not carry unbounded.
func quoteBounded(text string) string {
	const limit = validation.LabelValueMaxLength
	if len(text) <= limit {
		return strconv.Quote(text)
	}
	return strconv.Quote(strings.ToValidUTF8(text[:limit], "")) + "..."
}
