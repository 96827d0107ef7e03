// Package tenancy decides in which namespaces the operator runs schedulers. A scheduler's
// ServiceAccount may bind and delete pods in every namespace, and any pod of its namespace
// may mount that ServiceAccount, so running one is a cluster admin's decision: schedulers
// run only in the namespaces the admin names on the operator's command line (the
// operator's own by default, or OLM's target namespaces), where the admin also grants the
// operator its namespaced permissions. The operator's caches and RBAC are scoped to them.
package tenancy

import (
	"context"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
)

// SchedulerNamespaceClusterRole is the ClusterRole, shipped in config/rbac, that a
// RoleBinding grants the operator in each namespace where it runs schedulers.
const SchedulerNamespaceClusterRole = "secondary-scheduler-operator-scheduler-namespace"

// Policy says which namespaces may run schedulers.
type Policy struct {
	// Namespaces are the namespaces where schedulers run.
	Namespaces []string
	// Unbound are namespaces the admin named where the operator was not granted its
	// namespaced permissions: it runs no scheduler there, and says why.
	Unbound []string
}

// Allows reports whether SecondarySchedulers of namespace may run schedulers.
func (p Policy) Allows(namespace string) bool {
	return slices.Contains(p.Namespaces, namespace)
}

// Refusal says, for a status message, why a SecondaryScheduler of namespace runs nothing
// and how a cluster admin would allow it.
func (p Policy) Refusal(namespace string) string {
	if slices.Contains(p.Unbound, namespace) {
		return "namespace " + namespace + " is named by the operator's --scheduler-namespaces flag, but when the operator started it was not " +
			"granted its permissions there, so nothing was created. A cluster admin binds ClusterRole " + SchedulerNamespaceClusterRole +
			" to the operator's ServiceAccount in " + namespace + " (kubectl -n " + namespace + " create rolebinding " + SchedulerNamespaceClusterRole +
			" --clusterrole=" + SchedulerNamespaceClusterRole + " --serviceaccount=<operator namespace>:<operator ServiceAccount>) and restarts the operator"
	}
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

// requiredAccess is what the operator must be allowed in a namespace where it runs
// schedulers, checked at start: its caches list and watch these there, and a cache that
// cannot would keep the operator from starting at all.
var requiredAccess = []authorizationv1.ResourceAttributes{
	{Group: "apps", Resource: "deployments", Verb: "watch"},
	{Resource: "secrets", Verb: "watch"},
	{Resource: "configmaps", Verb: "watch"},
	{Resource: "serviceaccounts", Verb: "create"},
	{Group: "rbac.authorization.k8s.io", Resource: "rolebindings", Verb: "create"},
	{Group: "coordination.k8s.io", Resource: "leases", Verb: "create"},
	{Group: "policy", Resource: "poddisruptionbudgets", Verb: "watch"},
	{Group: "networking.k8s.io", Resource: "networkpolicies", Verb: "watch"},
	{Resource: "pods", Verb: "watch"},
}

// CheckAccess splits namespaces into those where the operator holds what running
// schedulers needs (ClusterRole SchedulerNamespaceClusterRole bound there) and those
// where it does not, asking the API server with SelfSubjectAccessReviews.
func CheckAccess(ctx context.Context, reviews authorizationv1client.SelfSubjectAccessReviewInterface, namespaces []string) (granted, missing []string, err error) {
	for _, namespace := range namespaces {
		allowed := true
		for _, access := range requiredAccess {
			access.Namespace = namespace
			review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &access}}
			review, err := reviews.Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				return nil, nil, fmt.Errorf("check the operator's access in namespace %s: %w", namespace, err)
			}
			if !review.Status.Allowed {
				allowed = false
				break
			}
		}
		if allowed {
			granted = append(granted, namespace)
		} else {
			missing = append(missing, namespace)
		}
	}
	return granted, missing, nil
}
