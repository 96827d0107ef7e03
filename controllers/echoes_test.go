package controllers

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// When every worker is busy, a SecondaryScheduler just created goes before the echoes of
// the writes made for others: the events of their objects and pods are queued at low
// priority, whatever kind of event they are.
func TestEchoesOfWritesWaitBehindNewSchedulers(t *testing.T) {
	queue := priorityqueue.New[reconcile.Request]("echoes")
	defer queue.ShutDown()
	ctx := context.Background()
	child := func(owner string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: owner + "-config", ResourceVersion: "1",
			Labels: map[string]string{render.LabelOwnerNamespace: "ns", render.LabelOwnerName: owner}}}
	}
	echoes := echoesOfWrites(ownerOf)
	echoes.Create(ctx, event.CreateEvent{Object: child("created-before")}, queue)
	changed := child("updated-before")
	changed.ResourceVersion = "2"
	echoes.Update(ctx, event.UpdateEvent{ObjectOld: child("updated-before"), ObjectNew: changed}, queue)
	echoes.Delete(ctx, event.DeleteEvent{Object: child("deleted-before")}, queue)
	// The controller's own handler for a new SecondaryScheduler adds at the default priority.
	queue.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "ns", Name: "new"}})

	order := make([]string, 0, 4)
	for range 4 {
		request, _ := queue.Get()
		order = append(order, request.Name)
		queue.Done(request)
	}
	if diff := cmp.Diff([]string{"new", "created-before", "updated-before", "deleted-before"}, order); diff != "" {
		t.Errorf("order of reconciles (-want +got):\n%s", diff)
	}
}
