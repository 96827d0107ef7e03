package controllers

import (
	"context"
	"fmt"
	"maps"

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
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// placement is what the cluster's nodes offer cr's scheduler: where its own pods may run,
// and how many nodes its node pool gives it to place pods on.
type placement struct {
	// nodes counts every node of the cluster; notReady and cordoned count those that are
	// not Ready and those marked unschedulable, to say in a message what excludes them.
	nodes, notReady, cordoned int32
	// matching counts the nodes the scheduler's own pods may run on (render.PlacementMatches).
	matching int32
	// hosting counts the Ready nodes that no longer admit the scheduler's pods (cordoned
	// before a drain, say) but still run one of them, in HighlyAvailable mode; see
	// countHosting.
	hosting int32
	// pool is what spec.nodePool matches, nil without a node pool.
	pool *v1.NodePoolStatus
}

// gatherPlacement counts, from the cache, the nodes cr's scheduler pods may run on and
// those of its node pool. A node pool that is no label selector is the user's to fix.
func (r *SecondarySchedulerReconciler) gatherPlacement(ctx context.Context, cr *v1.SecondaryScheduler) (placement, error) {
	pool, err := render.NodePoolSelector(cr)
	if err != nil {
		return placement{}, refusal.New(v1.ReasonInvalidSpec,
			"%v; spec.nodePool must be a valid label selector (for example matchLabels: {pool: batch}): correct it, or remove it to place pods on every node", err)
	}
	nodes := &corev1.NodeList{}
	if err := r.List(ctx, nodes); err != nil {
		return placement{}, fmt.Errorf("list nodes: %w", err)
	}
	found := countPlacement(cr, pool, nodes.Items)
	if cr.MaxReplicas() > 1 && found.matching < found.nodes {
		if found.hosting, err = r.countHosting(ctx, cr, nodes.Items); err != nil {
			return placement{}, err
		}
	}
	return found, nil
}

// countHosting counts the Ready nodes that no longer admit cr's scheduler pods but still
// run one that is not being deleted. HighlyAvailable replicas count them until their pods
// go: a cordon alone then scales nothing down (a scale-down may remove any replica, the
// leader included), and the drain that follows evicts the pods one at a time under the
// PodDisruptionBudget, after which the replacement that no node can take is the one the
// smaller Deployment removes. The pods are read, from the cache, only when some node
// does not admit them.
func (r *SecondarySchedulerReconciler) countHosting(ctx context.Context, cr *v1.SecondaryScheduler, nodes []corev1.Node) (int32, error) {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(cr.Namespace), client.MatchingLabels(render.PodSelector(cr))); err != nil {
		return 0, fmt.Errorf("list the scheduler's pods: %w", err)
	}
	running := map[string]bool{}
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp.IsZero() && pod.Spec.NodeName != "" && pod.Status.Phase == corev1.PodRunning {
			running[pod.Spec.NodeName] = true
		}
	}
	var hosting int32
	for i := range nodes {
		node := &nodes[i]
		if running[node.Name] && render.NodeReady(node) && !render.PlacementMatches(cr, node) {
			hosting++
		}
	}
	return hosting, nil
}

// countPlacement counts what nodes offer cr's scheduler; pool is spec.nodePool as a
// selector, nil for none.
func countPlacement(cr *v1.SecondaryScheduler, pool labels.Selector, nodes []corev1.Node) placement {
	found := placement{nodes: int32(len(nodes))}
	if pool != nil {
		found.pool = &v1.NodePoolStatus{Selector: pool.String()}
	}
	for i := range nodes {
		node := &nodes[i]
		if render.PlacementMatches(cr, node) {
			found.matching++
		}
		if !render.NodeReady(node) {
			found.notReady++
		}
		if node.Spec.Unschedulable {
			found.cordoned++
		}
		if pool != nil && pool.Matches(labels.Set(node.Labels)) {
			found.pool.Nodes++
		}
	}
	return found
}

// placementProblem is what the nodes keep cr's scheduler from doing, nil when nothing.
// These are problems of a scheduler that was applied as specified, not refusals: it
// recovers by itself when nodes change.
func placementProblem(cr *v1.SecondaryScheduler, found placement) *reasons.Finding {
	if found.matching == 0 {
		return &reasons.Finding{Reason: v1.ReasonNoSchedulableNodes, Message: noSchedulableNodesMessage(cr, found)}
	}
	if found.pool != nil && found.pool.Nodes == 0 {
		return &reasons.Finding{Reason: v1.ReasonNodePoolEmpty, Message: fmt.Sprintf(
			"spec.nodePool (%s) matches none of the cluster's %d nodes, so the scheduler places no pod: pods with spec.schedulerName: %s stay Pending. "+
				"Label the nodes meant for it to match the selector, or change spec.nodePool",
			found.pool.Selector, found.nodes, cr.EffectiveSchedulerName())}
	}
	return nil
}

// noSchedulableNodesMessage says how many nodes there are and what the scheduler's own
// pods ask of one, so that the user sees which requirement excludes them.
func noSchedulableNodesMessage(cr *v1.SecondaryScheduler, found placement) string {
	if found.nodes == 0 {
		return "the cluster has no node: no scheduler pod can start until one joins"
	}
	requirements := fmt.Sprintf("Ready (%d %s not), schedulable (%d %s cordoned)",
		found.notReady, isOrAre(found.notReady), found.cordoned, isOrAre(found.cordoned))
	if selector := render.EffectiveNodeSelector(cr); len(selector) > 0 {
		requirements += ", matching nodeSelector " + labels.Set(selector).String()
	}
	if affinity := cr.Spec.Affinity; affinity != nil && affinity.NodeAffinity != nil &&
		affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		requirements += ", matching the required node affinity of spec.affinity"
	}
	tolerated := "with no taint of effect NoSchedule or NoExecute (spec.tolerations is empty)"
	if n := len(render.EffectiveTolerations(cr)); n > 0 {
		tolerated = fmt.Sprintf("with every NoSchedule and NoExecute taint tolerated by the %d tolerations given", n)
	}
	return fmt.Sprintf("none of the cluster's %d nodes may run the scheduler's own pods, which need a node that is %s and %s. "+
		"A scheduler pod already running keeps scheduling, but no new one can start: uncordon or add such a node, or change "+
		"spec.nodeSelector, spec.affinity or spec.tolerations", found.nodes, requirements, tolerated)
}

func isOrAre(n int32) string {
	if n == 1 {
		return "is"
	}
	return "are"
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
	if err := r.List(ctx, list); err != nil {
		logf.FromContext(ctx).Error(err, "list SecondarySchedulers for a node event")
		return
	}
	for i := range list.Items {
		cr := &list.Items[i]
		if r.Tenancy.Allows(cr.Namespace) && cr.EffectiveManagementState() == v1.Managed && nodeMatters(cr, oldNode, newNode) {
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
