package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	fakesource "k8s.io/client-go/tools/cache/testing"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/pendingpods"
)

// The source of unscheduled pods tells a controller of each pod added, changed and
// deleted, though a stored pod is no client.Object. A change reaches it only because the
// informer reads the resourceVersion through pendingpods.Pod's GetObjectMeta: with the
// same version before and after, it would take the change for a resync and keep it.
func TestUnscheduledPodSourceDeliversEveryEvent(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := fakesource.NewFakeControllerSource()
	informer := toolscache.NewSharedIndexInformer(pods, &corev1.Pod{}, 0,
		toolscache.Indexers{pendingpods.SchedulerNameIndex: pendingpods.IndexSchedulerName})
	g.Expect(informer.SetTransform(pendingpods.Trim)).To(Succeed())

	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	seen := make(chan string, 10)
	told := handler.TypedFuncs[*pendingpods.Pod, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*pendingpods.Pod], _ queue) {
			seen <- "create " + e.Object.Key().String()
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*pendingpods.Pod], _ queue) {
			seen <- "update " + e.ObjectNew.Key().String() + " " + e.ObjectNew.Unschedulable()
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*pendingpods.Pod], _ queue) {
			seen <- "delete " + e.Object.Key().String()
		},
	}
	source := newUnscheduledPodSource(informer, told)
	g.Expect(source.Start(ctx, workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]()))).To(Succeed())
	go informer.RunWithContext(ctx)
	g.Expect(source.WaitForSync(ctx)).To(Succeed())
	next := func() string {
		select {
		case got := <-seen:
			return got
		case <-time.After(time.Minute):
			return "nothing"
		}
	}

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "web", UID: types.UID("3f1c")},
		Spec: corev1.PodSpec{SchedulerName: "packer"}}
	pods.Add(pod)
	g.Expect(next()).To(Equal("create team/web"))
	pod = pod.DeepCopy()
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/3 nodes are available"}}
	pods.Modify(pod)
	g.Expect(next()).To(Equal("update team/web 0/3 nodes are available"))
	pods.Delete(pod)
	g.Expect(next()).To(Equal("delete team/web"))
	g.Expect(seen).To(BeEmpty())
}
