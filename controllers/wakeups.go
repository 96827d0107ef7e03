package controllers

// Which SecondarySchedulers an event wakes: the mappers of the watches that SetupWithManager
// declares, beside the owner references of the scheduler's own objects.

import (
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/pendingpods"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// otherClaimants wakes the other claimants of cr's scheduler names when cr is deleted or
// its claims change, so that a newer one takes over a name as soon as the older lets go,
// and a newer one that took a name an older one now claims steps back.
func (r *SecondarySchedulerReconciler) otherClaimants(ctx context.Context, object client.Object) []reconcile.Request {
	cr := object.(*v1.SecondaryScheduler)
	var requests []reconcile.Request
	for _, name := range gather.ClaimedNames(cr) {
		claimants, err := gather.Claimants(ctx, r.cache, name)
		if err != nil {
			return nil
		}
		for _, other := range claimants {
			request := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&other)}
			if other.UID != cr.UID && !slices.Contains(requests, request) {
				requests = append(requests, request)
			}
		}
	}
	return requests
}

// priorityClassUsers wakes the SecondarySchedulers whose pods ask for a PriorityClass
// that was created or deleted: one refused for want of it runs, and one using the
// default class renders with it or without it.
func (r *SecondarySchedulerReconciler) priorityClassUsers(ctx context.Context, class client.Object) []reconcile.Request {
	return r.secondarySchedulersWhere(ctx, "a PriorityClass came or went", func(cr *v1.SecondaryScheduler) bool {
		return gather.RequestedPriorityClass(cr) == class.GetName()
	})
}

// secondarySchedulersWhere are the SecondarySchedulers for which keep is true, as
// requests; after says what happened, for the log when they cannot be listed.
func (r *SecondarySchedulerReconciler) secondarySchedulersWhere(ctx context.Context, after string, keep func(*v1.SecondaryScheduler) bool) []reconcile.Request {
	list := &v1.SecondarySchedulerList{}
	if err := r.cache.List(ctx, list); err != nil {
		logf.FromContext(ctx).Error(err, "list SecondarySchedulers after "+after)
		return nil
	}
	var requests []reconcile.Request
	for i := range list.Items {
		if keep(&list.Items[i]) {
			requests = append(requests, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return requests
}

// placementInputsChanged lets through the node updates that can change where a
// scheduler's pods may run or what a node pool matches: labels, taints, cordoning, and
// the status of the Ready condition. A kubelet updates its node's status every few
// seconds (heartbeats, images, resources); those wake nothing.
var placementInputsChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*corev1.Node)
		updated, okNew := e.ObjectNew.(*corev1.Node)
		if !okOld || !okNew {
			return false
		}
		return !maps.Equal(old.Labels, updated.Labels) ||
			!equality.Semantic.DeepEqual(old.Spec.Taints, updated.Spec.Taints) ||
			old.Spec.Unschedulable != updated.Spec.Unschedulable ||
			render.NodeReadyStatus(old) != render.NodeReadyStatus(updated)
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// nodeEvents wakes the SecondarySchedulers whose status a node event may change. It maps
// the event to them from the cache, comparing the node before and after an update, so
// that a node of someone else's pool wakes nobody.
func (r *SecondarySchedulerReconciler) nodeEvents() handler.Funcs {
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueForNode(ctx, queue, nil, e.Object)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueForNode(ctx, queue, e.ObjectOld, e.ObjectNew)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueForNode(ctx, queue, e.Object, nil)
		},
	}
}

// enqueueForNode enqueues the SecondarySchedulers a node change matters to; before is
// nil for a new node, after nil for a deleted one.
func (r *SecondarySchedulerReconciler) enqueueForNode(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request], before, after client.Object) {
	oldNode, _ := before.(*corev1.Node)
	newNode, _ := after.(*corev1.Node)
	if oldNode == nil && newNode == nil {
		return
	}
	list := &v1.SecondarySchedulerList{}
	if err := r.cache.List(ctx, list); err != nil {
		logf.FromContext(ctx).Error(err, "list SecondarySchedulers for a node event")
		return
	}
	for i := range list.Items {
		cr := &list.Items[i]
		if r.tenancy.Allows(cr.Namespace) && cr.EffectiveManagementState() == v1.Managed && nodeMatters(cr, oldNode, newNode) {
			queue.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(cr)})
		}
	}
}

// nodeMatters reports whether a node's change, from before to after (nil when it did not
// exist, or no longer does), may change cr's status: the nodes its pods may run on, its
// node pool's count, the node count a load-aware scheduler's metrics are checked
// against, or the counts of a NoSchedulableNodes message.
func nodeMatters(cr *v1.SecondaryScheduler, before, after *corev1.Node) bool {
	cameOrWent := before == nil || after == nil
	if cameOrWent && cr.Spec.Profile.ReadsPrometheus() {
		return true
	}
	if degraded := meta.FindStatusCondition(cr.Status.Conditions, string(v1.ConditionDegraded)); degraded != nil &&
		degraded.Status == metav1.ConditionTrue && degraded.Reason == string(v1.ReasonNoSchedulableNodes) {
		return true
	}
	pool, err := render.NodePoolSelector(cr)
	if err != nil {
		pool = nil // refused until corrected; a node changes nothing
	}
	offers := func(node *corev1.Node) (runsPods, inPool bool) {
		if node == nil {
			return false, false
		}
		return render.PlacementMatches(cr, node), pool != nil && pool.Matches(labels.Set(node.Labels))
	}
	runsBefore, inPoolBefore := offers(before)
	runsAfter, inPoolAfter := offers(after)
	return runsBefore != runsAfter || inPoolBefore != inPoolAfter
}

// pendingPodEvents wakes the SecondarySchedulers a pod without a node names when it
// matters for status.pendingPods, and only then, so that a busy scheduler's pods, placed
// within the threshold, cost no reconcile: a pod that waits wakes them when it reaches
// their threshold (the queue keeps one wake-up per resource, the soonest), and a pod that
// had reached it wakes them at once when it gets a node or goes (it leaves the cache of
// unscheduled pods), or when the scheduler's account of why it fits no node changes.
func (r *SecondarySchedulerReconciler) pendingPodEvents() handler.TypedEventHandler[*pendingpods.Pod, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	wake := func(ctx context.Context, pod *pendingpods.Pod, q queue, onlyOverdue bool) {
		if pod.SchedulerName() == "" || pod.SchedulerName() == corev1.DefaultSchedulerName {
			return
		}
		claimants, err := gather.Claimants(ctx, r.cache, pod.SchedulerName())
		if err != nil {
			return
		}
		for i := range claimants {
			request := reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&claimants[i])}
			due := pod.Created().Add(claimants[i].EffectivePendingPodThreshold()).Sub(r.now())
			switch {
			case due <= 0:
				q.Add(request)
			case !onlyOverdue:
				// A second late, so that the pod has waited long enough when the reconcile
				// looks.
				q.AddAfter(request, due+time.Second)
			}
		}
	}
	return handler.TypedFuncs[*pendingpods.Pod, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*pendingpods.Pod], q queue) {
			wake(ctx, e.Object, q, false)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*pendingpods.Pod], q queue) {
			if e.ObjectOld.Unschedulable() != e.ObjectNew.Unschedulable() {
				wake(ctx, e.ObjectNew, q, true)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*pendingpods.Pod], q queue) {
			wake(ctx, e.Object, q, true)
		},
	}
}
