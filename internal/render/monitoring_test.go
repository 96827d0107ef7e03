package render

import (
	"strings"
	"testing"
)

func TestMonitoringObjectsGolden(t *testing.T) {
	objects, err := MonitoringObjects("secondary-scheduler-operator", map[string]string{"release": "kube-prometheus-stack"})
	if err != nil {
		t.Fatal(err)
	}
	expectGoldenObjects(t, "monitoring", objects)
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
			_, err := MonitoringObjects("operators", tt.labels)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("MonitoringObjects(%v) = %v, want an error saying %q", tt.labels, err, tt.want)
			}
		})
	}
	if _, err := MonitoringObjects("", nil); err == nil {
		t.Fatal("MonitoringObjects without a namespace rendered objects")
	}
}
