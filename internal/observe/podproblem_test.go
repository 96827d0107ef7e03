package observe

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons/reasonstest"
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

		{"a verbose log: its last error line is quoted, not the flags before it", []corev1.Pod{schedulerPodWith("s-1", corev1.ContainerStatus{RestartCount: 2,
			State: waiting("CrashLoopBackOff", ""), LastTerminationState: terminated(1, "Error",
				"I1125 08:17:42.791792   10015 flags.go:64] FLAG: --tls-cert-file=\"\"\n"+
					"E1125 08:17:42.800001   10015 run.go:72] \"command failed\" err=\"invalid configuration: profiles[0].percentageOfNodesToScore: Invalid value: 101\"\n"+
					"I1125 08:17:42.800002   10015 shutdown.go:1] done\n")})},
			v1.ReasonSchedulerCrashing, []string{`its last error: E1125 08:17:42.800001   10015 run.go:72] "command failed" err="invalid configuration: profiles[0].percentageOfNodesToScore`},
			[]string{"FLAG:", "last log lines"}},
		{"a command-line error without klog", []corev1.Pod{schedulerPodWith("s-1", corev1.ContainerStatus{RestartCount: 1,
			State: waiting("CrashLoopBackOff", ""), LastTerminationState: terminated(1, "Error", "Usage:\n  kube-scheduler [flags]\nError: unknown flag: --bogus\n")})},
			v1.ReasonSchedulerCrashing, []string{"its last error: Error: unknown flag: --bogus"}, []string{"Usage"}},

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
			if !reasonstest.ExpectFinding(t, problem, tt.reason, tt.says) {
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

// The Deployment's refusal to create pods is the current template's only once its
// controller has observed that template: an edit may have just fixed what was refused.
func TestCreationProblemOnlyForTheCurrentTemplate(t *testing.T) {
	refused := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "packer-scheduler", Generation: 2},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentReplicaFailure,
			Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: `pods "packer-scheduler-7d9-x" is forbidden: exceeded quota: compute`}}}}
	if problem := creationProblem(refused); problem == nil || problem.Reason != v1.ReasonPodCreationFailed {
		t.Errorf("the current template's pods refused: %+v, want PodCreationFailed", problem)
	}
	edited := refused.DeepCopy()
	edited.Generation = 3
	if problem := creationProblem(edited); problem != nil {
		t.Errorf("an edit the Deployment controller has not seen: %+v, want none", problem)
	}
}
