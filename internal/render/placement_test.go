package render

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// placementNode is a Ready, schedulable node with labels; mutate changes the rest.
func placementNode(labels map[string]string, mutate func(*corev1.Node)) *corev1.Node {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "worker-1", Labels: labels},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	if mutate != nil {
		mutate(node)
	}
	return node
}

func withTaints(taints ...corev1.Taint) func(*corev1.Node) {
	return func(node *corev1.Node) { node.Spec.Taints = taints }
}

func requiredAffinity(terms ...corev1.NodeSelectorTerm) *corev1.Affinity {
	return &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: terms},
	}}
}

func expression(key string, operator corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: operator, Values: values}
}

func TestPlacementMatches(t *testing.T) {
	infraTaint := corev1.Taint{Key: "node-role.kubernetes.io/infra", Effect: corev1.TaintEffectNoSchedule}
	infraToleration := corev1.Toleration{Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	infra := map[string]string{"node-role.kubernetes.io/infra": ""}
	tests := []struct {
		name   string
		mutate func(*v1.SecondaryScheduler)
		node   *corev1.Node
		want   bool
	}{
		{"ready schedulable node", nil, placementNode(nil, nil), true},
		{"not ready", nil, placementNode(nil, func(node *corev1.Node) {
			node.Status.Conditions[0].Status = corev1.ConditionFalse
		}), false},
		{"ready unknown", nil, placementNode(nil, func(node *corev1.Node) {
			node.Status.Conditions[0].Status = corev1.ConditionUnknown
		}), false},
		{"no Ready condition yet", nil, placementNode(nil, func(node *corev1.Node) { node.Status.Conditions = nil }), false},
		{"cordoned", nil, placementNode(nil, func(node *corev1.Node) { node.Spec.Unschedulable = true }), false},
		{"cordoned even when every taint is tolerated", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
		}, placementNode(nil, func(node *corev1.Node) { node.Spec.Unschedulable = true }), false},
		{"node selector matches", func(cr *v1.SecondaryScheduler) { cr.Spec.NodeSelector = infra }, placementNode(infra, nil), true},
		{"node selector does not match", func(cr *v1.SecondaryScheduler) { cr.Spec.NodeSelector = infra }, placementNode(nil, nil), false},
		{"node selector value differs", func(cr *v1.SecondaryScheduler) {
			cr.Spec.NodeSelector = map[string]string{"disktype": "ssd"}
		}, placementNode(map[string]string{"disktype": "hdd"}, nil), false},
		{"deprecated node selector", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable, HighlyAvailableTopology: &v1.HighlyAvailableTopology{NodeSelector: infra}}
		}, placementNode(nil, nil), false},
		{"deprecated node selector matches", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable, HighlyAvailableTopology: &v1.HighlyAvailableTopology{NodeSelector: infra}}
		}, placementNode(infra, nil), true},
		{"required affinity, one term of two matches", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Affinity = requiredAffinity(
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expression("zone", corev1.NodeSelectorOpIn, "a")}},
				corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expression("zone", corev1.NodeSelectorOpIn, "b")}})
		}, placementNode(map[string]string{"zone": "b"}, nil), true},
		{"required affinity, all expressions of a term must match", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Affinity = requiredAffinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				expression("zone", corev1.NodeSelectorOpIn, "a"), expression("gpu", corev1.NodeSelectorOpDoesNotExist)}})
		}, placementNode(map[string]string{"zone": "a", "gpu": "true"}, nil), false},
		{"required affinity NotIn and Exists", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Affinity = requiredAffinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				expression("zone", corev1.NodeSelectorOpNotIn, "c"), expression("infra", corev1.NodeSelectorOpExists)}})
		}, placementNode(map[string]string{"zone": "a", "infra": ""}, nil), true},
		{"required affinity Gt", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Affinity = requiredAffinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				expression("cores", corev1.NodeSelectorOpGt, "8")}})
		}, placementNode(map[string]string{"cores": "16"}, nil), true},
		{"required affinity Lt", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Affinity = requiredAffinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				expression("cores", corev1.NodeSelectorOpLt, "8")}})
		}, placementNode(map[string]string{"cores": "16"}, nil), false},
		{"required affinity Gt of a label that is no number", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Affinity = requiredAffinity(corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
				expression("cores", corev1.NodeSelectorOpGt, "8")}})
		}, placementNode(map[string]string{"cores": "many"}, nil), false},
		{"required affinity on the node name", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Affinity = requiredAffinity(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
				expression(metav1.ObjectNameField, corev1.NodeSelectorOpIn, "worker-1")}})
		}, placementNode(nil, nil), true},
		{"an empty term matches no node", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Affinity = requiredAffinity(corev1.NodeSelectorTerm{})
		}, placementNode(nil, nil), false},
		{"preferred affinity does not restrict", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.PreferredSchedulingTerm{{
				Weight: 1, Preference: corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{expression("zone", corev1.NodeSelectorOpIn, "a")}},
			}}}}
		}, placementNode(nil, nil), true},
		{"NoSchedule taint not tolerated", nil, placementNode(infra, withTaints(infraTaint)), false},
		{"NoSchedule taint tolerated", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Tolerations = []corev1.Toleration{infraToleration}
		}, placementNode(infra, withTaints(infraTaint)), true},
		{"NoSchedule taint tolerated by deprecated tolerations", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable, HighlyAvailableTopology: &v1.HighlyAvailableTopology{
				Tolerations: []corev1.Toleration{infraToleration}}}
		}, placementNode(infra, withTaints(infraTaint)), true},
		{"NoExecute taint not tolerated by a NoSchedule toleration", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Tolerations = []corev1.Toleration{infraToleration}
		}, placementNode(infra, withTaints(corev1.Taint{Key: "node-role.kubernetes.io/infra", Effect: corev1.TaintEffectNoExecute})), false},
		{"taint value must equal", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "batch"}}
		}, placementNode(nil, withTaints(corev1.Taint{Key: "dedicated", Value: "infra", Effect: corev1.TaintEffectNoSchedule})), false},
		{"one of two taints not tolerated", func(cr *v1.SecondaryScheduler) {
			cr.Spec.Tolerations = []corev1.Toleration{infraToleration}
		}, placementNode(infra, withTaints(infraTaint, corev1.Taint{Key: "gpu", Effect: corev1.TaintEffectNoSchedule})), false},
		{"PreferNoSchedule taint does not exclude", nil,
			placementNode(nil, withTaints(corev1.Taint{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule})), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := secondaryScheduler("placed", tt.mutate)
			if got := PlacementMatches(cr, tt.node); got != tt.want {
				t.Errorf("PlacementMatches = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReplicas(t *testing.T) {
	highlyAvailable := func(maxReplicas *int32) func(*v1.SecondaryScheduler) {
		return func(cr *v1.SecondaryScheduler) {
			cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable, HighlyAvailableTopology: &v1.HighlyAvailableTopology{MaxReplicas: maxReplicas}}
		}
	}
	tests := []struct {
		name           string
		mutate         func(*v1.SecondaryScheduler)
		placementNodes int32
		want           int32
	}{
		{"single replica", nil, 5, 1},
		{"single replica without nodes", nil, 0, 1},
		{"highly available, more nodes than the default maximum", highlyAvailable(nil), 10, v1.DefaultHighlyAvailableReplicas},
		{"highly available, fewer nodes than the maximum", highlyAvailable(ptr.To[int32](5)), 2, 2},
		{"highly available, as many nodes as the maximum", highlyAvailable(ptr.To[int32](5)), 5, 5},
		{"highly available, one node", highlyAvailable(nil), 1, 1},
		{"highly available, no node still shows a pod", highlyAvailable(nil), 0, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Replicas(secondaryScheduler("s", tt.mutate), tt.placementNodes); got != tt.want {
				t.Errorf("Replicas = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestPlacementByMode checks what differs between the topology modes: the spread, the
// PodDisruptionBudget, and the replicas counted from the facts.
func TestPlacementByMode(t *testing.T) {
	tests := []struct {
		name         string
		mode         v1.TopologyMode
		wantPDB      bool
		wantSpread   bool
		wantReplicas int64
	}{
		{"single replica", v1.SingleReplica, false, false, 1},
		{"highly available", v1.HighlyAvailable, true, true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := secondaryScheduler("s", func(cr *v1.SecondaryScheduler) { cr.Spec.Topology = &v1.Topology{Mode: tt.mode} })
			result, err := Render(cr, Facts{KubernetesMinor: 34, PlacementNodes: 2})
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			var deployment *unstructured.Unstructured
			for _, object := range result.Objects {
				kinds = append(kinds, object.GetKind())
				if object.GetKind() == "Deployment" {
					deployment = object
				}
			}
			hasPDB := false
			for i, kind := range kinds {
				if kind == "PodDisruptionBudget" {
					hasPDB = true
					if !slices.Contains(kinds[i+1:], "Deployment") {
						t.Errorf("the PodDisruptionBudget must come before the Deployment: %v", kinds)
					}
				}
			}
			if hasPDB != tt.wantPDB {
				t.Errorf("PodDisruptionBudget rendered: %v, want %v (objects %v)", hasPDB, tt.wantPDB, kinds)
			}
			replicas, _, _ := unstructured.NestedInt64(deployment.Object, "spec", "replicas")
			if replicas != tt.wantReplicas {
				t.Errorf("replicas = %d, want %d", replicas, tt.wantReplicas)
			}
			_, spread, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "topologySpreadConstraints")
			if spread != tt.wantSpread {
				t.Errorf("topologySpreadConstraints set: %v, want %v", spread, tt.wantSpread)
			}
			if _, found, _ := unstructured.NestedString(deployment.Object, "spec", "template", "spec", "priorityClassName"); found {
				t.Error("priorityClassName set without a class in the facts")
			}
		})
	}
}

func TestContainerResources(t *testing.T) {
	tests := []struct {
		name      string
		resources *corev1.ResourceRequirements
		want      map[string]any
	}{
		{"default requests", nil, map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}}},
		{"the user's replace the defaults whole", &corev1.ResourceRequirements{
			Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("4Gi")},
		}, map[string]any{"limits": map[string]any{"memory": "4Gi"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := secondaryScheduler("s", func(cr *v1.SecondaryScheduler) { cr.Spec.Resources = tt.resources })
			result, err := Render(cr, Facts{KubernetesMinor: 34})
			if err != nil {
				t.Fatal(err)
			}
			deployment := result.Objects[len(result.Objects)-1]
			containers, _, _ := unstructured.NestedSlice(deployment.Object, "spec", "template", "spec", "containers")
			got, _, _ := unstructured.NestedMap(containers[0].(map[string]any), "resources")
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
		})
	}
}
