package rbacallowlist

import (
	"fmt"
	"slices"
	"strings"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
)

// operatorNamespace stands for a namespace the sources leave blank: config/default sets
// the operator's namespace there.
const operatorNamespace = "(operator namespace)"

// The ServiceAccounts the installer ships in the operator's namespace, subjects of every
// shipped binding: the operator's identity, and that of scheduler-plugins' controller,
// which the operator runs.
const (
	OperatorServiceAccount         = "secondary-scheduler-operator-controller-manager"
	PluginControllerServiceAccount = render.PluginControllerName
)

var (
	operatorServiceAccount         = serviceAccount(OperatorServiceAccount)
	pluginControllerServiceAccount = serviceAccount(PluginControllerServiceAccount)
)

// serviceAccount is how a binding line names a ServiceAccount of the operator's namespace.
func serviceAccount(name string) string { return "ServiceAccount " + operatorNamespace + "/" + name }

// ourPrefix starts the name of every role this project ships.
const ourPrefix = "secondary-scheduler"

// roleID names a Role or ClusterRole.
type roleID struct {
	kind      string
	namespace string
	name      string
}

func (r roleID) String() string {
	if r.kind == "Role" {
		return "Role " + r.namespace + "/" + r.name
	}
	return "ClusterRole " + r.name
}

func clusterRole(name string) roleID { return roleID{kind: "ClusterRole", name: name} }

func role(namespace, name string) roleID {
	return roleID{kind: "Role", namespace: namespace, name: name}
}

var (
	// managerRole is generated into role.yaml from controllers/rbac.go and bound cluster-wide.
	managerRole            = clusterRole("manager-role")
	schedulerNamespaceRole = clusterRole(tenancy.SchedulerNamespaceClusterRole)
	kubeSystemRole         = role("kube-system", "secondary-scheduler-operator-kube-system")
	leaderElectionRole     = role(operatorNamespace, "secondary-scheduler-operator-leader-election-role")
	monitoringRole         = role(operatorNamespace, "secondary-scheduler-operator-monitoring-role")
	admissionParameters    = role(operatorNamespace, "secondary-scheduler-operator-admission-parameters-role")
	routingProbeRole       = role(operatorNamespace, "secondary-scheduler-operator-routing-probe-role")
	metricsAuthRole        = clusterRole("secondary-scheduler-operator-metrics-auth-role")
	operatorMetricsReader  = clusterRole("secondary-scheduler-operator-metrics-reader")
	adminRole              = clusterRole("secondary-scheduler-operator-secondaryscheduler-admin-role")
	viewerRole             = clusterRole("secondary-scheduler-operator-secondaryscheduler-viewer-role")
	pluginControllerDeploy = role(operatorNamespace, "secondary-scheduler-operator-plugin-controller")
	// scheduler-plugins' controller: cluster-wide, and its leader election in kube-system.
	pluginControllerRole     = clusterRole(render.PluginControllerName)
	pluginControllerElection = role("kube-system", render.PluginControllerName+"-leader-election")
	// The descheduler of spec.descheduling.
	deschedulerRole = clusterRole(render.DeschedulerClusterRole)
)

// allowedRule grants verbs on resources of one API group, on only the named objects when
// resourceNames is set. A nonResourceURL is written as a resource starting with '/'.
type allowedRule struct {
	role          roleID
	apiGroup      string
	resources     []string
	resourceNames []string
	verbs         []string
}

const (
	core       = ""
	rbacGroup  = "rbac.authorization.k8s.io"
	ourGroup   = "operator.secondary-scheduler.io"
	monitoring = "monitoring.coreos.com"
)

var (
	readVerbs = []string{"get", "list", "watch"}
	// allVerbs has no deletecollection: the operator deletes one object at a time, each
	// proven its own, never whatever carries a label.
	allVerbs = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
)

