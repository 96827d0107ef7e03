package controllers

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// waitingPod is a pod naming schedulerName that no scheduler of envtest will place.
func waitingPod(namespace, name, schedulerName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{SchedulerName: schedulerName,
			Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
	}
}

// Pods that wait longer than pendingPodThreshold for a scheduler are counted in status
// and told by PodsPending, with the scheduler's own account of why once it gives one;
// a pod held by a scheduling gate is not counted; once placed, the count goes back to 0.
func TestPendingPodsAreCountedAndExplained(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("watchdog")
	cr.Spec.PendingPodThreshold = &metav1.Duration{Duration: 10 * time.Second}
	s.createRunning(cr)
	s.expectCondition(cr, v1.ConditionPodsPending, metav1.ConditionFalse, v1.ReasonNoPodsPending)
	s.g.Expect(s.get(cr)).To(Succeed())
	name := cr.Status.SchedulerName

	waits := waitingPod(s.namespace, "waits", name)
	gated := waitingPod(s.namespace, "gated", name)
	gated.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}}
	other := waitingPod(s.namespace, "other", "someone-elses-scheduler")
	s.create(waits, gated, other)

	notScheduled := s.expectConditionWithin(cr, v1.ConditionPodsPending, metav1.ConditionTrue, v1.ReasonPodsNotScheduled, time.Minute)
	s.g.Expect(notScheduled.Message).To(ContainSubstring("1 pod naming scheduler " + name + " has waited longer than 10s"))
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Status.PendingPods).NotTo(BeNil())
	s.g.Expect(cr.Status.PendingPods.Count).To(Equal(int32(1)), "the gated pod and the other scheduler's are not counted")
	s.g.Expect(cr.Status.PendingPods.Examples).To(Equal([]string{s.namespace + "/waits"}))
	s.g.Expect(cr.Status.PendingPods.OldestSince.Time).To(BeTemporally("~", waits.CreationTimestamp.Time, time.Second))
	s.g.Eventually(func() []string { return s.eventReasons(cr) }).Should(ContainElement(string(v1.ReasonPodsNotScheduled)))
	// The operator's metrics say the same, for alerts.
	ours := map[string]string{"namespace": cr.Namespace, "secondary_scheduler": cr.Name}
	s.g.Eventually(func() float64 { return operatorMetric("secondary_scheduler_operator_scheduler_pending_pods", ours) }).Should(Equal(1.0))
	s.g.Expect(operatorMetric("secondary_scheduler_operator_scheduler_oldest_pending_pod_timestamp_seconds", ours)).
		To(BeNumerically("~", float64(waits.CreationTimestamp.Unix()), 1))
	s.g.Expect(operatorMetric("secondary_scheduler_operator_scheduler_condition", map[string]string{"namespace": cr.Namespace,
		"secondary_scheduler": cr.Name, "condition": string(v1.ConditionPodsPending), "status": "True", "reason": string(v1.ReasonPodsNotScheduled)})).To(Equal(1.0))
	s.g.Expect(operatorMetric("secondary_scheduler_operator_scheduler_info", map[string]string{"namespace": cr.Namespace,
		"secondary_scheduler": cr.Name, "scheduler_name": name, "profile": string(v1.BinPackingProfile)})).To(Equal(1.0))

	// The scheduler says why no node fits.
	const summary = "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available."
	s.g.Expect(s.get(waits)).To(Succeed())
	waits.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: summary}}
	s.g.Expect(adminClient.Status().Update(s.ctx, waits)).To(Succeed())
	unschedulable := s.expectCondition(cr, v1.ConditionPodsPending, metav1.ConditionTrue, v1.ReasonPodsUnschedulable)
	s.g.Expect(unschedulable.Message).To(ContainSubstring(summary))

	// Placed: nothing waits any more.
	node := s.createNode("watchdog-node-" + s.namespace)
	s.g.Expect(adminClient.SubResource("binding").Create(s.ctx, waits, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Namespace: waits.Namespace, Name: waits.Name},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node.Name},
	})).To(Succeed())
	s.expectCondition(cr, v1.ConditionPodsPending, metav1.ConditionFalse, v1.ReasonNoPodsPending)
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Status.PendingPods).To(BeNil())
	s.g.Eventually(func() float64 { return operatorMetric("secondary_scheduler_operator_scheduler_pending_pods", ours) }).Should(BeZero())
}

