package controllers

import (
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// placementTestLabel marks the nodes of one test, whose schedulers select them by it:
// nodes are cluster-scoped and other tests make their own.
const placementTestLabel = "it.secondary-scheduler.io/scenario"

func TestPlacementInputsChanged(t *testing.T) {
	base := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"}},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
	tests := []struct {
		name   string
		change func(*corev1.Node)
		wakes  bool
	}{
		{"heartbeat", func(n *corev1.Node) { n.Status.Conditions[0].LastHeartbeatTime = metav1.Now() }, false},
		{"images and resources", func(n *corev1.Node) {
			n.Status.Images = []corev1.ContainerImage{{Names: []string{"x"}}}
			n.Status.Allocatable = corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}
		}, false},
		{"annotation", func(n *corev1.Node) { n.Annotations = map[string]string{"x": "y"} }, false},
		{"label", func(n *corev1.Node) { n.Labels["pool"] = "a" }, true},
		{"taint", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{{Key: "k", Effect: corev1.TaintEffectNoSchedule}} }, true},
		{"cordon", func(n *corev1.Node) { n.Spec.Unschedulable = true }, true},
		{"not ready", func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			updated := base.DeepCopy()
			tt.change(updated)
			if got := placementInputsChanged.Update(event.UpdateEvent{ObjectOld: base, ObjectNew: updated}); got != tt.wakes {
				t.Errorf("wakes = %t, want %t", got, tt.wakes)
			}
		})
	}
}

func TestNodeMatters(t *testing.T) {
	ready := []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	node := func(nodeLabels map[string]string) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: nodeLabels}, Status: corev1.NodeStatus{Conditions: ready}}
	}
	infra, other := node(map[string]string{"role": "infra"}), node(map[string]string{"role": "app"})
	cordoned := infra.DeepCopy()
	cordoned.Spec.Unschedulable = true
	relabelled := other.DeepCopy()
	relabelled.Labels["pool"] = "a"

	onInfra := binPacking("infra")
	onInfra.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable}
	onInfra.Spec.NodeSelector = map[string]string{"role": "infra"}
	pooled := binPacking("pooled")
	pooled.Spec.NodeSelector = map[string]string{"role": "infra"}
	pooled.Spec.NodePool = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}
	loadAware := binPacking("load")
	loadAware.Spec.NodeSelector = map[string]string{"role": "infra"}
	loadAware.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile}
	stuck := onInfra.DeepCopy()
	stuck.Status.Conditions = []metav1.Condition{{Type: string(v1.ConditionDegraded), Status: metav1.ConditionTrue, Reason: string(v1.ReasonNoSchedulableNodes)}}

	tests := []struct {
		name          string
		cr            *v1.SecondaryScheduler
		before, after *corev1.Node
		matters       bool
	}{
		{"a node for its pods joins", onInfra, nil, infra, true},
		{"a node for its pods goes", onInfra, infra, nil, true},
		{"a node for its pods is cordoned", onInfra, infra, cordoned, true},
		{"another node joins", onInfra, nil, other, false},
		{"another node is relabelled", onInfra, other, relabelled, false},
		{"a node joins its pool", pooled, other, relabelled, true},
		{"any node joins a load-aware scheduler's cluster", loadAware, nil, other, true},
		{"another node changes under a load-aware scheduler", loadAware, other, relabelled, false},
		{"any node changes while none is left for its pods", stuck, other, relabelled, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := nodeMatters(tt.cr, tt.before, tt.after); got != tt.matters {
				t.Errorf("nodeMatters = %t, want %t", got, tt.matters)
			}
		})
	}
}

