//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// podGroupLabel names a pod's gang, as Coscheduling reads it.
const podGroupLabel = "scheduling.x-k8s.io/pod-group"

// A real scheduler-plugins build, configured by spec.gang beside BinPacking, binds a gang
// all together or not at all, with the PodGroup CRD installed from the scheduler-plugins
// checkout its binary was built from; the real controller of the same build, which the
// operator runs while the scheduler needs it, keeps the PodGroup's status.
var _ = Describe("Gangs with a scheduler-plugins build", func() {
	It("binds none of a gang that does not fit, and all of it once it does", func() {
		requireSchedulerPlugins("Coscheduling")
		if schedulerPluginsController() == "" {
			Skip("no scheduler-plugins controller beside " + os.Getenv("SCHEDULER_PLUGINS_BINARY") + ": rebuild it with make scheduler-plugins, which builds both")
		}
		// The controller keeps ElasticQuotas too, and does not start without their CRD.
		installPluginCRD(os.Getenv("SCHEDULER_PLUGINS_BINARY"), "CapacityScheduling")
		const pool, gangSize = "gang", 3

		By("a pool with room for two of the gang's three pods")
		createGangPool(pool, 2)
		ns := newNamespace()
		cr := binPacking(ns, "gangs")
		cr.Spec.Gang = &v1.Gang{PermitWaitingTimeSeconds: ptr.To[int32](10)}
		cr.Spec.PendingPodThreshold = &metav1.Duration{Duration: 10 * time.Second}
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)

		podGroup := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
			"metadata": map[string]any{"namespace": ns, "name": "training"},
			"spec":     map[string]any{"minMember": int64(gangSize)},
		}}
		Expect(k8s.Create(ctx, podGroup)).To(Succeed())
		names := createGang(ns, cr.Name, pool, gangSize, func(pod *corev1.Pod) { pod.Labels[podGroupLabel] = "training" })

		By("every pod of the gang tried and refused, and none bound")
		for _, name := range names {
			Eventually(func() []string { return eventReasonsOf(ns, name) }, "2m").Should(ContainElement("FailedScheduling"),
				"the scheduler tried pod %s and could not place its gang", name)
		}
		for _, name := range names {
			Expect(nodeOf(ns, name)).To(BeEmpty(), "pod %s of a gang that does not fit is not bound", name)
		}

		By("scheduler-plugins' controller runs, and keeps the PodGroup's status: its gang is not running")
		Eventually(func() *v1.PluginControllerStatus { return secondarySchedulerNow(cr).Status.PluginController }, "2m").Should(And(
			HaveField("Plugins", []string{"Coscheduling"}), HaveField("ReadyReplicas", BeNumerically(">=", 1))),
			"status.pluginController reports a ready controller")
		Eventually(func() string { return podGroupPhase(podGroup) }, "1m").Should(BeElementOf("Pending", "Scheduling"),
			"the controller gives the waiting gang's PodGroup a phase")
		Expect(podGroupRunning(podGroup)).To(BeZero())

		By("status names the waiting gang, with its plugin's own account of it")
		Eventually(func() bool {
			current := &v1.SecondaryScheduler{}
			Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cr), current)).To(Succeed())
			pending := meta.FindStatusCondition(current.Status.Conditions, string(v1.ConditionPodsPending))
			if pending == nil || pending.Reason != string(v1.ReasonGangWaiting) || current.Status.PendingPods == nil ||
				current.Status.PendingPods.Count != gangSize || !strings.Contains(pending.Message, "gang "+ns+"/training") {
				return false
			}
			// Whatever the scheduler said of the oldest, in its own words.
			account := podScheduledMessage(ns, current.Status.PendingPods.Examples[0])
			quoted := strconv.Quote(account[:min(len(account), 40)])
			return account != "" && strings.Contains(pending.Message, quoted[:len(quoted)-1])
		}, "2m").Should(BeTrue(), "PodsPending is GangWaiting, names the PodGroup and quotes the scheduler's account of the gang's pods")

		By("room for the third: the whole gang binds")
		createGangNode(pool, 3)
		// Coscheduling requeues the pods it turned away on an event of a Pod or a PodGroup
		// (its EventsToRegister), not on a new node: without one they wait for the
		// scheduler's periodic retry of unschedulable pods (5 minutes). A change of the
		// PodGroup, as a user's or a controller's, is such an event. It is repeated until the
		// gang binds: a change the scheduler sees before it sees the new node turns the gang
		// away once more.
		changes := 0
		Eventually(func() int {
			changes++
			Expect(k8s.Patch(ctx, podGroup, client.RawPatch(types.MergePatchType,
				fmt.Appendf(nil, `{"metadata":{"annotations":{"e2e.secondary-scheduler.io/room":"%d"}}}`, changes)))).To(Succeed())
			bound := 0
			for _, name := range names {
				if nodeOf(ns, name) != "" {
					bound++
				}
			}
			return bound
		}, "2m", "5s").Should(Equal(gangSize), "the whole gang binds")
		nodes := expectBound(ns, names)
		Expect(nodes).To(HaveLen(gangSize), "one pod a node: %v", nodes)
		expectScheduledBy(ns, names, cr.Name)
		Eventually(func() string { return podGroupPhase(podGroup) }, "1m").Should(BeElementOf("Scheduled", "Running"),
			"the controller tells the gang scheduled")

		By("the last scheduler that needs the controller goes, and so does the controller")
		Expect(k8s.Delete(ctx, cr)).To(Succeed())
		Eventually(func() bool {
			controller := &appsv1.Deployment{}
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: hostOperatorNamespace, Name: render.PluginControllerName}, controller))
		}, "1m").Should(BeTrue(), "the controller's Deployment is deleted")
	})
})

