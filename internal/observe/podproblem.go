package observe

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// Lengths of what a pod problem quotes: the kubelet's and the default scheduler's
// messages, and the scheduler's last log lines (the kubelet keeps at most 2048 bytes of
// them as the termination message).
const (
	quotedMessageBytes     = 512
	terminationLogTailSize = 1024
)

// Waiting reasons of a container, as the kubelet reports them.
var (
	imagePullWaitingReasons = []string{"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull"}
	cannotStartReasons      = []string{"CreateContainerConfigError", "CreateContainerError", "RunContainerError"}
	// cannotRunTerminations are how a container that never ran ends: its binary could not
	// be executed (for example a wrong path for the image).
	cannotRunTerminations = []string{"StartError", "ContainerCannotRun"}
)

// podProblem tells why none of pods, the scheduler's pods of the current template that are
// not ready, is ready, when a pod says so: an image that cannot be pulled, a container
// that cannot be created or run, a scheduler that crashes, or a pod no node can take. Nil
// when none says why (the pods are starting, or their readiness probe fails). Of
// different problems, the one that most surely needs someone to act is reported
// (internal/reasons ranks them); of equal ones, the first pod's by name.
func podProblem(pods []corev1.Pod) *reasons.Finding {
	sorted := slices.Clone(pods)
	slices.SortFunc(sorted, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	problems := make([]*reasons.Finding, len(sorted))
	for i := range sorted {
		problems[i] = problemOfPod(&sorted[i])
	}
	return reasons.Foremost(problems...)
}

// creationProblem is why the scheduler's Deployment creates no pod, when it says so: its
// ReplicaFailure condition quotes the API server's refusal (a ResourceQuota exceeded, Pod
// Security admission, a webhook). Nil when it creates them, and while its status is of an
// earlier generation: the refusal was of the template before, which an edit may just
// have fixed.
func creationProblem(deployment *appsv1.Deployment) *reasons.Finding {
	if !StatusOfCurrentTemplate(deployment) {
		return nil
	}
	for _, condition := range deployment.Status.Conditions {
		if condition.Type == appsv1.DeploymentReplicaFailure && condition.Status == corev1.ConditionTrue {
			return &reasons.Finding{Reason: v1.ReasonPodCreationFailed, Message: fmt.Sprintf(
				"the scheduler's pods cannot be created: %s; allow them (the namespace's ResourceQuota, its Pod Security level, "+
					"admission webhooks) or change what they ask for (spec.resources, spec.priorityClassName)",
				usertext.Cut(condition.Message, quotedMessageBytes))}
		}
	}
	return nil
}

// problemOfPod is what keeps one pod from being ready, nil when it does not say.
func problemOfPod(pod *corev1.Pod) *reasons.Finding {
	for _, status := range slices.Concat(pod.Status.InitContainerStatuses, pod.Status.ContainerStatuses) {
		if problem := problemOfContainer(pod, status); problem != nil {
			return problem
		}
	}
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodScheduled && condition.Status == corev1.ConditionFalse && condition.Reason == corev1.PodReasonUnschedulable {
			return &reasons.Finding{Reason: v1.ReasonSchedulerUnschedulable, Message: fmt.Sprintf(
				"no node can take the scheduler's pod %s: %s; its placement comes from spec.nodeSelector, spec.tolerations, spec.affinity, "+
					"spec.resources and spec.priorityClassName: change them or the nodes",
				pod.Name, usertext.Cut(strings.TrimSpace(condition.Message), quotedMessageBytes))}
		}
	}
	return nil
}

