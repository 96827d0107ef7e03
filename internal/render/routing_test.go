package render

import (
	"encoding/json"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/routing"
)

// testRoutes are two routes: gold pods of team-a's namespaces (DaemonSet pods included)
// to packer, with a toleration of its pool's taint, and an audit of the batch
// namespaces' pods for spreader.
func testRoutes() []routing.Route {
	return []routing.Route{
		{Owner: types.NamespacedName{Namespace: "schedulers", Name: "spreader"}, Generation: 1, SchedulerName: "spreader", Mode: v1.RoutingAudit,
			NamespaceSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"batch", "ml"}},
				{Key: "legacy", Operator: metav1.LabelSelectorOpDoesNotExist}}}},
		{Owner: types.NamespacedName{Namespace: "schedulers", Name: "packer"}, Generation: 4, SchedulerName: "packer", Mode: v1.RoutingEnforce,
			NamespaceSelector:    metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}},
			PodSelector:          &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "class", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"bronze"}}}},
			IncludeDaemonSetPods: true,
			Tolerations: []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "packed", Effect: corev1.TaintEffectNoSchedule},
				{Key: "example.com/spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](30)}}},
	}
}

func TestRoutingPolicyGolden(t *testing.T) {
	objects, err := RoutingPolicy(testRoutes(), []string{"schedulers", "secondary-scheduler-operator"})
	if err != nil {
		t.Fatal(err)
	}
	expectGoldenObjects(t, "routing", objects)

	var carried []CarriedRoute
	if err := json.Unmarshal([]byte(objects[0].GetAnnotations()[AnnotationRoutes]), &carried); err != nil {
		t.Fatal(err)
	}
	want := []CarriedRoute{{SecondaryScheduler: "schedulers/packer", Generation: 4, Mode: v1.RoutingEnforce},
		{SecondaryScheduler: "schedulers/spreader", Generation: 1, Mode: v1.RoutingAudit}}
	if len(carried) != 2 || carried[0] != want[0] || carried[1] != want[1] {
		t.Errorf("annotation lists %+v, want %+v", carried, want)
	}
	if _, err := RoutingPolicy(nil, nil); err == nil {
		t.Error("a policy without a route was rendered")
	}
}

// TestRoutingPolicySelects evaluates the policy's match conditions and its route variable,
// as rendered, against a table of pods: which route, if any, takes each. The patches are
// the API server's to apply: the integration tests create pods through it.
func TestRoutingPolicySelects(t *testing.T) {
	objects, err := RoutingPolicy(testRoutes(), []string{"schedulers"})
	if err != nil {
		t.Fatal(err)
	}
	selects := compileRoutingPolicy(t, objects[0])
	daemonSet := []any{map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent"}}
	tests := []struct {
		name            string
		namespaceLabels map[string]any
		metadata        map[string]any
		spec            map[string]any
		// want is the index of the route taken (0: packer, 1: spreader), -1 for none,
		// -2 when a match condition leaves the pod alone.
		want int64
	}{
		{"team a's pod", map[string]any{"team": "a"}, map[string]any{}, map[string]any{"schedulerName": "default-scheduler"}, 0},
		{"team a's gold pod", map[string]any{"team": "a"}, map[string]any{"labels": map[string]any{"class": "gold"}}, map[string]any{}, 0},
		{"team a's bronze pod: the pod selector says no", map[string]any{"team": "a"}, map[string]any{"labels": map[string]any{"class": "bronze"}}, map[string]any{}, -1},
		{"team a's DaemonSet pod: included by this route", map[string]any{"team": "a"}, map[string]any{"ownerReferences": daemonSet}, map[string]any{}, 0},
		{"team b's pod", map[string]any{"team": "b"}, map[string]any{}, map[string]any{}, -1},
		{"a namespace without labels", map[string]any{}, map[string]any{}, map[string]any{}, -1},
		{"batch namespace: audited", map[string]any{"tier": "batch"}, map[string]any{}, map[string]any{}, 1},
		{"legacy batch namespace: DoesNotExist says no", map[string]any{"tier": "batch", "legacy": "yes"}, map[string]any{}, map[string]any{}, -1},
		{"batch DaemonSet pod: not included", map[string]any{"tier": "ml"}, map[string]any{"ownerReferences": daemonSet}, map[string]any{}, -1},
		{"names another scheduler", map[string]any{"team": "a"}, map[string]any{}, map[string]any{"schedulerName": "volcano"}, -2},
		{"has a node", map[string]any{"team": "a"}, map[string]any{}, map[string]any{"nodeName": "node-1"}, -2},
		{"mirror pod", map[string]any{"team": "a"}, map[string]any{"annotations": map[string]any{"kubernetes.io/config.mirror": "x"}}, map[string]any{}, -2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := map[string]any{"metadata": tt.metadata, "spec": tt.spec}
			namespace := map[string]any{"metadata": map[string]any{"labels": tt.namespaceLabels}}
			if got := selects(pod, namespace); got != tt.want {
				t.Errorf("route %d, want %d", got, tt.want)
			}
		})
	}
}

