package render

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/routing"
)

// RoutingPolicyName names the MutatingAdmissionPolicy, and its binding, that routes new
// pods to secondary schedulers (bindata/assets/routing): one for the cluster, fixed, which
// the installer ships; the RoutingTable of v1.RoutingTableName, which the operator writes,
// is its parameters.
const RoutingPolicyName = "secondary-scheduler-operator-routing"

// SchedulerNamePolicyName is the name of the policy that labels pods with their
// scheduler's name (LabelSchedulerName), and of its binding.
const SchedulerNamePolicyName = "secondary-scheduler-operator-scheduler-name"

// SecondarySchedulerCRDName names the CustomResourceDefinition of the SecondaryScheduler
// API, which owns what the operator writes once for the installation (InstallationOwner).
const SecondarySchedulerCRDName = "secondaryschedulers.operator.secondary-scheduler.io"

// InstallationOwner is the owner reference of what the operator writes once for the
// installation, the routing table and scheduler-plugins' controller: the
// SecondaryScheduler CustomResourceDefinition, whose UID is crdUID. Neither must outlive
// the installation, and the objects an installer removes are namespaced (the operator's
// Deployment, which cannot own a cluster-scoped object) or cluster-scoped under names OLM
// generates anew at each upgrade (its roles); the CRD keeps its name and UID through
// upgrades and goes on uninstall, and the garbage collector then deletes what it owns,
// with or without the operator: without its table, the routing policy routes nothing. It
// neither controls nor blocks the CRD's deletion.
func InstallationOwner(crdUID types.UID) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: apiextensionsv1.SchemeGroupVersion.String(), Kind: "CustomResourceDefinition",
		Name: SecondarySchedulerCRDName, UID: crdUID}
}

// routingAssets are the routing policy and its binding, in the order they are applied.
var routingAssets = []string{"routing/policy.yaml", "routing/binding.yaml"}

// schedulerNameAssets are the scheduler-name policy and its binding, in the order they are
// applied.
var schedulerNameAssets = []string{"routing/scheduler-name-policy.yaml", "routing/scheduler-name-binding.yaml"}

// SchedulerNameAdmission renders the policy that labels each pod with its scheduler's name
// (LabelSchedulerName), by which a descheduler selects its scheduler's pods, and its
// binding: fixed, shipped beside the routing policy, checked by the operator as that one is.
func SchedulerNameAdmission() ([]*unstructured.Unstructured, error) {
	return renderAssets(schedulerNameAssets, map[string]string{LabelManagedBy: ManagedByValue, LabelName: NameValue}, nil)
}

// RoutingAdmission renders the routing policy and its binding, which are the same for
// every cluster: the installer ships them (its generator calls this), and the operator
// checks that the API server has them as rendered. They carry the operator's managed-by
// label, which the operator's cache selects them by.
func RoutingAdmission() ([]*unstructured.Unstructured, error) {
	return renderAssets(routingAssets, map[string]string{LabelManagedBy: ManagedByValue, LabelName: NameValue}, nil)
}

// RoutingTable renders the routing table that carries routes, never routing the pods of
// the namespaces neverRouted (kube-system, kube-public and kube-node-lease the policy
// leaves alone itself), owned by owner when it is not nil (InstallationOwner). Routes are
// carried in the order of their owners' namespace/name, and the namespaces sorted, so
// that a rendering depends on the sets alone.
func RoutingTable(routes []routing.Route, neverRouted []string, owner *metav1.OwnerReference) (*v1.RoutingTable, error) {
	if len(routes) > v1.MaxRoutes {
		return nil, fmt.Errorf("render the routing table: %d routes, more than the %d a table carries", len(routes), v1.MaxRoutes)
	}
	namespaces := slices.Compact(slices.Sorted(slices.Values(neverRouted)))
	namespaces = slices.DeleteFunc(namespaces, func(namespace string) bool { return namespace == "" })
	if len(namespaces) > v1.MaxNeverRoutedNamespaces {
		return nil, fmt.Errorf("render the routing table: %d namespaces never routed, more than the %d a table names", len(namespaces),
			v1.MaxNeverRoutedNamespaces)
	}
	routes = slices.Clone(routes)
	slices.SortFunc(routes, func(a, b routing.Route) int { return strings.Compare(a.Owner.String(), b.Owner.String()) })
	table := &v1.RoutingTable{
		TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "RoutingTable"},
		ObjectMeta: metav1.ObjectMeta{Name: v1.RoutingTableName,
			Labels: map[string]string{LabelManagedBy: ManagedByValue, LabelName: NameValue}},
		Spec: v1.RoutingTableSpec{Routes: make([]v1.TableRoute, 0, len(routes)), NeverRoutedNamespaces: namespaces},
	}
	if owner != nil {
		table.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	for i := range routes {
		route, err := tableRoute(&routes[i])
		if err != nil {
			return nil, fmt.Errorf("render the routing table: route of SecondaryScheduler %s: %w", routes[i].Owner, err)
		}
		table.Spec.Routes = append(table.Spec.Routes, route)
	}
	return table, nil
}

