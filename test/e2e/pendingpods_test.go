//go:build e2e

package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// podsPending is cr's PodsPending condition, as its status and reason, and its message.
func podsPending(cr *v1.SecondaryScheduler) (string, string) {
	current := &v1.SecondaryScheduler{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cr), current); err != nil {
		return "", ""
	}
	for _, c := range current.Status.Conditions {
		if c.Type == string(v1.ConditionPodsPending) {
			return string(c.Status) + "/" + c.Reason, c.Message
		}
	}
	return "none", ""
}

var _ = Describe("Pods waiting for a SecondaryScheduler", func() {
	It("are counted and explained: while its scheduler cannot start, when no node has room, and no more once placed", func() {
		ns := newNamespace()
		cr := binPacking(ns, "watched")
		cr.Spec.PendingPodThreshold = &metav1.Duration{Duration: 10 * time.Second}
		cr.Spec.SchedulerImage = "registry.example/nowhere/scheduler:v1"
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waiting := createWorkload(ns, "waiting", "watched", "100m", 2)

		Eventually(func() string { state, _ := podsPending(cr); return state }, "60s").
			Should(Equal("True/" + string(v1.ReasonSchedulerNotRunning)))
		// The two pods may have been created in different seconds (the API server's
		// precision), so one can cross the threshold a second before the other: the
		// operator counts the second when its own threshold is due.
		Eventually(func(g Gomega) {
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cr), cr)).To(Succeed())
			g.Expect(cr.Status.PendingPods).NotTo(BeNil())
			g.Expect(cr.Status.PendingPods.Count).To(Equal(int32(2)))
		}, "30s").Should(Succeed())
		output, err := kubectl("get", "-n", ns, "secondaryscheduler/watched")
		Expect(err).NotTo(HaveOccurred(), output)
		Expect(output).To(ContainSubstring("PENDING"))

		// The image is fixed: the scheduler runs and places them.
		editSpec(cr, func(cr *v1.SecondaryScheduler) { cr.Spec.SchedulerImage = "" })
		waitAvailable(cr)
		expectBound(ns, waiting)
		Eventually(func() string { state, _ := podsPending(cr); return state }).Should(Equal("False/" + string(v1.ReasonNoPodsPending)))

		// A pod no node has room for: the scheduler's own account reaches the message.
		huge := createWorkload(ns, "huge", "watched", "100000", 1)
		Eventually(func() string { state, _ := podsPending(cr); return state }, "60s").
			Should(Equal("True/" + string(v1.ReasonPodsUnschedulable)))
		// The scheduler may reword its account as it retries: each look compares the two.
		Eventually(func(g Gomega) {
			pod := &corev1.Pod{}
			g.Expect(k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: huge[0]}, pod)).To(Succeed())
			var summary string
			for _, c := range pod.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
					summary = c.Message
				}
			}
			g.Expect(summary).NotTo(BeEmpty(), "the scheduler said why the pod fits no node")
			_, message := podsPending(cr)
			g.Expect(message).To(ContainSubstring(summary))
		}).Should(Succeed())
	})

	It("tell a pod that names a scheduler no SecondaryScheduler provides, once, and leave default-scheduler's alone", func() {
		ns := newNamespace()
		cr := binPacking(ns, "spelled-right")
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		typo := createWorkload(ns, "typo", "speled-right", "100m", 1)
		defaulted := createWorkload(ns, "defaulted", corev1.DefaultSchedulerName, "100m", 1)
		Eventually(func() []string { return podEventReasons(ns, typo[0]) }, "60s").
			Should(ContainElement(string(v1.ReasonSchedulerNotProvided)))
		expectBound(ns, defaulted)
		// Both pods have waited past the operator's grace by now: a second Event, or one
		// about default-scheduler's pod, would come within the next seconds.
		Consistently(func() []string { return podEventReasons(ns, typo[0]) }, "5s").
			Should(Equal([]string{string(v1.ReasonSchedulerNotProvided)}), "one Event")
		Expect(podEventReasons(ns, defaulted[0])).NotTo(ContainElement(string(v1.ReasonSchedulerNotProvided)))
		output, err := kubectl("describe", "pod", "-n", ns, typo[0])
		Expect(err).NotTo(HaveOccurred(), output)
		Expect(output).To(And(ContainSubstring(string(v1.ReasonSchedulerNotProvided)), ContainSubstring("speled-right")))
	})
})

// podEventReasons are the reasons of the Events about a pod.
func podEventReasons(namespace, name string) []string {
	pod := &corev1.Pod{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return nil
	}
	list := &eventsv1.EventList{}
	if err := k8s.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	var reasons []string
	for _, event := range list.Items {
		if event.Regarding.UID == pod.UID {
			reasons = append(reasons, event.Reason)
		}
	}
	return reasons
}