// compileRoutingPolicy compiles policy's match conditions and variables with cel-go, in
// an environment with what they use of the API server's (optional types), and returns a
// function giving the route a pod takes (-2 when a match condition leaves it alone).
func compileRoutingPolicy(t *testing.T, policy *unstructured.Unstructured) func(pod, namespace map[string]any) int64 {
	t.Helper()
	env, err := cel.NewEnv(cel.OptionalTypes(), cel.Variable("object", cel.DynType), cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)))
	if err != nil {
		t.Fatal(err)
	}
	compile := func(expression string) cel.Program {
		ast, issues := env.Compile(expression)
		if issues.Err() != nil {
			t.Fatalf("compile %q: %v", expression, issues.Err())
		}
		program, err := env.Program(ast)
		if err != nil {
			t.Fatal(err)
		}
		return program
	}
	conditions, _, _ := unstructured.NestedSlice(policy.Object, "spec", "matchConditions")
	variables, _, _ := unstructured.NestedSlice(policy.Object, "spec", "variables")
	conditionPrograms := make([]cel.Program, 0, len(conditions))
	variablePrograms := make([]cel.Program, 0, len(variables))
	variableNames := make([]string, 0, len(variables))
	for _, condition := range conditions {
		conditionPrograms = append(conditionPrograms, compile(condition.(map[string]any)["expression"].(string)))
	}
	for _, variable := range variables {
		variableNames = append(variableNames, variable.(map[string]any)["name"].(string))
		variablePrograms = append(variablePrograms, compile(variable.(map[string]any)["expression"].(string)))
	}
	return func(pod, namespace map[string]any) int64 {
		values := map[string]any{}
		activation := map[string]any{"object": pod, "namespaceObject": namespace, "variables": values}
		for _, program := range conditionPrograms {
			matched, _, err := program.Eval(activation)
			if err != nil {
				t.Fatal(err)
			}
			if matched.Value() != true {
				return -2
			}
		}
		for i, program := range variablePrograms {
			value, _, err := program.Eval(activation)
			if err != nil {
				t.Fatalf("variable %s: %v", variableNames[i], err)
			}
			values[variableNames[i]] = value
		}
		return values["route"].(interface{ Value() any }).Value().(int64)
	}
}

// TestSharedRequirements: the policy matches only namespaces and pods that every route's
// selector requires a label of, so that no other pod's creation evaluates its CEL.
func TestSharedRequirements(t *testing.T) {
	labels := func(kv ...string) *metav1.LabelSelector {
		selector := &metav1.LabelSelector{MatchLabels: map[string]string{}}
		for i := 0; i < len(kv); i += 2 {
			selector.MatchLabels[kv[i]] = kv[i+1]
		}
		return selector
	}
	exists := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpExists}}}
	notIn := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"x"}}}}
	tests := []struct {
		name      string
		selectors []*metav1.LabelSelector
		want      []map[string]any
	}{
		{"one route: its values", []*metav1.LabelSelector{labels("team", "a", "tier", "gold")}, []map[string]any{
			{"key": "team", "operator": "In", "values": []string{"a"}}, {"key": "tier", "operator": "In", "values": []string{"gold"}}}},
		{"two values of one key: both", []*metav1.LabelSelector{labels("team", "b"), labels("team", "a")}, []map[string]any{
			{"key": "team", "operator": "In", "values": []string{"a", "b"}}}},
		{"a key one route lacks: none", []*metav1.LabelSelector{labels("team", "a"), labels("tier", "gold")}, []map[string]any{}},
		{"Exists and a value: exists", []*metav1.LabelSelector{labels("team", "a"), exists}, []map[string]any{
			{"key": "team", "operator": "Exists"}}},
		{"NotIn requires nothing", []*metav1.LabelSelector{notIn}, []map[string]any{}},
		{"everything: nothing required", []*metav1.LabelSelector{nil, labels("team", "a")}, []map[string]any{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sharedRequirements(tt.selectors)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
