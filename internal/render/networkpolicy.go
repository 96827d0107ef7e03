package render

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// OperatorPodLabels are the labels of the operator's own pods (config/manager's pod
// template, which the bundle's ClusterServiceVersion copies): a descheduler's metrics,
// which it serves without checking the caller, are admitted from those pods alone.
var OperatorPodLabels = map[string]string{
	LabelName:       operatorNameValue,
	"control-plane": "controller-manager",
}

// audience is who may reach what a container of a scheduler's pods serves.
type audience int

const (
	// anyone: the server checks each caller itself (kube-scheduler serves /metrics only
	// to a caller the API server authenticates and authorizes, and its health to all).
	anyone audience = iota
	// operatorOnly: the server checks no caller; only the operator reads it.
	operatorOnly
)

// servedPort is the container of one of a scheduler's Deployments whose declared ports
// others reach, and who may.
type servedPort struct {
	deployment func(*v1.SecondaryScheduler) string
	container  string
	audience   audience
}

// podAudiences say, for each Deployment render makes, which container serves others and
// to whom. Its other containers' ports (an extender's, which kube-scheduler calls over
// the pod's loopback) and whatever a process listens on without declaring it (load-
// watcher's port 2020) are admitted from no one. A Deployment missing here is an error of
// rendering, so that a new one cannot go out without its policy.
var podAudiences = []servedPort{
	{deployment: WorkloadName, container: schedulerContainer, audience: anyone},
	{deployment: DeschedulerName, container: deschedulerContainer, audience: operatorOnly},
}

// networkPolicies are the NetworkPolicies of cr's Deployments among objects, one each,
// named as it is and selecting its pods: each admits the ports its podAudiences entry
// declares, from whom the entry says (the operator's pods in operatorNamespace, which
// none are when it is "": an operator outside the cluster, where no policy can name it).
// They are derived from the rendered Deployments, so that a port declared, a container or
// a Deployment added is covered without editing this.
func networkPolicies(cr *v1.SecondaryScheduler, operatorNamespace string, objects []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var policies []*unstructured.Unstructured
	for _, object := range objects {
		if object.GetKind() != "Deployment" {
			continue
		}
		pods, err := servingPodsOf(object)
		if err != nil {
			return nil, fmt.Errorf("read rendered Deployment %s: %w", object.GetName(), err)
		}
		policy, err := networkPolicy(cr, operatorNamespace, pods)
		if err != nil {
			return nil, err
		}
		policies = append(policies, policy)
	}
	return policies, nil
}

// servingPods is what the NetworkPolicy of a Deployment is derived from: its name, the
// selector of its pods, and the ports each of their containers declares.
type servingPods struct {
	deployment string
	selector   metav1.LabelSelector
	// ports are the ports each container declares, by the container's name.
	ports map[string][]corev1.ContainerPort
}

// servingPodsOf reads a rendered Deployment's servingPods, converting only those fields:
// the whole Deployment's conversion was a tenth of a rendering's allocations.
func servingPodsOf(deployment *unstructured.Unstructured) (servingPods, error) {
	pods := servingPods{deployment: deployment.GetName(), ports: map[string][]corev1.ContainerPort{}}
	if selector, found, err := unstructured.NestedFieldNoCopy(deployment.Object, "spec", "selector"); err != nil {
		return servingPods{}, err
	} else if found {
		selectorMap, ok := selector.(map[string]any)
		if !ok {
			return servingPods{}, fmt.Errorf("spec.selector is a %T", selector)
		}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(selectorMap, &pods.selector); err != nil {
			return servingPods{}, fmt.Errorf("spec.selector: %w", err)
		}
	}
	containers, _, err := unstructured.NestedFieldNoCopy(deployment.Object, "spec", "template", "spec", "containers")
	if err != nil {
		return servingPods{}, err
	}
	list, _ := containers.([]any)
	for _, item := range list {
		container, ok := item.(map[string]any)
		if !ok {
			return servingPods{}, fmt.Errorf("a container is a %T", item)
		}
		name, _, err := unstructured.NestedString(container, "name")
		if err != nil {
			return servingPods{}, err
		}
		declared, _, err := unstructured.NestedFieldNoCopy(container, "ports")
		if err != nil {
			return servingPods{}, err
		}
		ports, _ := declared.([]any)
		for _, port := range ports {
			portMap, ok := port.(map[string]any)
			if !ok {
				return servingPods{}, fmt.Errorf("a port of container %s is a %T", name, port)
			}
			var containerPort corev1.ContainerPort
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(portMap, &containerPort); err != nil {
				return servingPods{}, fmt.Errorf("a port of container %s: %w", name, err)
			}
			pods.ports[name] = append(pods.ports[name], containerPort)
		}
	}
	return pods, nil
}

// networkPolicy is the NetworkPolicy of one of cr's Deployments, from its servingPods.
func networkPolicy(cr *v1.SecondaryScheduler, operatorNamespace string, pods servingPods) (*unstructured.Unstructured, error) {
	index := slices.IndexFunc(podAudiences, func(served servedPort) bool { return served.deployment(cr) == pods.deployment })
	if index < 0 {
		return nil, fmt.Errorf("the Deployment %s has no entry in podAudiences: say who may reach its pods", pods.deployment)
	}
	served := podAudiences[index]
	if len(pods.selector.MatchLabels) == 0 || len(pods.selector.MatchExpressions) > 0 {
		return nil, fmt.Errorf("the Deployment %s selects its pods by no labels of its own", pods.deployment)
	}
	var ports []networkingv1.NetworkPolicyPort
	for _, port := range pods.ports[served.container] {
		ports = append(ports, networkingv1.NetworkPolicyPort{
			Protocol: ptr.To(portProtocol(port.Protocol)), Port: ptr.To(intstr.FromInt32(port.ContainerPort))})
	}
	ingress := []networkingv1.NetworkPolicyIngressRule{}
	switch {
	case len(ports) == 0:
	case served.audience == anyone:
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{Ports: ports})
	case served.audience == operatorOnly && operatorNamespace != "":
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{Ports: ports, From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: operatorNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: maps.Clone(OperatorPodLabels)},
		}}})
	}
	node, err := newObject("networkpolicy.yaml", pods.deployment, cr.Namespace)
	if err != nil {
		return nil, err
	}
	if err := setJSONValue(node, maps.Clone(pods.selector.MatchLabels), "spec", "podSelector", "matchLabels"); err != nil {
		return nil, err
	}
	if err := setJSONValue(node, ingress, "spec", "ingress"); err != nil {
		return nil, err
	}
	return ownObject(cr, node)
}

// portProtocol is a container port's protocol: TCP when it names none, as the API server
// defaults it.
func portProtocol(protocol corev1.Protocol) corev1.Protocol {
	if protocol == "" {
		return corev1.ProtocolTCP
	}
	return protocol
}

// beforeDeployments inserts policies into objects just before the first Deployment, so
// that they are applied before any pod they protect runs.
func beforeDeployments(objects, policies []*unstructured.Unstructured) []*unstructured.Unstructured {
	index := slices.IndexFunc(objects, func(object *unstructured.Unstructured) bool { return object.GetKind() == "Deployment" })
	if index < 0 {
		index = len(objects)
	}
	return slices.Insert(objects, index, policies...)
}
