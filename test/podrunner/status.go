package main

import (
	"context"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
)

// The pod status podrunner reports, as a kubelet would.

func (p *podProcess) reportRunning(ctx context.Context, started metav1.Time, restarts int32, ready bool) {
	p.updateStatus(ctx, func(status *corev1.PodStatus) {
		status.Phase = corev1.PodRunning
		status.StartTime = ptrTime(started)
		container := containerStatus(p.pod, restarts, ready)
		container.State = corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}
		// As a kubelet does, the last termination stays until the next one.
		if len(status.ContainerStatuses) > 0 {
			container.LastTerminationState = status.ContainerStatuses[0].LastTerminationState
		}
		status.ContainerStatuses = []corev1.ContainerStatus{container}
		setConditions(status, ready)
	})
}

func (p *podProcess) reportTerminated(ctx context.Context, restarts int32, exitCode int, started time.Time, message string) {
	p.updateStatus(ctx, func(status *corev1.PodStatus) {
		container := containerStatus(p.pod, restarts, false)
		container.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
		container.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: int32(exitCode), StartedAt: metav1.NewTime(started), FinishedAt: metav1.Now(), Reason: "Error", Message: message}}
		status.ContainerStatuses = []corev1.ContainerStatus{container}
		setConditions(status, false)
	})
}

func (p *podProcess) reportWaiting(ctx context.Context, reason, message string) {
	p.updateStatus(ctx, func(status *corev1.PodStatus) {
		status.Phase = corev1.PodPending
		container := containerStatus(p.pod, 0, false)
		container.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
		status.ContainerStatuses = []corev1.ContainerStatus{container}
		setConditions(status, false)
	})
}

func (p *podProcess) updateStatus(ctx context.Context, mutate func(*corev1.PodStatus)) {
	pods := p.runner.clientset.CoreV1().Pods(p.pod.Namespace)
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod, err := pods.Get(ctx, p.pod.Name, metav1.GetOptions{})
		if err != nil || pod.UID != p.uid {
			return err
		}
		mutate(&pod.Status)
		pod.Status.HostIP = ""
		_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
		return err
	})
	if err != nil && ctx.Err() == nil {
		klog.ErrorS(err, "update pod status", "pod", p.pod.Namespace+"/"+p.pod.Name)
	}
}

func containerStatus(pod *corev1.Pod, restarts int32, ready bool) corev1.ContainerStatus {
	container := pod.Spec.Containers[0]
	return corev1.ContainerStatus{
		Name: container.Name, Image: container.Image, ImageID: container.Image,
		Ready: ready, Started: &ready, RestartCount: restarts, ContainerID: "podrunner://" + string(pod.UID),
	}
}

func setConditions(status *corev1.PodStatus, ready bool) {
	readyStatus := corev1.ConditionFalse
	if ready {
		readyStatus = corev1.ConditionTrue
	}
	now := metav1.Now()
	set := func(conditionType corev1.PodConditionType, value corev1.ConditionStatus) {
		for i := range status.Conditions {
			if status.Conditions[i].Type == conditionType {
				if status.Conditions[i].Status != value {
					status.Conditions[i].Status, status.Conditions[i].LastTransitionTime = value, now
				}
				return
			}
		}
		status.Conditions = append(status.Conditions, corev1.PodCondition{Type: conditionType, Status: value, LastTransitionTime: now})
	}
	set(corev1.PodInitialized, corev1.ConditionTrue)
	set(corev1.ContainersReady, readyStatus)
	set(corev1.PodReady, readyStatus)
}

func ptrTime(t metav1.Time) *metav1.Time { return &t }

// The kubelet's bounds of a termination message taken from the container's log
// (FallbackToLogsOnError): its last 80 lines, at most their last 2 KiB.
const (
	terminationMessageLogLines = 80
	terminationMessageLogBytes = 2 * 1024
)

// terminationMessage is the message a kubelet gives a container that exited with
// exitCode. podrunner cannot offer the container a file at its terminationMessagePath (a
// host process shares the host's /dev), so the message comes from the log alone: as the
// kubelet does with terminationMessagePolicy FallbackToLogsOnError and an empty file,
// the tail of the last run's output when the container failed; nothing otherwise.
func (p *podProcess) terminationMessage(exitCode int) string {
	container := p.pod.Spec.Containers[0]
	if exitCode == 0 || container.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		return ""
	}
	log, err := os.ReadFile(p.logPath())
	if err != nil || p.runLogStart > int64(len(log)) {
		return ""
	}
	return logTail(log[p.runLogStart:])
}

// logTail is the last terminationMessageLogLines lines of output, at most their last
// terminationMessageLogBytes bytes.
func logTail(output []byte) string {
	text := strings.TrimRight(string(output), "\n")
	lines := strings.Split(text, "\n")
	if len(lines) > terminationMessageLogLines {
		lines = lines[len(lines)-terminationMessageLogLines:]
	}
	text = strings.Join(lines, "\n")
	if len(text) > terminationMessageLogBytes {
		text = text[len(text)-terminationMessageLogBytes:]
	}
	return text
}
