package controllers

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
)

// schedulerPodWith is a scheduler pod whose kube-scheduler container has status, as the
// kubelet reports it.
func schedulerPodWith(name string, status corev1.ContainerStatus) corev1.Pod {
	status.Name = "kube-scheduler"
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "kube-scheduler", Image: "registry.example/kube-scheduler:v1"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{status},
			Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}},
	}
}

func waiting(reason, message string) corev1.ContainerState {
	return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
}

func terminated(exitCode int32, reason, message string) corev1.ContainerState {
	return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: exitCode, Reason: reason, Message: message}}
}

func unschedulablePod(name, message string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: name},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
			Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: message}}},
	}
}

// staleRestart is a pod whose container was OOM-killed a day before the pod turned
// unready, for a reason of its own (a failing readiness probe).
func staleRestart() corev1.Pod {
	pod := schedulerPodWith("s-1", corev1.ContainerStatus{RestartCount: 1,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, LastTerminationState: terminated(137, "OOMKilled", "")})
	now := time.Now()
	pod.Status.ContainerStatuses[0].LastTerminationState.Terminated.FinishedAt = metav1.NewTime(now.Add(-24 * time.Hour))
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse,
		LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))})
	return pod
}

func TestPodProblem(t *testing.T) {
	pullFailed := schedulerPodWith("s-1", corev1.ContainerStatus{Image: "registry.example/kube-scheduler:v1",
		State: waiting("ImagePullBackOff", `Back-off pulling image "registry.example/kube-scheduler:v1": not found`)})
	crashing := schedulerPodWith("s-2", corev1.ContainerStatus{RestartCount: 4, State: waiting("CrashLoopBackOff", "back-off 40s restarting failed container"),
		LastTerminationState: terminated(1, "Error", "I0101 starting\nE0101 \"Error running command\" err=\"couldn't create scheduler: plugin \\\"TargetLoadPacking\\\" does not exist\"\n")})
	longLog := strings.Repeat("I0101 a line of the log that says nothing\n", 100) + "E0101 the fatal error\n"
	tests := []struct {
		name   string
		pods   []corev1.Pod
		reason v1.ConditionReason // empty: no problem
		says   []string
		notSay []string
	}{
		{"no pods", nil, "", nil, nil},
		{"starting: waiting to be created", []corev1.Pod{schedulerPodWith("s-1", corev1.ContainerStatus{State: waiting("ContainerCreating", "")})}, "", nil, nil},
		{"running but not ready yet", []corev1.Pod{schedulerPodWith("s-1", corev1.ContainerStatus{
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}})}, "", nil, nil},
		{"pending, not yet scheduled, without a reason", []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Name: "s-1"}}}, "", nil, nil},

		{"image pull back-off", []corev1.Pod{pullFailed}, v1.ReasonImagePullFailed, []string{
			"pod s-1 cannot pull image registry.example/kube-scheduler:v1", "ImagePullBackOff", "not found", "status.imageSource"}, nil},
		{"image pull error, image from the spec", []corev1.Pod{schedulerPodWith("s-1", corev1.ContainerStatus{State: waiting("ErrImagePull", "unauthorized")})},
			v1.ReasonImagePullFailed, []string{"registry.example/kube-scheduler:v1", "ErrImagePull: unauthorized"}, nil},
		{"invalid image name", []corev1.Pod{schedulerPodWith("s-1", corev1.ContainerStatus{State: waiting("InvalidImageName", "")})},
			v1.ReasonImagePullFailed, []string{"InvalidImageName: (no message)"}, nil},

		{"crash loop with the last log lines", []corev1.Pod{crashing}, v1.ReasonSchedulerCrashing, []string{
			"the scheduler in pod s-2 crashes (4 restarts): it last exited with code 1 (Error)",
			`plugin \"TargetLoadPacking\" does not exist`, "kubectl -n platform logs s-2 --previous"}, nil},
		{"restarted and running again, not ready", []corev1.Pod{schedulerPodWith("s-1", corev1.ContainerStatus{RestartCount: 1,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}, LastTerminationState: terminated(137, "OOMKilled", "")})},
			v1.ReasonSchedulerCrashing, []string{"(1 restarts)", "exited with code 137 (OOMKilled)"}, []string{"last log lines"}},
		{"restarted long ago, unready since for another reason", []corev1.Pod{staleRestart()}, "", nil, nil},
		{"a long log keeps its end, on a line of its own", []corev1.Pod{schedulerPodWith("s-1", corev1.ContainerStatus{RestartCount: 2,
			State: waiting("CrashLoopBackOff", ""), LastTerminationState: terminated(1, "Error", longLog)})},
			v1.ReasonSchedulerCrashing, []string{"last log lines: ...I0101 a line", "E0101 the fatal error"}, []string{"lines: ...0101", "\n\n"}},

		{"runAsNonRoot with an image running as root", []corev1.Pod{schedulerPodWith("s-1", corev1.ContainerStatus{
			State: waiting("CreateContainerConfigError", "container has runAsNonRoot and image will run as root (pod: \"s-1_platform\", container: kube-scheduler)")})},
			v1.ReasonSchedulerCannotStart, []string{"the kubelet cannot start the scheduler's container in pod s-1: CreateContainerConfigError", "runAsNonRoot"}, nil},
		{"a binary that is not there", []corev1.Pod{schedulerPodWith("s-1", corev1.ContainerStatus{RestartCount: 3,
			State: waiting("CrashLoopBackOff", ""), LastTerminationState: terminated(128, "StartError",
				`failed to create containerd task: exec: "/bin/kube-scheduler": stat /bin/kube-scheduler: no such file or directory`)})},
			v1.ReasonSchedulerCannotStart, []string{"cannot run: StartError (exit code 128)", "stat /bin/kube-scheduler: no such file", "status.imageSource"}, nil},

		{"no node takes the pod", []corev1.Pod{unschedulablePod("s-1", "0/5 nodes are available: 5 node(s) didn't match Pod's node affinity/selector.")},
			v1.ReasonSchedulerUnschedulable, []string{"no node can take the scheduler's pod s-1: 0/5 nodes are available: 5 node(s) didn't match", "spec.nodeSelector"}, nil},
		{"a huge message is cut", []corev1.Pod{unschedulablePod("s-1", strings.Repeat("x", 5000))},
			v1.ReasonSchedulerUnschedulable, []string{strings.Repeat("x", quotedMessageBytes) + "..."}, []string{strings.Repeat("x", quotedMessageBytes+1)}},

		{"of several pods the most pressing is told", []corev1.Pod{unschedulablePod("s-0", "0/5 nodes are available"), crashing, pullFailed},
			v1.ReasonImagePullFailed, []string{"pod s-1"}, nil},
		{"of equal problems the first pod by name", []corev1.Pod{unschedulablePod("s-b", "b"), unschedulablePod("s-a", "a")},
			v1.ReasonSchedulerUnschedulable, []string{"pod s-a: a"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problem := podProblem(tt.pods)
			if !expectProblemSays(t, problem, tt.reason, tt.says) {
				return
			}
			for _, part := range tt.notSay {
				if strings.Contains(problem.Message, part) {
					t.Errorf("message %q says %q", problem.Message, part)
				}
			}
			if len(problem.Message) > 2*terminationLogTailSize {
				t.Errorf("message of %d bytes: too long for a condition", len(problem.Message))
			}
		})
	}
}

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
			State: waiting("ImagePullBackOff", `Back-off pulling image "`+template.Spec.Containers[0].Image+`": manifest unknown`)}}})
	// The Deployment controller reports the pod as unavailable, which wakes the operator.
	s.reportRollout(cr, 0)
	pullFailed := s.expectUnavailableWithin(cr, v1.ReasonImagePullFailed, 10*time.Second)
	s.g.Expect(pullFailed.Message).To(And(ContainSubstring("cannot pull image "+template.Spec.Containers[0].Image),
		ContainSubstring("manifest unknown"), ContainSubstring("spec.schedulerName: unready stay Pending")))
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonImagePullFailed)
	s.expectCondition(cr, v1.ConditionStalled, metav1.ConditionTrue, v1.ReasonImagePullFailed)

	// The image is pulled and the scheduler crashes: nothing the operator watches changes.
	s.setPodStatus(pod, func(status *corev1.PodStatus) {
		status.ContainerStatuses[0].State = waiting("CrashLoopBackOff", "back-off 20s restarting failed container")
		status.ContainerStatuses[0].RestartCount = 2
		status.ContainerStatuses[0].LastTerminationState = terminated(1, "Error",
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
	// Available still means the current configuration, and says what still runs.
	s.update(cr, func() { cr.Spec.LogLevel = v1.Debug })
	s.g.Eventually(func() []string { return s.deployment(cr).Spec.Template.Spec.Containers[0].Command }).Should(ContainElement("--v=4"))
	template = s.deployment(cr).Spec.Template.DeepCopy()
	s.addPod(cr, "unready-scheduler-1", template, corev1.PodStatus{Phase: corev1.PodPending,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "kube-scheduler", State: waiting("ErrImagePull", "connection refused")}}})
	s.reportRollout(cr, 1)
	stale := s.expectUnavailableWithin(cr, v1.ReasonImagePullFailed, 12*time.Second)
	s.g.Expect(stale.Message).To(And(ContainSubstring("unready-scheduler-1 cannot pull image"), ContainSubstring("connection refused"),
		ContainSubstring("1 pods of an older configuration still schedule")))
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

// expectProblemSays checks that problem has reason (none when reason is empty) and that
// its message says each of says; it reports whether there is a problem to check further.
func expectProblemSays(t *testing.T, problem *reasons.Finding, reason v1.ConditionReason, says []string) bool {
	t.Helper()
	if reason == "" {
		if problem != nil {
			t.Fatalf("want no problem, got %s: %s", problem.Reason, problem.Message)
		}
		return false
	}
	if problem == nil || problem.Reason != reason {
		t.Fatalf("want %s, got %+v", reason, problem)
	}
	for _, part := range says {
		if !strings.Contains(problem.Message, part) {
			t.Errorf("message %q does not say %q", problem.Message, part)
		}
	}
	return true
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
