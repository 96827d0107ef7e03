package render

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// Labels every object of a scheduler carries. The operator's caches select on
// LabelManagedBy, and map an object back to its SecondaryScheduler through the owner
// labels, which also serve the objects an owner reference cannot reach (cluster-scoped
// ones, and the RoleBinding in kube-system).
const (
	LabelManagedBy      = "app.kubernetes.io/managed-by"
	ManagedByValue      = "secondary-scheduler-operator"
	LabelName           = "app.kubernetes.io/name"
	NameValue           = "secondary-scheduler"
	LabelInstance       = "app.kubernetes.io/instance"
	LabelOwnerNamespace = "operator.secondary-scheduler.io/owner-namespace"
	LabelOwnerName      = "operator.secondary-scheduler.io/owner-name"
	// LabelOwnerUID is the UID of the SecondaryScheduler. With the owner labels it proves
	// an object the operator's, for objects an owner reference cannot reach; a same-named
	// SecondaryScheduler created later (another UID) does not inherit them.
	LabelOwnerUID = "operator.secondary-scheduler.io/owner-uid"
)

// ManagedByOperator reports whether labels carry the operator's managed-by label: what
// marks the objects it writes once for the whole installation (an admission policy's
// parameters, the routing table), which belong to no SecondaryScheduler.
func ManagedByOperator(labels map[string]string) bool {
	return labels[LabelManagedBy] == ManagedByValue
}

// ConfigHashAnnotation on the scheduler's pod template holds the hash of the rendered
// configuration: pods roll when, and only when, the configuration really changes.
const ConfigHashAnnotation = "operator.secondary-scheduler.io/config-hash"

// PodTemplateHashAnnotation on the pod template of the scheduler's Deployment, and of the
// descheduler's, holds a hash of the rest of the template (image, flags, placement, the
// configuration and CA hashes): a pod carrying the Deployment's value runs what the
// resource now says, which Available (and Descheduling) require.
const PodTemplateHashAnnotation = "operator.secondary-scheduler.io/pod-template-hash"

// PodTemplateHash is the PodTemplateHashAnnotation of a rendered Deployment's pod
// template, "" for an object without one.
func PodTemplateHash(deployment *unstructured.Unstructured) string {
	hash, _, _ := unstructured.NestedString(deployment.Object, "spec", "template", "metadata", "annotations", PodTemplateHashAnnotation)
	return hash
}

// AuthenticationReaderNamespace is where the Role extension-apiserver-authentication-reader
// lives, and so where its RoleBinding must be.
const AuthenticationReaderNamespace = "kube-system"

// Names of a scheduler's objects, all derived from its SecondaryScheduler so that many
// coexist. Namespaced objects share the namespace, so the name is enough; objects
// outside it include the namespace, with ':' as separator because no namespace or name
// can contain one.

// WorkloadName is the name of the scheduler's Deployment, Service, ServiceAccount and
// PodDisruptionBudget (not the scheduler name pods ask for: that is the resource's
// EffectiveSchedulerName).
func WorkloadName(cr *v1.SecondaryScheduler) string { return cr.Name + "-scheduler" }

// ConfigObjectName is the name of the object with the rendered configuration: a
// ConfigMap, or a Secret when the configuration holds a token.
func ConfigObjectName(cr *v1.SecondaryScheduler) string { return cr.Name + "-scheduler-config" }

// LeaseName is the name of the Lease the scheduler elects its leader with, in its own
// namespace, and of the Role (and RoleBinding) that lets the scheduler update it alone. The operator creates it, so the scheduler needs no create permission on
// Leases; the suffix keeps it apart from every Lease the control plane uses
// (kube-system/kube-scheduler, kube-controller-manager, ...) and, SecondaryScheduler
// names being DNS labels, from every other resource's.
func LeaseName(cr *v1.SecondaryScheduler) string { return cr.Name + "-scheduler-lease" }

// SchedulerMetricsReaderClusterRole is the ClusterRole, shipped in config/rbac, that lets
// a scheduler read metrics.k8s.io; the operator binds it and creates no ClusterRole.
const SchedulerMetricsReaderClusterRole = schedconfig.MetricsReaderClusterRole

// ClusterBindingName is the name of a binding outside the SecondaryScheduler's namespace.
func ClusterBindingName(cr *v1.SecondaryScheduler, role string) string {
	return "secondary-scheduler:" + cr.Namespace + ":" + cr.Name + ":" + role
}

// OwnerLabels are the labels every object of cr's scheduler carries.
func OwnerLabels(cr *v1.SecondaryScheduler) map[string]string {
	return map[string]string{
		LabelManagedBy:      ManagedByValue,
		LabelName:           NameValue,
		LabelInstance:       cr.Name,
		LabelOwnerNamespace: cr.Namespace,
		LabelOwnerName:      cr.Name,
		LabelOwnerUID:       string(cr.UID),
	}
}

// PodSelector selects the scheduler pods of cr within its namespace.
func PodSelector(cr *v1.SecondaryScheduler) map[string]string {
	return map[string]string{LabelName: NameValue, LabelInstance: cr.Name}
}