func problemOfContainer(pod *corev1.Pod, status corev1.ContainerStatus) *reasons.Finding {
	waiting, last := status.State.Waiting, status.LastTerminationState.Terminated
	if waiting != nil && slices.Contains(imagePullWaitingReasons, waiting.Reason) {
		return &reasons.Finding{Reason: v1.ReasonImagePullFailed, Message: fmt.Sprintf(
			"pod %s cannot pull image %s: %s: %s; check the image (status.imageSource says where it comes from) and that the nodes can reach its registry",
			pod.Name, containerImage(pod, status), waiting.Reason, quoted(waiting.Message))}
	}
	if last != nil && slices.Contains(cannotRunTerminations, last.Reason) {
		return &reasons.Finding{Reason: v1.ReasonSchedulerCannotStart, Message: fmt.Sprintf(
			"the scheduler's container in pod %s cannot run: %s (exit code %d): %s; status.imageSource says which binary the image is started as",
			pod.Name, last.Reason, last.ExitCode, quoted(last.Message))}
	}
	if waiting != nil && slices.Contains(cannotStartReasons, waiting.Reason) {
		return &reasons.Finding{Reason: v1.ReasonSchedulerCannotStart, Message: fmt.Sprintf(
			"the kubelet cannot start the scheduler's container in pod %s: %s: %s",
			pod.Name, waiting.Reason, quoted(waiting.Message))}
	}
	crashLooping := waiting != nil && waiting.Reason == "CrashLoopBackOff"
	if !crashLooping && (status.RestartCount == 0 || last == nil || !endedReadiness(pod, last)) {
		return nil
	}
	message := fmt.Sprintf("the scheduler in pod %s crashes (%d restarts)", pod.Name, status.RestartCount)
	if last != nil {
		message += fmt.Sprintf(": it last exited with code %d (%s)", last.ExitCode, last.Reason)
		if text := strings.TrimSpace(last.Message); text != "" {
			if lastError := lastErrorLine(text); lastError != "" {
				// The cause, without the lines of flags and start-up a verbose scheduler
				// writes before it.
				message += "; its last error: " + usertext.Cut(lastError, terminationLogTailSize)
			} else {
				message += "; its last log lines: " + logTail(text, terminationLogTailSize)
			}
		}
	}
	return &reasons.Finding{Reason: v1.ReasonSchedulerCrashing, Message: message + fmt.Sprintf(
		"; see kubectl -n %s logs %s --previous", pod.Namespace, pod.Name)}
}

// crashReadinessSlack is how long before a pod turned unready its container may have
// ended for that end to be why: the kubelet marks the pod unready soon after.
const crashReadinessSlack = 10 * time.Second

// endedReadiness reports whether the last termination is what made pod unready: a pod
// that restarted long ago (an old OOM kill, say) and is unready for another reason now
// is not crashing.
func endedReadiness(pod *corev1.Pod, last *corev1.ContainerStateTerminated) bool {
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodReady {
			return !last.FinishedAt.Add(crashReadinessSlack).Before(condition.LastTransitionTime.Time)
		}
	}
	return true
}

// containerImage is the image a container status is about: the kubelet reports the
// image it was asked for until it has pulled one.
func containerImage(pod *corev1.Pod, status corev1.ContainerStatus) string {
	if status.Image != "" {
		return usertext.Cut(status.Image, quotedMessageBytes)
	}
	for _, container := range pod.Spec.Containers {
		if container.Name == status.Name {
			return usertext.Cut(container.Image, quotedMessageBytes)
		}
	}
	return "(unknown)"
}

// quoted is a message of the kubelet, bounded.
func quoted(message string) string {
	if message = strings.TrimSpace(message); message == "" {
		return "(no message)"
	}
	return usertext.Cut(message, quotedMessageBytes)
}

// errorLine matches a line that reports an error: klog's error and fatal lines (E1125
// 08:15:00.123456 ...), and the error, fatal and panic lines Go programs and their
// command-line libraries write.
var errorLine = regexp.MustCompile(`^([EF]\d{4} \d\d:\d\d:\d\d|(?i:error|fatal|panic)\b)`)

// lastErrorLine is the last line of output that reports an error, "" when none does.
func lastErrorLine(output string) string {
	lines := strings.Split(output, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if line := strings.TrimSpace(lines[i]); errorLine.MatchString(line) {
			return line
		}
	}
	return ""
}

// logTail is the end of a log, where a program's fatal error is, at most limit bytes
// starting on a line of its own (or cut within the last line when that alone is longer).
func logTail(text string, limit int) string {
	if len(text) <= limit {
		return text
	}
	tail := strings.ToValidUTF8(text[len(text)-limit:], "")
	if newline := strings.IndexByte(tail, '\n'); newline >= 0 && newline < len(tail)-1 {
		tail = tail[newline+1:]
	}
	return "..." + tail
}
