package controllers

import (
	"context"
	"testing"

	"github.com/onsi/gomega"
	"k8s.io/client-go/kubernetes"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
)

// The operator checks at start, with the API server, that it holds its permissions in
// each namespace it is told to run schedulers in: one without would keep its caches from
// syncing, and so the whole operator from starting.
func TestStartupAccessCheckFindsNamespacesWithoutTheOperatorsRoleBinding(t *testing.T) {
	g := gomega.NewWithT(t)
	reviews := kubernetes.NewForConfigOrDie(operatorRESTConfig).AuthorizationV1().SelfSubjectAccessReviews()
	granted, missing, err := tenancy.CheckAccess(context.Background(), reviews, []string{schedulerNamespaces[0], "never-bound", schedulerNamespaces[1]})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(granted).To(gomega.Equal([]string{schedulerNamespaces[0], schedulerNamespaces[1]}))
	g.Expect(missing).To(gomega.Equal([]string{"never-bound"}))

	refusal := tenancy.Policy{Namespaces: granted, Unbound: missing}.Refusal("never-bound")
	g.Expect(refusal).To(gomega.And(gomega.ContainSubstring("create rolebinding"), gomega.ContainSubstring(tenancy.SchedulerNamespaceClusterRole)))
}
