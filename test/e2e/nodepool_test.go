//go:build e2e

package e2e

import (
	"fmt"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

const poolLabel = "e2e.secondary-scheduler.io/pool"

// labelNodes sets poolLabel=pool on nodes until the spec ends.
func labelNodes(pool string, nodes ...string) {
	for _, name := range nodes {
		node := &corev1.Node{}
		Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
		patch := client.MergeFrom(node.DeepCopy())
		node.Labels[poolLabel] = pool
		Expect(k8s.Patch(ctx, node, patch)).To(Succeed())
		DeferCleanup(func() {
			node := &corev1.Node{}
			Expect(k8s.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
			patch := client.MergeFrom(node.DeepCopy())
			delete(node.Labels, poolLabel)
			Expect(k8s.Patch(ctx, node, patch)).To(Succeed())
		})
	}
}

func inPool(namespace, name, pool string) *v1.SecondaryScheduler {
	cr := binPacking(namespace, name)
	cr.Spec.NodePool = &metav1.LabelSelector{MatchLabels: map[string]string{poolLabel: pool}}
	return cr
}

var _ = Describe("Node pools", func() {
	// Two schedulers with their own caches, sharing nodes, can both bind pods to the last
	// free capacity of a node; disjoint pools keep them apart. Both get a burst at once.
	It("keep two schedulers on disjoint nodes under a burst of pods", func() {
		ns := newNamespace()
		labelNodes("a", "fake-1", "fake-2")
		labelNodes("b", "fake-3", "fake-4")
		poolA, poolB := inPool(ns, "pool-a", "a"), inPool(ns, "pool-b", "b")
		for _, cr := range []*v1.SecondaryScheduler{poolA, poolB} {
			Expect(k8s.Create(ctx, cr)).To(Succeed())
		}
		for _, cr := range []*v1.SecondaryScheduler{poolA, poolB} {
			waitAvailable(cr)
			Eventually(func() *v1.NodePoolStatus {
				current := &v1.SecondaryScheduler{}
				Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cr), current)).To(Succeed())
				return current.Status.NodePool
			}).Should(HaveValue(HaveField("Nodes", int32(2))), "status counts the pool's nodes")
		}

		const burst = 20
		pods := map[string][]string{}
		var wg sync.WaitGroup
		var mu sync.Mutex
		for _, scheduler := range []string{"pool-a", "pool-b"} {
			for i := range burst {
				wg.Add(1)
				go func() {
					defer GinkgoRecover()
					defer wg.Done()
					pod := workload(ns, fmt.Sprintf("%s-burst-%d", scheduler, i), scheduler, "100m", "registry.example/app:1")
					Expect(k8s.Create(ctx, pod)).To(Succeed())
					mu.Lock()
					pods[scheduler] = append(pods[scheduler], pod.Name)
					mu.Unlock()
				}()
			}
		}
		wg.Wait()
		for scheduler, pool := range map[string][]string{"pool-a": {"fake-1", "fake-2"}, "pool-b": {"fake-3", "fake-4"}} {
			for node := range expectBound(ns, pods[scheduler]) {
				Expect(pool).To(ContainElement(node), "%s binds only to its pool's nodes", scheduler)
			}
		}
	})

	It("says when a pool matches no node, and recovers when one joins it", func() {
		ns := newNamespace()
		cr := inPool(ns, "pool-empty", "empty")
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }).Should(Equal("True/" + string(v1.ReasonNodePoolEmpty)))
		waitAvailable(cr) // the scheduler runs; it has nowhere to place pods
		pending := createWorkload(ns, "waiting", "pool-empty", "100m", 1)
		Consistently(func() string { return nodeOf(ns, pending[0]) }, "3s").Should(BeEmpty())

		labelNodes("empty", "fake-4")
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }).Should(Equal("False/" + string(v1.ReasonAsExpected)))
		// A pod that arrives now is placed. The one already waiting is retried only when
		// kube-scheduler flushes its unschedulable pods (within 5 minutes): its queueing
		// hint for node label changes does not look at addedAffinity (README, node pools).
		// The operator seeing the label says nothing of when the scheduler's own watch of
		// the nodes does, and a pod tried before then waits for that flush too: each look
		// creates a pod of its own, until one is placed.
		arrivals := 0
		Eventually(func(g Gomega) {
			arrivals++
			arrived := workload(ns, fmt.Sprintf("arrived-%d", arrivals), "pool-empty", "100m", "registry.example/app:1")
			g.Expect(k8s.Create(ctx, arrived)).To(Succeed())
			g.Eventually(func() string { return nodeOf(ns, arrived.Name) }, "5s").ShouldNot(BeEmpty(), "pod %s is placed", arrived.Name)
			g.Expect(nodeOf(ns, arrived.Name)).To(Equal("fake-4"))
		}, "90s", "1s").Should(Succeed())
	})
})
