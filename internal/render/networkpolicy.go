package render

import (
	"cmp"
	"fmt"
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

// declaredPods is the part of a rendered Deployment that servingPodsOf reads. The
// converter fills only a struct's own fields, so that the rest of the Deployment (its pod
// template's volumes, probes, resources) is never converted: converting all of it was a
// tenth of a rendering's allocations.
type declaredPods struct {
	Spec struct {
		Selector metav1.LabelSelector `json:"selector"`
		Template struct {
			Spec struct {
				Containers []struct {
					Name  string                 `json:"name"`
					Ports []corev1.ContainerPort `json:"ports"`
				} `json:"containers"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// servingPodsOf reads a rendered Deployment's servingPods.
func servingPodsOf(deployment *unstructured.Unstructured) (servingPods, error) {
	var declared declaredPods
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(deployment.Object, &declared); err != nil {
		return servingPods{}, err
	}
	pods := servingPods{deployment: deployment.GetName(), selector: declared.Spec.Selector, ports: map[string][]corev1.ContainerPort{}}
	for _, container := range declared.Spec.Template.Spec.Containers {
		pods.ports[container.Name] = append(pods.ports[container.Name], container.Ports...)
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
		// A port without a protocol is TCP, as the API server defaults it.
		ports = append(ports, networkingv1.NetworkPolicyPort{
			Protocol: ptr.To(cmp.Or(port.Protocol, corev1.ProtocolTCP)), Port: ptr.To(intstr.FromInt32(port.ContainerPort))})
	}
	ingress := []networkingv1.NetworkPolicyIngressRule{}
	switch {
	case len(ports) == 0:
	case served.audience == anyone:
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{Ports: ports})
	case served.audience == operatorOnly && operatorNamespace != "":
		ingress = append(ingress, networkingv1.NetworkPolicyIngressRule{Ports: ports, From: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: operatorNamespace}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: OperatorPodLabels},
		}}})
	}
	node, err := newObject("networkpolicy.yaml", pods.deployment, cr.Namespace)
	if err != nil {
		return nil, err
	}
	if err := setJSONValue(node, pods.selector.MatchLabels, "spec", "podSelector", "matchLabels"); err != nil {
		return nil, err
	}
	if err := setJSONValue(node, ingress, "spec", "ingress"); err != nil {
		return nil, err
	}
	return ownObject(cr, node)
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
