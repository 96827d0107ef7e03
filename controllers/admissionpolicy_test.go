package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/installer"
)

// Without the admission policy the installer ships, the operator fails closed: a running
// scheduler keeps running as it was, a change of it is not applied, a new one is not
// started, and each says why and who puts it back. Once an admin applies the policy again,
// the change is applied, and the resource created while nothing checked its author stays
// refused until it is recreated.
func TestFailsClosedWithoutAdmissionPolicy(t *testing.T) {
	s := newScenario(t)
	running := binPacking("kept-running")
	s.create(running)
	s.expectCondition(running, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.markDeploymentReady(running)
	s.expectCondition(running, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	runningHash := s.deployment(running).Spec.Template.Annotations[render.ConfigHashAnnotation]

	// Someone deletes the authority binding; the operator may not put it back.
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: render.AuthorityPolicyName}}
	s.g.Expect(adminClient.Delete(s.ctx, binding)).To(Succeed())
	s.t.Cleanup(func() {
		if err := installer.ApplyAdmissionPolicies(context.Background(), adminClient, "..", operatorNamespace); err != nil {
			t.Errorf("put the admission policy back: %v", err)
		}
	})
	// Seen by the operator before the change below: the binding's deletion and the change
	// reach it through two watches, which nothing orders.
	s.expectCondition(running, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonAdmissionPolicyMissing)

	s.update(running, func() {
		running.Spec.Profile.BinPacking = &v1.BinPackingArgs{ResourceWeights: map[corev1.ResourceName]int64{corev1.ResourceCPU: 3, corev1.ResourceMemory: 1}}
	})
	missing := s.expectCondition(running, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonAdmissionPolicyMissing)
	s.g.Expect(missing.Message).To(And(ContainSubstring("ValidatingAdmissionPolicyBinding "+render.AuthorityPolicyName+" does not exist"),
		ContainSubstring("the installer ships it"), ContainSubstring("a cluster admin applies it again")))
	s.expectCondition(running, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.g.Expect(s.deployment(running).Spec.Template.Annotations[render.ConfigHashAnnotation]).To(Equal(runningHash), "the change is not applied")

	unchecked := binPacking("created-unchecked")
	s.create(unchecked)
	s.expectCondition(unchecked, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonAdmissionPolicyMissing)
	s.g.Expect(s.deployment(unchecked)).To(BeNil(), "no new scheduler starts")
	s.g.Consistently(func() error { return s.get(binding) }, 2*time.Second).ShouldNot(Succeed(), "the operator does not write the binding")

	// Creation times are in seconds: let the next second begin, so that the binding the
	// admin applies again is provably newer than the resource created without it.
	s.g.Expect(s.get(unchecked)).To(Succeed())
	time.Sleep(time.Until(unchecked.CreationTimestamp.Add(time.Second)))
	s.g.Expect(installer.ApplyAdmissionPolicies(s.ctx, adminClient, "..", operatorNamespace)).To(Succeed())

	s.expectCondition(running, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Eventually(func() string { return s.deployment(running).Spec.Template.Annotations[render.ConfigHashAnnotation] }).ShouldNot(Equal(runningHash))
	refused := s.expectCondition(unchecked, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonCreatedBeforeAdmissionPolicy)
	s.g.Expect(refused.Message).To(ContainSubstring("deletes and recreates it"))
	s.g.Expect(s.deployment(unchecked)).To(BeNil())

	// Recreated, it was checked at admission, and runs.
	s.g.Expect(adminClient.Delete(s.ctx, unchecked)).To(Succeed())
	s.g.Eventually(func() error { return s.get(unchecked) }).ShouldNot(Succeed())
	recreated := binPacking(unchecked.Name)
	s.create(recreated)
	s.expectCondition(recreated, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Expect(s.deployment(recreated)).NotTo(BeNil())
}

// The policy's parameters are the operator's: deleted or changed (an allow-list widened
// by someone who may edit ConfigMaps in the operator's namespace), they are written back
// as the operator's flags say.
func TestAdmissionParametersRestored(t *testing.T) {
	s := newScenario(t)
	parameters := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: render.AuthorityPolicyName}}
	s.g.Expect(s.get(parameters)).To(Succeed())
	want := parameters.Data

	s.update(parameters, func() { parameters.Data = map[string]string{render.AllowedImagesKey: "evil.example.com/"} })
	s.g.Eventually(func() map[string]string {
		_ = s.get(parameters)
		return parameters.Data
	}).Should(Equal(want), "the operator restores the data")

	s.g.Expect(adminClient.Delete(s.ctx, parameters)).To(Succeed())
	s.g.Eventually(func() map[string]string {
		restored := &corev1.ConfigMap{ObjectMeta: parameters.ObjectMeta}
		if err := s.get(restored); err != nil {
			return nil
		}
		return restored.Data
	}).Should(Equal(want), "the operator recreates them")
}

// The operator cannot be borrowed: its account, as config/rbac grants it, may create or
// change no admission policy or binding (validating or mutating, of any name, its own
// among them) and no webhook configuration, which could rewrite or admit any request the
// API server takes, and may neither escalate nor bind roles beyond those it is allowed to
// bind. The API server's authorizer answers, with the shipped roles in place.
func TestOperatorCannotBeBorrowed(t *testing.T) {
	s := newScenario(t)
	admissionKinds := []string{"validatingadmissionpolicies", "validatingadmissionpolicybindings", "mutatingadmissionpolicies",
		"mutatingadmissionpolicybindings", "validatingwebhookconfigurations", "mutatingwebhookconfigurations"}
	type ask struct {
		group, resource, name, verb, namespace string
	}
	denied := make([]ask, 0, 20*len(admissionKinds)+12)
	for _, resource := range admissionKinds {
		for _, verb := range []string{"create", "update", "patch", "delete", "deletecollection"} {
			for _, name := range []string{"", render.AuthorityPolicyName, render.RoutingPolicyName, "h5-not-the-operators"} {
				denied = append(denied, ask{admissionregistrationv1.GroupName, resource, name, verb, ""})
			}
		}
	}
	for _, resource := range []string{"clusterroles", "roles"} {
		for _, verb := range []string{"escalate", "bind"} {
			denied = append(denied, ask{rbacv1.GroupName, resource, "cluster-admin", verb, s.namespace}, ask{rbacv1.GroupName, resource, "admin", verb, s.namespace})
		}
	}
	denied = append(denied, ask{rbacv1.GroupName, "clusterroles", "", "create", ""}, ask{"", "serviceaccounts", "", "impersonate", ""},
		ask{"", "users", "", "impersonate", ""}, ask{"certificates.k8s.io", "certificatesigningrequests", "", "create", ""})
	for _, a := range denied {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: operatorUser,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: a.group, Resource: a.resource, Name: a.name, Verb: a.verb, Namespace: a.namespace}}}
		s.g.Expect(adminClient.Create(s.ctx, review)).To(Succeed())
		s.g.Expect(review.Status.Allowed).To(BeFalse(), "the operator may %s %s/%s %q in %q", a.verb, a.group, a.resource, a.name, a.namespace)
	}
	// It still reads them, and writes its policy's parameters: the check has teeth only if
	// the allowed asks pass.
	for _, a := range []ask{
		{admissionregistrationv1.GroupName, "validatingadmissionpolicies", render.AuthorityPolicyName, "get", ""},
		{"", "configmaps", render.AuthorityPolicyName, "update", operatorNamespace},
	} {
		review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: operatorUser,
			ResourceAttributes: &authorizationv1.ResourceAttributes{Group: a.group, Resource: a.resource, Name: a.name, Verb: a.verb, Namespace: a.namespace}}}
		s.g.Expect(adminClient.Create(s.ctx, review)).To(Succeed())
		s.g.Expect(review.Status.Allowed).To(BeTrue(), "the operator may not %s %s/%s %q in %q", a.verb, a.group, a.resource, a.name, a.namespace)
	}
}

