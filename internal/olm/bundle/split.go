package bundle

import (
	"fmt"
	"slices"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/csv"
)

// parts is what config/default builds, sorted by where it goes in the bundle.
type parts struct {
	// deployment is the operator's Deployment, which goes into the CSV.
	deployment *unstructured.Unstructured
	crds       []*unstructured.Unstructured
	// permissions and clusterPermissions are the rules bound to the operator's
	// ServiceAccount in its own namespace and cluster-wide.
	permissions, clusterPermissions []csv.StrategyDeploymentPermissions
	// loose are the other objects, shipped as they are.
	loose []*unstructured.Unstructured
	// manual are the Role and RoleBinding in another namespace (kube-system) and the
	// admission policies and bindings, which neither the CSV nor a loose object can
	// express: see manualObjectsSection.
	manual []*unstructured.Unstructured
}

type roleKey struct{ kind, namespace, name string }

// split sorts the objects config/default builds into the parts of the bundle. Objects of
// a kind it does not know are an error, so that a new kind in config/ is a decision here.
//
// How RBAC maps onto the CSV:
//   - a ClusterRoleBinding to the operator's ServiceAccount becomes clusterPermissions with
//     the ClusterRole's rules; the ClusterRole is then not shipped (OLM creates its own);
//   - a RoleBinding in the operator's namespace becomes permissions with the rules of its
//     Role (not shipped either) or ClusterRole. A ClusterRole bound that way
//     (secondary-scheduler-operator-scheduler-namespace) is still shipped, because cluster
//     admins bind it in other namespaces where schedulers run (docs/security.md);
//   - a RoleBinding in another namespace (kube-system) cannot be expressed: OLM grants
//     permissions only in the operator's and target namespaces, and creates a bundle's
//     Roles and RoleBindings in the operator's namespace whatever their metadata says. The
//     pair goes to manual, and the CSV description tells an admin to apply it.
func split(objects []*unstructured.Unstructured) (*parts, error) {
	out := &parts{}
	roles := map[roleKey][]rbacv1.PolicyRule{}
	var operatorNamespace string
	for _, object := range objects {
		if object.GetKind() == "ServiceAccount" && object.GetName() == ManagerServiceAccount {
			operatorNamespace = object.GetNamespace()
		}
		if rules, ok, err := roleRules(object); err != nil {
			return nil, err
		} else if ok {
			roles[roleKey{object.GetKind(), object.GetNamespace(), object.GetName()}] = rules
		}
	}
	if operatorNamespace == "" {
		return nil, fmt.Errorf("%s builds no ServiceAccount %s with a namespace", defaultConfigDir, ManagerServiceAccount)
	}

	consumed := map[roleKey]bool{}
	kept := map[roleKey]bool{}
	var manualRoles []roleKey
	permissions := csv.StrategyDeploymentPermissions{ServiceAccountName: ManagerServiceAccount}
	clusterPermissions := csv.StrategyDeploymentPermissions{ServiceAccountName: ManagerServiceAccount}
	for _, object := range objects {
		kind := object.GetKind()
		if kind != "RoleBinding" && kind != "ClusterRoleBinding" {
			continue
		}
		var binding rbacv1.RoleBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &binding); err != nil {
			return nil, fmt.Errorf("%s %s: %w", kind, object.GetName(), err)
		}
		if !bindsOnly(binding.Subjects, operatorNamespace) {
			continue
		}
		ref := roleKey{binding.RoleRef.Kind, "", binding.RoleRef.Name}
		if ref.kind == "Role" {
			ref.namespace = binding.Namespace
		}
		rules, ok := roles[ref]
		if !ok {
			return nil, fmt.Errorf("%s %s refers to %s %s, which %s does not build", kind, binding.Name, ref.kind, ref.name, defaultConfigDir)
		}
		switch {
		case kind == "ClusterRoleBinding":
			clusterPermissions.Rules = append(clusterPermissions.Rules, rules...)
			consumed[ref] = true
		case binding.Namespace == operatorNamespace:
			permissions.Rules = append(permissions.Rules, rules...)
			if ref.kind == "Role" {
				consumed[ref] = true
			} else {
				kept[ref] = true
			}
		default:
			out.manual = append(out.manual, object)
			if ref.kind != "Role" {
				return nil, fmt.Errorf("RoleBinding %s/%s binds ClusterRole %s outside the operator's namespace; the bundle cannot express it", binding.Namespace, binding.Name, ref.name)
			}
			manualRoles = append(manualRoles, ref)
		}
	}
	for ref := range kept {
		delete(consumed, ref)
	}
	if len(permissions.Rules) > 0 {
		out.permissions = []csv.StrategyDeploymentPermissions{permissions}
	}
	if len(clusterPermissions.Rules) > 0 {
		out.clusterPermissions = []csv.StrategyDeploymentPermissions{clusterPermissions}
	}

	return out, out.sortObjects(objects, operatorNamespace, consumed, manualRoles)
}

