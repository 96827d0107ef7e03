package controllers

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// The scheduler-name policy, as the installer ships it, labels every pod with the
// scheduler it names, whoever writes the pod and whatever label it was given, and no pod
// of the default scheduler: the label a descheduler selects its scheduler's pods by says
// what spec.schedulerName says.
func TestSchedulerNamePolicyLabelsPodsWithTheirScheduler(t *testing.T) {
	s := newScenario(t)
	namespace := s.workloadNamespace("labelled", nil)
	named := func(scheduler string) func(*corev1.Pod) {
		return func(pod *corev1.Pod) { pod.Spec.SchedulerName = scheduler }
	}
	// The policy takes effect in the API server a moment after it is written: fresh pods
	// are created until one shows it.
	s.g.Eventually(func() string {
		pod := s.newPod(namespace, named("packer"))
		return pod.Labels[render.LabelSchedulerName]
	}).Should(Equal("packer"), "a pod naming scheduler packer is labelled with it")

	forged := s.newPod(namespace, func(pod *corev1.Pod) { pod.Labels[render.LabelSchedulerName] = "packer" })
	s.g.Expect(forged.Spec.SchedulerName).To(Equal(corev1.DefaultSchedulerName))
	s.g.Expect(forged.Labels).NotTo(HaveKey(render.LabelSchedulerName), "a pod of the default scheduler loses a label naming another")

	pod := s.newPod(namespace, named("packer"))
	s.g.Expect(adminClient.Get(s.ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
	pod.Labels[render.LabelSchedulerName] = "load-aware"
	s.g.Expect(adminClient.Update(s.ctx, pod)).To(Succeed())
	s.g.Expect(pod.Labels[render.LabelSchedulerName]).To(Equal("packer"), "an update cannot make the label name another scheduler")
	delete(pod.Labels, render.LabelSchedulerName)
	s.g.Expect(adminClient.Update(s.ctx, pod)).To(Succeed())
	s.g.Expect(pod.Labels[render.LabelSchedulerName]).To(Equal("packer"), "an update cannot take the label off")

	long := s.newPod(namespace, named("a-scheduler-name-longer-than-the-sixty-three-characters-of-a-label-value"))
	s.g.Expect(long.Labels).NotTo(HaveKey(render.LabelSchedulerName), "a name no label value can hold gives no label")
	unlabelled := s.newPod(namespace, func(pod *corev1.Pod) { pod.Labels = nil; pod.Spec.SchedulerName = "packer" })
	s.g.Expect(unlabelled.Labels).To(HaveKeyWithValue(render.LabelSchedulerName, "packer"), "a pod without labels gets the label")
}
