package validate

import (
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/bundle"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/rbacallowlist"
)

// grantsOf expands rules as the allow-list writes grants: GROUP/RESOURCE[ named NAME] VERB.
func grantsOf(rules []rbacv1.PolicyRule) []string {
	var out []string
	for _, rule := range rules {
		for _, verb := range rule.Verbs {
			for _, url := range rule.NonResourceURLs {
				out = append(out, "nonResourceURL "+url+" "+verb)
			}
			for _, group := range rule.APIGroups {
				if group == "" {
					group = "core"
				}
				for _, resource := range rule.Resources {
					names := rule.ResourceNames
					if len(names) == 0 {
						names = []string{""}
					}
					for _, name := range names {
						target := group + "/" + resource
						if name != "" {
							target += " named " + name
						}
						out = append(out, target+" "+verb)
					}
				}
			}
		}
	}
	return out
}

// bundleGrants is what the bundle grants the ServiceAccount account, by the allow-list's
// scopes: the CSV's clusterPermissions and permissions, and the kube-system Roles that the
// CSV's description asks an admin to apply and bind to it.
func bundleGrants(t *testing.T, b *Bundle, account string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, p := range b.CSV.Spec.InstallStrategy.StrategySpec.ClusterPermissions {
		if p.ServiceAccountName == account {
			out[rbacallowlist.ScopeCluster] = append(out[rbacallowlist.ScopeCluster], grantsOf(p.Rules)...)
		}
	}
	for _, p := range b.CSV.Spec.InstallStrategy.StrategySpec.Permissions {
		if p.ServiceAccountName == account {
			out[rbacallowlist.ScopeOperatorNamespace] = append(out[rbacallowlist.ScopeOperatorNamespace], grantsOf(p.Rules)...)
		}
	}
	documents, err := bundle.ManualObjects(b.CSV.Spec.Description)
	if err != nil {
		t.Fatal(err)
	}
	roles := map[string]rbacv1.Role{}
	var bound []string
	for _, document := range documents {
		var object struct {
			rbacv1.Role `json:",inline"`
			RoleRef     rbacv1.RoleRef   `json:"roleRef"`
			Subjects    []rbacv1.Subject `json:"subjects"`
		}
		if err := yaml.Unmarshal(document, &object); err != nil {
			t.Fatalf("the description's kube-system objects: %v", err)
		}
		if object.Namespace != rbacallowlist.ScopeKubeSystem {
			continue
		}
		switch object.Kind {
		case "Role":
			roles[object.Name] = object.Role
		case "RoleBinding":
			if object.RoleRef.Kind == "Role" && slices.ContainsFunc(object.Subjects, func(s rbacv1.Subject) bool { return s.Name == account }) {
				bound = append(bound, object.RoleRef.Name)
			}
		}
	}
	for _, name := range bound {
		out[rbacallowlist.ScopeKubeSystem] = append(out[rbacallowlist.ScopeKubeSystem], grantsOf(roles[name].Rules)...)
	}
	return out
}

// grantDifferences says, per scope, what the bundle grants beyond the allow-list (+) and
// what it lacks (-).
func grantDifferences(got, want map[string][]string) []string {
	var out []string
	for _, scope := range []string{rbacallowlist.ScopeCluster, rbacallowlist.ScopeOperatorNamespace, rbacallowlist.ScopeKubeSystem} {
		for _, g := range got[scope] {
			if !slices.Contains(want[scope], g) {
				out = append(out, scope+": + "+g)
			}
		}
		for _, w := range want[scope] {
			if !slices.Contains(got[scope], w) {
				out = append(out, scope+": - "+w)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestPermissionsMatchAllowList: the CSV grants the operator everything config/rbac does
// (per the allow-list of test/rbacallowlist, which config/rbac must match) and nothing
// more, in the same scopes.
func TestPermissionsMatchAllowList(t *testing.T) {
	b := load(t, readBundle(t))
	for _, scope := range []string{rbacallowlist.ScopeCluster, rbacallowlist.ScopeOperatorNamespace, rbacallowlist.ScopeKubeSystem} {
		if len(rbacallowlist.OperatorGrants()[scope]) == 0 {
			t.Fatalf("the allow-list grants the operator nothing in scope %s; the comparison would prove nothing", scope)
		}
	}
	if diff := grantDifferences(bundleGrants(t, b, bundle.ManagerServiceAccount), rbacallowlist.OperatorGrants()); len(diff) > 0 {
		t.Errorf("the bundle's grants to the operator differ from the allow-list:\n%s", strings.Join(diff, "\n"))
	}
	// scheduler-plugins' controller, which the operator runs, gets what config/rbac gives it.
	account := rbacallowlist.PluginControllerServiceAccount
	if diff := grantDifferences(bundleGrants(t, b, account), rbacallowlist.AccountGrants(account)); len(diff) > 0 {
		t.Errorf("the bundle's grants to %s differ from the allow-list:\n%s", account, strings.Join(diff, "\n"))
	}
}

// TestPermissionsComparisonRejects: one rule too many, or one missing, is reported.
func TestPermissionsComparisonRejects(t *testing.T) {
	want := rbacallowlist.OperatorGrants()
	tests := []struct {
		name   string
		mutate mutation
		diff   string
	}{
		{"a cluster-wide Secret read", editCSV(func(c map[string]any) {
			p := at(c, "spec", "install", "spec", "clusterPermissions", 0)
			p["rules"] = append(p["rules"].([]any), map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get"}})
		}), "cluster: + core/secrets get"},
		{"leader election lost", editCSV(func(c map[string]any) {
			p := at(c, "spec", "install", "spec", "permissions", 0)
			rules := p["rules"].([]any)
			p["rules"] = slices.DeleteFunc(rules, func(r any) bool {
				return slices.Contains(r.(map[string]any)["apiGroups"].([]any), "coordination.k8s.io")
			})
		}), "operator namespace: - coordination.k8s.io/leases get"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := readBundle(t)
			tt.mutate(t, files)
			diff := grantDifferences(bundleGrants(t, load(t, files), bundle.ManagerServiceAccount), want)
			if !slices.Contains(diff, tt.diff) {
				t.Errorf("want %q among the differences, got %q", tt.diff, diff)
			}
		})
	}
}
