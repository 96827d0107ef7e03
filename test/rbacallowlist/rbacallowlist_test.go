package rbacallowlist

import (
	"bytes"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
)

// rbacDir holds the shipped RBAC, relative to this package.
var rbacDir = filepath.Join("..", "..", "config", "rbac")

const consciousChange = "a new permission is a conscious change: update the allow-list in this test and docs/security.md"

// shippedRole is a Role or ClusterRole read from config/rbac.
type shippedRole struct {
	id     roleID
	file   string
	labels map[string]string
	// aggregated is set when the role's rules are aggregated from other ClusterRoles.
	aggregated bool
	rules      []rbacv1.PolicyRule
}

// shippedBinding is a RoleBinding or ClusterRoleBinding read from config/rbac.
type shippedBinding struct {
	kind      string
	namespace string
	name      string
	file      string
	roleRef   rbacv1.RoleRef
	subjects  []rbacv1.Subject
}

func (b shippedBinding) lines() []string {
	name := b.name
	if b.kind == "RoleBinding" {
		name = b.namespace + "/" + b.name
	}
	lines := make([]string, 0, len(b.subjects))
	for _, s := range b.subjects {
		subject := s.Kind + " " + s.Name
		if s.Kind == rbacv1.ServiceAccountKind {
			subject = s.Kind + " " + orOperatorNamespace(s.Namespace) + "/" + s.Name
		}
		lines = append(lines, fmt.Sprintf("%s %s grants %s %s to %s", b.kind, name, b.roleRef.Kind, b.roleRef.Name, subject))
	}
	return lines
}

type shippedRBAC struct {
	roles    []shippedRole
	bindings []shippedBinding
}

func (s shippedRBAC) role(id roleID) (shippedRole, bool) {
	for _, r := range s.roles {
		if r.id == id {
			return r, true
		}
	}
	return shippedRole{}, false
}

func orOperatorNamespace(namespace string) string {
	if namespace == "" {
		return operatorNamespace
	}
	return namespace
}

// loadRBAC reads every YAML document under config/rbac.
func loadRBAC(t *testing.T) shippedRBAC {
	t.Helper()
	var rbac shippedRBAC
	err := filepath.WalkDir(rbacDir, func(path string, entry fs.DirEntry, err error) error {
		if err != nil || entry.IsDir() || entry.Name() == "kustomization.yaml" {
			return err
		}
		if ext := filepath.Ext(path); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		documents, err := manifests.Documents(path)
		if err != nil {
			return err
		}
		for _, doc := range documents {
			if err := rbac.add(filepath.Base(path), doc); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("read config/rbac: %v", err)
	}
	if len(rbac.roles) == 0 || len(rbac.bindings) == 0 {
		t.Fatalf("config/rbac holds %d roles and %d bindings; expected some of each", len(rbac.roles), len(rbac.bindings))
	}
	return rbac
}

func (s *shippedRBAC) add(file string, doc []byte) error {
	var typeMeta struct {
		Kind string `json:"kind"`
	}
	if err := yaml.Unmarshal(doc, &typeMeta); err != nil {
		return err
	}
	switch typeMeta.Kind {
	case "":
		if len(bytes.TrimSpace(stripComments(doc))) == 0 {
			return nil
		}
		return fmt.Errorf("a document without kind")
	case "ServiceAccount":
		return nil
	case "ClusterRole":
		var r rbacv1.ClusterRole
		if err := yaml.UnmarshalStrict(doc, &r); err != nil {
			return err
		}
		s.roles = append(s.roles, shippedRole{id: clusterRole(r.Name), file: file, labels: r.Labels, aggregated: r.AggregationRule != nil, rules: r.Rules})
	case "Role":
		var r rbacv1.Role
		if err := yaml.UnmarshalStrict(doc, &r); err != nil {
			return err
		}
		s.roles = append(s.roles, shippedRole{id: role(orOperatorNamespace(r.Namespace), r.Name), file: file, labels: r.Labels, rules: r.Rules})
	case "ClusterRoleBinding":
		var b rbacv1.ClusterRoleBinding
		if err := yaml.UnmarshalStrict(doc, &b); err != nil {
			return err
		}
		s.bindings = append(s.bindings, shippedBinding{kind: "ClusterRoleBinding", name: b.Name, file: file, roleRef: b.RoleRef, subjects: b.Subjects})
	case "RoleBinding":
		var b rbacv1.RoleBinding
		if err := yaml.UnmarshalStrict(doc, &b); err != nil {
			return err
		}
		s.bindings = append(s.bindings, shippedBinding{kind: "RoleBinding", namespace: orOperatorNamespace(b.Namespace), name: b.Name, file: file, roleRef: b.RoleRef, subjects: b.Subjects})
	default:
		return fmt.Errorf("a %s: this test knows RBAC objects and ServiceAccounts only; teach it the new kind", typeMeta.Kind)
	}
	return nil
}

func stripComments(doc []byte) []byte {
	var kept [][]byte
	for _, line := range bytes.Split(doc, []byte("\n")) {
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 && trimmed[0] != '#' {
			kept = append(kept, line)
		}
	}
	return bytes.Join(kept, []byte("\n"))
}

// grants expands a role's rules into single grants.
func (r shippedRole) grants() []grant {
	var grants []grant
	for _, rule := range r.rules {
		for _, verb := range rule.Verbs {
			for _, url := range rule.NonResourceURLs {
				grants = append(grants, grant{role: r.id, resource: url, verb: verb})
			}
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					for _, name := range orOne(rule.ResourceNames) {
						grants = append(grants, grant{role: r.id, apiGroup: group, resource: resource, resourceName: name, verb: verb})
					}
				}
			}
		}
	}
	return grants
}