// HighlyAvailable mode runs one replica per node the scheduler's pods may run on, up to
// maxReplicas, recounted as nodes join, are cordoned or fail; with no such node left it
// keeps one replica and says why it is degraded, while the running pod stays Available.
func TestHighlyAvailableReplicasFollowNodes(t *testing.T) {
	s := newScenario(t)
	mine := map[string]string{placementTestLabel: s.namespace}
	cr := binPacking("follow")
	cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable, HighlyAvailableTopology: &v1.HighlyAvailableTopology{MaxReplicas: ptr.To[int32](3)}}
	cr.Spec.NodeSelector = mine
	nodes := make([]*corev1.Node, 0, 4)
	for _, name := range []string{"a", "b"} {
		nodes = append(nodes, s.createLabelledNode(s.namespace+"-"+name, mine))
	}
	s.create(cr)
	s.expectReplicas(cr, 2)

	for _, name := range []string{"c", "d"} {
		nodes = append(nodes, s.createLabelledNode(s.namespace+"-"+name, mine))
	}
	s.expectReplicas(cr, 3)

	for _, node := range nodes[1:] {
		s.update(node, func() { node.Spec.Unschedulable = true })
	}
	s.expectReplicas(cr, 1)
	s.markDeploymentReady(cr)
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)

	// The last node fails: no node is left for a new scheduler pod. One replica is kept
	// (its pod shows Pending rather than nothing), and the running one stays Available.
	s.setNodeReady(nodes[0], false)
	degraded := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonNoSchedulableNodes)
	s.g.Expect(degraded.Message).To(And(ContainSubstring("Ready ("), ContainSubstring("are cordoned"),
		ContainSubstring("matching nodeSelector "+placementTestLabel+"="+s.namespace)))
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.g.Expect(s.current(cr).Status.Replicas).To(Equal(int32(1)))
	s.g.Expect(ptr.Deref(s.deployment(cr).Spec.Replicas, 0)).To(Equal(int32(1)))

	// A node is uncordoned: the scheduler recovers by itself, and spreads again.
	s.update(nodes[3], func() { nodes[3].Spec.Unschedulable = false })
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.setNodeReady(nodes[0], true)
	s.expectReplicas(cr, 2)
}

// A cordon alone scales no HighlyAvailable replica down: the scale-down could remove any
// replica, the leader included. The node counts until its replica goes (a drain evicts
// it under the PodDisruptionBudget), and only then do the replicas follow.
func TestCordonKeepsReplicasUntilTheirPodsGo(t *testing.T) {
	s := newScenario(t)
	mine := map[string]string{placementTestLabel: s.namespace}
	cr := binPacking("cordoned")
	cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable, HighlyAvailableTopology: &v1.HighlyAvailableTopology{MaxReplicas: ptr.To[int32](3)}}
	cr.Spec.NodeSelector = mine
	nodes := make([]*corev1.Node, 0, 3)
	for _, name := range []string{"a", "b", "c"} {
		nodes = append(nodes, s.createLabelledNode(s.namespace+"-"+name, mine))
	}
	s.create(cr)
	s.expectReplicas(cr, 3)
	template := s.deployment(cr).Spec.Template.DeepCopy()
	for i, node := range nodes {
		template.Spec.NodeName = node.Name
		s.addReadyPod(cr, fmt.Sprintf("%s-%d", render.WorkloadName(cr), i), template)
	}

	s.update(nodes[2], func() { nodes[2].Spec.Unschedulable = true })
	// The pods reached the operator's cache through a watch of their own, which nothing
	// orders with the node's: a reconcile of the cordon may find the third not Running yet
	// and scale down, until the pod's own event brings it back to 3. So the replicas are
	// awaited at 3 first, then held there.
	replicas := func() int32 { return ptr.Deref(s.deployment(cr).Spec.Replicas, 0) }
	s.g.Eventually(replicas).Should(Equal(int32(3)))
	s.g.Consistently(replicas, "3s").Should(Equal(int32(3)), "the cordoned node still runs a replica")

	// The drain evicts the replica; the next look at the nodes counts two.
	evicted := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: cr.Namespace, Name: render.WorkloadName(cr) + "-2"}}
	s.g.Expect(adminClient.Delete(s.ctx, evicted, client.GracePeriodSeconds(0))).To(Succeed())
	s.update(nodes[2], func() { nodes[2].Labels["drained"] = "true" })
	s.expectReplicas(cr, 2)
}

