package controllers

import (
	"context"
	"fmt"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"
)

// The operator runs in the integration tests with the RBAC an installation gives it, read
// from config/rbac: a missing or excess rule there shows here as it would in a cluster.
// The installer binds the roles to the operator's ServiceAccount; the tests bind them to
// a user instead.
const (
	managerRoleFile            = "role.yaml"
	managerRoleBindingFile     = "role_binding.yaml"
	schedulerNamespaceRoleFile = "scheduler_namespace_role.yaml"
	kubeSystemRoleFile         = "kube_system_role.yaml"
	schedulerMetricsReaderFile = "scheduler_metrics_reader_role.yaml"
	monitoringRoleFile         = "monitoring_role.yaml"
	monitoringRoleBindingFile  = "monitoring_role_binding.yaml"
	parametersRoleFile         = "admission_parameters_role.yaml"
	parametersRoleBindingFile  = "admission_parameters_role_binding.yaml"
	probeRoleFile              = "routing_probe_role.yaml"
	probeRoleBindingFile       = "routing_probe_role_binding.yaml"
)

// grantOperatorRBAC creates through c, an admin's client, the roles in config/rbac that the
// operator holds, and binds them to user as the installer binds them to the operator's
// ServiceAccount: the generated ClusterRole cluster-wide, the scheduler namespace
// ClusterRole, the monitoring Role, the admission parameters' Role and the routing probe's Role in operatorNamespace (created when missing), the
// kube-system Role in kube-system. It also creates the ClusterRole the operator binds load-aware schedulers
// to, which the operator itself does not hold.
func grantOperatorRBAC(ctx context.Context, c client.Client, user, operatorNamespace string) error {
	manager := &rbacv1.ClusterRole{}
	managerBinding := &rbacv1.ClusterRoleBinding{}
	schedulerNamespace := &rbacv1.ClusterRole{}
	kubeSystem := &rbacv1.Role{}
	kubeSystemBinding := &rbacv1.RoleBinding{}
	metricsReader := &rbacv1.ClusterRole{}
	monitoring := &rbacv1.Role{}
	monitoringBinding := &rbacv1.RoleBinding{}
	parameters := &rbacv1.Role{}
	parametersBinding := &rbacv1.RoleBinding{}
	probe := &rbacv1.Role{}
	probeBinding := &rbacv1.RoleBinding{}
	for _, shipped := range []struct {
		file, kind string
		into       any
	}{
		{managerRoleFile, "ClusterRole", manager},
		{managerRoleBindingFile, "ClusterRoleBinding", managerBinding},
		{schedulerNamespaceRoleFile, "ClusterRole", schedulerNamespace},
		{kubeSystemRoleFile, "Role", kubeSystem},
		{kubeSystemRoleFile, "RoleBinding", kubeSystemBinding},
		{schedulerMetricsReaderFile, "ClusterRole", metricsReader},
		{monitoringRoleFile, "Role", monitoring},
		{monitoringRoleBindingFile, "RoleBinding", monitoringBinding},
		{parametersRoleFile, "Role", parameters},
		{parametersRoleBindingFile, "RoleBinding", parametersBinding},
		{probeRoleFile, "Role", probe},
		{probeRoleBindingFile, "RoleBinding", probeBinding},
	} {
		if err := decodeShipped(shipped.file, shipped.kind, shipped.into); err != nil {
			return err
		}
	}
	if managerBinding.RoleRef.Name != manager.Name {
		return fmt.Errorf("config/rbac/%s binds %s, not the generated ClusterRole %s", managerRoleBindingFile, managerBinding.RoleRef.Name, manager.Name)
	}
	managerBinding.Subjects = userSubjects(user)
	kubeSystemBinding.Subjects = userSubjects(user)
	monitoringBinding.Subjects = userSubjects(user)
	parametersBinding.Subjects = userSubjects(user)
	probeBinding.Subjects = userSubjects(user)
	monitoring.Namespace, monitoringBinding.Namespace = operatorNamespace, operatorNamespace
	parameters.Namespace, parametersBinding.Namespace = operatorNamespace, operatorNamespace
	probe.Namespace, probeBinding.Namespace = operatorNamespace, operatorNamespace
	if err := ensureNamespace(ctx, c, kubeSystem.Namespace); err != nil {
		return err
	}
	if err := ensureNamespace(ctx, c, operatorNamespace); err != nil {
		return err
	}
	for _, obj := range []client.Object{manager, managerBinding, schedulerNamespace, kubeSystem, kubeSystemBinding, metricsReader, monitoring, monitoringBinding,
		parameters, parametersBinding, probe, probeBinding} {
		if err := c.Create(ctx, obj); err != nil {
			return fmt.Errorf("create %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
		}
	}
	return allowSchedulerNamespace(ctx, c, user, operatorNamespace)
}

// allowSchedulerNamespace does what docs/security.md tells a cluster admin to do in a
// namespace that is to run schedulers: it binds the scheduler namespace ClusterRole there
// to user, creating the namespace when missing. The operator runs schedulers in it once
// the namespace is also among those it is configured with (--scheduler-namespaces).
func allowSchedulerNamespace(ctx context.Context, c client.Client, user, namespace string) error {
	binding := &rbacv1.RoleBinding{}
	if err := decodeShipped(schedulerNamespaceRoleFile, "RoleBinding", binding); err != nil {
		return err
	}
	binding.Namespace = namespace
	binding.Subjects = userSubjects(user)
	if err := ensureNamespace(ctx, c, namespace); err != nil {
		return err
	}
	if err := c.Create(ctx, binding); err != nil {
		return fmt.Errorf("bind ClusterRole %s in namespace %s: %w", binding.RoleRef.Name, namespace, err)
	}
	return nil
}

func userSubjects(user string) []rbacv1.Subject {
	return []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
}

func ensureNamespace(ctx context.Context, c client.Client, name string) error {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", name, err)
	}
	return nil
}

// decodeShipped decodes, strictly, the first document of kind in config/rbac/file into obj.
func decodeShipped(file, kind string, obj any) error {
	documents, err := manifests.Documents(filepath.Join("..", "config", "rbac", file))
	if err != nil {
		return err
	}
	for _, doc := range documents {
		var typeMeta metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &typeMeta); err != nil {
			return fmt.Errorf("parse config/rbac/%s: %w", file, err)
		}
		if typeMeta.Kind != kind {
			continue
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return fmt.Errorf("parse %s in config/rbac/%s: %w", kind, file, err)
		}
		return nil
	}
	return fmt.Errorf("config/rbac/%s holds no %s", file, kind)
}
