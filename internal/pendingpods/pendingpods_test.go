package pendingpods

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly/readonlytest"
)

func pod(name string, age time.Duration, now time.Time, mutate ...func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, CreationTimestamp: metav1.NewTime(now.Add(-age))},
		Spec:       corev1.PodSpec{SchedulerName: "packer"},
	}
	for _, m := range mutate {
		m(&p)
	}
	return p
}

// stored is pods as the informer's store keeps them.
func stored(pods ...corev1.Pod) []*Pod {
	kept := make([]*Pod, 0, len(pods))
	for i := range pods {
		object, err := Trim(&pods[i])
		if err != nil {
			panic(err)
		}
		kept = append(kept, object.(*Pod))
	}
	return kept
}

func routedBy(scheduler string) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Labels = map[string]string{v1.LabelRoutedTo: scheduler} }
}

func unschedulableBecause(message string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, Message: message}}
	}
}

// TestCount checks which pods count as stuck, in which order they are named, and when
// the next one will be.
func TestCount(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	threshold := 2 * time.Minute
	gated := func(p *corev1.Pod) { p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/quota"}} }
	done := func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
	going := func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} }
	tests := []struct {
		name string
		pods []corev1.Pod
		want Pending
	}{
		{"none", nil, Pending{}},
		{"younger than the threshold: not yet, but due", []corev1.Pod{pod("a", time.Minute, now), pod("b", 90*time.Second, now)},
			Pending{NextDue: 30 * time.Second}},
		{"older, oldest first, with the scheduler's account of the oldest that has one", []corev1.Pod{
			pod("young", 3*time.Minute, now, unschedulableBecause("0/3 nodes are available: 3 Insufficient cpu.")),
			pod("old", 10*time.Minute, now),
			pod("fresh", 10*time.Second, now),
		}, Pending{Count: 2, OldestSince: now.Add(-10 * time.Minute), Oldest: types.NamespacedName{Namespace: "team", Name: "old"}, Examples: []string{"team/old", "team/young"},
			Unschedulable: "0/3 nodes are available: 3 Insufficient cpu.", NextDue: 110 * time.Second}},
		{"those a route sent are counted apart", []corev1.Pod{
			pod("routed", 5*time.Minute, now, routedBy("packer")), pod("named", 4*time.Minute, now),
		}, Pending{Count: 2, OldestSince: now.Add(-5 * time.Minute), Oldest: types.NamespacedName{Namespace: "team", Name: "routed"}, Examples: []string{"team/routed", "team/named"}, Routed: 1}},
		{"gated, done or going: not waiting for the scheduler", []corev1.Pod{
			pod("gated", time.Hour, now, gated), pod("done", time.Hour, now, done), pod("going", time.Hour, now, going),
		}, Pending{}},
		{"at most five named", []corev1.Pod{
			pod("p1", 7*time.Minute, now), pod("p2", 6*time.Minute, now), pod("p3", 5*time.Minute, now),
			pod("p4", 4*time.Minute, now), pod("p5", 3*time.Minute, now), pod("p6", 3*time.Minute, now),
		}, Pending{Count: 6, OldestSince: now.Add(-7 * time.Minute), Oldest: types.NamespacedName{Namespace: "team", Name: "p1"},
			Examples: []string{"team/p1", "team/p2", "team/p3", "team/p4", "team/p5"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Count(stored(tt.pods...), threshold, now)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestTrimKeepsWhatCountingReads checks that a stored pod keeps what Count reads, and
// nothing of its containers or labels, and that the scheduler's account is bounded.
func TestTrimKeepsWhatCountingReads(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	full := pod("web", time.Hour, now, unschedulableBecause(strings.Repeat("0/5000 nodes are available. ", 100)), func(p *corev1.Pod) {
		p.Spec.Containers = []corev1.Container{{Name: "app", Image: "app:1", Env: []corev1.EnvVar{{Name: "PASSWORD", Value: "hunter2"}}}}
		p.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "a"}, {Name: "b"}}
		p.Labels = map[string]string{"app": "web"}
		p.UID = "3f1c"
		p.ResourceVersion = "42"
	})
	trimmed := stored(full)[0]
	type kept struct {
		Key                            string
		UID                            types.UID
		SchedulerName, ResourceVersion string
		Created                        time.Time
		Deleting, Gated, Finished      bool
	}
	got := kept{Key: trimmed.Key().String(), UID: trimmed.UID(), SchedulerName: trimmed.SchedulerName(),
		ResourceVersion: trimmed.GetObjectMeta().GetResourceVersion(), Created: trimmed.Created(),
		Deleting: trimmed.deleting, Gated: trimmed.gated, Finished: trimmed.finished}
	want := kept{Key: "team/web", UID: "3f1c", SchedulerName: "packer", ResourceVersion: "42", Created: full.CreationTimestamp.UTC(), Gated: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stored pod (-want +got):\n%s", diff)
	}
	if len(trimmed.Unschedulable()) > maxSummary || !strings.HasSuffix(trimmed.Unschedulable(), "...") {
		t.Errorf("summary of %d bytes kept, at most %d with a mark of the cut", len(trimmed.Unschedulable()), maxSummary)
	}
	if got := Count([]*Pod{trimmed}, time.Minute, now); got.Count != 0 {
		t.Errorf("a gated pod counts %d, want 0", got.Count)
	}
	full.Spec.SchedulingGates = nil
	if got := Count(stored(full), time.Minute, now); got.Unschedulable != trimmed.Unschedulable() || got.Count != 1 {
		t.Errorf("the ungated pod counts as %+v", got)
	}
	if other := stored(pod("db", time.Hour, now))[0]; other.namespace != trimmed.namespace || other.schedulerName != trimmed.schedulerName {
		t.Errorf("namespace and scheduler name are not interned: two pods keep them apart")
	}
}

// A pod's gang is kept, whichever API names it, and Count names the oldest stuck pod's.
func TestGangsAreKept(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	coscheduling := pod("worker-0", time.Hour, now, func(p *corev1.Pod) {
		p.Labels = map[string]string{CoschedulingPodGroupLabel: "training"}
	})
	workload := pod("worker-1", 2*time.Hour, now, func(p *corev1.Pod) {
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("inference")}
	})
	alone := pod("web", 3*time.Hour, now)
	pods := stored(coscheduling, workload, alone)
	if got := []string{pods[0].Gang(), pods[1].Gang(), pods[2].Gang()}; !slices.Equal(got, []string{"training", "inference", ""}) {
		t.Errorf("gangs kept: %q", got)
	}
	if got := Count(pods[:2], time.Minute, now); got.Gang != "team/inference" {
		t.Errorf("the gang of the oldest stuck pod is %q, want team/inference", got.Gang)
	}
	if got := Count(pods, time.Minute, now); got.Gang != "" {
		t.Errorf("the oldest stuck pod is in no gang, and yet gang %q is named", got.Gang)
	}
}

// TestFinderReadsTheIndex checks Find over an informer's indexer holding stored pods.
func TestFinderReadsTheIndex(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{SchedulerNameIndex: IndexSchedulerName})
	other := pod("other", time.Hour, now, func(p *corev1.Pod) { p.Spec.SchedulerName = "spreader" })
	for _, kept := range stored(pod("old", time.Hour, now), pod("young", time.Second, now), other) {
		if err := indexer.Add(kept); err != nil {
			t.Fatal(err)
		}
	}
	got, err := NewFinder(indexer).Find([]string{"packer", "packer-gpu"}, time.Minute, now)
	if err != nil {
		t.Fatal(err)
	}
	want := Pending{Count: 1, OldestSince: now.Add(-time.Hour), Oldest: types.NamespacedName{Namespace: "team", Name: "old"}, Examples: []string{"team/old"}, NextDue: time.Minute - time.Second}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// TestFindingCannotWrite proves, over the package's own types and code, that finding
// pending pods can reach no writer (internal/readonly/readonlytest).
func TestFindingCannotWrite(t *testing.T) {
	readonlytest.AssertCannotWrite(t, ".")
}
