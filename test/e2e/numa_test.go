//go:build e2e

package e2e

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// A real scheduler-plugins build, configured by spec.numa beside BinPacking, keeps a pod
// off the nodes whose NUMA zones cannot hold it, as their NodeResourceTopologies (made by
// the test, as a node agent would) say, though BinPacking prefers them.
var _ = Describe("NUMA-aware placement with a scheduler-plugins build", func() {
	It("places a pod on the node whose NUMA zones fit it, which BinPacking alone does not choose", func() {
		requireSchedulerPlugins("NodeResourceTopologyMatch")
		const pool, podMillis = "numa", 2000

		By("two nodes of 4 CPUs whose zones have 1 CPU free each, and one of 16 whose zones have 4")
		createScoringNode(scoringNode{name: "numa-small-1", cpuMillis: 4000}, pool)
		createScoringNode(scoringNode{name: "numa-small-2", cpuMillis: 4000}, pool)
		createScoringNode(scoringNode{name: "numa-large", cpuMillis: 16000}, pool)
		nodeResourceTopology("numa-small-1", "1")
		nodeResourceTopology("numa-small-2", "1")
		nodeResourceTopology("numa-large", "4")
		ns := newNamespace()
		cr := binPacking(ns, "numa")
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)

		By("without spec.numa, BinPacking packs a pod of 2 CPUs onto a small node")
		before := guaranteedPod(ns, cr.Name, pool, "before", podMillis)
		Expect(k8s.Create(ctx, before)).To(Succeed())
		Expect(expectBound(ns, []string{before.Name})).To(HaveKey(HavePrefix("numa-small-")))
		Expect(k8s.Delete(ctx, before)).To(Succeed())

		By("with spec.numa, the same pod goes where one zone holds it")
		editSpec(cr, func(cr *v1.SecondaryScheduler) { cr.Spec.NUMA = &v1.NUMA{} })
		Eventually(func() int64 { return secondarySchedulerNow(cr).Status.ObservedGeneration }).Should(Equal(cr.Generation))
		waitInEffect(cr)
		after := guaranteedPod(ns, cr.Name, pool, "after", podMillis)
		Expect(k8s.Create(ctx, after)).To(Succeed())
		Expect(expectBound(ns, []string{after.Name})).To(HaveKey("numa-large"))
		expectScheduledBy(ns, []string{after.Name}, cr.Name)
	})
})

// guaranteedPod is a pod of the Guaranteed QoS class (requests equal limits), the pods a
// kubelet's Topology Manager aligns to NUMA zones.
func guaranteedPod(namespace, schedulerName, pool, name string, cpuMillis int64) *corev1.Pod {
	pod := scoringPod(namespace, schedulerName, pool, cpuMillis)
	pod.Name += "-" + name
	resources := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(cpuMillis, resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("1Gi")}
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: resources, Limits: resources}
	return pod
}

// nodeResourceTopology publishes, as a node agent (NFD's topology-updater) would, that
// node has two NUMA zones with freeCPUs CPUs and 16Gi of memory free each, under the
// single-NUMA-node policy at container scope.
func nodeResourceTopology(node, freeCPUs string) {
	zone := func(name string) map[string]any {
		return map[string]any{"name": name, "type": "Node", "resources": []any{
			map[string]any{"name": "cpu", "capacity": "8", "allocatable": "8", "available": freeCPUs},
			map[string]any{"name": "memory", "capacity": "32Gi", "allocatable": "32Gi", "available": "16Gi"},
		}}
	}
	topology := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "topology.node.k8s.io/v1alpha2", "kind": "NodeResourceTopology",
		"metadata":         map[string]any{"name": node},
		"topologyPolicies": []any{"SingleNUMANodeContainerLevel"},
		"zones":            []any{zone("node-0"), zone("node-1")},
	}}
	Expect(k8s.Create(ctx, topology)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, topology))).To(Succeed()) })
}
