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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// Without its admission policies the operator fails closed: a running scheduler keeps
// running as it was, a change of it is not applied, a new one is not started, and each
// says why. Once the policies are back, the change is applied, and the resource created
// while nothing checked its author stays refused until it is recreated.
func TestFailsClosedWithoutAdmissionPolicy(t *testing.T) {
	s := newScenario(t)
	running := binPacking("kept-running")
	s.create(running)
	s.expectCondition(running, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.markDeploymentReady(running)
	s.expectCondition(running, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	runningHash := s.deployment(running).Spec.Template.Annotations[render.ConfigHashAnnotation]

	// The operator loses the right to write admission policies, and someone deletes the
	// authority binding: it cannot put it back.
	restore := withoutAdmissionPolicyRights(s)
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: render.AuthorityPolicyName}}
	s.g.Expect(adminClient.Delete(s.ctx, binding)).To(Succeed())

	s.update(running, func() {
		running.Spec.Profile.BinPacking = &v1.BinPackingArgs{ResourceWeights: map[corev1.ResourceName]int64{corev1.ResourceCPU: 3, corev1.ResourceMemory: 1}}
	})
	missing := s.expectCondition(running, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonAdmissionPolicyMissing)
	s.g.Expect(missing.Message).To(ContainSubstring("ValidatingAdmissionPolicyBinding " + render.AuthorityPolicyName + " does not exist"))
	s.expectCondition(running, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.g.Expect(s.deployment(running).Spec.Template.Annotations[render.ConfigHashAnnotation]).To(Equal(runningHash), "the change is not applied")

	unchecked := binPacking("created-unchecked")
	s.create(unchecked)
	s.expectCondition(unchecked, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonAdmissionPolicyMissing)
	s.g.Expect(s.deployment(unchecked)).To(BeNil(), "no new scheduler starts")
	s.g.Expect(operatorLog.String()).To(ContainSubstring("cannot keep the admission policies in place"))

	// Creation times are in seconds: let the next second begin, so that the binding the
	// operator recreates is provably newer than the resource created without it.
	s.g.Expect(s.get(unchecked)).To(Succeed())
	time.Sleep(time.Until(unchecked.CreationTimestamp.Add(time.Second)))
	restore()
	s.g.Eventually(func() error { return s.get(binding) }, eventuallyTimeout+admissionPolicyRetry).Should(Succeed(), "the operator recreates the binding")

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

// withoutAdmissionPolicyRights removes from the operator's ClusterRole its rules on
// admission policies, waits until the API server denies them, and returns what puts
// them back.
func withoutAdmissionPolicyRights(s *scenario) (restore func()) {
	s.t.Helper()
	shipped := &rbacv1.ClusterRole{}
	s.g.Expect(decodeShipped(managerRoleFile, "ClusterRole", shipped)).To(Succeed())
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: shipped.Name}}
	s.update(role, func() {
		var kept []rbacv1.PolicyRule
		for _, rule := range role.Rules {
			if !sets.New(rule.APIGroups...).Has(admissionregistrationv1.GroupName) {
				kept = append(kept, rule)
			}
		}
		role.Rules = kept
	})
	s.g.Eventually(func() bool { return operatorMay(s.ctx, "create") }).Should(BeFalse(), "the API server denies the operator")
	restored := false
	restore = func() {
		if restored {
			return
		}
		restored = true
		s.update(role, func() { role.Rules = shipped.Rules })
		s.g.Eventually(func() bool { return operatorMay(s.ctx, "create") }).Should(BeTrue(), "the API server allows the operator again")
	}
	s.t.Cleanup(restore)
	return restore
}

// operatorMay asks the API server whether the operator may verb admission policy bindings.
func operatorMay(ctx context.Context, verb string) bool {
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: operatorUser,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Group: admissionregistrationv1.GroupName, Resource: "validatingadmissionpolicybindings", Verb: verb}}}
	if err := adminClient.Create(ctx, review); err != nil {
		return false
	}
	return review.Status.Allowed
}