// allowedRules is every permission config/rbac grants. docs/security.md justifies each.
var allowedRules = append([]allowedRule{
	// The operator, cluster-wide (controllers/rbac.go).
	{managerRole, ourGroup, []string{"secondaryschedulers"}, nil, []string{"get", "list", "watch", "patch"}},
	{managerRole, ourGroup, []string{"secondaryschedulers/status"}, nil, []string{"patch"}},
	{managerRole, ourGroup, []string{"secondaryschedulers/finalizers"}, nil, []string{"update"}},
	{managerRole, ourGroup, []string{"secondaryschedulers/" + render.RunSubresource}, nil, []string{"update"}},
	{managerRole, core, []string{"events"}, nil, []string{"create", "patch"}},
	{managerRole, "events.k8s.io", []string{"events"}, nil, []string{"create", "patch"}},
	{managerRole, core, []string{"nodes"}, nil, readVerbs},
	{managerRole, core, []string{"pods"}, nil, []string{"list", "watch"}},
	{managerRole, "scheduling.x-k8s.io", []string{"elasticquotas"}, nil, []string{"list"}},
	{managerRole, "scheduling.k8s.io", []string{"priorityclasses"}, nil, readVerbs},
	{managerRole, core, []string{"services"}, nil, []string{"get", "list"}},
	{managerRole, rbacGroup, []string{"clusterrolebindings"}, nil, allVerbs},
	{managerRole, rbacGroup, []string{"clusterroles"},
		[]string{"system:kube-scheduler", "system:volume-scheduler", "secondary-scheduler-metrics-reader", "cluster-monitoring-view"}, []string{"bind"}},
	{managerRole, rbacGroup, []string{"clusterroles"}, pluginRolesBound(), []string{"bind"}},
	{managerRole, rbacGroup, []string{"clusterroles"}, []string{render.DeschedulerClusterRole}, []string{"bind"}},
	{managerRole, monitoring, []string{"prometheuses"}, nil, []string{"list"}},
	{managerRole, monitoring, []string{"prometheusrules"}, nil, []string{"get", "list", "create", "update", "patch", "delete"}},
	{managerRole, "authentication.k8s.io", []string{"tokenreviews"}, nil, []string{"create"}},
	// The authority policy and binding, shipped by the installer: read, never written.
	{managerRole, "admissionregistration.k8s.io", []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings"}, nil, readVerbs},
	// The routing policy and its binding, which the installer ships: read only, since a
	// mutating policy could change any pod. The operator writes the routing table they
	// read, that one by name (create cannot be limited to names: a table of another name
	// is read by no policy).
	{managerRole, "admissionregistration.k8s.io", []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings"}, nil, readVerbs},
	{managerRole, ourGroup, []string{"routingtables"}, nil, []string{"get", "list", "watch", "create"}},
	{managerRole, ourGroup, []string{"routingtables"}, []string{v1.RoutingTableName}, []string{"update", "delete"}},
	// What the routing policy was seen applying, in the table's status.
	{managerRole, ourGroup, []string{"routingtables/status"}, []string{v1.RoutingTableName}, []string{"update"}},
	// The SecondaryScheduler CRD, read for its UID: it owns the routing table, so that
	// uninstalling the API deletes it.
	{managerRole, "apiextensions.k8s.io", []string{"customresourcedefinitions"}, []string{render.SecondarySchedulerCRDName}, []string{"get"}},

	// The operator, in each namespace where it runs schedulers.
	{schedulerNamespaceRole, "apps", []string{"deployments"}, nil, allVerbs},
	{schedulerNamespaceRole, core, []string{"services", "serviceaccounts", "configmaps", "secrets"}, nil, allVerbs},
	{schedulerNamespaceRole, core, []string{"serviceaccounts/token"}, nil, []string{"create"}},
	{schedulerNamespaceRole, core, []string{"pods"}, nil, []string{"list", "watch"}},
	{schedulerNamespaceRole, rbacGroup, []string{"roles", "rolebindings"}, nil, allVerbs},
	{schedulerNamespaceRole, "coordination.k8s.io", []string{"leases"}, nil, allVerbs},
	{schedulerNamespaceRole, "policy", []string{"poddisruptionbudgets"}, nil, allVerbs},
	{schedulerNamespaceRole, "networking.k8s.io", []string{"networkpolicies"}, nil, allVerbs},

	// The operator, in kube-system: the schedulers' authentication reader RoleBindings.
	{kubeSystemRole, rbacGroup, []string{"rolebindings"}, nil, allVerbs},
	{kubeSystemRole, rbacGroup, []string{"roles"}, []string{"extension-apiserver-authentication-reader"}, []string{"bind"}},

	// The operator's own leader election and /metrics endpoint.
	{leaderElectionRole, "coordination.k8s.io", []string{"leases"}, nil, allVerbs},
	{admissionParameters, core, []string{"configmaps"}, nil, []string{"get", "list", "watch", "create"}},
	{admissionParameters, core, []string{"configmaps"}, []string{render.AuthorityPolicyName}, []string{"update"}},
	// The routing probe, created in dry run only: the installer's policy
	// secondary-scheduler-operator-dry-run-only refuses the operator any other pod.
	{routingProbeRole, core, []string{"pods"}, nil, []string{"create"}},
	{monitoringRole, monitoring, []string{"servicemonitors"}, nil, []string{"create"}},
	{monitoringRole, monitoring, []string{"servicemonitors"}, []string{"secondary-scheduler-operator", "secondary-schedulers"}, []string{"get", "patch"}},
	{metricsAuthRole, "authentication.k8s.io", []string{"tokenreviews"}, nil, []string{"create"}},
	{metricsAuthRole, "authorization.k8s.io", []string{"subjectaccessreviews"}, nil, []string{"create"}},
	// scheduler-plugins' controller Deployment, in the operator's namespace.
	{pluginControllerDeploy, "apps", []string{"deployments"}, nil, allVerbs},

	// scheduler-plugins' controller: the pods of PodGroups and ElasticQuotas, the two
	// kinds and their status, its Events; its Lease, which it hard-codes, in kube-system.
	{pluginControllerRole, core, []string{"pods"}, nil, readVerbs},
	{pluginControllerRole, "scheduling.x-k8s.io", []string{"podgroups", "elasticquotas"}, nil, []string{"get", "list", "watch", "patch", "update"}},
	{pluginControllerRole, "scheduling.x-k8s.io", []string{"podgroups/status", "elasticquotas/status"}, nil, []string{"get", "patch", "update"}},
	{pluginControllerRole, core, []string{"events"}, nil, []string{"create", "patch", "update"}},
	{pluginControllerElection, "coordination.k8s.io", []string{"leases"}, nil, []string{"create"}},
	{pluginControllerElection, "coordination.k8s.io", []string{"leases"}, []string{"sched-plugins-controllers"}, []string{"get", "update"}},
	{pluginControllerElection, core, []string{"events"}, nil, []string{"create", "patch"}},

	// A descheduler (spec.descheduling): what its cycle reads, evictions through the
	// Eviction API, Events; the Secrets of its namespace, where its token is.
	{deschedulerRole, core, []string{"nodes", "namespaces", "pods", "persistentvolumeclaims"}, nil, readVerbs},
	{deschedulerRole, "scheduling.k8s.io", []string{"priorityclasses"}, nil, readVerbs},
	{deschedulerRole, "policy", []string{"poddisruptionbudgets"}, nil, readVerbs},
	{deschedulerRole, core, []string{"pods/eviction"}, nil, []string{"create"}},
	{deschedulerRole, "events.k8s.io", []string{"events"}, nil, []string{"create", "update"}},

	// Bound by others: scrapers of the operator's metrics, people who manage or read
	// SecondarySchedulers. (What schedulers are bound to for their plugins,
	// secondary-scheduler-metrics-reader included, pluginRoleRules adds.)
	{operatorMetricsReader, "", []string{"/metrics"}, nil, []string{"get"}},
	{adminRole, ourGroup, []string{"secondaryschedulers"}, nil, []string{"create", "delete", "get", "list", "patch", "update", "watch"}},
	{adminRole, ourGroup, []string{"secondaryschedulers/" + render.RunSubresource}, nil, []string{"create", "update"}},
	{adminRole, ourGroup, []string{"secondaryschedulers/status"}, nil, []string{"get"}},
	{viewerRole, ourGroup, []string{"secondaryschedulers"}, nil, readVerbs},
	{viewerRole, ourGroup, []string{"secondaryschedulers/status"}, nil, []string{"get"}},
}, pluginRoleRules()...)

// pluginRoleRules are the rules of the ClusterRoles that schedulers are bound to for the
// plugins of their configuration, secondary-scheduler-metrics-reader among them: exactly
// what internal/schedconfig's table of plugins says each reads.
func pluginRoleRules() []allowedRule {
	var rules []allowedRule
	for _, name := range schedconfig.PluginClusterRoles() {
		for _, grant := range schedconfig.PluginGrants(name) {
			rules = append(rules, allowedRule{clusterRole(name), grant.Group, grant.Resources, nil, grant.Verbs})
		}
	}
	return rules
}

// pluginRolesBound are the plugins' ClusterRoles that the operator binds, but for
// secondary-scheduler-metrics-reader, which it bound before plugins had roles.
func pluginRolesBound() []string {
	return slices.DeleteFunc(schedconfig.PluginClusterRoles(), func(name string) bool { return name == schedconfig.MetricsReaderClusterRole })
}

// allowedBindings is every binding config/rbac ships, one line per subject.
var allowedBindings = []string{
	"ClusterRoleBinding secondary-scheduler-operator-manager-rolebinding grants ClusterRole manager-role to " + operatorServiceAccount,
	"ClusterRoleBinding secondary-scheduler-operator-metrics-auth-rolebinding grants ClusterRole secondary-scheduler-operator-metrics-auth-role to " + operatorServiceAccount,
	"RoleBinding " + operatorNamespace + "/secondary-scheduler-operator-leader-election-rolebinding grants Role secondary-scheduler-operator-leader-election-role to " + operatorServiceAccount,
	"RoleBinding " + operatorNamespace + "/secondary-scheduler-operator-monitoring-rolebinding grants Role secondary-scheduler-operator-monitoring-role to " + operatorServiceAccount,
	"RoleBinding " + operatorNamespace + "/secondary-scheduler-operator-admission-parameters-rolebinding grants Role secondary-scheduler-operator-admission-parameters-role to " +
		operatorServiceAccount,
	"RoleBinding " + operatorNamespace + "/secondary-scheduler-operator-routing-probe-rolebinding grants Role secondary-scheduler-operator-routing-probe-role to " +
		operatorServiceAccount,
	"RoleBinding " + operatorNamespace + "/" + tenancy.SchedulerNamespaceClusterRole + " grants ClusterRole " + tenancy.SchedulerNamespaceClusterRole + " to " + operatorServiceAccount,
	"RoleBinding kube-system/secondary-scheduler-operator-kube-system grants Role secondary-scheduler-operator-kube-system to " + operatorServiceAccount,
	"RoleBinding " + operatorNamespace + "/secondary-scheduler-operator-plugin-controller grants Role secondary-scheduler-operator-plugin-controller to " + operatorServiceAccount,
	"ClusterRoleBinding " + render.PluginControllerName + " grants ClusterRole " + render.PluginControllerName + " to " + pluginControllerServiceAccount,
	"RoleBinding kube-system/" + render.PluginControllerName + "-leader-election grants Role " + render.PluginControllerName + "-leader-election to " +
		pluginControllerServiceAccount,
}

// grant is one verb on one resource (or object, or nonResourceURL) granted by one role.
type grant struct {
	role         roleID
	apiGroup     string
	resource     string
	resourceName string
	verb         string
}

func (g grant) String() string {
	if strings.HasPrefix(g.resource, "/") {
		return fmt.Sprintf("%s: nonResourceURL %s %s", g.role, g.resource, g.verb)
	}
	return fmt.Sprintf("%s: %s %s", g.role, g.target(), g.verb)
}

// target is what g grants access to: GROUP/RESOURCE, with " named NAME" for one object.
func (g grant) target() string {
	if strings.HasPrefix(g.resource, "/") {
		return "nonResourceURL " + g.resource
	}
	group := g.apiGroup
	if group == "" {
		group = "core"
	}
	target := group + "/" + g.resource
	if g.resourceName != "" {
		target += " named " + g.resourceName
	}
	return target
}

func (a allowedRule) grants() []grant {
	grants := make([]grant, 0, len(a.resources)*len(orOne(a.resourceNames))*len(a.verbs))
	for _, resource := range a.resources {
		for _, name := range orOne(a.resourceNames) {
			for _, verb := range a.verbs {
				grants = append(grants, grant{role: a.role, apiGroup: a.apiGroup, resource: resource, resourceName: name, verb: verb})
			}
		}
	}
	return grants
}

// orOne returns names, or a single empty name (any object) when there are none.
func orOne(names []string) []string {
	if len(names) == 0 {
		return []string{""}
	}
	return names
}

// Scopes of OperatorGrants.
const (
	ScopeCluster           = "cluster"
	ScopeOperatorNamespace = "operator namespace"
	ScopeKubeSystem        = "kube-system"
)

// OperatorGrants is what the allow-list lets the operator's ServiceAccount do, by where
// the binding applies (ScopeCluster, ScopeOperatorNamespace, ScopeKubeSystem), each grant
// written as GROUP/RESOURCE[ named NAME] VERB, without the role that grants it.
func OperatorGrants() map[string][]string { return AccountGrants(OperatorServiceAccount) }

// AccountGrants is what the allow-list lets the ServiceAccount of the operator's namespace
// named account do, as OperatorGrants says the operator's.
func AccountGrants(account string) map[string][]string {
	out := map[string][]string{}
	for _, binding := range allowedBindings {
		if !strings.HasSuffix(binding, " to "+serviceAccount(account)) {
			continue
		}
		scope := ScopeCluster
		switch {
		case strings.HasPrefix(binding, "RoleBinding "+operatorNamespace+"/"):
			scope = ScopeOperatorNamespace
		case strings.HasPrefix(binding, "RoleBinding kube-system/"):
			scope = ScopeKubeSystem
		}
		for _, rule := range allowedRules {
			if !strings.Contains(binding, " grants "+roleRefOf(rule.role)+" to ") {
				continue
			}
			for _, g := range rule.grants() {
				g.role = roleID{}
				out[scope] = append(out[scope], g.target()+" "+g.verb)
			}
		}
	}
	return out
}

// roleRefOf is how a binding line names role: a Role by name only.
func roleRefOf(role roleID) string { return role.kind + " " + role.name }