// Kubernetes' own gangs: spec.gang.implementation Workload, on a cluster that serves the
// Workload API (the suite's clusters do: WORKLOAD_API), runs the in-tree GangScheduling in
// Kubernetes' kube-scheduler of the control plane's version, with no CRD and no controller.
var _ = Describe("Gangs of Kubernetes' Workload API", func() {
	It("binds none of a gang that does not fit, and all of it once it does, and says which plugin schedules gangs", func() {
		const pool, gangSize = "workload-gang", 3

		By("a pool with room for two of the gang's three pods")
		createGangPool(pool, 2)
		ns := newNamespace()
		cr := binPacking(ns, "workload-gangs")
		cr.Spec.SchedulerImage = "registry.k8s.io/kube-scheduler:" + filepath.Base(controlPlaneDir)
		cr.Spec.Gang = &v1.Gang{Implementation: v1.WorkloadGangs}
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)
		Expect(secondarySchedulerNow(cr).Status.Gang).To(Equal(&v1.GangStatus{Implementation: v1.WorkloadGangs, Plugin: "GangScheduling"}))
		Expect(secondarySchedulerNow(cr).Status.PluginController).To(BeNil(), "Kubernetes' gangs need no scheduler-plugins controller")

		podGroup := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
			"metadata": map[string]any{"namespace": ns, "name": "training"},
			"spec":     map[string]any{"schedulingPolicy": map[string]any{"gang": map[string]any{"minCount": int64(gangSize)}}},
		}}
		Expect(k8s.Create(ctx, podGroup)).To(Succeed())
		names := createGang(ns, cr.Name, pool, gangSize, func(pod *corev1.Pod) {
			pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("training")}
		})

		By("the pod with no room is refused, and the two that have a node wait for it, unbound")
		Eventually(func() int {
			refused := 0
			for _, name := range names {
				if slices.Contains(eventReasonsOf(ns, name), "FailedScheduling") {
					refused++
				}
			}
			return refused
		}, "2m").Should(BeNumerically(">=", 1), "the scheduler tried the gang and could not place all of it")
		for _, name := range names {
			Expect(nodeOf(ns, name)).To(BeEmpty(), "pod %s of a gang that does not fit is not bound", name)
		}

		By("room for the third: the whole gang binds")
		createGangNode(pool, 3)
		nodes := expectBound(ns, names)
		Expect(nodes).To(HaveLen(gangSize), "one pod a node: %v", nodes)
		expectScheduledBy(ns, names, cr.Name)
	})
})

// gangPodMillis is what each pod of a gang asks for: one fits a node of createGangNode's.
const gangPodMillis = 600

// createGangNode adds node i of pool, with room for one pod of a gang.
func createGangNode(pool string, i int) {
	createScoringNode(scoringNode{name: fmt.Sprintf("%s-%d", pool, i), cpuMillis: 1000}, pool)
}

// createGangPool adds nodes 1 to n of pool.
func createGangPool(pool string, n int) {
	for i := 1; i <= n; i++ {
		createGangNode(pool, i)
	}
}

