package controllers

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// workloadNamespace creates a namespace where workloads run (schedulers run in the
// scenario's), with labels.
func (s *scenario) workloadNamespace(suffix string, labels map[string]string) string {
	s.t.Helper()
	name := s.namespace + "-" + suffix
	s.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}})
	return name
}

// newPod creates a pod in namespace, as a workload's controller would, unchanged by the
// test after, and returns it as the API server stored it (admission included).
func (s *scenario) newPod(namespace string, mutate ...func(*corev1.Pod)) *corev1.Pod {
	s.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, GenerateName: "workload-", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}
	for _, m := range mutate {
		m(pod)
	}
	s.g.Expect(adminClient.Create(s.ctx, pod)).To(Succeed())
	return pod
}

// expectRoutedTo waits until the API server gives new pods of namespace scheduler's
// name: the routing policy takes effect in the API server a moment after the object is
// written, so fresh pods are created until one shows it. Each pod created before the last
// is deleted.
func (s *scenario) expectRoutedTo(namespace, scheduler string) *corev1.Pod {
	s.t.Helper()
	var last *corev1.Pod
	s.g.Eventually(func() string {
		if last != nil {
			s.g.Expect(client.IgnoreNotFound(adminClient.Delete(s.ctx, last))).To(Succeed())
		}
		last = s.newPod(namespace)
		return last.Spec.SchedulerName
	}).Should(Equal(scheduler), "new pods of %s go to %s", namespace, scheduler)
	return last
}

func routeTo(cr *v1.SecondaryScheduler, routing *v1.Routing) *v1.SecondaryScheduler {
	cr.Spec.Routing = routing
	return cr
}

// A route sends the new pods it selects to the scheduler, through the API server alone:
// their scheduler name, the route's tolerations and a label; pods of other namespaces,
// naming another scheduler, owned by a DaemonSet or opted out are left alone. A
// scheduler unavailable past failoverAfter gets no new pod until it is back, with an
// Event each way; removing spec.routing removes the policy.
func TestRoutingSendsSelectedPodsAndFailsOver(t *testing.T) {
	s := newScenario(t)
	team := s.namespace + "-team"
	selected := s.workloadNamespace("selected", map[string]string{"team": team})
	other := s.workloadNamespace("other", nil)
	optedOut := s.workloadNamespace("opted-out", map[string]string{"team": team, v1.LabelRoutingOptOut: "true"})
	cr := routeTo(binPacking("router"), &v1.Routing{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": team}},
		Tolerations:       []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "packed", Effect: corev1.TaintEffectNoSchedule}},
		FailoverAfter:     &metav1.Duration{Duration: 10 * time.Second},
	})
	s.createRunning(cr)
	routedCondition := s.expectCondition(cr, v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted)
	s.g.Expect(routedCondition.Message).To(ContainSubstring("team=" + team))
	name := cr.Name // the scheduler name's default

	pod := s.expectRoutedTo(selected, name)
	s.g.Expect(pod.Labels).To(HaveKeyWithValue(v1.LabelRoutedTo, name))
	s.g.Expect(pod.Labels).To(HaveKeyWithValue("app", "web"), "the pod's own labels are kept")
	s.g.Expect(pod.Spec.Tolerations).To(ContainElement(corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "packed",
		Effect: corev1.TaintEffectNoSchedule}))
	withTolerations := s.newPod(selected, func(p *corev1.Pod) {
		p.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
	})
	s.g.Expect(withTolerations.Spec.Tolerations).To(ContainElements(
		corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists},
		corev1.Toleration{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "packed", Effect: corev1.TaintEffectNoSchedule}),
		"the route's tolerations are added to the pod's own")

	// Left alone: the policy is in effect (a pod was just routed), so these say no.
	s.g.Expect(s.newPod(other).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "a namespace the route does not select")
	s.g.Expect(s.newPod(optedOut).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "an opted-out namespace")
	s.g.Expect(s.newPod(selected, func(p *corev1.Pod) { p.Labels[v1.LabelRoutingOptOut] = "true" }).Spec.SchedulerName).
		To(Equal(corev1.DefaultSchedulerName), "an opted-out pod")
	volcano := s.newPod(selected, func(p *corev1.Pod) { p.Spec.SchedulerName = "volcano" })
	s.g.Expect(volcano.Spec.SchedulerName).To(Equal("volcano"), "a pod naming another scheduler")
	s.g.Expect(volcano.Labels).NotTo(HaveKey(v1.LabelRoutedTo))
	daemonSetPod := s.newPod(selected, func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: types.UID("8e1c"), Controller: ptr.To(true)}}
	})
	s.g.Expect(daemonSetPod.Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "a DaemonSet pod, by default")
	bound := s.newPod(selected, func(p *corev1.Pod) { p.Spec.NodeName = "node-1" })
	s.g.Expect(bound.Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "a pod with a node already")
	s.g.Expect(s.newPod(s.namespace).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "a namespace where schedulers run")

	// The scheduler stops: within failoverAfter pods are still routed, past it they are not.
	s.markPodsReady(cr, 0)
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonNoReadyScheduler)
	failedOver := s.expectConditionWithin(cr, v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonFailedOver, time.Minute)
	s.g.Expect(failedOver.Message).To(ContainSubstring("default scheduler"))
	s.expectRoutedTo(selected, corev1.DefaultSchedulerName)
	s.g.Eventually(func() []string { return s.eventReasons(cr) }).Should(ContainElement(string(v1.ReasonFailedOver)))

	// Back: routed again.
	s.markDeploymentReady(cr)
	s.expectCondition(cr, v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted)
	s.expectRoutedTo(selected, name)
	s.g.Eventually(func() int {
		routedEvents := 0
		for _, reason := range s.eventReasons(cr) {
			if reason == string(v1.ReasonRouted) {
				routedEvents++
			}
		}
		return routedEvents
	}).Should(BeNumerically(">=", 1), "an Event when routing resumes")

	// Without spec.routing: no condition, and no policy once no route is left.
	s.update(cr, func() { cr.Spec.Routing = nil })
	s.g.Eventually(func() *metav1.Condition { return s.condition(cr, v1.ConditionRouting) }).Should(BeNil())
	s.expectRoutedTo(selected, corev1.DefaultSchedulerName)
}

