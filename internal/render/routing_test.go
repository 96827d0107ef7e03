package render

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	celtypes "github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/routing"
)

// testRoutes are two routes: pods of team-a's namespaces but bronze ones (DaemonSet pods
// included) to packer, with a toleration of its pool's taint, and an audit of the batch
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

// The routing policy and its binding are fixed: one rendering for every cluster, which
// the installer ships and the operator compares with the API server's.
func TestRoutingAdmissionGolden(t *testing.T) {
	objects, err := RoutingAdmission()
	if err != nil {
		t.Fatal(err)
	}
	expectGoldenObjects(t, "routing-admission", objects)
	policy, binding := &admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	for i, typed := range []any{policy, binding} {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(objects[i].Object, typed, true); err != nil {
			t.Fatalf("%s is not a valid %T: %v", objects[i].GetName(), typed, err)
		}
	}
	// The policy's parameters are the table the operator writes, by its name.
	if got := policy.Spec.ParamKind; got == nil || got.APIVersion != v1.GroupVersion.String() || got.Kind != "RoutingTable" {
		t.Errorf("the policy's paramKind is %+v, want %s RoutingTable", got, v1.GroupVersion)
	}
	if got := binding.Spec.ParamRef; got == nil || got.Name != v1.RoutingTableName || got.Namespace != "" ||
		got.ParameterNotFoundAction == nil || *got.ParameterNotFoundAction != admissionregistrationv1.AllowAction {
		t.Errorf("the binding's paramRef is %+v, want %s, allowing a missing table", got, v1.RoutingTableName)
	}
	if binding.Spec.PolicyName != policy.Name || policy.Name != RoutingPolicyName || binding.Name != RoutingPolicyName {
		t.Errorf("policy %s, binding %s of policy %s: want all %s", policy.Name, binding.Name, binding.Spec.PolicyName, RoutingPolicyName)
	}
	if *policy.Spec.FailurePolicy != admissionregistrationv1.Ignore {
		t.Errorf("failurePolicy %s: routing must never block a pod", *policy.Spec.FailurePolicy)
	}
}

func TestRoutingTableGolden(t *testing.T) {
	owner := InstallationOwner("0b7c")
	table, err := RoutingTable(testRoutes(), []string{"secondary-scheduler-operator", "schedulers", "schedulers"}, &owner)
	if err != nil {
		t.Fatal(err)
	}
	data, err := yaml.Marshal(table)
	if err != nil {
		t.Fatal(err)
	}
	expectGolden(t, "routing-table", string(data))

	shuffled := testRoutes()
	shuffled[0], shuffled[1] = shuffled[1], shuffled[0]
	again, err := RoutingTable(shuffled, []string{"schedulers", "secondary-scheduler-operator"}, &owner)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(table, again); diff != "" {
		t.Errorf("the table depends on the order of the routes or namespaces given (-first +second):\n%s", diff)
	}
}

// A table the API server would refuse is not rendered: it is refused whole, and the
// routes before it would stay.
func TestRoutingTableBounds(t *testing.T) {
	many := make([]routing.Route, v1.MaxRoutes+1)
	for i := range many {
		many[i] = routing.Route{Owner: types.NamespacedName{Namespace: "s", Name: fmt.Sprint(i)}, SchedulerName: "s", Mode: v1.RoutingEnforce}
	}
	if _, err := RoutingTable(many, nil, nil); err == nil {
		t.Errorf("%d routes rendered", len(many))
	}
	if _, err := RoutingTable(many[:v1.MaxRoutes], nil, nil); err != nil {
		t.Errorf("%d routes: %v", v1.MaxRoutes, err)
	}
	wide := many[:1]
	wide[0].PodSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "team", Operator: metav1.LabelSelectorOpIn, Values: make([]string, v1.MaxRouteSelectorValues+1)}}}
	if _, err := RoutingTable(wide, nil, nil); err == nil || !strings.Contains(err.Error(), "podSelector") {
		t.Errorf("a selector of %d values: %v", v1.MaxRouteSelectorValues+1, err)
	}
}