// tableRoute is route as the table carries it.
func tableRoute(route *routing.Route) (v1.TableRoute, error) {
	namespaces, err := routeSelector(&route.NamespaceSelector)
	if err != nil {
		return v1.TableRoute{}, fmt.Errorf("namespaceSelector: %w", err)
	}
	carried := v1.TableRoute{SecondaryScheduler: route.Owner.String(), Generation: route.Generation, SchedulerName: route.SchedulerName,
		Mode: route.Mode, IncludeDaemonSetPods: route.IncludeDaemonSetPods}
	if namespaces != nil {
		carried.NamespaceSelector = *namespaces
	}
	if carried.PodSelector, err = routeSelector(route.PodSelector); err != nil {
		return v1.TableRoute{}, fmt.Errorf("podSelector: %w", err)
	}
	if len(route.Tolerations) > v1.MaxRouteTolerations {
		return v1.TableRoute{}, fmt.Errorf("%d tolerations, more than %d", len(route.Tolerations), v1.MaxRouteTolerations)
	}
	for _, toleration := range route.Tolerations {
		carried.Tolerations = append(carried.Tolerations, v1.RouteToleration{Key: toleration.Key, Operator: string(toleration.Operator),
			Value: toleration.Value, Effect: string(toleration.Effect), TolerationSeconds: toleration.TolerationSeconds})
	}
	return carried, nil
}

// routeSelector is selector as a route carries it, nil when it selects everything: the
// table takes a label selector's fields as they are, and the policy gives them a label
// selector's meaning.
func routeSelector(selector *metav1.LabelSelector) (*v1.RouteSelector, error) {
	if selector == nil || len(selector.MatchLabels) == 0 && len(selector.MatchExpressions) == 0 {
		return nil, nil
	}
	if err := routing.CheckSelectorBounds(selector); err != nil {
		return nil, err
	}
	carried := &v1.RouteSelector{}
	if len(selector.MatchLabels) > 0 {
		carried.MatchLabels = make(map[string]v1.LabelValue, len(selector.MatchLabels))
		for key, value := range selector.MatchLabels {
			carried.MatchLabels[key] = v1.LabelValue(value)
		}
	}
	for _, requirement := range selector.MatchExpressions {
		carried.MatchExpressions = append(carried.MatchExpressions, v1.RouteSelectorRequirement{Key: requirement.Key,
			Operator: requirement.Operator, Values: slices.Clone(requirement.Values)})
	}
	return carried, nil
}

// RoutingProbeLabel marks the operator's routing probe: a pod it creates in dry run only,
// in its own namespace, which the routing policy annotates with
// RoutingTableGenerationAnnotation (bindata/assets/routing/policy.yaml).
const RoutingProbeLabel = "routing.secondary-scheduler.io/probe"

// RoutingTableGenerationAnnotation is where the routing policy writes, on the probe, the
// generation of the routing table it evaluates.
const RoutingTableGenerationAnnotation = "routing.secondary-scheduler.io/table-generation"

// RoutingProbePodName names the probe; a dry-run create makes nothing, so one name serves.
const RoutingProbePodName = "secondary-scheduler-operator-routing-probe"

// RoutingProbePod is the pod whose dry-run create in operatorNamespace shows which
// generation of the routing table the API server's routing policy applies: writing the
// table is not enough for a route to be in effect, since the API server reads policy
// parameters through a watch of its own, which lags. It is never created (the installer's
// policy secondary-scheduler-operator-dry-run-only refuses the operator any pod it does
// not create in dry run), and is made to pass what a namespace commonly enforces: Pod
// Security's restricted level, and a quota that asks for requests and limits.
func RoutingProbePod(operatorNamespace string) *corev1.Pod {
	tiny := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m"), corev1.ResourceMemory: resource.MustParse("1Mi")}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: RoutingProbePodName,
			Labels: map[string]string{RoutingProbeLabel: "true", LabelManagedBy: ManagedByValue, LabelName: NameValue}},
		Spec: corev1.PodSpec{
			AutomountServiceAccountToken: ptr.To(false),
			SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "probe", Image: RoutingProbeImage,
				Resources: corev1.ResourceRequirements{Requests: tiny, Limits: tiny},
				SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}},
			}},
		},
	}
}

// RoutingProbeImage is the probe's image, which nothing pulls: a dry run runs no pod.
const RoutingProbeImage = "registry.k8s.io/pause:3.10"

// RoutingTableGenerationOf is the routing table's generation the routing policy wrote on
// a probe as the API server answered its dry-run create; false when it wrote none (no
// policy, an older policy, or no table).
func RoutingTableGenerationOf(probe *corev1.Pod) (int64, bool) {
	value, found := probe.Annotations[RoutingTableGenerationAnnotation]
	if !found {
		return 0, false
	}
	generation, err := strconv.ParseInt(value, 10, 64)
	return generation, err == nil
}

// RouteDigest identifies what route does, whatever its generation: a hash of its JSON as
// the table carries it, without the generation. The routing policy was seen applying a
// route when the table's status holds its digest (v1.RouteInEffect).
func RouteDigest(route v1.TableRoute) string {
	route.Generation = 0
	content, err := json.Marshal(route)
	if err != nil {
		return "" // not reached: a TableRoute holds strings, numbers and lists of them
	}
	sum := sha256.Sum256(content)
	return hex.EncodeToString(sum[:8])
}

// WantedRouteDigest is the digest (RouteDigest) of route as the table would carry it.
func WantedRouteDigest(route *routing.Route) (string, error) {
	carried, err := tableRoute(route)
	if err != nil {
		return "", err
	}
	return RouteDigest(carried), nil
}