// createGang creates size pods of a gang for schedulerName in pool, each made a member by
// join, and returns their names.
func createGang(namespace, schedulerName, pool string, size int, join func(*corev1.Pod)) []string {
	names := make([]string, 0, size)
	for i := range size {
		pod := scoringPod(namespace, schedulerName, pool, gangPodMillis)
		pod.Name = pod.Name + "-" + string(rune('a'+i))
		join(pod)
		Expect(k8s.Create(ctx, pod)).To(Succeed())
		names = append(names, pod.Name)
	}
	return names
}

// podGroupPhase is status.phase of podGroup as the API server has it now.
func podGroupPhase(podGroup *unstructured.Unstructured) string {
	phase, _, _ := unstructured.NestedString(currentObject(podGroup).Object, "status", "phase")
	return phase
}

// podGroupRunning is status.running of podGroup as the API server has it now.
func podGroupRunning(podGroup *unstructured.Unstructured) int64 {
	running, _, _ := unstructured.NestedInt64(currentObject(podGroup).Object, "status", "running")
	return running
}

func currentObject(object *unstructured.Unstructured) *unstructured.Unstructured {
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(object.GroupVersionKind())
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(object), current)).To(Succeed())
	return current
}

// requireSchedulerPlugins skips the spec without a scheduler-plugins binary, whose
// plugins the in-tree kube-scheduler lacks, and installs the CRDs the plugins read.
func requireSchedulerPlugins(plugins ...string) {
	binary := os.Getenv("SCHEDULER_PLUGINS_BINARY")
	if binary == "" {
		Skip("no scheduler-plugins binary: build one with make scheduler-plugins (README, Development); " +
			"the in-tree kube-scheduler has no " + strings.Join(plugins, " or ") + " plugin")
	}
	for _, plugin := range plugins {
		installPluginCRD(binary, plugin)
	}
}

// installPluginCRD installs, unless the cluster has it, the CRD of the kind plugin reads,
// from the scheduler-plugins checkout the binary was built from: hack/build-scheduler-plugins.sh
// keeps its CRD manifests beside the binary, at the paths schedconfig's table names.
func installPluginCRD(binary, plugin string) {
	needs, ok := schedconfig.PluginNeedsOf(plugin)
	Expect(ok).To(BeTrue())
	for _, kind := range needs.CRDs {
		manifest := filepath.Join(filepath.Dir(binary), filepath.FromSlash(kind.Manifest))
		data, err := os.ReadFile(manifest)
		if os.IsNotExist(err) {
			Skip("no " + manifest + ": rebuild the scheduler-plugins binary with make scheduler-plugins, which keeps the CRDs of its checkout beside it")
		}
		Expect(err).NotTo(HaveOccurred())
		crd := &apiextensionsv1.CustomResourceDefinition{}
		Expect(yaml.UnmarshalStrict(data, crd)).To(Succeed(), "%s holds a CustomResourceDefinition", manifest)
		Expect(crd.Name).To(Equal(kind.CRDName()))
		if err := k8s.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			Expect(err).NotTo(HaveOccurred())
		}
		Eventually(func() bool {
			current := &apiextensionsv1.CustomResourceDefinition{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(crd), current); err != nil {
				return false
			}
			for _, condition := range current.Status.Conditions {
				if condition.Type == apiextensionsv1.Established {
					return condition.Status == apiextensionsv1.ConditionTrue
				}
			}
			return false
		}).Should(BeTrue(), "CRD %s is established", crd.Name)
	}
}

// podScheduledMessage is the message of the PodScheduled condition of pod key
// (namespace/name) in namespace: the scheduler's account of why it did not place it.
func podScheduledMessage(namespace, key string) string {
	pod := &corev1.Pod{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: strings.TrimPrefix(key, namespace+"/")}, pod); err != nil {
		return ""
	}
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.PodScheduled {
			return condition.Message
		}
	}
	return ""
}

// eventReasonsOf are the reasons of the Events about pod name in namespace.
func eventReasonsOf(namespace, name string) []string {
	events := &corev1.EventList{}
	if err := k8s.List(ctx, events, client.InNamespace(namespace)); err != nil {
		return nil
	}
	var reasons []string
	for _, event := range events.Items {
		if event.InvolvedObject.Kind == "Pod" && event.InvolvedObject.Name == name {
			reasons = append(reasons, event.Reason)
		}
	}
	return reasons
}
