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
// How RBAC maps onto the CSV, for each ServiceAccount config/default ships in the
// operator's namespace (the operator's, and the plugin controller's the operator runs):
//   - a ClusterRoleBinding to the ServiceAccount becomes clusterPermissions of it with the
//     ClusterRole's rules; the ClusterRole is then not shipped (OLM creates its own), and
//     neither is the ServiceAccount (OLM creates those the permissions name);
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
	accounts := shippedAccounts(objects, operatorNamespace)

	consumed := map[roleKey]bool{}
	kept := map[roleKey]bool{}
	var manualRoles []roleKey
	permissions := map[string]*csv.StrategyDeploymentPermissions{}
	clusterPermissions := map[string]*csv.StrategyDeploymentPermissions{}
	grant := func(to map[string]*csv.StrategyDeploymentPermissions, account string, rules []rbacv1.PolicyRule) {
		if to[account] == nil {
			to[account] = &csv.StrategyDeploymentPermissions{ServiceAccountName: account}
		}
		to[account].Rules = append(to[account].Rules, rules...)
	}
	for _, object := range objects {
		kind := object.GetKind()
		if kind != "RoleBinding" && kind != "ClusterRoleBinding" {
			continue
		}
		var binding rbacv1.RoleBinding
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &binding); err != nil {
			return nil, fmt.Errorf("%s %s: %w", kind, object.GetName(), err)
		}
		account, ok := boundAccount(binding.Subjects, operatorNamespace, accounts)
		if !ok {
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
			grant(clusterPermissions, account, rules)
			consumed[ref] = true
		case binding.Namespace == operatorNamespace:
			grant(permissions, account, rules)
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
	out.permissions = inAccountOrder(permissions, accounts)
	out.clusterPermissions = inAccountOrder(clusterPermissions, accounts)
	granted := map[string]bool{}
	for _, p := range slices.Concat(out.permissions, out.clusterPermissions) {
		granted[p.ServiceAccountName] = true
	}

	return out, out.sortObjects(objects, operatorNamespace, accounts, granted, consumed, manualRoles)
}

// shippedAccounts are the ServiceAccounts config/default ships in the operator's
// namespace, the operator's first, then by name.
func shippedAccounts(objects []*unstructured.Unstructured, operatorNamespace string) []string {
	accounts := []string{ManagerServiceAccount}
	for _, object := range objects {
		if object.GetKind() == "ServiceAccount" && object.GetNamespace() == operatorNamespace && object.GetName() != ManagerServiceAccount {
			accounts = append(accounts, object.GetName())
		}
	}
	slices.Sort(accounts[1:])
	return slices.Compact(accounts)
}

// inAccountOrder lists each account's permissions in the order of accounts.
func inAccountOrder(byAccount map[string]*csv.StrategyDeploymentPermissions, accounts []string) []csv.StrategyDeploymentPermissions {
	var ordered []csv.StrategyDeploymentPermissions
	for _, account := range accounts {
		if p := byAccount[account]; p != nil {
			ordered = append(ordered, *p)
		}
	}
	return ordered
}

// sortObjects puts every object that is not a binding of the operator where it goes.
func (out *parts) sortObjects(objects []*unstructured.Unstructured, operatorNamespace string, accounts []string, granted map[string]bool,
	consumed map[roleKey]bool, manualRoles []roleKey) error {
	for _, object := range objects {
		key := roleKey{object.GetKind(), object.GetNamespace(), object.GetName()}
		switch kind := object.GetKind(); {
		case kind == "CustomResourceDefinition":
			out.crds = append(out.crds, object)
		case kind == "Deployment" && object.GetName() == ManagerDeployment:
			out.deployment = object
		case kind == "Namespace":
			// OLM installs into the OperatorGroup's namespace.
		case kind == "ServiceAccount" && (object.GetName() == ManagerServiceAccount || granted[object.GetName()]):
			// OLM creates the ServiceAccounts the CSV's deployments and permissions name.
		case kind == "RoleBinding" || kind == "ClusterRoleBinding":
			if _, ok := subjectsOf(object, operatorNamespace, accounts); ok {
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

// subjectsOf is the account a binding binds alone, when it binds one of accounts.
func subjectsOf(object *unstructured.Unstructured, operatorNamespace string, accounts []string) (string, bool) {
	var binding rbacv1.RoleBinding
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, &binding); err != nil {
		return "", false
	}
	return boundAccount(binding.Subjects, operatorNamespace, accounts)
}

// boundAccount is the one ServiceAccount of the operator's namespace among accounts that
// subjects name, every one of them.
func boundAccount(subjects []rbacv1.Subject, operatorNamespace string, accounts []string) (string, bool) {
	if len(subjects) == 0 {
		return "", false
	}
	account := subjects[0].Name
	for _, s := range subjects {
		if s.Kind != rbacv1.ServiceAccountKind || s.Name != account || s.Namespace != operatorNamespace || !slices.Contains(accounts, s.Name) {
			return "", false
		}
	}
	return account, true
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
