// Package tenancy decides in which namespaces the operator runs schedulers. A scheduler's
// ServiceAccount may bind and delete pods in every namespace, and any pod of its namespace
// may mount that ServiceAccount, so running one is a cluster admin's decision: schedulers
// run only in the namespaces the admin names on the operator's command line (the
// operator's own by default, or OLM's target namespaces), where the admin also grants the
// operator its namespaced permissions. The operator's caches and RBAC are scoped to them.
package tenancy

import (
	"slices"
	"strings"
)

// SchedulerNamespaceClusterRole is the ClusterRole, shipped in config/rbac, that a
// RoleBinding grants the operator in each namespace where it runs schedulers.
const SchedulerNamespaceClusterRole = "secondary-scheduler-operator-scheduler-namespace"

// Policy says which namespaces may run schedulers.
type Policy struct {
	// Namespaces are the namespaces where schedulers run.
	Namespaces []string
}

// Allows reports whether SecondarySchedulers of namespace may run schedulers.
func (p Policy) Allows(namespace string) bool {
	return slices.Contains(p.Namespaces, namespace)
}

// Refusal says, for a status message, why a SecondaryScheduler of namespace runs nothing
// and how a cluster admin would allow it.
func (p Policy) Refusal(namespace string) string {
	allowed := "none"
	if len(p.Namespaces) > 0 {
		allowed = strings.Join(p.Namespaces, ", ")
	}
	return "namespace " + namespace + " is not one where the operator runs schedulers (allowed: " + allowed + "); " +
		"nothing was created. A scheduler's ServiceAccount may bind and delete pods in every namespace, so only a cluster admin " +
		"allows a namespace: by adding it to the operator's --scheduler-namespaces flag (or to OLM's target namespaces) and binding " +
		"ClusterRole " + SchedulerNamespaceClusterRole + " to the operator's ServiceAccount there. Otherwise create this SecondaryScheduler in an allowed namespace"
}

// ParseList splits a comma-separated flag value into its non-empty, trimmed items.
func ParseList(value string) []string {
	var items []string
	for _, item := range strings.Split(value, ",") {
		if item = strings.TrimSpace(item); item != "" && !slices.Contains(items, item) {
			items = append(items, item)
		}
	}
	return items
}