// setDiff says, sorted, what got has beyond want and what want has beyond got.
func setDiff(got, want []string) (added, removed []string) {
	for _, g := range got {
		if !slices.Contains(want, g) && !slices.Contains(added, g) {
			added = append(added, g)
		}
	}
	for _, w := range want {
		if !slices.Contains(got, w) && !slices.Contains(removed, w) {
			removed = append(removed, w)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

func reportDiff(t *testing.T, what string, got, want []string) {
	t.Helper()
	added, removed := setDiff(got, want)
	if len(added) == 0 && len(removed) == 0 {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s in config/rbac differ from the allow-list; %s.\n", what, consciousChange)
	if len(added) > 0 {
		b.WriteString("in config/rbac, not in the allow-list:\n")
		for _, a := range added {
			b.WriteString("  + " + a + "\n")
		}
	}
	if len(removed) > 0 {
		b.WriteString("in the allow-list, no longer in config/rbac:\n")
		for _, r := range removed {
			b.WriteString("  - " + r + "\n")
		}
	}
	t.Error(b.String())
}

func TestGrantsMatchAllowList(t *testing.T) {
	rbac := loadRBAC(t)
	var got, want []string
	for _, r := range rbac.roles {
		for _, g := range r.grants() {
			got = append(got, g.String())
		}
	}
	for _, a := range allowedRules {
		for _, g := range a.grants() {
			want = append(want, g.String())
		}
	}
	reportDiff(t, "Permissions", got, want)
}

func TestBindingsMatchAllowList(t *testing.T) {
	rbac := loadRBAC(t)
	var got []string
	for _, b := range rbac.bindings {
		got = append(got, b.lines()...)
	}
	reportDiff(t, "Bindings", got, allowedBindings)
}

func TestNoWildcards(t *testing.T) {
	for _, r := range loadRBAC(t).roles {
		for _, rule := range r.rules {
			for field, values := range map[string][]string{
				"verbs": rule.Verbs, "resources": rule.Resources, "apiGroups": rule.APIGroups,
				"resourceNames": rule.ResourceNames, "nonResourceURLs": rule.NonResourceURLs,
			} {
				for _, v := range values {
					if strings.Contains(v, "*") {
						t.Errorf("%s (%s): %s holds %q; name every verb, resource and group instead", r.id, r.file, field, v)
					}
				}
			}
		}
	}
}

// TestOnlyViewerAggregates keeps managing SecondarySchedulers away from everyone who can
// edit a namespace: only reading them aggregates into a built-in role.
func TestOnlyViewerAggregates(t *testing.T) {
	const aggregatePrefix = "rbac.authorization.k8s.io/aggregate-to-"
	for _, r := range loadRBAC(t).roles {
		var aggregatesTo []string
		for label, value := range r.labels {
			if strings.HasPrefix(label, aggregatePrefix) && value == "true" {
				aggregatesTo = append(aggregatesTo, strings.TrimPrefix(label, aggregatePrefix))
			}
		}
		slices.Sort(aggregatesTo)
		want := []string(nil)
		if r.id == viewerRole {
			want = []string{"view"}
		}
		if !slices.Equal(aggregatesTo, want) {
			t.Errorf("%s (%s) aggregates into %v, want %v", r.id, r.file, aggregatesTo, want)
		}
		if r.aggregated {
			t.Errorf("%s (%s) has an aggregationRule: its rules would not be the ones written here", r.id, r.file)
		}
	}
}

// TestManagerRoleWritesNothingSensitive: the cluster-wide role writes no Secret, Lease or
// namespaced RBAC in any namespace (that is granted per namespace), creates no token and
// edits no ClusterRole.
func TestManagerRoleWritesNothingSensitive(t *testing.T) {
	rbac := loadRBAC(t)
	manager, ok := rbac.role(managerRole)
	if !ok {
		t.Fatalf("%s not found in config/rbac; run make manifests", managerRole)
	}
	writeVerbs := []string{"create", "update", "patch", "delete", "deletecollection"}
	sensitive := []string{"secrets", "leases", "roles", "rolebindings", "clusterroles"}
	for _, g := range manager.grants() {
		switch {
		case slices.Contains(sensitive, g.resource) && slices.Contains(writeVerbs, g.verb):
			t.Errorf("%s: the cluster-wide role must not write %s", g, g.resource)
		case g.resource == "serviceaccounts/token":
			t.Errorf("%s: tokens are requested only in the namespaces where schedulers run", g)
		}
	}
}

func TestNoEscalateOrImpersonate(t *testing.T) {
	for _, r := range loadRBAC(t).roles {
		for _, g := range r.grants() {
			if g.verb == "escalate" || g.verb == "impersonate" {
				t.Errorf("%s (%s)", g, r.file)
			}
		}
	}
}

// TestBindOnlyNamedRoles: bind lets its holder grant a role's permissions without holding
// them, so it names the roles, and the ones this project ships are in config/rbac.
func TestBindOnlyNamedRoles(t *testing.T) {
	rbac := loadRBAC(t)
	for _, r := range rbac.roles {
		for _, rule := range r.rules {
			if !slices.Contains(rule.Verbs, "bind") {
				continue
			}
			if len(rule.ResourceNames) == 0 {
				t.Errorf("%s (%s) may bind %v without resourceNames", r.id, r.file, rule.Resources)
			}
			if !slices.Contains(rule.Resources, "clusterroles") {
				continue
			}
			for _, name := range rule.ResourceNames {
				if _, ok := rbac.role(clusterRole(name)); strings.HasPrefix(name, ourPrefix) && !ok {
					t.Errorf("%s (%s) binds ClusterRole %s, which config/rbac does not ship", r.id, r.file, name)
				}
			}
		}
	}
}

// TestBindingsReferenceShippedRoles: every binding's role is in config/rbac, a Role in the
// binding's own namespace.
func TestBindingsReferenceShippedRoles(t *testing.T) {
	rbac := loadRBAC(t)
	for _, b := range rbac.bindings {
		id := clusterRole(b.roleRef.Name)
		if b.roleRef.Kind == "Role" {
			id = role(b.namespace, b.roleRef.Name)
		}
		if _, ok := rbac.role(id); !ok {
			t.Errorf("%s %s (%s) refers to %s, which config/rbac does not ship", b.kind, b.name, b.file, id)
		}
	}
}

// TestRolesTheOperatorNamesAreShipped: the operator binds these ClusterRoles by name. The
// one granting its namespaced permissions is never bound cluster-wide.
func TestRolesTheOperatorNamesAreShipped(t *testing.T) {
	rbac := loadRBAC(t)
	for _, name := range []string{tenancy.SchedulerNamespaceClusterRole, render.SchedulerMetricsReaderClusterRole} {
		if _, ok := rbac.role(clusterRole(name)); !ok {
			t.Errorf("ClusterRole %s, which the operator refers to by name, is not in config/rbac", name)
		}
	}
	for _, b := range rbac.bindings {
		if b.kind == "ClusterRoleBinding" && b.roleRef.Name == tenancy.SchedulerNamespaceClusterRole {
			t.Errorf("ClusterRoleBinding %s (%s) grants %s in every namespace; bind it with a RoleBinding per namespace",
				b.name, b.file, tenancy.SchedulerNamespaceClusterRole)
		}
	}
}
