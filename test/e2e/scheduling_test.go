//go:build e2e

package e2e

import (
	"fmt"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

const bigImage = "registry.example/big-model:1"

// imageLocalityConfig scores nodes by the images they already have, and by nothing else.
func imageLocalityConfig(schedulerName string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: %s
  plugins:
    filter:
      enabled:
      - name: TaintToleration
    score:
      disabled:
      - name: "*"
      enabled:
      - name: ImageLocality
`, schedulerName)
}

// mostAllocatedConfig scores nodes by how full their requests are, and by nothing else.
func mostAllocatedConfig(schedulerName string) string {
	return resourcesFitConfig(schedulerName, "MostAllocated")
}

// resourcesFitConfig scores nodes by their requests with a NodeResourcesFit scoring
// strategy (MostAllocated, LeastAllocated), and by nothing else.
func resourcesFitConfig(schedulerName, strategy string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: %s
  plugins:
    score:
      disabled:
      - name: "*"
      enabled:
      - name: NodeResourcesFit
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: %s
`, schedulerName, strategy)
}

var _ = Describe("A SecondaryScheduler", func() {
	It("with BinPacking becomes Available and packs its pods, while other pods keep the default scheduler", func() {
		ns := newNamespace()
		defaultLeaseHolder := leaseHolder("kube-system", "kube-scheduler")
		Expect(defaultLeaseHolder).NotTo(BeEmpty(), "the default scheduler holds its lease")

		cr := binPacking(ns, "packer")
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)

		// Six pods of 1 CPU on nodes of 4 CPUs: two nodes at the least.
		packed := createWorkload(ns, "packed", "packer", "1", 6)
		nodes := expectBound(ns, packed)
		Expect(nodes).To(HaveLen(2), "pods per node: %v", nodes)
		expectScheduledBy(ns, packed, "packer")

		others := createWorkload(ns, "plain", "", "100m", 2)
		expectBound(ns, others)
		expectScheduledBy(ns, others, "default-scheduler")

		Expect(leaseHolder(ns, "packer-scheduler-lease")).NotTo(BeEmpty())
		Expect(leaseHolder("kube-system", "kube-scheduler")).To(Equal(defaultLeaseHolder), "the default scheduler's lease is never taken")
	})

	It("with a Custom config places pods by it, rolls out an edit, and survives a bad edit", func() {
		ns := newNamespace()
		By("giving fake-3 a large image that the workload uses")
		// Retried: kwok writes the node's status too.
		Eventually(func() error {
			node := &corev1.Node{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: "fake-3"}, node); err != nil {
				return err
			}
			node.Status.Images = append(node.Status.Images, corev1.ContainerImage{Names: []string{bigImage}, SizeBytes: 800 << 20})
			return k8s.Status().Update(ctx, node)
		}).Should(Succeed())
		By("loading fake-1 with 2 CPUs of requests")
		load := workload(ns, "load", "", "2", "registry.example/app:1")
		load.Spec.NodeName = "fake-1"
		Expect(k8s.Create(ctx, load)).To(Succeed())

		config := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "locality"},
			Data: map[string]string{"config.yaml": imageLocalityConfig("locality")}}
		cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "locality"},
			Spec: v1.SecondarySchedulerSpec{SchedulerConfig: "locality"}}
		Expect(k8s.Create(ctx, config)).To(Succeed())
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)

		first := workload(ns, "first", "locality", "100m", bigImage)
		Expect(k8s.Create(ctx, first)).To(Succeed())
		Expect(expectBound(ns, []string{"first"})).To(HaveKey("fake-3"), "ImageLocality prefers the node with the image")
		expectScheduledBy(ns, []string{"first"}, "locality")
		oldPods := schedulerPods(cr)
		Expect(oldPods).To(HaveLen(1))
		oldPID := processPID(oldPods[0])
		Expect(processAlive(oldPID)).To(BeTrue())

		By("editing the config: now MostAllocated decides")
		config.Data["config.yaml"] = mostAllocatedConfig("locality")
		Expect(k8s.Update(ctx, config)).To(Succeed())
		Eventually(func() []corev1.Pod { return schedulerPods(cr) }).Should(
			ContainElement(HaveField("UID", Not(Equal(oldPods[0].UID)))), "a new scheduler pod")
		Eventually(func() bool { return processAlive(oldPID) }).Should(BeFalse(), "the old process stops")
		Eventually(func() string { return condition(cr, v1.ConditionProgressing) }).Should(Equal("False/RolloutComplete"))
		second := workload(ns, "second", "locality", "100m", bigImage)
		Expect(k8s.Create(ctx, second)).To(Succeed())
		Expect(expectBound(ns, []string{"second"})).To(HaveKey("fake-1"), "MostAllocated prefers the loaded node")

		By("a bad edit: Degraded, and the running scheduler keeps scheduling")
		running := schedulerPods(cr)
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(config), config)).To(Succeed())
		config.Data["config.yaml"] = mostAllocatedConfig("locality") + "percentageOfNodesToScor: 50\n"
		Expect(k8s.Update(ctx, config)).To(Succeed())
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }).Should(Equal("True/InvalidConfig"))
		third := workload(ns, "third", "locality", "100m", bigImage)
		Expect(k8s.Create(ctx, third)).To(Succeed())
		Expect(expectBound(ns, []string{"third"})).To(HaveKey("fake-1"))
		expectScheduledBy(ns, []string{"third"}, "locality")
		Expect(schedulerPods(cr)).To(ConsistOf(HaveField("UID", running[0].UID)), "the scheduler pod was not replaced")
		Expect(condition(cr, v1.ConditionAvailable)).To(Equal("True/SchedulerReady"))
	})

	It("runs beside another one, each binding only its own pods", func() {
		ns := newNamespace()
		alpha, beta := binPacking(ns, "alpha"), binPacking(ns, "beta")
		Expect(k8s.Create(ctx, alpha)).To(Succeed())
		Expect(k8s.Create(ctx, beta)).To(Succeed())
		waitAvailable(alpha)
		waitAvailable(beta)
		alphaPods := createWorkload(ns, "for-alpha", "alpha", "100m", 3)
		betaPods := createWorkload(ns, "for-beta", "beta", "100m", 3)
		expectScheduledBy(ns, alphaPods, "alpha")
		expectScheduledBy(ns, betaPods, "beta")
	})

	It("HighlyAvailable runs a replica per node up to maxReplicas, follows the nodes, keeps a leader through a drain and fails over", func() {
		ns := newNamespace()
		cr := binPacking(ns, "ha")
		cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable, HighlyAvailableTopology: &v1.HighlyAvailableTopology{MaxReplicas: ptr.To[int32](3)}}
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		Eventually(func() int32 { return readyReplicas(cr) }).Should(Equal(int32(len(schedulerHosts))), "one replica per node the pods may run on")
		nodes := map[string]bool{}
		for _, pod := range schedulerPods(cr) {
			nodes[pod.Spec.NodeName] = true
		}
		Expect(nodes).To(HaveLen(len(schedulerHosts)), "the replicas are spread over the nodes")
		Eventually(func() string { return leaderPod(cr).Name }).ShouldNot(BeEmpty(), "one replica leads")
		expectScheduledBy(ns, createWorkload(ns, "before", "ha", "100m", 1), "ha")

		By("cordoning the leader's node: nothing moves, since a cordon evicts nothing and a scale-down could remove the leader")
		drained := leaderPod(cr).Spec.NodeName
		holder := leaseHolder(ns, "ha-scheduler-lease")
		cordon(drained, true)
		DeferCleanup(func() { cordon(drained, false) })
		Consistently(func() int32 { return deploymentReplicas(cr) }, "5s").Should(Equal(int32(len(schedulerHosts))))
		Expect(leaseHolder(ns, "ha-scheduler-lease")).To(Equal(holder), "the leader leads on")

		By("draining it: the PodDisruptionBudget lets one replica go at a time, the replicas follow the nodes, and a replica leads")
		output, err := kubectl("drain", drained, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=120s")
		Expect(err).NotTo(HaveOccurred(), output)
		Eventually(func() int32 { return deploymentReplicas(cr) }).Should(Equal(int32(len(schedulerHosts) - 1)))
		Eventually(func() string { return leaderPod(cr).Spec.NodeName }, "45s").Should(And(Not(BeEmpty()), Not(Equal(drained))))
		expectScheduledBy(ns, createWorkload(ns, "after-drain", "ha", "100m", 1), "ha")
		cordon(drained, false)
		Eventually(func() int32 { return readyReplicas(cr) }).Should(Equal(int32(len(schedulerHosts))))

		By("killing the leader's process")
		holder = leaseHolder(ns, "ha-scheduler-lease")
		Expect(syscall.Kill(processPID(leaderPod(cr)), syscall.SIGKILL)).To(Succeed())
		start := time.Now()
		// The lease lasts 15 s; once it expires another replica takes it, or the killed one
		// restarted (a new identity), whichever asks first.
		Eventually(func() string { return leaseHolder(ns, "ha-scheduler-lease") }, "45s").Should(And(Not(BeEmpty()), Not(Equal(holder))))
		GinkgoWriter.Printf("leadership moved after %v\n", time.Since(start))
		expectScheduledBy(ns, createWorkload(ns, "after", "ha", "100m", 1), "ha")
	})

	It("converges when the operator is killed mid-reconcile, with no duplicate objects", func() {
		ns := newNamespace()
		cr := binPacking(ns, "restarted")
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		operator.kill()
		operator.start()
		waitAvailable(cr)
		Eventually(func() []corev1.Pod { return schedulerPods(cr) }).Should(HaveLen(1))
		Expect(ownedObjects(cr)).To(HaveLen(binPackingObjects), "each object once")
	})

	It("once deleted leaves nothing behind, releases its lease, and its pods stay Pending", func() {
		ns := newNamespace()
		cr := binPacking(ns, "gone")
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)
		expectScheduledBy(ns, createWorkload(ns, "while-running", "gone", "100m", 1), "gone")
		pods := schedulerPods(cr)
		Expect(pods).To(HaveLen(1))
		pid := processPID(pods[0])

		Expect(k8s.Delete(ctx, cr)).To(Succeed())
		Eventually(func() bool { return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(cr), cr)) }).Should(BeTrue())
		Eventually(func() string {
			output, _ := kubectl("get", "deployments,services,configmaps,serviceaccounts,roles,rolebindings,pods", "-n", ns,
				"-l", "app.kubernetes.io/instance=gone", "-o", "name")
			return output
		}).Should(BeEmpty(), "the garbage collector removes the namespaced objects")
		output, err := kubectl("get", "clusterrolebindings,rolebindings", "-A", "-l",
			"operator.secondary-scheduler.io/owner-namespace="+ns+",operator.secondary-scheduler.io/owner-name=gone", "-o", "name")
		Expect(err).NotTo(HaveOccurred())
		Expect(output).To(BeEmpty(), "the finalizer removes the cluster-scoped objects")
		Eventually(func() bool { return processAlive(pid) }).Should(BeFalse(), "the scheduler process stops")
		Eventually(func() string { return leaseHolder(ns, "gone-scheduler-lease") }).Should(BeEmpty(), "the lease is released")

		orphan := createWorkload(ns, "orphan", "gone", "100m", 1)
		Consistently(func() string { return nodeOf(ns, orphan[0]) }, "5s").Should(BeEmpty(), "nobody schedules for a deleted scheduler")
	})
})