// A PodDisruptionBudget lets a drain evict one HighlyAvailable replica at a time; it goes
// when the scheduler goes back to a single replica.
func TestHighlyAvailablePodDisruptionBudget(t *testing.T) {
	s := newScenario(t)
	mine := map[string]string{placementTestLabel: s.namespace}
	cr := binPacking("budget")
	cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable}
	cr.Spec.NodeSelector = mine
	s.createLabelledNode(s.namespace+"-a", mine)
	s.createLabelledNode(s.namespace+"-b", mine)
	s.create(cr)
	s.expectReplicas(cr, 2)

	budget := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.WorkloadName(cr)}}
	s.g.Eventually(func() error { return s.get(budget) }).Should(Succeed())
	s.g.Expect(budget.Spec.MaxUnavailable).To(Equal(ptr.To(intstr.FromInt32(1))))
	s.g.Expect(budget.Spec.Selector.MatchLabels).To(Equal(render.PodSelector(cr)))
	s.g.Expect(ownership.OwnedBy(budget, s.current(cr))).To(BeTrue(), "the budget carries the owner's labels and controller reference")

	s.update(cr, func() { cr.Spec.Topology = &v1.Topology{Mode: v1.SingleReplica} })
	s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(budget)) }).Should(BeTrue(), "the budget is deleted with SingleReplica")
	s.expectReplicas(cr, 1)
}

// status.nodePool counts the nodes spec.nodePool matches; a pool that matches none
// degrades the running scheduler until a node is labelled into it, and a pool that is
// no label selector is refused without touching what runs.
func TestNodePoolIsCounted(t *testing.T) {
	s := newScenario(t)
	poolKey := "pool.it.secondary-scheduler.io/" + s.namespace
	s.createLabelledNode(s.namespace+"-a", map[string]string{poolKey: "batch"})
	s.createLabelledNode(s.namespace+"-b", map[string]string{poolKey: "batch"})
	spare := s.createLabelledNode(s.namespace+"-c", nil)
	cr := binPacking("pooled")
	cr.Spec.NodePool = &metav1.LabelSelector{MatchLabels: map[string]string{poolKey: "batch"}}
	s.create(cr)
	s.expectNodePool(cr, &v1.NodePoolStatus{Selector: poolKey + "=batch", Nodes: 2})
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)

	s.update(cr, func() { cr.Spec.NodePool.MatchLabels[poolKey] = "gpu" })
	empty := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonNodePoolEmpty)
	s.g.Expect(empty.Message).To(ContainSubstring("spec.nodePool (" + poolKey + "=gpu) matches none"))
	s.expectNodePool(cr, &v1.NodePoolStatus{Selector: poolKey + "=gpu", Nodes: 0})
	// The pool is rendered all the same: the scheduler places nothing until it has nodes.
	s.g.Expect(s.renderedConfig(cr)).To(ContainSubstring("gpu"))

	s.update(spare, func() { spare.Labels[poolKey] = "gpu" })
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.expectNodePool(cr, &v1.NodePoolStatus{Selector: poolKey + "=gpu", Nodes: 1})

	running := s.deployment(cr)
	s.update(cr, func() {
		cr.Spec.NodePool.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: poolKey, Operator: "Near", Values: []string{"x"}}}
	})
	invalid := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonInvalidSpec)
	s.g.Expect(invalid.Message).To(And(ContainSubstring("spec.nodePool"), ContainSubstring("Near")))
	s.g.Expect(s.deployment(cr).ResourceVersion).To(Equal(running.ResourceVersion), "a refused spec leaves the running scheduler alone")
}

