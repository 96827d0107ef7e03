//go:build e2e

package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// schedulerNamespaces are the namespaces the operator runs schedulers in, as a cluster
// admin would allow them (its --scheduler-namespaces flag); each spec takes the next.
var schedulerNamespaces = func() []string {
	// One process may run every spec (make test does): enough for all, with room to grow.
	names := make([]string, 64)
	for i := range names {
		names[i] = fmt.Sprintf("e2e-%d", i+1)
	}
	return names
}()

var namespacesTaken int

// newNamespace creates a namespace where the operator runs schedulers, for one spec, and
// deletes it afterwards, waiting until its pods are gone, so that every spec starts with
// empty fake nodes.
func newNamespace() string {
	Expect(namespacesTaken).To(BeNumerically("<", len(schedulerNamespaces)), "more specs than allowed namespaces: add to schedulerNamespaces")
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedulerNamespaces[namespacesTaken]}}
	namespacesTaken++
	Expect(k8s.Create(ctx, ns)).To(Succeed())
	DeferCleanup(func() {
		Expect(k8s.Delete(ctx, ns)).To(Succeed())
		Eventually(func() []corev1.Pod {
			pods := &corev1.PodList{}
			Expect(k8s.List(ctx, pods, client.InNamespace(ns.Name))).To(Succeed())
			return pods.Items
		}, "2m").Should(BeEmpty(), "the pods of namespace %s are gone", ns.Name)
	})
	return ns.Name
}

func binPacking(namespace, name string) *v1.SecondaryScheduler {
	return &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.BinPackingProfile}},
	}
}

// waitAvailable waits as a user would: kubectl wait --for=condition=Available. The
// scheduler then serves its name, though after a change maybe still as its earlier
// configuration says (waitInEffect waits for the current one).
func waitAvailable(cr *v1.SecondaryScheduler) {
	output, err := kubectl("wait", "-n", cr.Namespace, "--for=condition=Available", "secondaryscheduler/"+cr.Name, "--timeout=120s")
	Expect(err).NotTo(HaveOccurred(), output)
}

// waitInEffect waits as a user would for a change to be in effect, once status says the
// operator saw it (a new status.configHash, or observedGeneration): kubectl wait
// --for=condition=Reconciling=False, which holds only once a pod of the current
// configuration leads.
func waitInEffect(cr *v1.SecondaryScheduler) {
	output, err := kubectl("wait", "-n", cr.Namespace, "--for=condition=Reconciling=False", "secondaryscheduler/"+cr.Name, "--timeout=120s")
	Expect(err).NotTo(HaveOccurred(), output)
}

// workload is a pod of a test workload: it tolerates and selects the fake nodes.
func workload(namespace, name, schedulerName, cpu, image string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"e2e": "workload"}},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			NodeSelector:  map[string]string{"type": "kwok"},
			Tolerations:   []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
			Containers: []corev1.Container{{Name: "app", Image: image, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)},
			}}},
		},
	}
}

// createWorkload creates count pods and returns their names.
func createWorkload(namespace, prefix, schedulerName, cpu string, count int) []string {
	names := make([]string, 0, count)
	for i := range count {
		pod := workload(namespace, fmt.Sprintf("%s-%d", prefix, i), schedulerName, cpu, "registry.example/app:1")
		Expect(k8s.Create(ctx, pod)).To(Succeed())
		names = append(names, pod.Name)
	}
	return names
}

// nodeOf returns the node a pod is bound to, or "".
func nodeOf(namespace, name string) string {
	pod := &corev1.Pod{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return ""
	}
	return pod.Spec.NodeName
}

// expectBound waits until every pod is bound and returns the nodes they use.
func expectBound(namespace string, names []string) map[string]int {
	nodes := map[string]int{}
	for _, name := range names {
		Eventually(func() string { return nodeOf(namespace, name) }).ShouldNot(BeEmpty(), "pod %s/%s is bound", namespace, name)
		nodes[nodeOf(namespace, name)]++
	}
	return nodes
}

// scheduledBy returns the scheduler that reported binding a pod: the Scheduled event's
// reporting controller is the profile's schedulerName.
func scheduledBy(namespace, name string) string {
	events, err := clientset.EventsV1().Events(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return ""
	}
	for _, event := range events.Items {
		if event.Regarding.Name == name && event.Reason == "Scheduled" {
			return event.ReportingController
		}
	}
	return ""
}

func expectScheduledBy(namespace string, names []string, scheduler string) {
	for _, name := range names {
		Eventually(func() string { return scheduledBy(namespace, name) }).Should(Equal(scheduler), "scheduler of pod %s/%s", namespace, name)
	}
}

