// Package tenancy decides in which namespaces the operator runs schedulers. A scheduler's
// ServiceAccount may bind and delete pods in every namespace, and any pod of its namespace
// may mount that ServiceAccount, so running one is a cluster admin's decision: schedulers
// run only in namespaces the admin named on the operator's command line, or labelled with
// AllowLabel, which only those allowed to update Namespace objects (cluster admins) can set.
package tenancy

import (
	"slices"
	"strings"
)

// AllowLabel, set to "true" on a Namespace, allows SecondarySchedulers in it to run.
const AllowLabel = "operator.secondary-scheduler.io/run-schedulers"

// Policy says which namespaces may run schedulers.
type Policy struct {
	// Namespaces are allowed whatever their labels: the operator's own by default.
	Namespaces []string
}

// Allows reports whether a namespace of this name and labels may run schedulers.
func (p Policy) Allows(namespace string, labels map[string]string) bool {
	return slices.Contains(p.Namespaces, namespace) || labels[AllowLabel] == "true"
}

// Describe says, for a status message, how a namespace becomes allowed.
func (p Policy) Describe() string {
	named := "none"
	if len(p.Namespaces) > 0 {
		named = strings.Join(p.Namespaces, ", ")
	}
	return "the operator runs schedulers only in the namespaces named by its --scheduler-namespaces flag (" + named +
		") and in namespaces labelled " + AllowLabel + "=true by a cluster admin"
}