// A missing spec.priorityClassName is refused and leaves the running scheduler as it
// is; the default class is used when it exists and left out when it does not.
func TestPriorityClass(t *testing.T) {
	s := newScenario(t)
	s.g.Expect(deletePriorityClass(s, v1.DefaultPriorityClassName)).To(Succeed())
	cr := binPacking("prioritized")
	s.create(cr)
	s.g.Eventually(func() string { return s.podPriorityClass(cr) }).Should(Equal(""), "no default class: no priority")
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)

	s.createPriorityClass(v1.DefaultPriorityClassName)
	s.g.Eventually(func() string { return s.podPriorityClass(cr) }).Should(Equal(v1.DefaultPriorityClassName), "the shipped default is used once it exists")
	s.g.Expect(deletePriorityClass(s, v1.DefaultPriorityClassName)).To(Succeed())
	s.g.Eventually(func() string { return s.podPriorityClass(cr) }).Should(Equal(""), "and left out once it is gone")

	own := s.namespace + "-critical"
	running := s.deployment(cr)
	s.update(cr, func() { cr.Spec.PriorityClassName = own })
	missing := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonPriorityClassNotFound)
	s.g.Expect(missing.Message).To(And(ContainSubstring("PriorityClass "+own), ContainSubstring("remove spec.priorityClassName")))
	s.g.Consistently(func() string { return s.deployment(cr).ResourceVersion }, time.Second).Should(Equal(running.ResourceVersion),
		"the running scheduler is left as it is")

	s.createPriorityClass(own)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Eventually(func() string { return s.podPriorityClass(cr) }).Should(Equal(own))
}

// expectReplicas waits until cr's Deployment and status.replicas both say replicas.
func (s *scenario) expectReplicas(cr *v1.SecondaryScheduler, replicas int32) {
	s.t.Helper()
	s.g.Eventually(func() string {
		deployment := s.deployment(cr)
		if deployment == nil {
			return "no Deployment"
		}
		return fmt.Sprintf("Deployment %d, status %d", ptr.Deref(deployment.Spec.Replicas, 0), s.current(cr).Status.Replicas)
	}).Should(Equal(fmt.Sprintf("Deployment %d, status %d", replicas, replicas)))
}

// expectNodePool waits until status.nodePool is want.
func (s *scenario) expectNodePool(cr *v1.SecondaryScheduler, want *v1.NodePoolStatus) {
	s.t.Helper()
	s.g.Eventually(func() *v1.NodePoolStatus { return s.current(cr).Status.NodePool }).Should(Equal(want))
}

// current is cr as the API server has it now.
func (s *scenario) current(cr *v1.SecondaryScheduler) *v1.SecondaryScheduler {
	current := &v1.SecondaryScheduler{}
	s.g.Expect(adminClient.Get(s.ctx, client.ObjectKeyFromObject(cr), current)).To(Succeed())
	return current
}

// setNodeReady plays a kubelet reporting its node Ready or not.
func (s *scenario) setNodeReady(node *corev1.Node, ready bool) {
	s.t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	s.g.Eventually(func() error {
		if err := s.get(node); err != nil {
			return err
		}
		node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.Now()}}
		return adminClient.Status().Update(s.ctx, node)
	}).Should(Succeed())
}

// podPriorityClass is the PriorityClass of cr's scheduler pods, as its Deployment says.
func (s *scenario) podPriorityClass(cr *v1.SecondaryScheduler) string {
	deployment := s.deployment(cr)
	if deployment == nil {
		return "no Deployment"
	}
	return deployment.Spec.Template.Spec.PriorityClassName
}

// createPriorityClass creates a PriorityClass, cluster-wide, deleted when the test ends.
func (s *scenario) createPriorityClass(name string) {
	s.t.Helper()
	s.create(&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: 1000000})
	s.t.Cleanup(func() { _ = deletePriorityClass(s, name) })
}

func deletePriorityClass(s *scenario, name string) error {
	err := adminClient.Delete(s.ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
