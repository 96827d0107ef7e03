//go:build e2e

package e2e

import (
	"context"
	"net/http"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// scoringNode is a node of known size and measured CPU load, for checking a scheduler's
// choice against a scoring function.
type scoringNode struct {
	name string
	// cpuMillis is its capacity; loadPercent its CPU utilization as Prometheus reports it.
	cpuMillis   int64
	loadPercent float64
}

// targetLoadPackingScore is TargetLoadPacking's scoring function as scheduler-plugins
// publishes it (the Trimaran KEP, "Score"): with U the node's predicted utilization in
// percent (its measured load plus the pod's predicted use) and T the target, a node scores
// (100-T)*U/T + T up to the target, T*(100-U)/(100-T) above it, and 0 above 100 %. A
// container's predicted use is its CPU limit, else its request times the multiplier.
func targetLoadPackingScore(node scoringNode, podMillis int64, target, multiplier float64) float64 {
	predicted := node.loadPercent + 100*float64(podMillis)*multiplier/float64(node.cpuMillis)
	switch {
	case predicted > 100:
		return 0
	case predicted > target:
		return target * (100 - predicted) / (100 - target)
	default:
		return (100-target)*predicted/target + target
	}
}

// A real scheduler-plugins build, reading a real Prometheus through the operator's
// TargetLoadPacking profile, places a pod where TargetLoadPacking's published scoring
// function says: on three nodes of different sizes and loads, chosen so that the load-aware
// choice is neither the default scheduler's (the node with the most free requests) nor
// BinPacking's (the fullest by requests), both of which run beside it on twin pods.
var _ = Describe("TargetLoadPacking with a scheduler-plugins build", func() {
	It("places a pod where the published scoring function says, which neither the default scheduler nor BinPacking would", func() {
		skipWithoutTargetLoadPacking()
		const (
			pool       = "target-load-packing"
			podMillis  = 500
			target     = 60
			multiplier = 2
		)
		nodes := []scoringNode{
			{name: "tlp-small", cpuMillis: 2000, loadPercent: 20},  // predicted 70 %: above the target
			{name: "tlp-medium", cpuMillis: 8000, loadPercent: 40}, // predicted 52.5 %: just under it
			{name: "tlp-large", cpuMillis: 32000, loadPercent: 10}, // predicted 13.1 %: far under it
		}
		expected, best := "", -1.0
		for _, node := range nodes {
			createScoringNode(node, pool)
			if score := targetLoadPackingScore(node, podMillis, target, multiplier); score > best {
				expected, best = node.name, score
			}
		}
		Expect(expected).To(Equal("tlp-medium"))

		By("serving every node's load, and waiting until Prometheus has it, so that the scheduler reads it at its start")
		prometheus := promtest.Start(GinkgoT())
		all := &corev1.NodeList{}
		Expect(k8s.List(ctx, all)).To(Succeed())
		load, names := map[string]float64{}, make([]string, 0, len(all.Items))
		for _, node := range all.Items {
			load[node.Name], names = 0.3, append(names, node.Name)
		}
		for _, node := range nodes {
			load[node.name] = node.loadPercent / 100
		}
		for _, series := range metricsprobe.Series {
			prometheus.SetSeries(series, load)
		}
		Eventually(func() int {
			probeCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			return metricsprobe.Probe(probeCtx, http.DefaultClient, prometheus.URL, "", names, 0).NodesWithMetrics
		}).Should(Equal(len(names)))

		ns := newNamespace()
		// Gangs, quotas and NUMA-aware filtering beside the load-aware profile: none scores
		// (and no node here publishes NUMA zones, which leaves it unfiltered), so the
		// placement below is TargetLoadPacking's alone; a gang binds at the end.
		requireSchedulerPlugins("Coscheduling", "CapacityScheduling", "NodeResourceTopologyMatch")
		loadAware := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "load-aware"},
			Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
				TargetLoadPacking: &v1.TargetLoadPackingArgs{TargetUtilization: ptr.To[int32](target), DefaultRequestsMultiplier: "2"},
				Metrics:           &v1.LoadMetrics{Address: prometheus.URL}},
				Gang: &v1.Gang{}, Quota: &v1.Quota{}, NUMA: &v1.NUMA{}}}
		packer := binPacking(ns, "by-requests")
		for _, cr := range []*v1.SecondaryScheduler{loadAware, packer} {
			Expect(k8s.Create(ctx, cr)).To(Succeed())
		}
		waitAvailable(loadAware)
		waitAvailable(packer)
		Eventually(func() string { return condition(loadAware, v1.ConditionMetricsAvailable) }).Should(Equal("True/MetricsAvailable"))

		By("placing the same pod with each scheduler")
		placed := map[string]string{}
		for _, schedulerName := range []string{"load-aware", "by-requests", corev1.DefaultSchedulerName} {
			pod := scoringPod(ns, schedulerName, pool, podMillis)
			Expect(k8s.Create(ctx, pod)).To(Succeed())
			Eventually(func() string { return nodeOf(ns, pod.Name) }).ShouldNot(BeEmpty(), "pod %s is bound", pod.Name)
			placed[schedulerName] = nodeOf(ns, pod.Name)
		}
		expectScheduledBy(ns, []string{"for-load-aware"}, "load-aware")
		Expect(placed).To(Equal(map[string]string{
			"load-aware":                expected,    // the node whose predicted load is nearest under the target
			"by-requests":               "tlp-small", // the fullest by requests
			corev1.DefaultSchedulerName: "tlp-large", // the most free by requests
		}))

		By("a gang of two beside TargetLoadPacking binds, all of it")
		Expect(secondarySchedulerNow(loadAware).Status.Gang).To(Equal(&v1.GangStatus{Implementation: v1.CoschedulingGangs, Plugin: "Coscheduling"}))
		Expect(k8s.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
			"metadata": map[string]any{"namespace": ns, "name": "pair"},
			"spec":     map[string]any{"minMember": int64(2)},
		}})).To(Succeed())
		gang := createGang(ns, "load-aware", pool, 2, func(pod *corev1.Pod) { pod.Labels[podGroupLabel] = "pair" })
		expectBound(ns, gang)
		expectScheduledBy(ns, gang, "load-aware")
	})
})

// createScoringNode registers a fake node of node's size in pool, kept by kwok and
// tainted as the suite's fake nodes are, until the spec ends.
func createScoringNode(node scoringNode, pool string) {
	capacity := corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(node.cpuMillis, resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")}
	object := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: node.name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
			Labels: map[string]string{"kubernetes.io/hostname": node.name, "kubernetes.io/os": "linux", poolLabel: pool}},
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: "kwok.x-k8s.io/node", Value: "fake", Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	Expect(k8s.Create(ctx, object)).To(Succeed())
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, object))).To(Succeed()) })
	Eventually(func() bool {
		current := &corev1.Node{}
		return k8s.Get(ctx, client.ObjectKeyFromObject(object), current) == nil && render.NodeReady(current) && current.Status.Capacity.Cpu().MilliValue() == node.cpuMillis
	}).Should(BeTrue(), "kwok keeps node %s Ready", node.name)
}

// scoringPod is a pod for schedulerName in pool asking for podMillis of CPU and no limit.
func scoringPod(namespace, schedulerName, pool string, podMillis int64) *corev1.Pod {
	pod := workload(namespace, "for-"+schedulerName, schedulerName, resource.NewMilliQuantity(podMillis, resource.DecimalSI).String(), "registry.example/app:1")
	pod.Spec.NodeSelector = map[string]string{poolLabel: pool}
	return pod
}
