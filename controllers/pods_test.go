package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// Within seconds of a scheduler pod failing to start, status says why: no watch reports
// a pod's containers, so the operator looks at them every few seconds while none of the
// current template is ready. It does not wait for the Deployment's 600 s progress deadline.
func TestSchedulerPodsTellWhyTheyAreNotReady(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("unready")
	s.create(cr)
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment(cr) }).ShouldNot(BeNil())
	template := s.deployment(cr).Spec.Template.DeepCopy()
	pod := s.addPod(cr, "unready-scheduler-0", template, corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "kube-scheduler", Image: template.Spec.Containers[0].Image,
			State: waitingState("ImagePullBackOff", `Back-off pulling image "`+template.Spec.Containers[0].Image+`": manifest unknown`)}}})
	// The Deployment controller reports the pod as unavailable, which wakes the operator.
	s.reportRollout(cr, 0)
	pullFailed := s.expectUnavailableWithin(cr, v1.ReasonImagePullFailed, 10*time.Second)
	s.g.Expect(pullFailed.Message).To(And(ContainSubstring("cannot pull image "+template.Spec.Containers[0].Image),
		ContainSubstring("manifest unknown"), ContainSubstring("spec.schedulerName: unready stay Pending")))
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonImagePullFailed)
	s.expectCondition(cr, v1.ConditionStalled, metav1.ConditionTrue, v1.ReasonImagePullFailed)

	// The image is pulled and the scheduler crashes: nothing the operator watches changes.
	s.setPodStatus(pod, func(status *corev1.PodStatus) {
		status.ContainerStatuses[0].State = waitingState("CrashLoopBackOff", "back-off 20s restarting failed container")
		status.ContainerStatuses[0].RestartCount = 2
		status.ContainerStatuses[0].LastTerminationState = terminatedState(1, "Error",
			"I0101 00:00:00.000000 1 serving.go:386] Generated self-signed cert in-memory\n"+
				`E0101 00:00:01.000000 1 run.go:72] "command failed" err="couldn't create scheduler: initializing profiles: plugin \"Coscheduling\" does not exist"`+"\n")
	})
	crashing := s.expectUnavailableWithin(cr, v1.ReasonSchedulerCrashing, 12*time.Second)
	s.g.Expect(crashing.Message).To(And(ContainSubstring("(2 restarts): it last exited with code 1 (Error)"),
		ContainSubstring(`plugin \"Coscheduling\" does not exist`), ContainSubstring("logs unready-scheduler-0 --previous")))
	degraded := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonSchedulerCrashing)
	s.g.Expect(degraded.Message).To(ContainSubstring(`plugin \"Coscheduling\" does not exist`))

	// The pod is replaced by one that no node takes.
	s.setPodStatus(pod, func(status *corev1.PodStatus) {
		status.ContainerStatuses = nil
		status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
			Message: "0/5 nodes are available: 5 Insufficient cpu. preemption: 0/5 nodes are available: 5 No preemption victims found for incoming pod."}}
	})
	unschedulable := s.expectUnavailableWithin(cr, v1.ReasonSchedulerUnschedulable, 12*time.Second)
	s.g.Expect(unschedulable.Message).To(ContainSubstring("no node can take the scheduler's pod unready-scheduler-0: 0/5 nodes are available: 5 Insufficient cpu"))
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonSchedulerUnschedulable)

	// A pod becomes ready: the scheduler recovers.
	s.markDeploymentReady(cr)
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.expectCondition(cr, v1.ConditionStalled, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Eventually(func() []string { return s.eventReasons(cr) }).Should(ContainElements(
		string(v1.ReasonImagePullFailed), string(v1.ReasonSchedulerCrashing), string(v1.ReasonSchedulerUnschedulable), string(v1.ReasonSchedulerReady)))

	// A new configuration whose pod cannot pull its image, while the old pod schedules:
	// the scheduler still serves its name (Available), the stuck rollout is Degraded with
	// the pod's problem, and the rollout is still Progressing.
	s.update(cr, func() { cr.Spec.LogLevel = v1.Debug })
	s.g.Eventually(func() []string { return s.deployment(cr).Spec.Template.Spec.Containers[0].Command }).Should(ContainElement("--v=4"))
	template = s.deployment(cr).Spec.Template.DeepCopy()
	s.addPod(cr, "unready-scheduler-1", template, corev1.PodStatus{Phase: corev1.PodPending,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "kube-scheduler", State: waitingState("ErrImagePull", "connection refused")}}})
	s.reportRollout(cr, 1)
	degraded = s.expectConditionWithin(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonImagePullFailed, 12*time.Second)
	s.g.Expect(degraded.Message).To(And(ContainSubstring("unready-scheduler-1 cannot pull image"), ContainSubstring("connection refused")))
	serving := s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonServingPreviousConfiguration)
	s.g.Expect(serving.Message).To(And(ContainSubstring("unready-scheduler-0, a pod of an earlier configuration, holds Lease"),
		ContainSubstring("spec.schedulerName: unready as that configuration says"), ContainSubstring("unready-scheduler-1 cannot pull image")))
	s.expectCondition(cr, v1.ConditionProgressing, metav1.ConditionTrue, v1.ReasonRollingOut)
	s.expectCondition(cr, v1.ConditionStalled, metav1.ConditionTrue, v1.ReasonImagePullFailed)

	// The old pod stops as well: nothing serves, and Available says why.
	s.g.Expect(adminClient.Delete(s.ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: "unready-scheduler-0"}},
		client.GracePeriodSeconds(0))).To(Succeed())
	s.holdLeaseAs(cr, "")
	stale := s.expectUnavailableWithin(cr, v1.ReasonImagePullFailed, 12*time.Second)
	s.g.Expect(stale.Message).To(And(ContainSubstring("unready-scheduler-1 cannot pull image"), ContainSubstring("stay Pending until one is")))

	// A pod that is not ready may still lead, and schedule while it renews the Lease:
	// Available, still False, says so instead of claiming that pods stay Pending.
	s.holdLeaseAs(cr, "unready-scheduler-1_1")
	s.g.Eventually(func() string {
		if available := s.condition(cr, v1.ConditionAvailable); available != nil {
			return available.Reason + ": " + available.Message
		}
		return ""
	}, 12*time.Second).Should(And(HavePrefix(string(v1.ReasonImagePullFailed)+": "),
		ContainSubstring("unready-scheduler-1, which is not ready, holds Lease"), Not(ContainSubstring("stay Pending"))))
}

