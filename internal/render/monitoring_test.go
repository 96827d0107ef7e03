package render

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestMonitoringObjectsGolden(t *testing.T) {
	objects, err := MonitoringObjects("secondary-scheduler-operator", []string{"team-b", "secondary-scheduler-operator", "team-a"},
		map[string]string{"release": "kube-prometheus-stack"})
	if err != nil {
		t.Fatal(err)
	}
	expectGoldenObjects(t, "monitoring", objects)
}

// TestServiceMonitorsSelectOnlySchedulerNamespaces: Prometheus sends its own token to every
// target a ServiceMonitor selects, and the schedulers' is selected by labels anyone who may
// create a Service can set. So no ServiceMonitor selects in every namespace: the
// schedulers' lists exactly the namespaces where schedulers run, and any other keeps to
// the operator's own namespace (it has no namespaceSelector).
func TestServiceMonitorsSelectOnlySchedulerNamespaces(t *testing.T) {
	tests := []struct {
		name                string
		schedulerNamespaces []string
		want                []string
	}{
		{"the operator's own namespace", []string{"operators"}, []string{"operators"}},
		{"OLM's target namespaces", []string{"team-b", "team-a"}, []string{"team-a", "team-b"}},
		{"a namespace named twice", []string{"team-a", "operators", "team-a"}, []string{"operators", "team-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects, err := MonitoringObjects("operators", tt.schedulerNamespaces, nil)
			if err != nil {
				t.Fatal(err)
			}
			var schedulers *unstructured.Unstructured
			for _, object := range objects {
				if object.GetKind() != ServiceMonitorGVK.Kind {
					continue
				}
				selector, found, err := unstructured.NestedMap(object.Object, "spec", "namespaceSelector")
				if err != nil {
					t.Fatal(err)
				}
				if object.GetName() == "secondary-schedulers" {
					schedulers = object
					if diff := cmp.Diff(map[string]any{"matchNames": toAny(tt.want)}, selector); diff != "" {
						t.Errorf("the schedulers' ServiceMonitor's namespaceSelector (-want +got):\n%s", diff)
					}
					continue
				}
				if found {
					t.Errorf("ServiceMonitor %s selects outside the operator's namespace: namespaceSelector %v", object.GetName(), selector)
				}
			}
			if schedulers == nil {
				t.Fatal("no ServiceMonitor secondary-schedulers rendered")
			}
		})
	}
}

func toAny(items []string) []any {
	converted := make([]any, 0, len(items))
	for _, item := range items {
		converted = append(converted, item)
	}
	return converted
}

// TestMonitoringObjectsRefuseSchedulerNamespaces: without a namespace to list, or with a
// name that Prometheus' service discovery would read as every namespace, nothing is
// rendered: the schedulers' ServiceMonitor is never widened.
func TestMonitoringObjectsRefuseSchedulerNamespaces(t *testing.T) {
	tests := []struct {
		name                string
		schedulerNamespaces []string
		want                string
	}{
		{"none", nil, "no namespace where schedulers run"},
		{"the empty name", []string{"operators", ""}, `scheduler namespace ""`},
		{"no namespace name", []string{"Team_A"}, `scheduler namespace "Team_A"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects, err := MonitoringObjects("operators", tt.schedulerNamespaces, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("MonitoringObjects(%q) = %d objects, %v; want an error saying %q", tt.schedulerNamespaces, len(objects), err, tt.want)
			}
		})
	}
}

// TestMonitoringObjectsRefuseLabels: labels from the operator's flags that the API server
// would refuse, or that would make the objects look like someone else's, are refused.
func TestMonitoringObjectsRefuseLabels(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		want   string
	}{
		{"no valid key", map[string]string{"bad key": "x"}, "no valid label key"},
		{"no valid value", map[string]string{"release": "not a value"}, "no valid label value"},
		{"the operator's managed-by label", map[string]string{LabelManagedBy: "helm"}, "the operator's own"},
		{"the operator's name label", map[string]string{LabelName: "other"}, "the operator's own"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := MonitoringObjects("operators", []string{"operators"}, tt.labels)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("MonitoringObjects(%v) = %v, want an error saying %q", tt.labels, err, tt.want)
			}
		})
	}
	if _, err := MonitoringObjects("", []string{"operators"}, nil); err == nil {
		t.Fatal("MonitoringObjects without a namespace rendered objects")
	}
}