// sortObjects puts every object that is not a binding of the operator where it goes.
func (out *parts) sortObjects(objects []*unstructured.Unstructured, operatorNamespace string, consumed map[roleKey]bool, manualRoles []roleKey) error {
	for _, object := range objects {
		key := roleKey{object.GetKind(), object.GetNamespace(), object.GetName()}
		switch kind := object.GetKind(); {
		case kind == "CustomResourceDefinition":
			out.crds = append(out.crds, object)
		case kind == "Deployment" && object.GetName() == ManagerDeployment:
			out.deployment = object
		case kind == "Namespace":
			// OLM installs into the OperatorGroup's namespace.
		case kind == "ServiceAccount" && object.GetName() == ManagerServiceAccount:
			// OLM creates the ServiceAccounts the CSV's deployments and permissions name.
		case kind == "RoleBinding" || kind == "ClusterRoleBinding":
			if subjectsOf(object, operatorNamespace) {
				continue
			}
			out.loose = append(out.loose, looseObject(object))
		case consumed[key]:
		case slices.Contains(manualRoles, key):
			out.manual = append([]*unstructured.Unstructured{object}, out.manual...)
		case slices.Contains(AdmissionKinds, kind):
			// A bundle carries no admission policy, and the operator may write none.
			out.manual = append(out.manual, object)
		case slices.Contains(LooseKinds, kind):
			out.loose = append(out.loose, looseObject(object))
		default:
			return fmt.Errorf("%s %s: a registry+v1 bundle cannot carry this kind; put it into the CSV or leave it out of %s", kind, object.GetName(), defaultConfigDir)
		}
	}
	return nil
}

// subjectsOf says whether a binding binds only the operator's ServiceAccount.
func subjectsOf(object *unstructured.Unstructured, operatorNamespace string) bool {
	var binding rbacv1.RoleBinding
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &binding); err != nil {
		return false
	}
	return bindsOnly(binding.Subjects, operatorNamespace)
}

func bindsOnly(subjects []rbacv1.Subject, operatorNamespace string) bool {
	if len(subjects) == 0 {
		return false
	}
	for _, s := range subjects {
		if s.Kind != rbacv1.ServiceAccountKind || s.Name != ManagerServiceAccount || s.Namespace != operatorNamespace {
			return false
		}
	}
	return true
}

func roleRules(object *unstructured.Unstructured) ([]rbacv1.PolicyRule, bool, error) {
	switch object.GetKind() {
	case "Role":
		var role rbacv1.Role
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &role); err != nil {
			return nil, false, fmt.Errorf("role %s: %w", object.GetName(), err)
		}
		return role.Rules, true, nil
	case "ClusterRole":
		var role rbacv1.ClusterRole
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &role); err != nil {
			return nil, false, fmt.Errorf("clusterRole %s: %w", object.GetName(), err)
		}
		if role.AggregationRule != nil {
			return nil, false, fmt.Errorf("clusterRole %s aggregates: its rules are not known before install", role.Name)
		}
		return role.Rules, true, nil
	}
	return nil, false, nil
}

// looseObject is object without its namespace: OLM creates a bundle's namespaced objects in
// the namespace it installs the operator into.
func looseObject(object *unstructured.Unstructured) *unstructured.Unstructured {
	out := object.DeepCopy()
	out.SetNamespace("")
	return out
}
