//go:build e2e

package e2e

import (
	"strings"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// shippedAdminRole is the ClusterRole, shipped by every installer, that lets its holders
// run schedulers.
const shippedAdminRole = "secondary-scheduler-operator-secondaryscheduler-admin-role"

// The users of the authority checks, each bound in the namespace under test.
const (
	namespaceEditor     = "tenant-editor"   // the built-in edit role
	namespaceAdmin      = "tenant-admin"    // the built-in admin role
	schedulerAdmin      = "scheduler-admin" // the shipped admin role, and nothing else
	secondarySchedulers = "secondaryschedulers.operator.secondary-scheduler.io"
)

// expectAuthorityAtAdmission checks, on an installed operator, what the README promises:
// in namespace (where the installed operator runs schedulers, and where existing, one of
// its SecondarySchedulers, runs), a namespace editor or admin can neither create nor
// change a SecondaryScheduler, whatever roles the install path aggregated into edit and
// admin; a holder of the shipped admin role can, naming only Secrets it may read. olm says
// whether OLM's generated roles were created, which let editors and admins create
// SecondarySchedulers as far as RBAC goes: the admission policy alone refuses them then.
// Checked with SubjectAccessReviews (kubectl auth can-i) and with real requests as those
// users.
func (c *installCluster) expectAuthorityAtAdmission(namespace, existing string, olm bool) {
	for user, role := range map[string]string{namespaceEditor: "edit", namespaceAdmin: "admin", schedulerAdmin: shippedAdminRole} {
		Expect(c.client.Create(ctx, &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
		})).To(Succeed())
	}
	canI := func(user, verb string, extra ...string) string {
		output, _ := runKubectl(c.kubeconfig, append([]string{"auth", "can-i", verb, secondarySchedulers, "--as", user, "-n", namespace}, extra...)...)
		return strings.TrimSpace(output)
	}
	Eventually(func() string { return canI(schedulerAdmin, "create", "--subresource="+render.RunSubresource) }).Should(Equal("yes"))
	for _, user := range []string{namespaceEditor, namespaceAdmin} {
		// The refusals below mean something once the user's binding and its aggregated
		// role are in effect: reading SecondarySchedulers, which they grant, shows it.
		Eventually(func() string { return canI(user, "get") }).Should(Equal("yes"), "%s's role is in effect", user)
		if olm {
			// kube-controller-manager aggregates OLM's generated roles into edit and admin:
			// as far as RBAC goes, editors may create SecondarySchedulers.
			Eventually(func() string { return canI(user, "create") }).Should(Equal("yes"), "OLM's roles reach %s", user)
		}
		Expect(canI(user, "create", "--subresource="+render.RunSubresource)).To(Equal("no"), user)
		Expect(canI(user, "update", "--subresource="+render.RunSubresource)).To(Equal("no"), user)
	}

	// Real requests. The first waits until the policy is enforced, with dry runs.
	refusedAs := func(user string) func() error {
		return func() error {
			return c.as(user).Create(ctx, binPacking(namespace, "by-"+user), client.DryRunAll)
		}
	}
	for _, user := range []string{namespaceEditor, namespaceAdmin} {
		Eventually(refusedAs(user)).Should(And(HaveOccurred(), Satisfy(apierrors.IsForbidden)), "%s cannot create a SecondaryScheduler", user)
		if olm {
			Expect(refusedAs(user)()).To(MatchError(ContainSubstring("NotAllowedToRunSchedulers")), "the policy refuses %s, not RBAC", user)
		}
	}
	Expect(c.as(schedulerAdmin).Create(ctx, binPacking(namespace, "by-scheduler-admin"), client.DryRunAll)).To(Succeed())

	// A change of spec, by a namespace admin, is refused as well; labelling is not a change.
	changed := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: existing}}
	err := updateSpec(c.as(namespaceAdmin), changed, func(cr *v1.SecondaryScheduler) { cr.Spec.LogLevel = v1.Debug })
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a namespace admin changes the spec: %v", err)
	if olm {
		Expect(err).To(MatchError(ContainSubstring("NotAllowedToRunSchedulers")))
	}

	// A Secret the scheduler admin may not read cannot be named, so the operator cannot
	// be made to read it and send its token elsewhere.
	Expect(c.client.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "not-theirs"},
		Data: map[string][]byte{"token": []byte("someone-elses-token")}})).To(Succeed())
	naming := binPacking(namespace, "names-a-secret")
	naming.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{
		Address: "https://listener.example:8443", TokenSecretRef: &corev1.LocalObjectReference{Name: "not-theirs"}}}
	output, _ := runKubectl(c.kubeconfig, "auth", "can-i", "get", "secret/not-theirs", "--as", schedulerAdmin, "-n", namespace)
	Expect(strings.TrimSpace(output)).To(Equal("no"))
	Expect(c.as(schedulerAdmin).Create(ctx, naming, client.DryRunAll)).To(MatchError(ContainSubstring("ReferenceNotReadable")))

	// Nor can a container beside the scheduler be handed a Secret through its env, even
	// one its author may read: nothing would check it.
	beside := binPacking(namespace, "extender-reads-a-secret")
	beside.Spec.Extenders = []v1.Extender{{Name: "beside", FilterVerb: "filter", Container: &v1.ExtenderContainer{Image: "example.com/extender:v1", Port: 8888,
		Env: []corev1.EnvVar{{Name: "T", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: "not-theirs"}, Key: "token"}}}}}}}
	Expect(c.as(schedulerAdmin).Create(ctx, beside, client.DryRunAll)).To(MatchError(ContainSubstring("ReferenceNotAllowed")))

	// A namespace admin cannot strip the operator's finalizer, which would leave the
	// scheduler's cluster-wide bindings behind once the resource is deleted.
	strip := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	err = c.as(namespaceAdmin).Patch(ctx, &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: existing}}, strip)
	Expect(apierrors.IsForbidden(err)).To(BeTrue(), "a namespace admin strips the finalizer: %v", err)
	if olm {
		Expect(err).To(MatchError(ContainSubstring("NotAllowedToRunSchedulers")))
	}
}

// as is a client of the install cluster acting as user, impersonated by the cluster admin.
func (c *installCluster) as(user string) client.Client {
	config, err := clientcmd.BuildConfigFromFlags("", c.kubeconfig)
	Expect(err).NotTo(HaveOccurred())
	config.Impersonate = rest.ImpersonationConfig{UserName: user}
	impersonating, err := client.New(config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return impersonating
}
