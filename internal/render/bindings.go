package render

import (
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// Binding is a RoleBinding or ClusterRoleBinding as the operator renders it for a
// SecondaryScheduler: what an existing binding must be, not only be labelled, to be one
// the operator may delete. Labels can be set by whoever may update a binding; a binding
// that grants a role the operator never binds, or to a subject other than the
// scheduler's own ServiceAccounts, is someone else's whatever it carries.
type Binding struct {
	Kind, Namespace, Name string
	RoleRef               rbacv1.RoleRef
	// AnyClusterRole: the metrics token binding's ClusterRole is the one the resource
	// chose among those an admin allows, which a later spec or flag may change; any
	// ClusterRole bound to the metrics ServiceAccount alone is then the operator's.
	AnyClusterRole bool
	Subjects       []rbacv1.Subject
}

// Bindings are every binding the operator may render for cr, whatever its profile and
// the facts of the moment, from the same builders as Render.
func Bindings(cr *v1.SecondaryScheduler) ([]Binding, error) {
	pluginRoles := schedconfig.PluginClusterRoles()
	builders := make([]func(*v1.SecondaryScheduler, *Result) (*yaml.RNode, error), 0, 8+len(pluginRoles))
	builders = append(builders,
		clusterRoleBinding("clusterrolebinding-kube-scheduler.yaml", "kube-scheduler"),
		clusterRoleBinding("clusterrolebinding-volume-scheduler.yaml", "volume-scheduler"),
		authenticationReaderBinding,
		schedulerLeaseElection.binding,
	)
	for _, role := range pluginRoles {
		builders = append(builders, pluginBinding(role))
	}
	builders = append(builders,
		func(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
			return metricsTokenBinding(cr, MetricsIdentity{ClusterRole: DefaultMetricsClusterRole})
		},
		// The descheduler's (spec.descheduling).
		deschedulerClusterRoleBinding, deschedulerLeaseElection.binding)
	bindings := make([]Binding, 0, len(builders))
	for _, build := range builders {
		node, err := build(cr, &Result{})
		if err != nil {
			return nil, fmt.Errorf("render the bindings of %s/%s: %w", cr.Namespace, cr.Name, err)
		}
		object, err := toUnstructured(node)
		if err != nil {
			return nil, err
		}
		var typed rbacv1.ClusterRoleBinding // a RoleBinding has the same fields
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &typed); err != nil {
			return nil, fmt.Errorf("convert %s %s: %w", object.GetKind(), object.GetName(), err)
		}
		bindings = append(bindings, Binding{
			Kind: object.GetKind(), Namespace: object.GetNamespace(), Name: object.GetName(),
			RoleRef: typed.RoleRef, AnyClusterRole: typed.Name == ClusterBindingName(cr, "metrics-token"),
			Subjects: typed.Subjects,
		})
	}
	return bindings, nil
}

// IsRenderedBinding reports whether existing, a RoleBinding or ClusterRoleBinding (its
// AnyClusterRole unused), is one the operator renders for cr: the kind, namespace and
// name of a rendered binding, with its roleRef and subjects. Its owner labels are
// checked apart, as for every other kind.
func IsRenderedBinding(cr *v1.SecondaryScheduler, existing Binding) (bool, error) {
	bindings, err := Bindings(cr)
	if err != nil {
		return false, err
	}
	for _, rendered := range bindings {
		if rendered.Kind != existing.Kind || rendered.Namespace != existing.Namespace || rendered.Name != existing.Name {
			continue
		}
		roleRef := existing.RoleRef
		if rendered.AnyClusterRole && roleRef.APIGroup == rbacv1.GroupName && roleRef.Kind == "ClusterRole" {
			roleRef.Name = rendered.RoleRef.Name
		}
		return roleRef == rendered.RoleRef && slices.Equal(existing.Subjects, rendered.Subjects), nil
	}
	return false, nil
}