// A route in mode Audit only labels the pods it would route; of two routes that may
// select the same pods, the newer is refused with the older's name, and is carried once
// the older one goes.
func TestRoutingAuditsAndRefusesConflicts(t *testing.T) {
	s := newScenario(t)
	team := s.namespace + "-team"
	selected := s.workloadNamespace("audited", map[string]string{"team": team})
	selector := metav1.LabelSelector{MatchLabels: map[string]string{"team": team}}
	auditor := routeTo(binPacking("auditor"), &v1.Routing{Mode: v1.RoutingAudit, NamespaceSelector: selector})
	s.createRunning(auditor)
	s.expectCondition(auditor, v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonAuditing)
	var pod *corev1.Pod
	s.g.Eventually(func() map[string]string {
		pod = s.newPod(selected)
		return pod.Labels
	}).Should(HaveKeyWithValue(v1.LabelWouldRouteTo, auditor.Name))
	s.g.Expect(pod.Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "audit changes no pod's scheduler")
	s.g.Expect(pod.Labels).NotTo(HaveKey(v1.LabelRoutedTo))
	labelled := &corev1.PodList{}
	s.g.Expect(adminClient.List(s.ctx, labelled, client.MatchingLabels{v1.LabelWouldRouteTo: auditor.Name})).To(Succeed())
	s.g.Eventually(func() *int32 {
		if s.get(auditor) != nil || auditor.Status.Routing == nil {
			return nil
		}
		return auditor.Status.Routing.AuditedPods
	}).Should(Equal(ptr.To(int32(len(labelled.Items)))), "status counts the pods audit labelled")
	s.g.Expect(s.condition(auditor, v1.ConditionRouting).Message).To(ContainSubstring(fmt.Sprintf("%d pod", len(labelled.Items))))

	rival := routeTo(binPacking("rival"), &v1.Routing{NamespaceSelector: selector})
	s.createRunning(rival)
	conflict := s.expectCondition(rival, v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonRoutingConflict)
	s.g.Expect(conflict.Message).To(ContainSubstring(fmt.Sprintf("SecondaryScheduler %s/auditor", s.namespace)))
	s.g.Expect(s.newPod(selected).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName), "the refused route routes nothing")

	s.g.Expect(adminClient.Delete(s.ctx, auditor)).To(Succeed())
	s.expectCondition(rival, v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted)
	s.expectRoutedTo(selected, rival.Name)

	// A policy the operator writes is its own, by label, and carries what it says.
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{}
	s.g.Expect(adminClient.Get(s.ctx, client.ObjectKey{Name: render.RoutingPolicyName}, policy)).To(Succeed())
	s.g.Expect(policy.Labels).To(HaveKeyWithValue(render.LabelManagedBy, render.ManagedByValue))
	s.g.Expect(*policy.Spec.FailurePolicy).To(Equal(admissionregistrationv1.Ignore))
	s.g.Expect(policy.Annotations[render.AnnotationRoutes]).To(ContainSubstring(s.namespace + "/rival"))
}

