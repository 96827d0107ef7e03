package render

import (
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
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
		var deployment appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &deployment); err != nil {
			return nil, fmt.Errorf("read rendered Deployment %s: %w", object.GetName(), err)
		}
		policy, err := networkPolicy(cr, operatorNamespace, &deployment)
		if err != nil {
			return nil, err
		}
		policies = append(policies, policy)
	}
	return policies, nil
}

// networkPolicy is the NetworkPolicy of one of cr's Deployments.
func networkPolicy(cr *v1.SecondaryScheduler, operatorNamespace string, deployment *appsv1.Deployment) (*unstructured.Unstructured, error) {
	index := slices.IndexFunc(podAudiences, func(served servedPort) bool { return served.deployment(cr) == deployment.Name })
	if index < 0 {
		return nil, fmt.Errorf("the Deployment %s has no entry in podAudiences: say who may reach its pods", deployment.Name)
	}
	served := podAudiences[index]
	selector := deployment.Spec.Selector
	if selector == nil || len(selector.MatchLabels) == 0 || len(selector.MatchExpressions) > 0 {
		return nil, fmt.Errorf("the Deployment %s selects its pods by no labels of its own", deployment.Name)
	}
	var ports []networkingv1.NetworkPolicyPort
	for _, container := range deployment.Spec.Template.Spec.Containers {
		if container.Name != served.container {
			continue
		}
		for _, port := range container.Ports {
			ports = append(ports, networkingv1.NetworkPolicyPort{
				Protocol: ptr.To(portProtocol(port.Protocol)), Port: ptr.To(intstr.FromInt32(port.ContainerPort))})
		}
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
	node, err := newObject("networkpolicy.yaml", deployment.Name, cr.Namespace)
	if err != nil {
		return nil, err
	}
	if err := setJSONValue(node, maps.Clone(selector.MatchLabels), "spec", "podSelector", "matchLabels"); err != nil {
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