// A Deployment whose pods the API server refuses (a ResourceQuota, Pod Security
// admission) creates none: its ReplicaFailure condition, set by the Deployment
// controller, is reported at once, not after the progress deadline.
func TestRefusedSchedulerPodsAreReported(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("refused")
	s.create(cr)
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment(cr) }).ShouldNot(BeNil())
	const refusal = `pods "refused-scheduler-6d9f-x2x7q" is forbidden: exceeded quota: no-pods, requested: pods=1, used: pods=0, limited: pods=0`
	s.g.Eventually(func() error {
		deployment := s.deployment(cr)
		deployment.Status = appsv1.DeploymentStatus{ObservedGeneration: deployment.Generation, UnavailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
				Reason: "FailedCreate", Message: refusal}}}
		return adminClient.Status().Update(s.ctx, deployment)
	}).Should(Succeed())
	refused := s.expectUnavailableWithin(cr, v1.ReasonPodCreationFailed, 10*time.Second)
	s.g.Expect(refused.Message).To(And(ContainSubstring("exceeded quota: no-pods"), ContainSubstring("ResourceQuota")))
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonPodCreationFailed)

	s.markDeploymentReady(cr)
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
}

// addPod creates a scheduler pod of template with a status, as the kubelet reports one.
func (s *scenario) addPod(cr *v1.SecondaryScheduler, name string, template *corev1.PodTemplateSpec, status corev1.PodStatus) *corev1.Pod {
	s.t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: name, Labels: template.Labels, Annotations: template.Annotations},
		Spec:       template.Spec,
	}
	s.g.Expect(adminClient.Create(s.ctx, pod)).To(Succeed())
	pod.Status = status
	s.g.Expect(adminClient.Status().Update(s.ctx, pod)).To(Succeed())
	return pod
}

// setPodStatus changes a pod's status, as the kubelet does.
func (s *scenario) setPodStatus(pod *corev1.Pod, mutate func(*corev1.PodStatus)) {
	s.t.Helper()
	s.g.Eventually(func() error {
		if err := s.get(pod); err != nil {
			return err
		}
		mutate(&pod.Status)
		return adminClient.Status().Update(s.ctx, pod)
	}).Should(Succeed())
}

// reportRollout plays the Deployment controller reporting a rollout of the current
// template with ready of its replicas ready.
func (s *scenario) reportRollout(cr *v1.SecondaryScheduler, ready int32) {
	s.t.Helper()
	s.g.Eventually(func() error {
		deployment := s.deployment(cr)
		replicas := ptr.Deref(deployment.Spec.Replicas, 1)
		deployment.Status = appsv1.DeploymentStatus{ObservedGeneration: deployment.Generation,
			Replicas: replicas, UpdatedReplicas: replicas, ReadyReplicas: ready, AvailableReplicas: ready, UnavailableReplicas: replicas - ready}
		return adminClient.Status().Update(s.ctx, deployment)
	}).Should(Succeed())
}

// expectUnavailableWithin waits, no longer than within, until cr is not Available for
// reason.
func (s *scenario) expectUnavailableWithin(cr *v1.SecondaryScheduler, reason v1.ConditionReason, within time.Duration) *metav1.Condition {
	s.t.Helper()
	var found *metav1.Condition
	s.g.Eventually(func() string {
		found = s.condition(cr, v1.ConditionAvailable)
		if found == nil {
			return "none"
		}
		return string(found.Status) + "/" + found.Reason + ": " + found.Message
	}, within).Should(HavePrefix("False/"+string(reason)+":"), "Available of %s/%s within %s", cr.Namespace, cr.Name, within)
	return found
}

// waitingState is a container's state, waiting for reason, as the kubelet reports it.
func waitingState(reason, message string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
}

// terminatedState is a container's state, ended with exitCode for reason.
func terminatedState(exitCode int32, reason, message string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: reason, Message: message}}
}
