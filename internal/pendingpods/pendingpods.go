// Package pendingpods finds the pods stuck waiting for a scheduler: those that name it,
// have no node yet, and have waited longer than a threshold. It reads an informer's
// store of unscheduled pods only (the API server selects them with spec.nodeName=, so a
// cluster's scheduled pods never reach the operator), each kept as a Pod: what the count
// needs. The controller makes that informer (Trim and IndexSchedulerName are for it).
// Finding cannot write: a Finder holds an index to read only (internal/readonly).
package pendingpods

import (
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// SchedulerNameIndex indexes the stored pods by spec.schedulerName.
const SchedulerNameIndex = "spec.schedulerName"

// maxExamples is how many pods status names, oldest first.
const maxExamples = 5

// maxSummary bounds the scheduler's account of why a pod fits no node, as kept in the
// store and quoted in a message.
const maxSummary = 512

// Pod is what the store of unscheduled pods keeps of a pod: what finding stuck pods, and
// telling a pod that names a scheduler nobody provides, read. About 350 bytes, where a
// trimmed corev1.Pod still took 1.1 KiB for the fields it left empty (the pending-pods
// benchmark's heap profile).
type Pod struct {
	metav1.TypeMeta `json:",inline"`
	// ObjectMeta holds the name, namespace, UID, resourceVersion, and the creation and
	// deletion times.
	metav1.ObjectMeta `json:"metadata"`
	// SchedulerName is spec.schedulerName.
	SchedulerName string `json:"schedulerName"`
	// Gated is true while a scheduling gate holds the pod.
	Gated bool `json:"gated,omitempty"`
	// Finished is true once the pod succeeded or failed.
	Finished bool `json:"finished,omitempty"`
	// Unschedulable is the scheduler's account of why no node fits the pod (its
	// PodScheduled condition's message, bounded), empty when it gave none.
	Unschedulable string `json:"unschedulable,omitempty"`
}

// DeepCopyObject implements runtime.Object.
func (p *Pod) DeepCopyObject() runtime.Object {
	copied := *p
	p.DeepCopyInto(&copied.ObjectMeta)
	return &copied
}

// IndexSchedulerName is the informer's IndexFunc of SchedulerNameIndex.
func IndexSchedulerName(object any) ([]string, error) {
	pod, ok := object.(*Pod)
	if !ok {
		return nil, fmt.Errorf("index scheduler names: %T is no stored pod", object)
	}
	return []string{pod.SchedulerName}, nil
}

// Trim is the informer's transform: it keeps of a pod only what a Pod holds.
func Trim(object any) (any, error) {
	pod, ok := object.(*corev1.Pod)
	if !ok {
		return object, nil
	}
	trimmed := &Pod{
		ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace, UID: pod.UID, ResourceVersion: pod.ResourceVersion,
			CreationTimestamp: pod.CreationTimestamp, DeletionTimestamp: pod.DeletionTimestamp},
		SchedulerName: pod.Spec.SchedulerName,
		Gated:         len(pod.Spec.SchedulingGates) > 0,
		Finished:      pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed,
	}
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodScheduled && condition.Status == corev1.ConditionFalse &&
			condition.Reason == corev1.PodReasonUnschedulable && condition.Message != "" {
			trimmed.Unschedulable = truncate(condition.Message, maxSummary)
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

// Index is what a Finder reads of the informer's store: its pods by scheduler name.
type Index interface {
	ByIndex(indexName, indexedValue string) ([]any, error)
}

// Finder finds pending pods in the store of unscheduled pods.
type Finder struct {
	pods Index
}

// NewFinder is a Finder reading the store of unscheduled pods, which must be indexed by
// SchedulerNameIndex.
func NewFinder(unscheduled Index) *Finder {
	return &Finder{pods: unscheduled}
}

// Find finds the pods that name one of names and have waited longer than threshold at
// now. It reads the stored pods in place, without copies, and changes none.
func (f *Finder) Find(names []string, threshold time.Duration, now time.Time) (Pending, error) {
	var waiting []*Pod
	for _, name := range names {
		pods, err := PodsNaming(f.pods, name)
		if err != nil {
			return Pending{}, err
		}
		waiting = append(waiting, pods...)
	}
	return Count(waiting, threshold, now), nil
}

// PodsNaming are the stored pods that name scheduler name, shared with the store: to be
// read, never changed.
func PodsNaming(unscheduled Index, name string) ([]*Pod, error) {
	objects, err := unscheduled.ByIndex(SchedulerNameIndex, name)
	if err != nil {
		return nil, fmt.Errorf("list pods waiting for scheduler %s: %w", name, err)
	}
	pods := make([]*Pod, 0, len(objects))
	for _, object := range objects {
		if pod, ok := object.(*Pod); ok {
			pods = append(pods, pod)
		}
	}
	return pods, nil
}

// Count is Find's account of pods, all naming the scheduler.
func Count(pods []*Pod, threshold time.Duration, now time.Time) Pending {
	var stuck []*Pod
	var pending Pending
	for _, pod := range pods {
		if !WaitsForScheduler(pod) {
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
	slices.SortFunc(stuck, func(a, b *Pod) int {
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
			pending.Unschedulable = pod.Unschedulable
		}
	}
	return pending
}

// WaitsForScheduler reports whether pod waits for its scheduler to place it: not done,
// not going away, and held by no scheduling gate (those wait by design). It has no node:
// the store holds no other.
func WaitsForScheduler(pod *Pod) bool {
	return pod.DeletionTimestamp == nil && !pod.Gated && !pod.Finished
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