// schedulerPods lists the running scheduler pods of a SecondaryScheduler.
func schedulerPods(cr *v1.SecondaryScheduler) []corev1.Pod {
	pods := &corev1.PodList{}
	Expect(k8s.List(ctx, pods, client.InNamespace(cr.Namespace), client.MatchingLabels{"app.kubernetes.io/instance": cr.Name})).To(Succeed())
	var running []corev1.Pod
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil {
			running = append(running, pod)
		}
	}
	return running
}

// processDir is where the suite's podrunner keeps a pod's process files.
func processDir(pod corev1.Pod) string {
	return processDirIn(filepath.Join(outputDir, "podrunner"), pod)
}

// processDirIn is where the podrunner of workDir keeps a pod's process files.
func processDirIn(workDir string, pod corev1.Pod) string {
	return filepath.Join(workDir, "pods", pod.Namespace+"_"+pod.Name+"_"+string(pod.UID)[:8])
}

func processPID(pod corev1.Pod) int {
	return pidIn(processDir(pod))
}

// pidIn is the pid of the process podrunner runs from dir, 0 when there is none.
func pidIn(dir string) int {
	data, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

func processAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	// Signal 0 checks existence; a zombie awaiting its parent is not alive.
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	return err == nil && !strings.Contains(string(status), "State:\tZ")
}

func leaseHolder(namespace, name string) string {
	lease, err := clientset.CoordinationV1().Leases(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

func condition(cr *v1.SecondaryScheduler, conditionType v1.ConditionType) string {
	current := &v1.SecondaryScheduler{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cr), current); err != nil {
		return ""
	}
	for _, c := range current.Status.Conditions {
		if c.Type == string(conditionType) && c.ObservedGeneration == current.Generation {
			return string(c.Status) + "/" + c.Reason
		}
	}
	return ""
}

// eventReasonsSince lists "<condition> <reason>" of the Events about cr seen since since.
func eventReasonsSince(cr *v1.SecondaryScheduler, since time.Time) []string {
	events, err := clientset.EventsV1().Events(cr.Namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	var reasons []string
	for _, event := range events.Items {
		seen := event.EventTime.Time
		if event.Series != nil {
			seen = event.Series.LastObservedTime.Time
		}
		if event.Regarding.Name == cr.Name && event.Regarding.Kind == "SecondaryScheduler" && !seen.Before(since) {
			reasons = append(reasons, event.Action+" "+event.Reason)
		}
	}
	return reasons
}

func nonEmptyLines(s string) []string {
	var lines []string
	for _, line := range strings.Split(s, "\n") {
		if strings.TrimSpace(line) != "" {
			lines = append(lines, line)
		}
	}
	return lines
}

// refusePods creates a ResourceQuota of no pods in namespace and waits until the quota
// controller has counted the namespace: from then on the API server refuses its new pods.
func refusePods(namespace string) *corev1.ResourceQuota {
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "no-pods"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}}
	Expect(k8s.Create(ctx, quota)).To(Succeed())
	Eventually(func() corev1.ResourceList {
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(quota), quota)).To(Succeed())
		return quota.Status.Hard
	}).ShouldNot(BeEmpty(), "the quota controller counted namespace %s", namespace)
	return quota
}

// editSpec changes cr's spec as kubectl edit does (updateSpec), and expects the write to
// succeed. cr holds the resource as written.
func editSpec(cr *v1.SecondaryScheduler, change func(*v1.SecondaryScheduler)) {
	GinkgoHelper()
	Expect(updateSpec(k8s, cr, change)).To(Succeed(), "edit the spec of %s/%s", cr.Namespace, cr.Name)
}

// updateSpec changes cr's spec through c: read, change, write, and again from a fresh read
// when the operator wrote status in between (a conflict is no outcome of the edit), so that
// no spec depends on which of the two writes comes first. It returns the last write's
// error, such as the admission policy's refusal.
func updateSpec(c client.Client, cr *v1.SecondaryScheduler, change func(*v1.SecondaryScheduler)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(cr), cr); err != nil {
			return err
		}
		change(cr)
		return c.Update(ctx, cr)
	})
}

// secondarySchedulerNow is cr as the API server has it now.
func secondarySchedulerNow(cr *v1.SecondaryScheduler) *v1.SecondaryScheduler {
	current := &v1.SecondaryScheduler{}
	Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cr), current)).To(Succeed())
	return current
}

// skipWithoutTargetLoadPacking skips a spec that needs scheduler-plugins' kube-scheduler
// (TargetLoadPacking, and the load-watcher built into it), saying how to get one.
func skipWithoutTargetLoadPacking() {
	if os.Getenv("SCHEDULER_PLUGINS_BINARY") == "" {
		Skip("no scheduler-plugins binary: build one with make scheduler-plugins (README, Development) " +
			"and set SCHEDULER_PLUGINS_BINARY (its module is not served by the Go module proxy); " +
			"the in-tree kube-scheduler has no TargetLoadPacking plugin")
	}
}
