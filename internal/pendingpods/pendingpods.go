// Package pendingpods finds the pods stuck waiting for a scheduler: those that name it,
// have no node yet, and have waited longer than a threshold. It reads a cache of
// unscheduled pods only (the API server selects them with spec.nodeName=, so a cluster's
// scheduled pods never reach the operator), each trimmed to what the count needs.
// The controller makes that cache (Trim and IndexSchedulerName are for it). Finding
// cannot write: a Finder holds a reader only (internal/readonly).
package pendingpods

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly"
)

// SchedulerNameIndex indexes the cached pods by spec.schedulerName.
const SchedulerNameIndex = "spec.schedulerName"

// maxExamples is how many pods status names, oldest first.
const maxExamples = 5

// maxSummary bounds the scheduler's account of why a pod fits no node, as kept in the
// cache and quoted in a message.
const maxSummary = 512

// IndexSchedulerName extracts SchedulerNameIndex.
func IndexSchedulerName(object client.Object) []string {
	pod, ok := object.(*corev1.Pod)
	if !ok {
		return nil
	}
	return []string{pod.Spec.SchedulerName}
}

// Trim keeps of a pod only what finding stuck pods reads: its name, age and scheduler
// name, whether scheduling gates hold it, whether it is done or going, and the
// scheduler's account of why no node fits it (bounded). A pending pod then costs a few
// hundred bytes, whatever its spec.
func Trim(object any) (any, error) {
	pod, ok := object.(*corev1.Pod)
	if !ok {
		return object, nil
	}
	trimmed := &corev1.Pod{
		TypeMeta: pod.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			CreationTimestamp: pod.CreationTimestamp, DeletionTimestamp: pod.DeletionTimestamp},
		Spec:   corev1.PodSpec{SchedulerName: pod.Spec.SchedulerName, NodeName: pod.Spec.NodeName},
		Status: corev1.PodStatus{Phase: pod.Status.Phase},
	}
	if len(pod.Spec.SchedulingGates) > 0 {
		// Which gates does not matter, only that one holds the pod.
		trimmed.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: pod.Spec.SchedulingGates[0].Name}}
	}
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodScheduled && condition.Status == corev1.ConditionFalse {
			trimmed.Status.Conditions = []corev1.PodCondition{{Type: condition.Type, Status: condition.Status,
				Reason: condition.Reason, Message: truncate(condition.Message, maxSummary)}}
		}
	}
	return trimmed, nil
}

// Pending is what Find found of the pods waiting for one scheduler.
type Pending struct {
	// Count is how many have waited longer than the threshold.
	Count int
	// OldestSince is when the oldest of them was created; zero when there is none.
	OldestSince time.Time
	// Examples name some of them, oldest first, as namespace/name.
	Examples []string
	// Unschedulable is the scheduler's account of why no node fits one of them (the
	// oldest that has one), empty when none has.
	Unschedulable string
	// NextDue is how long until a pod that waits now, but not for long enough yet,
	// reaches the threshold; zero when none is waiting.
	NextDue time.Duration
}

// Finder finds pending pods in the cache of unscheduled pods.
type Finder struct {
	cache client.Reader
}

// NewFinder is a Finder reading the cache of unscheduled pods, which must be indexed by
// SchedulerNameIndex.
func NewFinder(unscheduled client.Reader) *Finder {
	return &Finder{cache: readonly.Wrap(unscheduled)}
}

// Find finds the pods that name one of names, have no node and have waited longer than
// threshold at now.
func (f *Finder) Find(ctx context.Context, names []string, threshold time.Duration, now time.Time) (Pending, error) {
	var waiting []corev1.Pod
	for _, name := range names {
		pods := &corev1.PodList{}
		if err := f.cache.List(ctx, pods, client.MatchingFields{SchedulerNameIndex: name}); err != nil {
			return Pending{}, fmt.Errorf("list pods waiting for scheduler %s: %w", name, err)
		}
		waiting = append(waiting, pods.Items...)
	}
	return Count(waiting, threshold, now), nil
}

// Count is Find's account of pods, all naming the scheduler.
func Count(pods []corev1.Pod, threshold time.Duration, now time.Time) Pending {
	var stuck []corev1.Pod
	var pending Pending
	for _, pod := range pods {
		if !waitsForScheduler(pod) {
			continue
		}
		if waited := now.Sub(pod.CreationTimestamp.Time); waited < threshold {
			due := threshold - waited
			if pending.NextDue == 0 || due < pending.NextDue {
				pending.NextDue = due
			}
			continue
		}
		stuck = append(stuck, pod)
	}
	slices.SortFunc(stuck, func(a, b corev1.Pod) int {
		if order := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); order != 0 {
			return order
		}
		return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name)
	})
	pending.Count = len(stuck)
	for i, pod := range stuck {
		if i == 0 {
			pending.OldestSince = pod.CreationTimestamp.Time
		}
		if i < maxExamples {
			pending.Examples = append(pending.Examples, pod.Namespace+"/"+pod.Name)
		}
		if pending.Unschedulable == "" {
			pending.Unschedulable = unschedulable(pod)
		}
	}
	return pending
}

// waitsForScheduler reports whether pod waits for its scheduler to place it: not placed,
// not done, not going away, and held by no scheduling gate (those wait by design).
func waitsForScheduler(pod corev1.Pod) bool {
	return pod.Spec.NodeName == "" && pod.DeletionTimestamp == nil && len(pod.Spec.SchedulingGates) == 0 &&
		pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// Summary is the scheduler's account of why no node fits pod, empty when it gave none.
func Summary(pod *corev1.Pod) string { return unschedulable(*pod) }

// unschedulable is the scheduler's account of why no node fits pod, empty when it gave
// none.
func unschedulable(pod corev1.Pod) string {
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodScheduled && condition.Status == corev1.ConditionFalse &&
			condition.Reason == corev1.PodReasonUnschedulable && condition.Message != "" {
			return condition.Message
		}
	}
	return ""
}

// truncate cuts s to at most limit bytes, on a rune boundary, marking the cut.
func truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	cut := limit - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
