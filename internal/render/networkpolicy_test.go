package render

import (
	"maps"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	sigsyaml "sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// expectNetworkPolicies checks the NetworkPolicies of a rendered scheduler against its
// rendered Deployments, whatever they hold, as the API server and a network plugin read
// them: one per Deployment, before any Deployment, selecting exactly its pods; a port
// admitted only if the container podAudiences names declares it, from anyone or from the
// operator's pods alone as the entry says; nothing else (not an extender's port, not
// load-watcher's undeclared 2020). TestRenderGolden and TestDeschedulerGolden run it on
// every case, so that a case added is checked too.
func expectNetworkPolicies(t *testing.T, cr *v1.SecondaryScheduler, facts Facts, objects []*unstructured.Unstructured) {
	t.Helper()
	policies := map[string]networkingv1.NetworkPolicy{}
	firstDeployment := slices.IndexFunc(objects, func(object *unstructured.Unstructured) bool { return object.GetKind() == "Deployment" })
	for i, object := range objects {
		if object.GetKind() != "NetworkPolicy" {
			continue
		}
		if firstDeployment >= 0 && i > firstDeployment {
			t.Errorf("NetworkPolicy %s comes after a Deployment, whose pods could run before it is in place", object.GetName())
		}
		var policy networkingv1.NetworkPolicy
		fromUnstructured(t, object, &policy)
		policies[policy.Name] = policy
	}
	deployments := 0
	for _, object := range objects {
		if object.GetKind() != "Deployment" {
			continue
		}
		deployments++
		var deployment appsv1.Deployment
		fromUnstructured(t, object, &deployment)
		policy, ok := policies[deployment.Name]
		if !ok {
			t.Errorf("Deployment %s has no NetworkPolicy", deployment.Name)
			continue
		}
		if !maps.Equal(policy.Spec.PodSelector.MatchLabels, deployment.Spec.Selector.MatchLabels) || len(policy.Spec.PodSelector.MatchExpressions) > 0 {
			t.Errorf("NetworkPolicy %s selects %v, its Deployment's pods are %v", policy.Name, policy.Spec.PodSelector, deployment.Spec.Selector)
		}
		if !slices.Equal(policy.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
			t.Errorf("NetworkPolicy %s: policyTypes %v, want Ingress alone (the pods reach the API server, Prometheus and extenders)", policy.Name, policy.Spec.PolicyTypes)
		}
		served := podAudiences[slices.IndexFunc(podAudiences, func(served servedPort) bool { return served.deployment(cr) == deployment.Name })]
		declared := map[int32]string{}
		for _, container := range deployment.Spec.Template.Spec.Containers {
			for _, port := range container.Ports {
				declared[port.ContainerPort] = container.Name
			}
		}
		admitted := map[int32]bool{}
		for _, rule := range policy.Spec.Ingress {
			for _, port := range rule.Ports {
				if port.Port == nil || port.Port.Type != intstr.Int || port.EndPort != nil {
					t.Errorf("NetworkPolicy %s admits %v: a port by number, one at a time", policy.Name, port)
					continue
				}
				number := port.Port.IntVal
				admitted[number] = true
				if container := declared[number]; container != served.container {
					t.Errorf("NetworkPolicy %s admits port %d, which container %q declares, not %s", policy.Name, number, container, served.container)
				}
			}
			expectAudience(t, policy.Name, served.audience, facts.OperatorNamespace, rule.From)
		}
		for port, container := range declared {
			wanted := container == served.container && (served.audience == anyone || facts.OperatorNamespace != "")
			if admitted[port] != wanted {
				t.Errorf("NetworkPolicy %s admits port %d of container %s: %v, want %v", policy.Name, port, container, admitted[port], wanted)
			}
		}
		if admitted[loadWatcherPort] {
			t.Errorf("NetworkPolicy %s admits load-watcher's port %d", policy.Name, loadWatcherPort)
		}
	}
	if len(policies) != deployments {
		t.Errorf("%d NetworkPolicies for %d Deployments: %v", len(policies), deployments, slices.Sorted(maps.Keys(policies)))
	}
}

// loadWatcherPort is where scheduler-plugins' built-in load-watcher serves Go's profiler
// to anyone (load-watcher v0.2.4, pkg/watcher/watcher.go).
const loadWatcherPort = 2020

// expectAudience checks whom a rule admits: anyone (no from), or the operator's pods in
// its namespace alone.
func expectAudience(t *testing.T, policy string, audience audience, operatorNamespace string, from []networkingv1.NetworkPolicyPeer) {
	t.Helper()
	switch audience {
	case anyone:
		if len(from) != 0 {
			t.Errorf("NetworkPolicy %s admits %v only, where anyone may reach it", policy, from)
		}
	case operatorOnly:
		want := []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: operatorNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: OperatorPodLabels}}}
		if operatorNamespace == "" || !reflect.DeepEqual(from, want) {
			t.Errorf("NetworkPolicy %s admits %v, want the operator's pods alone (%v)", policy, from, want)
		}
	}
}

func fromUnstructured(t *testing.T, object *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, into); err != nil {
		t.Fatalf("read %s %s: %v", object.GetKind(), object.GetName(), err)
	}
}