// TestRoutingPolicySelects evaluates the policy's match conditions and variables, as
// rendered, with the table of testRoutes as its parameters, against a table of pods:
// which route, if any, takes each. The patches are the API server's to apply: the
// integration tests create pods through it.
func TestRoutingPolicySelects(t *testing.T) {
	selects := compileRoutingPolicy(t)
	params := tableParams(t, testRoutes(), []string{"schedulers"})
	daemonSet := []any{map[string]any{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "agent"}}
	tests := []struct {
		name            string
		namespace       string
		namespaceLabels map[string]any
		metadata        map[string]any
		spec            map[string]any
		// want is the owner of the route taken, "" for none, matchConditionsSayNo when a
		// match condition leaves the pod alone.
		want string
	}{
		{"team a's pod", "a", map[string]any{"team": "a"}, map[string]any{}, map[string]any{"schedulerName": "default-scheduler"}, "schedulers/packer"},
		{"team a's gold pod", "a", map[string]any{"team": "a"}, map[string]any{"labels": map[string]any{"class": "gold"}}, map[string]any{}, "schedulers/packer"},
		{"team a's bronze pod: the pod selector says no", "a", map[string]any{"team": "a"}, map[string]any{"labels": map[string]any{"class": "bronze"}}, map[string]any{}, ""},
		{"team a's DaemonSet pod: included by this route", "a", map[string]any{"team": "a"}, map[string]any{"ownerReferences": daemonSet}, map[string]any{}, "schedulers/packer"},
		{"team b's pod", "b", map[string]any{"team": "b"}, map[string]any{}, map[string]any{}, ""},
		{"a namespace without labels", "c", map[string]any{}, map[string]any{}, map[string]any{}, ""},
		{"batch namespace: audited", "batch", map[string]any{"tier": "batch"}, map[string]any{}, map[string]any{}, "schedulers/spreader"},
		{"legacy batch namespace: DoesNotExist says no", "old", map[string]any{"tier": "batch", "legacy": "yes"}, map[string]any{}, map[string]any{}, ""},
		{"batch DaemonSet pod: not included", "ml", map[string]any{"tier": "ml"}, map[string]any{"ownerReferences": daemonSet}, map[string]any{}, ""},
		{"a namespace the table never routes", "schedulers", map[string]any{"team": "a"}, map[string]any{}, map[string]any{}, ""},
		{"names another scheduler", "a", map[string]any{"team": "a"}, map[string]any{}, map[string]any{"schedulerName": "volcano"}, matchConditionsSayNo},
		{"has a node", "a", map[string]any{"team": "a"}, map[string]any{}, map[string]any{"nodeName": "node-1"}, matchConditionsSayNo},
		{"mirror pod", "a", map[string]any{"team": "a"}, map[string]any{"annotations": map[string]any{"kubernetes.io/config.mirror": "x"}}, map[string]any{}, matchConditionsSayNo},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := map[string]any{"metadata": tt.metadata, "spec": tt.spec}
			namespace := map[string]any{"metadata": map[string]any{"name": tt.namespace, "labels": tt.namespaceLabels}}
			if got := selects(pod, namespace, params); got != tt.want {
				t.Errorf("route of %q, want %q", got, tt.want)
			}
		})
	}
	empty := map[string]any{"metadata": map[string]any{"name": "x"}, "spec": map[string]any{}}
	if got := selects(map[string]any{"metadata": map[string]any{}, "spec": map[string]any{}}, empty, empty); got != "" {
		t.Errorf("a table without routes routes to %q", got)
	}
}

