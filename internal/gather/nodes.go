package gather

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// Placement is what the cluster's nodes offer a scheduler: where its own pods may run,
// and how many nodes its node pool gives it to place pods on.
type Placement struct {
	// Nodes counts every node of the cluster; NotReady and Cordoned count those that are
	// not Ready and those marked unschedulable, to say in a message what excludes them.
	Nodes, NotReady, Cordoned int32
	// Matching counts the nodes the scheduler's own pods may run on (render.PlacementMatches).
	Matching int32
	// Hosting counts the Ready nodes that no longer admit the scheduler's pods (cordoned
	// before a drain, say) but still run one of them, in HighlyAvailable mode; see
	// countHosting.
	Hosting int32
	// Pool is what spec.nodePool matches, nil without a node pool.
	Pool *v1.NodePoolStatus
}

// placement counts, from the cache, the nodes cr's scheduler pods may run on and those
// of its node pool, and names the nodes it places pods on: its node pool's, or every node. A node pool that is no label selector is the
// user's to fix.
func (g *Gatherer) placement(ctx context.Context, cr *v1.SecondaryScheduler) (Placement, []string, error) {
	pool, err := render.NodePoolSelector(cr)
	if err != nil {
		return Placement{}, nil, refusal.New(v1.ReasonInvalidSpec,
			"%v; spec.nodePool must be a valid label selector (for example matchLabels: {pool: batch}): correct it, or remove it to place pods on every node", err)
	}
	nodes := &corev1.NodeList{}
	if err := g.cache.List(ctx, nodes); err != nil {
		return Placement{}, nil, fmt.Errorf("list nodes: %w", err)
	}
	found := countPlacement(cr, pool, nodes.Items)
	if cr.MaxReplicas() > 1 && found.Matching < found.Nodes {
		if found.Hosting, err = g.countHosting(ctx, cr, nodes.Items); err != nil {
			return Placement{}, nil, err
		}
	}
	names := make([]string, 0, len(nodes.Items))
	for _, node := range nodes.Items {
		// A scheduler with a node pool places pods on the pool's nodes alone: their load is
		// what its metrics must cover, and a node outside the pool without node-exporter
		// (a GPU pool's, the control plane's) says nothing of its metrics.
		if pool == nil || pool.Matches(labels.Set(node.Labels)) {
			names = append(names, node.Name)
		}
	}
	return found, names, nil
}

// countHosting counts the Ready nodes that no longer admit cr's scheduler pods but still
// run one that is not being deleted. HighlyAvailable replicas count them until their pods
// go: a cordon alone then scales nothing down (a scale-down may remove any replica, the
// leader included), and the drain that follows evicts the pods one at a time under the
// PodDisruptionBudget, after which the replacement that no node can take is the one the
// smaller Deployment removes. The pods are read, from the cache, only when some node
// does not admit them.
func (g *Gatherer) countHosting(ctx context.Context, cr *v1.SecondaryScheduler, nodes []corev1.Node) (int32, error) {
	pods := &corev1.PodList{}
	if err := g.cache.List(ctx, pods, client.InNamespace(cr.Namespace), client.MatchingLabels(render.PodSelector(cr))); err != nil {
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
func countPlacement(cr *v1.SecondaryScheduler, pool labels.Selector, nodes []corev1.Node) Placement {
	found := Placement{Nodes: int32(len(nodes))}
	if pool != nil {
		found.Pool = &v1.NodePoolStatus{Selector: pool.String()}
	}
	for i := range nodes {
		node := &nodes[i]
		if render.PlacementMatches(cr, node) {
			found.Matching++
		}
		if !render.NodeReady(node) {
			found.NotReady++
		}
		if node.Spec.Unschedulable {
			found.Cordoned++
		}
		if pool != nil && pool.Matches(labels.Set(node.Labels)) {
			found.Pool.Nodes++
		}
	}
	return found
}