// TestNetworkPolicyOfADescheduler checks who reaches a descheduler's metrics, which it
// serves without checking the caller: the operator's pods, and no one when the operator
// runs outside the cluster.
func TestNetworkPolicyOfADescheduler(t *testing.T) {
	cr := deschedulingScheduler(v1.Profile{Type: v1.TargetLoadPackingProfile}, v1.Descheduling{})
	for _, operatorNamespace := range []string{"secondary-scheduler-operator", ""} {
		facts := Facts{PrometheusAddress: "http://prometheus.monitoring.svc:9090", KubernetesMinor: 37, PlacementNodes: 1, OperatorNamespace: operatorNamespace}
		result, err := Render(cr, facts)
		if err != nil {
			t.Fatal(err)
		}
		expectNetworkPolicies(t, cr, facts, result.Objects)
		var policy networkingv1.NetworkPolicy
		for _, object := range result.Objects {
			if object.GetKind() == "NetworkPolicy" && object.GetName() == DeschedulerName(cr) {
				fromUnstructured(t, object, &policy)
			}
		}
		if want := map[bool]int{true: 1, false: 0}[operatorNamespace != ""]; len(policy.Spec.Ingress) != want {
			t.Errorf("operator namespace %q: the descheduler's policy has %d rules, want %d: %+v", operatorNamespace, len(policy.Spec.Ingress), want, policy.Spec.Ingress)
		}
		for _, rule := range policy.Spec.Ingress {
			expectAudience(t, policy.Name, operatorOnly, operatorNamespace, rule.From)
		}
	}
}

// TestNetworkPolicyOfAnUnknownDeployment checks that a Deployment podAudiences does not
// name cannot be rendered: a new one needs its audience said.
func TestNetworkPolicyOfAnUnknownDeployment(t *testing.T) {
	cr := secondaryScheduler("s", nil)
	pods := servingPods{deployment: "s-sidecar", selector: metav1.LabelSelector{MatchLabels: map[string]string{LabelName: "other"}}}
	if _, err := networkPolicy(cr, "", pods); err == nil || !strings.Contains(err.Error(), "podAudiences") {
		t.Errorf("a Deployment without an audience: %v, want an error naming podAudiences", err)
	}
	pods.deployment = WorkloadName(cr)
	pods.selector = metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: LabelName, Operator: metav1.LabelSelectorOpExists}}}
	if _, err := networkPolicy(cr, "", pods); err == nil {
		t.Error("a Deployment selecting its pods by an expression: rendered, want an error")
	}
}

// TestNetworkPolicyContainerPortProtocol checks that a port without a protocol is
// admitted as TCP, as the API server defaults it, and a UDP one as UDP.
func TestNetworkPolicyContainerPortProtocol(t *testing.T) {
	cr := secondaryScheduler("s", nil)
	deployment := &appsv1.Deployment{TypeMeta: metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"}, ObjectMeta: metav1.ObjectMeta{Name: WorkloadName(cr)},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: PodSelector(cr)},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: schedulerContainer,
				Ports: []corev1.ContainerPort{{ContainerPort: 10259}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}}}}}}}
	content, err := runtime.DefaultUnstructuredConverter.ToUnstructured(deployment)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := servingPodsOf(&unstructured.Unstructured{Object: content})
	if err != nil {
		t.Fatal(err)
	}
	object, err := networkPolicy(cr, "", pods)
	if err != nil {
		t.Fatal(err)
	}
	var policy networkingv1.NetworkPolicy
	fromUnstructured(t, object, &policy)
	want := []networkingv1.NetworkPolicyPort{{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromInt32(10259))},
		{Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(intstr.FromInt32(53))}}
	if len(policy.Spec.Ingress) != 1 || len(policy.Spec.Ingress[0].Ports) != 2 ||
		*policy.Spec.Ingress[0].Ports[0].Protocol != *want[0].Protocol || *policy.Spec.Ingress[0].Ports[1].Protocol != *want[1].Protocol ||
		policy.Spec.Ingress[0].Ports[1].Port.IntVal != 53 {
		t.Errorf("ingress %+v, want one rule with %v", policy.Spec.Ingress, want)
	}
}

// TestOperatorPodLabelsAreTheOperatorsPods checks OperatorPodLabels against the operator's
// own Deployment, which the installer and the bundle are built from: a label renamed there
// would leave the descheduler's metrics admitted from no one.
func TestOperatorPodLabelsAreTheOperatorsPods(t *testing.T) {
	data, err := os.ReadFile("../../config/manager/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for document := range strings.SplitSeq(string(data), "\n---\n") {
		var deployment appsv1.Deployment
		if err := sigsyaml.Unmarshal([]byte(document), &deployment); err != nil {
			t.Fatal(err)
		}
		if deployment.Kind != "Deployment" {
			continue
		}
		found = true
		for key, value := range OperatorPodLabels {
			if deployment.Spec.Template.Labels[key] != value {
				t.Errorf("the operator's pods are labelled %v, which lacks %s=%s of OperatorPodLabels", deployment.Spec.Template.Labels, key, value)
			}
		}
	}
	if !found {
		t.Fatal("config/manager/manager.yaml holds no Deployment")
	}
}
