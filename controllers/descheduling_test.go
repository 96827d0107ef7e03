package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// spec.descheduling runs a descheduler beside its scheduler, with the scheduler's token
// in a Secret of its own and the roles the installer ships, and removing the setting
// removes every object of it; a setting that would fight the scheduler is refused with
// its reason and changes nothing.
func TestDeschedulerFollowsTheSpec(t *testing.T) {
	s := newScenario(t)
	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "drifting"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			// A closed loopback port: no Prometheus is needed to get a token.
			Metrics: &v1.LoadMetrics{Address: "http://127.0.0.1:1", ServiceAccountToken: &v1.ServiceAccountTokenAuth{}}},
			Descheduling: &v1.Descheduling{}},
	}
	s.create(cr)
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.DeschedulerName(cr)}}
	s.g.Eventually(func() error { return s.get(deployment) }).Should(Succeed(), "the descheduler's Deployment is created")
	s.g.Expect(deployment.Spec.Template.Spec.Containers[0].Image).To(Equal(render.DefaultDeschedulerImage))
	s.g.Expect(deployment.Spec.Template.Spec.ServiceAccountName).To(Equal(render.DeschedulerName(cr)))
	s.g.Expect(s.deployment(cr)).NotTo(BeNil(), "the scheduler's Deployment is applied beside the descheduler's")

	policy := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.DeschedulerName(cr)}}
	s.g.Expect(s.get(policy)).To(Succeed())
	s.g.Expect(policy.Data["policy.yaml"]).To(And(ContainSubstring("url: http://127.0.0.1:1"), ContainSubstring("MetricResource: 30"),
		ContainSubstring("MetricResource: 50")))
	s.g.Expect(policy.Data).NotTo(HaveKey(ContainSubstring("token")), "no token in a ConfigMap")

	// The token the scheduler presents, in the descheduler's own Secret, which its pods
	// find at the ServiceAccount path.
	schedulerToken := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.MetricsTokenSecretName(cr)}}
	deschedulerToken := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.DeschedulerTokenSecretName(cr)}}
	s.g.Eventually(func() error { return s.get(deschedulerToken) }).Should(Succeed())
	s.g.Expect(s.get(schedulerToken)).To(Succeed())
	s.g.Expect(deschedulerToken.Data["token"]).NotTo(BeEmpty())
	s.g.Expect(schedulerToken.Data).To(ContainElement(deschedulerToken.Data["token"]), "the scheduler's own token")
	s.g.Eventually(func() error { return s.get(deployment) }).Should(Succeed())
	s.g.Expect(deployment.Spec.Template.Spec.Volumes).To(ContainElement(And(HaveField("Name", "prometheus-access"),
		HaveField("Projected.Sources", ContainElement(HaveField("Secret.Name", deschedulerToken.Name))))))

	// Its metrics, which it serves to anyone who asks, are closed to every pod but the
	// operator's; this operator runs outside the cluster, which no policy can name.
	networkPolicy := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.DeschedulerName(cr)}}
	s.g.Expect(s.get(networkPolicy)).To(Succeed())
	s.g.Expect(networkPolicy.Spec.PodSelector.MatchLabels).To(Equal(render.DeschedulerPodLabels(cr)))
	s.g.Expect(networkPolicy.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}))
	s.g.Expect(networkPolicy.Spec.Ingress).To(BeEmpty())

	clusterBinding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.ClusterBindingName(cr, "descheduler")}}
	s.g.Expect(s.get(clusterBinding)).To(Succeed())
	s.g.Expect(clusterBinding.RoleRef.Name).To(Equal(render.DeschedulerClusterRole))

	// Paused while no scheduler of this configuration serves: no descheduler pod runs.
	paused := s.expectCondition(cr, v1.ConditionDescheduling, metav1.ConditionFalse, v1.ReasonDeschedulerPaused)
	s.g.Expect(paused.Message).To(ContainSubstring("until the scheduler of the current configuration serves"))
	s.g.Expect(s.get(deployment)).To(Succeed())
	s.g.Expect(*deployment.Spec.Replicas).To(BeZero())
	s.markDeploymentReady(cr)
	s.g.Eventually(func() int32 {
		s.g.Expect(s.get(deployment)).To(Succeed())
		return *deployment.Spec.Replicas
	}).Should(Equal(int32(2)), "the descheduler resumes once the scheduler serves")

	// Status: no pod of it is ready yet; once one is (as a Deployment controller would say),
	// it runs, with the bounds around the target of 40 %; in DryRun it says so.
	notReady := s.expectCondition(cr, v1.ConditionDescheduling, metav1.ConditionFalse, v1.ReasonDeschedulerNotReady)
	s.g.Expect(notReady.Message).To(ContainSubstring("describe deployment " + render.DeschedulerName(cr)))
	s.markDeploymentRolledOut(deployment, 2, 1)
	ready := s.expectCondition(cr, v1.ConditionDescheduling, metav1.ConditionTrue, v1.ReasonDeschedulerReady)
	s.g.Expect(ready.Message).To(ContainSubstring("from nodes above 50 % of their CPU used while nodes below 30 % of their CPU used exist, at most 1 a node and 5 a cycle"))
	s.g.Expect(s.get(cr)).To(Succeed())
	// What the operator read of the descheduler's work (here, that the nodes' use could not
	// be read) comes with the watcher's looks, on a clock of their own: not compared here.
	s.g.Expect(cr.Status.Descheduling).To(And(Not(BeNil()), HaveField("Deployment", s.namespace+"/"+render.DeschedulerName(cr)),
		HaveField("Mode", v1.DeschedulingEvict), HaveField("ReceiveBelowPercent", int32(30)), HaveField("EvictAbovePercent", int32(50)),
		HaveField("ReadyReplicas", int32(1)), HaveField("Replicas", int32(2)), HaveField("EvictionsLastHour", BeZero())))
	// The policy its evictor selects pods by goes: said, and said again when it is back.
	shipped, err := render.SchedulerNameAdmission()
	s.g.Expect(err).NotTo(HaveOccurred())
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: render.SchedulerNamePolicyName}}
	s.g.Expect(adminClient.Delete(s.ctx, binding)).To(Succeed())
	restore := func() {
		if err := adminClient.Create(s.ctx, shipped[1].DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Errorf("restore the scheduler-name policy's binding: %v", err)
		}
	}
	t.Cleanup(restore)
	missing := s.expectCondition(cr, v1.ConditionDescheduling, metav1.ConditionFalse, v1.ReasonSchedulerNamePolicyMissing)
	s.g.Expect(missing.Message).To(And(ContainSubstring("MutatingAdmissionPolicyBinding "+render.SchedulerNamePolicyName), ContainSubstring("dist/routing.yaml")))
	restore()
	s.expectCondition(cr, v1.ConditionDescheduling, metav1.ConditionTrue, v1.ReasonDeschedulerReady)

	// A switch to DryRun: until the Deployment has replaced the pods of mode Evict, they
	// evict, and status says so rather than "evicts nothing".
	s.update(cr, func() { cr.Spec.Descheduling.Mode = v1.DeschedulingDryRun })
	s.g.Eventually(func() []string {
		s.g.Expect(s.get(deployment)).To(Succeed())
		return deployment.Spec.Template.Spec.Containers[0].Command
	}).Should(ContainElement("--dry-run=true"))
	rollingOut := s.expectCondition(cr, v1.ConditionDescheduling, metav1.ConditionFalse, v1.ReasonDeschedulerRollingOut)
	s.g.Expect(rollingOut.Message).To(ContainSubstring("2 of its pods run an earlier template"))
	s.markDeploymentRolledOut(deployment, 1, 1)
	s.expectCondition(cr, v1.ConditionDescheduling, metav1.ConditionTrue, v1.ReasonDeschedulerDryRun)

	// A cycle inside the window would evict from a node it relieved: refused, nothing changes.
	s.update(cr, func() { cr.Spec.Descheduling.Interval = &metav1.Duration{Duration: 5 * time.Minute} })
	refused := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonDeschedulingFightsScheduler)
	s.g.Expect(refused.Message).To(ContainSubstring("interval 5m0s is shorter than the 15m0s window"))
	s.g.Expect(s.get(deployment)).To(Succeed(), "the running descheduler is kept")

	// Without spec.descheduling, every object of the descheduler goes; the scheduler stays.
	s.update(cr, func() { cr.Spec.Descheduling = nil })
	for _, object := range []client.Object{deployment, policy, deschedulerToken, clusterBinding, networkPolicy,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.DeschedulerName(cr)}}} {
		s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(object)) }).Should(BeTrue(), "%T %s is deleted", object, object.GetName())
	}
	s.g.Expect(s.get(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.WorkloadName(cr)}})).To(Succeed())
	s.g.Eventually(func() *metav1.Condition {
		s.g.Expect(s.get(cr)).To(Succeed())
		return meta.FindStatusCondition(cr.Status.Conditions, string(v1.ConditionDescheduling))
	}).Should(BeNil(), "no Descheduling condition without spec.descheduling")
	s.g.Expect(cr.Status.Descheduling).To(BeNil())
}