// leaderPod is the scheduler pod holding cr's Lease: a kube-scheduler's identity is its
// hostname, the pod's name, and a unique suffix.
func leaderPod(cr *v1.SecondaryScheduler) corev1.Pod {
	holder := leaseHolder(cr.Namespace, cr.Name+"-scheduler-lease")
	for _, pod := range schedulerPods(cr) {
		if holder != "" && strings.HasPrefix(holder, pod.Name+"_") {
			return pod
		}
	}
	return corev1.Pod{}
}

func readyReplicas(cr *v1.SecondaryScheduler) int32 {
	current := &v1.SecondaryScheduler{}
	_ = k8s.Get(ctx, client.ObjectKeyFromObject(cr), current)
	return current.Status.ReadyReplicas
}

func deploymentReplicas(cr *v1.SecondaryScheduler) int32 {
	deployment := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: cr.Namespace, Name: render.WorkloadName(cr)}, deployment); err != nil || deployment.Spec.Replicas == nil {
		return -1
	}
	return *deployment.Spec.Replicas
}

func cordon(node string, unschedulable bool) {
	verb := "uncordon"
	if unschedulable {
		verb = "cordon"
	}
	output, err := kubectl(verb, node)
	Expect(err).NotTo(HaveOccurred(), output)
}