// A route routes nothing to a scheduler that has not run, not even within failoverAfter:
// a resource refused before its scheduler ever ran (a ConfigMap that does not exist)
// leaves new pods to the default scheduler, and routes them once its scheduler is
// Available. The policy and its binding are owned by the SecondaryScheduler CRD, so that
// uninstalling the API deletes them; one that lost its owner gets it back.
func TestRoutingWaitsForASchedulerThatRan(t *testing.T) {
	s := newScenario(t)
	team := s.namespace + "-team"
	selected := s.workloadNamespace("selected", map[string]string{"team": team})
	cr := routeTo(custom("waiter", "waiter-config"), &v1.Routing{
		NamespaceSelector: metav1.LabelSelector{MatchLabels: map[string]string{"team": team}},
		FailoverAfter:     &metav1.Duration{Duration: time.Hour},
	})
	s.create(cr)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonConfigMapNotFound)
	notAvailable := s.expectCondition(cr, v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonSchedulerNotAvailable)
	s.g.Expect(notAvailable.Message).To(ContainSubstring("default scheduler"))
	s.g.Consistently(func() bool {
		carried, err := CarriedRoutes(s.ctx, adminClient)
		s.g.Expect(err).NotTo(HaveOccurred())
		_, found := carried[client.ObjectKeyFromObject(cr)]
		return found
	}).Should(BeFalse(), "the routing policy carries no route to a scheduler that never ran")
	s.g.Expect(s.newPod(selected).Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName))

	s.create(configMap("waiter-config", map[string]string{"config.yaml": goodConfig(cr.Name, 1)}))
	s.markDeploymentReady(cr)
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.expectCondition(cr, v1.ConditionRouting, metav1.ConditionTrue, v1.ReasonRouted)
	s.expectRoutedTo(selected, cr.Name)

	crd := &apiextensionsv1.CustomResourceDefinition{}
	s.g.Expect(adminClient.Get(s.ctx, client.ObjectKey{Name: render.SecondarySchedulerCRDName}, crd)).To(Succeed())
	owner := render.RoutingPolicyOwner(crd.UID)
	named := metav1.ObjectMeta{Name: render.RoutingPolicyName}
	for _, object := range []client.Object{&admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: named},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: named}} {
		s.g.Eventually(func() []metav1.OwnerReference {
			s.g.Expect(s.get(object)).To(Succeed())
			return object.GetOwnerReferences()
		}).Should(ContainElement(owner), "%T is owned by the CRD", object)
		s.update(object, func() { object.SetOwnerReferences(nil) })
		s.g.Eventually(func() []metav1.OwnerReference {
			s.g.Expect(s.get(object)).To(Succeed())
			return object.GetOwnerReferences()
		}).Should(ContainElement(owner), "%T without its owner, as an older operator wrote it, gets it back", object)
	}
}