// ignoredSchedulerName is a name the test operator is told another scheduler serves.
const ignoredSchedulerName = "volcano"

// A pod that waits for a scheduler name no SecondaryScheduler provides gets one Warning
// Event naming those provided, and the nearest of them, and is counted in the operator's
// metrics; pods of the default scheduler and of a name another scheduler serves are left
// alone.
func TestPodNamingAnUnprovidedSchedulerIsTold(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("provided")
	s.create(cr)
	// A typo of "provided", which no other test's SecondaryScheduler is near.
	typo := waitingPod(s.namespace, "typo", "provdied")
	volcano := waitingPod(s.namespace, "gang", ignoredSchedulerName)
	defaulted := waitingPod(s.namespace, "defaulted", corev1.DefaultSchedulerName)
	s.create(typo, volcano, defaulted)

	var told []eventsv1.Event
	s.g.Eventually(func() []eventsv1.Event { told = s.eventsAbout(typo); return told }, time.Minute).ShouldNot(BeEmpty())
	s.g.Expect(told).To(HaveLen(1))
	s.g.Expect(told[0].Type).To(Equal(corev1.EventTypeWarning))
	s.g.Expect(told[0].Reason).To(Equal(string(v1.ReasonSchedulerNotProvided)))
	s.g.Expect(told[0].Regarding).To(Equal(corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: typo.Namespace, Name: typo.Name, UID: typo.UID}))
	s.g.Expect(told[0].ReportingController).To(Equal(EventReporter))
	s.g.Expect(told[0].ReportingInstance).To(HavePrefix(EventReporter + "-"))
	// Other tests' SecondarySchedulers run beside it: which names the Event lists is
	// TestProvidedSentence's.
	s.g.Expect(told[0].Note).To(And(ContainSubstring(`"provdied"`), ContainSubstring("those provided are"), ContainSubstring(`did you mean "provided"`)))

	s.g.Expect(unknownSchedulerPods("provdied")).To(Equal(1.0))
	s.g.Expect(unknownSchedulerPods(ignoredSchedulerName)).To(BeZero())
	// Told once, whatever wakes it again (here: an update of the pod's labels, and time).
	s.update(typo, func() { typo.Labels = map[string]string{"touched": "yes"} })
	s.g.Consistently(func() int { return len(s.eventsAbout(typo)) }, 3*time.Second).Should(Equal(1))
	s.g.Expect(s.eventsAbout(volcano)).To(BeEmpty(), "a name another scheduler serves")
	s.g.Expect(s.eventsAbout(defaulted)).To(BeEmpty(), "default-scheduler's pods are never touched")
}

// unknownSchedulerPods is the operator's metric of pods waiting for name, no SecondaryScheduler's.
func unknownSchedulerPods(name string) float64 {
	return operatorMetric("secondary_scheduler_operator_pods_naming_unknown_scheduler", map[string]string{"scheduler_name": name})
}

// operatorMetric is the value of the operator's series name whose labels include
// labels, 0 when there is none: the value the operator's /metrics serves.
func operatorMetric(name string, labels map[string]string) float64 {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return -1
	}
	for _, family := range families {
		if family.GetName() != name {
			continue
		}
		for _, metric := range family.GetMetric() {
			matched := 0
			for _, label := range metric.GetLabel() {
				if value, ok := labels[label.GetName()]; ok && value == label.GetValue() {
					matched++
				}
			}
			if matched < len(labels) {
				continue
			}
			switch {
			case metric.GetGauge() != nil:
				return metric.GetGauge().GetValue()
			case metric.GetCounter() != nil:
				return metric.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// TestProvidedSentence checks how the Event lists the scheduler names provided: all of
// them, or the first ten and how many more.
func TestProvidedSentence(t *testing.T) {
	many := make([]string, 12)
	for i := range many {
		many[i] = fmt.Sprintf("s%02d", i)
	}
	tests := []struct {
		names []string
		want  string
	}{
		{nil, "no SecondaryScheduler exists"},
		{[]string{"binpacking", "tlp"}, "those provided are binpacking, tlp (kubectl get secondaryschedulers -A)"},
		{many, "those provided are s00, s01, s02, s03, s04, s05, s06, s07, s08, s09 and 2 more (kubectl get secondaryschedulers -A)"},
	}
	for _, tt := range tests {
		if got := providedSentence(tt.names); got != tt.want {
			t.Errorf("providedSentence(%v) = %q, want %q", tt.names, got, tt.want)
		}
	}
}
