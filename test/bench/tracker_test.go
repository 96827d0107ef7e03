package main

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

func TestTrackerRecordsWhatTheWatchesBring(t *testing.T) {
	tr := &tracker{owners: map[ownerKey]*ownerState{}, changed: make(chan struct{})}
	key := ownerKey{"bench", "s"}
	owned := metav1.ObjectMeta{Namespace: "bench", Name: "s-scheduler-config",
		Labels: map[string]string{render.LabelOwnerNamespace: "bench", render.LabelOwnerName: "s"}}
	configMap := &metav1.PartialObjectMetadata{ObjectMeta: owned}
	deployment := func(hash string) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: *owned.DeepCopy()}
		d.Name = "s-scheduler"
		d.Spec.Template.Annotations = map[string]string{render.ConfigHashAnnotation: hash}
		return d
	}
	scheduler := func(generation, observed int64, available metav1.ConditionStatus) *v1.SecondaryScheduler {
		return &v1.SecondaryScheduler{
			ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "s", Generation: generation},
			Status: v1.SecondarySchedulerStatus{ObservedGeneration: observed,
				Conditions: []metav1.Condition{{Type: string(v1.ConditionAvailable), Status: available}}},
		}
	}
	children, deployments, schedulers := tr.childHandler("ConfigMap"), tr.childHandler("Deployment"), tr.schedulerHandler()

	schedulers.OnAdd(scheduler(1, 0, metav1.ConditionUnknown), false)
	children.OnAdd(configMap, false)
	firstSeen := tr.state(key).objects["ConfigMap/bench/s-scheduler-config"]
	children.OnUpdate(configMap, configMap)
	deployments.OnAdd(deployment("a"), false)
	schedulers.OnUpdate(nil, scheduler(1, 1, metav1.ConditionTrue))
	state := tr.state(key)
	if len(state.objects) != 2 || state.objects["ConfigMap/bench/s-scheduler-config"] != firstSeen {
		t.Errorf("objects = %v; want the ConfigMap, still first seen at %v, and the Deployment", state.objects, firstSeen)
	}
	if state.allObjectsAt() != state.objects["Deployment/bench/s-scheduler"] {
		t.Errorf("allObjectsAt = %v, want when the Deployment came", state.allObjectsAt())
	}
	if !state.current || state.currentAt.IsZero() || state.availableAt.IsZero() || state.configHash != "a" {
		t.Errorf("state = %+v; want Available for its generation, with hash a", state)
	}

	// An edit: a new generation is not current until observed and Available again.
	availableAt, currentAt := state.availableAt, state.currentAt
	time.Sleep(time.Millisecond)
	schedulers.OnUpdate(nil, scheduler(2, 1, metav1.ConditionTrue))
	if tr.state(key).current {
		t.Error("current before generation 2 was observed")
	}
	deployments.OnUpdate(nil, deployment("b"))
	schedulers.OnUpdate(nil, scheduler(2, 2, metav1.ConditionTrue))
	state = tr.state(key)
	if state.configHash != "b" || !state.configHashAt.After(currentAt) || !state.currentAt.After(currentAt) || state.availableAt != availableAt {
		t.Errorf("after the edit: %+v; want hash b, current again later, first Available unchanged", state)
	}

	// Deletion: the scheduler, then its objects, one of them only as a tombstone.
	schedulers.OnDelete(scheduler(2, 2, metav1.ConditionTrue))
	deployments.OnDelete(deployment("b"))
	if tr.state(key).gone() {
		t.Error("gone while its ConfigMap exists")
	}
	children.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "bench/s-scheduler-config", Obj: configMap})
	if state := tr.state(key); !state.gone() || state.lastObjectGoneAt.Before(state.goneAt) {
		t.Errorf("after deletion: %+v; want gone, its last object after it", state)
	}
	tr.forget("bench")
	if _, ok := tr.owners[key]; ok {
		t.Error("forget kept a scheduler that is gone")
	}

	// Objects without owner labels are none of the tracker's business.
	children.OnAdd(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "unrelated"}}, false)
	if len(tr.owners) != 0 {
		t.Errorf("owners = %v, want none", tr.owners)
	}
}
