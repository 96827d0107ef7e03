//go:build e2e

package e2e

import (
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// canI asks the API server, as user in namespace, whether verb on resource is allowed.
func canI(user, namespace, verb, resource string, extra ...string) string {
	output, _ := kubectl(append([]string{"auth", "can-i", verb, resource, "--as", user, "-n", namespace}, extra...)...)
	return strings.TrimSpace(output)
}

var _ = Describe("Tenancy", func() {
	// The cluster's kube-controller-manager aggregates ClusterRoles into edit, admin and
	// view, as in any cluster: what a namespace editor may do is checked for real here.
	It("lets no namespace editor run a scheduler, and runs none outside the allowed namespaces", func() {
		ns := newNamespace()
		for _, role := range []string{"secondaryscheduler_viewer_role.yaml", "secondaryscheduler_admin_role.yaml"} {
			output, err := kubectl("apply", "--server-side", "-f", filepath.Join(repoRoot, "config", "rbac", role))
			Expect(err).NotTo(HaveOccurred(), output)
		}
		// A control: a role labelled to aggregate into edit does reach editors, so that
		// the refusal below is the roles' doing, not a cluster without aggregation. It
		// grants something harmless of the same API group that edit otherwise lacks.
		control := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "e2e-aggregation-control", Labels: map[string]string{"rbac.authorization.k8s.io/aggregate-to-edit": "true"}},
			Rules:      []rbacv1.PolicyRule{{APIGroups: []string{v1.GroupVersion.Group}, Resources: []string{"secondaryschedulers/finalizers"}, Verbs: []string{"update"}}},
		}
		createForSpec(control)
		editor := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "tenant-editor"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "tenant"}},
		}
		Expect(k8s.Create(ctx, editor)).To(Succeed())
		Eventually(func() string {
			return canI("tenant", ns, "update", "secondaryschedulers.operator.secondary-scheduler.io", "--subresource=finalizers")
		}).Should(Equal("yes"), "aggregation into edit works")
		// Reading reaches edit in two steps (the viewer role into view, view into edit),
		// which kube-controller-manager may take after the control's one: awaited first, so
		// that the refusals below are read from edit as aggregated in full.
		Eventually(func() string {
			return canI("tenant", ns, "get", "secondaryschedulers.operator.secondary-scheduler.io")
		}).Should(Equal("yes"), "editors may read them through view")
		Expect(canI("tenant", ns, "create", "secondaryschedulers.operator.secondary-scheduler.io")).To(Equal("no"))
		Expect(canI("tenant", ns, "update", "secondaryschedulers.operator.secondary-scheduler.io")).To(Equal("no"))

		// An admin's resource in a namespace the operator was not told to use: refused in
		// status, nothing created, no ServiceAccount there gains any pod permission.
		tenantNamespace := "tenant-" + ns
		createForSpec(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenantNamespace}})
		cr := binPacking(tenantNamespace, "sneaky")
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }).Should(Equal("True/" + string(v1.ReasonNamespaceNotAllowed)))
		output, err := kubectl("get", "serviceaccounts,deployments,configmaps,roles,rolebindings,leases", "-n", tenantNamespace,
			"-l", "app.kubernetes.io/managed-by=secondary-scheduler-operator", "-o", "name")
		Expect(err).NotTo(HaveOccurred(), output)
		Expect(nonEmptyLines(output)).To(BeEmpty())
		output, err = kubectl("get", "clusterrolebindings", "-l", "operator.secondary-scheduler.io/owner-namespace="+tenantNamespace, "-o", "name")
		Expect(err).NotTo(HaveOccurred(), output)
		Expect(nonEmptyLines(output)).To(BeEmpty())
		accounts, err := kubectl("get", "serviceaccounts", "-n", tenantNamespace, "-o", "jsonpath={.items[*].metadata.name}")
		Expect(err).NotTo(HaveOccurred(), accounts)
		for _, account := range strings.Fields(accounts) {
			user := "system:serviceaccount:" + tenantNamespace + ":" + account
			Expect(canI(user, "default", "create", "pods/binding")).To(Equal("no"), user)
			Expect(canI(user, "kube-system", "delete", "pods")).To(Equal("no"), user)
		}
		Expect(k8s.Delete(ctx, cr)).To(Succeed())
	})
})