// The operator may create pods in its namespace, for its routing probe, but in dry run
// only: RBAC cannot tell a dry run from a create, and the installer's policy
// secondary-scheduler-operator-dry-run-only refuses the operator's ServiceAccount every
// pod it would really create, so that its account cannot run code on a node. Asked as
// that ServiceAccount, with the Role the installer binds to it.
func TestOperatorCreatesPodsInDryRunOnly(t *testing.T) {
	s := newScenario(t)
	binding := &rbacv1.RoleBinding{}
	s.g.Expect(decodeShipped(probeRoleBindingFile, "RoleBinding", binding)).To(Succeed())
	binding.Namespace = operatorNamespace
	binding.Name += "-as-serviceaccount"
	binding.Subjects[0].Namespace = operatorNamespace
	s.g.Expect(client.IgnoreAlreadyExists(adminClient.Create(s.ctx, binding))).To(Succeed())
	account := "system:serviceaccount:" + operatorNamespace + ":" + binding.Subjects[0].Name
	config := rest.CopyConfig(adminConfig)
	config.Impersonate = rest.ImpersonationConfig{UserName: account,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + operatorNamespace, "system:authenticated"}}
	asOperator, err := client.New(config, client.Options{Scheme: testScheme})
	s.g.Expect(err).NotTo(HaveOccurred())

	// The Role is in place and the policy with it, whatever the order their caches
	// catch up in: the dry run passes, and the create is refused by the policy.
	s.g.Eventually(func() error {
		return asOperator.Create(s.ctx, render.RoutingProbePod(operatorNamespace), client.DryRunAll)
	}).Should(Succeed(), "the routing probe, in dry run")
	s.g.Eventually(func() string {
		err := asOperator.Create(s.ctx, render.RoutingProbePod(operatorNamespace))
		if err == nil {
			return "created"
		}
		return err.Error()
	}).Should(ContainSubstring("creates pods in dry run only"), "a real pod is refused by the dry-run-only policy")
	s.g.Expect(apierrors.IsNotFound(adminClient.Get(s.ctx, client.ObjectKey{Namespace: operatorNamespace, Name: render.RoutingProbePodName},
		&corev1.Pod{}))).To(BeTrue(), "no pod was made")
}