// The policy's selectors select exactly as Kubernetes' label selectors do (an absent
// one selects everything): for every selector and set of labels below, as a route's
// namespace selector and as its pod selector.
func TestRoutingPolicySelectsAsLabelSelectors(t *testing.T) {
	selects := compileRoutingPolicy(t)
	requirement := func(key string, operator metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: key, Operator: operator, Values: values}
	}
	selectors := map[string]*metav1.LabelSelector{
		"nil":                    nil,
		"empty":                  {},
		"matchLabels":            {MatchLabels: map[string]string{"team": "a"}},
		"two matchLabels":        {MatchLabels: map[string]string{"team": "a", "tier": "gold"}},
		"In":                     {MatchExpressions: []metav1.LabelSelectorRequirement{requirement("team", metav1.LabelSelectorOpIn, "a", "b")}},
		"NotIn":                  {MatchExpressions: []metav1.LabelSelectorRequirement{requirement("team", metav1.LabelSelectorOpNotIn, "a", "b")}},
		"Exists":                 {MatchExpressions: []metav1.LabelSelectorRequirement{requirement("team", metav1.LabelSelectorOpExists)}},
		"DoesNotExist":           {MatchExpressions: []metav1.LabelSelectorRequirement{requirement("team", metav1.LabelSelectorOpDoesNotExist)}},
		"a key with a prefix":    {MatchExpressions: []metav1.LabelSelectorRequirement{requirement("example.com/team", metav1.LabelSelectorOpIn, "a")}},
		"matchLabels and In":     {MatchLabels: map[string]string{"tier": "gold"}, MatchExpressions: []metav1.LabelSelectorRequirement{requirement("team", metav1.LabelSelectorOpIn, "b")}},
		"In and DoesNotExist":    {MatchExpressions: []metav1.LabelSelectorRequirement{requirement("team", metav1.LabelSelectorOpIn, "a"), requirement("legacy", metav1.LabelSelectorOpDoesNotExist)}},
		"NotIn and Exists":       {MatchExpressions: []metav1.LabelSelectorRequirement{requirement("team", metav1.LabelSelectorOpNotIn, "a"), requirement("team", metav1.LabelSelectorOpExists)}},
		"In and NotIn, disjoint": {MatchExpressions: []metav1.LabelSelectorRequirement{requirement("team", metav1.LabelSelectorOpIn, "a"), requirement("team", metav1.LabelSelectorOpNotIn, "a")}},
	}
	labelSets := []map[string]string{
		nil, {"team": "a"}, {"team": "b"}, {"team": "c"}, {"team": ""}, {"tier": "gold"}, {"team": "a", "tier": "gold"},
		{"team": "b", "tier": "gold"}, {"team": "a", "legacy": "yes"}, {"example.com/team": "a"}, {"example.com/team": "b", "team": "a"},
	}
	for name, selector := range selectors {
		parsed, err := metav1.LabelSelectorAsSelector(selector)
		if err != nil {
			t.Fatal(err)
		}
		if selector == nil {
			parsed = labels.Everything() // a route without a pod selector takes every pod
		}
		for _, asPods := range []bool{false, true} {
			route := routing.Route{Owner: types.NamespacedName{Namespace: "s", Name: "r"}, SchedulerName: "r", Mode: v1.RoutingEnforce}
			if asPods {
				route.PodSelector = selector
			} else if selector != nil {
				route.NamespaceSelector = *selector
			}
			params := tableParams(t, []routing.Route{route}, nil)
			for _, set := range labelSets {
				want := parsed.Matches(labels.Set(set))
				asMap := map[string]any{}
				for key, value := range set {
					asMap[key] = value
				}
				pod := map[string]any{"metadata": map[string]any{}, "spec": map[string]any{}}
				namespace := map[string]any{"metadata": map[string]any{"name": "n"}}
				if asPods {
					pod["metadata"] = map[string]any{"labels": asMap}
				} else {
					namespace["metadata"] = map[string]any{"name": "n", "labels": asMap}
				}
				if got := selects(pod, namespace, params) != ""; got != want {
					t.Errorf("selector %s (%s) as pod selector %v, labels %v: selected %v, Kubernetes says %v", name, parsed, asPods, set, got, want)
				}
			}
		}
	}
}

// matchConditionsSayNo is what compileRoutingPolicy's function returns for a pod that
// a match condition leaves alone.
const matchConditionsSayNo = "(match conditions say no)"

// tableParams is the routing table of routes as the policy's params see it: the object
// as JSON would decode it.
func tableParams(t *testing.T, routes []routing.Route, neverRouted []string) map[string]any {
	t.Helper()
	table, err := RoutingTable(routes, neverRouted, nil)
	if err != nil {
		t.Fatal(err)
	}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(table)
	if err != nil {
		t.Fatal(err)
	}
	return content
}

// compileRoutingPolicy compiles the routing policy's match conditions and variables
// with cel-go, in an environment with what they use of the API server's (optional
// types), and returns a function giving the owner of the route a pod takes: "" for
// none, matchConditionsSayNo when a match condition leaves it alone.
func compileRoutingPolicy(t *testing.T) func(pod, namespace, params map[string]any) string {
	t.Helper()
	objects, err := RoutingAdmission()
	if err != nil {
		t.Fatal(err)
	}
	policy := objects[0]
	env, err := cel.NewEnv(cel.OptionalTypes(), cel.Variable("object", cel.DynType), cel.Variable("namespaceObject", cel.DynType),
		cel.Variable("request", cel.DynType),
		cel.Variable("params", cel.DynType), cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)))
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
	return func(pod, namespace, params map[string]any) string {
		values := map[string]any{}
		activation := map[string]any{"object": pod, "namespaceObject": namespace, "params": params, "variables": values,
			"request": map[string]any{"dryRun": false}}
		for _, program := range conditionPrograms {
			matched, _, err := program.Eval(activation)
			if err != nil {
				t.Fatal(err)
			}
			if matched.Value() != true {
				return matchConditionsSayNo
			}
		}
		for i, program := range variablePrograms {
			value, _, err := program.Eval(activation)
			if err != nil {
				if variableNames[i] == "route" {
					continue // read only when a route selects the pod
				}
				t.Fatalf("variable %s: %v", variableNames[i], err)
			}
			values[variableNames[i]] = value
		}
		routes, ok := values["routes"].(traits.Lister)
		if !ok {
			t.Fatalf("variable routes is a %T, not a list", values["routes"])
		}
		if routes.Size() == celtypes.IntZero {
			return ""
		}
		first, ok := routes.Get(celtypes.IntZero).(traits.Indexer)
		if !ok {
			t.Fatalf("a route is a %T, not a map", routes.Get(celtypes.IntZero))
		}
		return fmt.Sprint(first.Get(celtypes.String("secondaryScheduler")).Value())
	}
}
