// Package pendingpods finds the pods stuck waiting for a scheduler: those that name it,
// have no node yet, and have waited longer than a threshold. It reads an informer's
// store of unscheduled pods only (the API server selects them with spec.nodeName=, so a
// cluster's scheduled pods never reach the operator), each kept as a Pod: what the count
// needs. The controller makes that informer (Trim and IndexSchedulerName are for it).
// Finding cannot write: a Finder holds an index to read only (internal/readonly).
package pendingpods

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// SchedulerNameIndex indexes the stored pods by spec.schedulerName.
const SchedulerNameIndex = "spec.schedulerName"

// maxExamples is how many pods status names, oldest first.
const maxExamples = 5

// maxSummary bounds the scheduler's account of why a pod fits no node, as kept in the
// store and quoted in a message.
const maxSummary = 512

// Pod is what the store of unscheduled pods keeps of a pod: what finding stuck pods, and
// telling a pod that names a scheduler nobody provides, read. About 290 bytes with its
// strings and its entries in the store and index (BenchmarkStore5000PendingPods), where
// a corev1.Pod took 1.1 KiB for the fields it left empty and a struct holding
// metav1.ObjectMeta 540 bytes. Its
// fields are unexported: the store shares each Pod with every reader, none may change it.
// The namespace and scheduler name, which many pods share, are kept once (interned).
type Pod struct {
	namespace       unique.Handle[string]
	schedulerName   unique.Handle[string]
	name            string
	uid             types.UID
	resourceVersion string
	// unschedulable is the scheduler's account of why no node fits the pod (its
	// PodScheduled condition's message, bounded), empty when it gave none.
	unschedulable string
	// created is the creation time in Unix seconds, the API server's precision.
	created  int64
	deleting bool
	gated    bool
	finished bool
	// routed is true when a route (spec.routing) gave the pod its scheduler name.
	routed bool
	// gang is the PodGroup the pod belongs to, interned (gangs share it), zero for none.
	gang unique.Handle[string]
}

// CoschedulingPodGroupLabel names, on a pod, its gang: a PodGroup of
// scheduling.x-k8s.io, as scheduler-plugins' Coscheduling reads it.
const CoschedulingPodGroupLabel = "scheduling.x-k8s.io/pod-group"

// Gang is the PodGroup the pod belongs to, as Coscheduling's label or Kubernetes' Workload
// API (spec.schedulingGroup.podGroupName) names it in the pod's namespace; "" for none.
func (p *Pod) Gang() string { return interned(p.gang) }

// gangOf is the PodGroup pod belongs to, "" for none: the Workload API's field first, then
// Coscheduling's label.
func gangOf(pod *corev1.Pod) string {
	if group := pod.Spec.SchedulingGroup; group != nil && group.PodGroupName != nil {
		return *group.PodGroupName
	}
	return pod.Labels[CoschedulingPodGroupLabel]
}

// Namespace is the pod's namespace.
func (p *Pod) Namespace() string { return interned(p.namespace) }

// Name is the pod's name.
func (p *Pod) Name() string { return p.name }

// Key is the pod's namespace and name.
func (p *Pod) Key() types.NamespacedName {
	return types.NamespacedName{Namespace: p.Namespace(), Name: p.name}
}

// UID is the pod's UID.
func (p *Pod) UID() types.UID { return p.uid }

// SchedulerName is the pod's spec.schedulerName.
func (p *Pod) SchedulerName() string { return interned(p.schedulerName) }

// Created is when the pod was created.
func (p *Pod) Created() time.Time { return time.Unix(p.created, 0).UTC() }

// Unschedulable is the scheduler's account of why no node fits the pod, bounded; empty
// when it gave none.
func (p *Pod) Unschedulable() string { return p.unschedulable }

// GetObjectMeta implements metav1.ObjectMetaAccessor, through which the informer reads
// the key (namespace/name) and the resourceVersion (an update that keeps it is a resync):
// a copy, made at each call, which changes nothing of the Pod.
func (p *Pod) GetObjectMeta() metav1.Object {
	return &metav1.ObjectMeta{Namespace: p.Namespace(), Name: p.name, UID: p.uid, ResourceVersion: p.resourceVersion}
}

func interned(handle unique.Handle[string]) string {
	if handle == (unique.Handle[string]{}) {
		return ""
	}
	return handle.Value()
}

// IndexSchedulerName is the informer's IndexFunc of SchedulerNameIndex.
func IndexSchedulerName(object any) ([]string, error) {
	pod, ok := object.(*Pod)
	if !ok {
		return nil, fmt.Errorf("index scheduler names: %T is no stored pod", object)
	}
	return []string{pod.SchedulerName()}, nil
}

// Trim is the informer's transform: it keeps of a pod only what a Pod holds.
func Trim(object any) (any, error) {
	pod, ok := object.(*corev1.Pod)
	if !ok {
		return object, nil
	}
	trimmed := &Pod{
		namespace:       unique.Make(pod.Namespace),
		schedulerName:   unique.Make(pod.Spec.SchedulerName),
		name:            pod.Name,
		uid:             pod.UID,
		resourceVersion: pod.ResourceVersion,
		created:         pod.CreationTimestamp.Unix(),
		deleting:        pod.DeletionTimestamp != nil,
		gated:           len(pod.Spec.SchedulingGates) > 0,
		finished:        pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed,
		routed:          pod.Labels[v1.LabelRoutedTo] != "",
	}
	if gang := gangOf(pod); gang != "" {
		trimmed.gang = unique.Make(gang)
	}
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodScheduled && condition.Status == corev1.ConditionFalse &&
			condition.Reason == corev1.PodReasonUnschedulable && condition.Message != "" {
			trimmed.unschedulable = usertext.Cut(condition.Message, maxSummary-len("..."))
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
	// Oldest is the oldest of them; zero when there is none.
	Oldest types.NamespacedName
	// Unschedulable is the scheduler's account of why no node fits one of them (the
	// oldest that has one), empty when none has.
	Unschedulable string
	// Routed is how many of them a route (spec.routing) sent to the scheduler.
	Routed int
	// Gang is the PodGroup the oldest of them belongs to, as namespace/name, empty when it
	// belongs to none: its pods bind all together or not at all.
	Gang string
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
		if waited := now.Sub(pod.Created()); waited < threshold {
			due := threshold - waited
			if pending.NextDue == 0 || due < pending.NextDue {
				pending.NextDue = due
			}
			continue
		}
		stuck = append(stuck, pod)
	}
	slices.SortFunc(stuck, func(a, b *Pod) int {
		if order := cmp.Compare(a.created, b.created); order != 0 {
			return order
		}
		return strings.Compare(a.Key().String(), b.Key().String())
	})
	pending.Count = len(stuck)
	for i, pod := range stuck {
		if i == 0 {
			pending.OldestSince, pending.Oldest = pod.Created(), pod.Key()
		}
		if i < maxExamples {
			pending.Examples = append(pending.Examples, pod.Key().String())
		}
		if pending.Unschedulable == "" {
			pending.Unschedulable = pod.unschedulable
		}
		if pod.routed {
			pending.Routed++
		}
		if i == 0 && pod.Gang() != "" {
			pending.Gang = pod.Namespace() + "/" + pod.Gang()
		}
	}
	return pending
}

// WaitsForScheduler reports whether pod waits for its scheduler to place it: not done,
// not going away, and held by no scheduling gate (those wait by design). It has no node:
// the store holds no other.
func WaitsForScheduler(pod *Pod) bool {
	return !pod.deleting && !pod.gated && !pod.finished
}
