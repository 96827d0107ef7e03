//go:build e2e

package e2e

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// ownedObjects lists, cluster-wide, the objects carrying cr's owner labels, by kind/namespace/name.
func ownedObjects(cr *v1.SecondaryScheduler) []string {
	output, err := kubectl("get", "deployments,services,configmaps,secrets,serviceaccounts,roles,rolebindings,leases,poddisruptionbudgets,networkpolicies,clusterrolebindings",
		"-A", "-l", "operator.secondary-scheduler.io/owner-namespace="+cr.Namespace+",operator.secondary-scheduler.io/owner-name="+cr.Name,
		"-o", "custom-columns=KIND:.kind,NAMESPACE:.metadata.namespace,NAME:.metadata.name", "--no-headers")
	Expect(err).NotTo(HaveOccurred())
	return nonEmptyLines(output)
}

// binPackingObjects is how many objects a BinPacking scheduler is made of: a
// ServiceAccount, ConfigMap, Deployment, its NetworkPolicy, Service, Lease, and the Lease's
// Role and RoleBinding in its namespace; two ClusterRoleBindings; a RoleBinding in
// kube-system.
const binPackingObjects = 11

// configHashOf is the configuration hash status reports for the current generation, "" before.
func configHashOf(cr *v1.SecondaryScheduler) string {
	current := &v1.SecondaryScheduler{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(cr), current); err != nil || current.Status.ObservedGeneration != current.Generation {
		return ""
	}
	return current.Status.ConfigHash
}

// killMoments picks the moments of the operator kills from the suite's random seed, so
// that a failing run is repeated with ginkgo's --seed (set once the suite runs).
var killMoments *rand.Rand

// killOperatorWithin SIGKILLs the operator at a random moment of the next window, then
// starts it again, as a crash and a restart by its Deployment would.
func killOperatorWithin(window time.Duration) {
	if killMoments == nil {
		killMoments = rand.New(rand.NewPCG(uint64(GinkgoRandomSeed()), 0))
	}
	moment := time.Duration(killMoments.Int64N(int64(window)))
	GinkgoWriter.Printf("killing the operator %v into the change\n", moment)
	time.Sleep(moment)
	operator.kill()
	operator.start()
}

// restartAPIServer kills the local cluster's kube-apiserver, as a crash would, and starts
// it again with the same command line.
func restartAPIServer() {
	pidFile := filepath.Join(outputDir, "kwok", "clusters", clusterName, "pids", "kube-apiserver.pid")
	data, err := os.ReadFile(pidFile)
	Expect(err).NotTo(HaveOccurred())
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	Expect(err).NotTo(HaveOccurred())
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	Expect(err).NotTo(HaveOccurred())
	workDir, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	Expect(err).NotTo(HaveOccurred())
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")

	Expect(syscall.Kill(pid, syscall.SIGKILL)).To(Succeed())
	Eventually(func() bool { return processAlive(pid) }, "30s").Should(BeFalse(), "kube-apiserver stopped")
	logPath := filepath.Join(outputDir, "kwok", "clusters", clusterName, "logs", "kube-apiserver.log")
	// Started again until it serves: a first start may find its port not yet free.
	Eventually(func() error {
		logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		defer func() { _ = logFile.Close() }()
		command := exec.Command(args[0], args[1:]...)
		command.Dir, command.Stdout, command.Stderr = workDir, logFile, logFile
		// Detached as kwokctl starts it, so that deleting the cluster stops it by its pid file.
		command.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := command.Start(); err != nil {
			return err
		}
		if err := os.WriteFile(pidFile, []byte(strconv.Itoa(command.Process.Pid)), 0o644); err != nil {
			return err
		}
		exited := make(chan error, 1)
		go func() { exited <- command.Wait() }()
		deadline := time.After(30 * time.Second)
		for {
			if _, err := kubectl("get", "--raw", "/readyz"); err == nil {
				return nil
			}
			select {
			case err := <-exited:
				return fmt.Errorf("kube-apiserver exited: %w; see %s", err, logPath)
			case <-deadline:
				_ = command.Process.Kill()
				return fmt.Errorf("kube-apiserver did not become ready; see %s", logPath)
			case <-time.After(500 * time.Millisecond):
			}
		}
	}, "2m", "1s").Should(Succeed(), "kube-apiserver serves again")
}

var _ = Describe("Faults", func() {
	// 21 kills, each at a random moment of a create, an update or a delete.
	It("converges after the operator is SIGKILLed at random points of create, update and delete, with no duplicate or orphaned object", func() {
		ns := newNamespace()
		for round := range 7 {
			cr := binPacking(ns, fmt.Sprintf("killed-%d", round))
			By(fmt.Sprintf("round %d: create", round))
			Expect(k8s.Create(ctx, cr)).To(Succeed())
			killOperatorWithin(500 * time.Millisecond)
			waitAvailable(cr)
			Eventually(func() []string { return ownedObjects(cr) }).Should(HaveLen(binPackingObjects), "each object once")

			By(fmt.Sprintf("round %d: update", round))
			before := configHashOf(cr)
			editSpec(cr, func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile.BinPacking = &v1.BinPackingArgs{ResourceWeights: map[corev1.ResourceName]int64{"cpu": int64(2 + round), "memory": 1}}
			})
			killOperatorWithin(500 * time.Millisecond)
			Eventually(func() string { return configHashOf(cr) }).ShouldNot(Or(BeEmpty(), Equal(before)), "the new configuration is rendered")
			waitAvailable(cr)
			Eventually(func() []string { return ownedObjects(cr) }).Should(HaveLen(binPackingObjects), "each object once")

			By(fmt.Sprintf("round %d: delete", round))
			Expect(k8s.Delete(ctx, cr)).To(Succeed())
			killOperatorWithin(500 * time.Millisecond)
			Eventually(func() bool {
				return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKeyFromObject(cr), &v1.SecondaryScheduler{}))
			}).
				Should(BeTrue(), "the finalizer completes")
			Eventually(func() []string { return ownedObjects(cr) }).Should(BeEmpty(), "nothing is left behind, cluster-scoped objects included")
		}
	})

	It("converges when kube-apiserver restarts while it reconciles", func() {
		ns := newNamespace()
		cr := binPacking(ns, "through-restart")
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		restartAPIServer()
		waitAvailable(cr)
		Eventually(func() []string { return ownedObjects(cr) }).Should(HaveLen(binPackingObjects))
		expectScheduledBy(ns, createWorkload(ns, "after-restart", "through-restart", "100m", 1), "through-restart")
	})

	It("says within seconds why scheduler pods cannot start, and recovers when the cause is fixed", func() {
		ns := newNamespace()
		cr := binPacking(ns, "unpullable")
		cr.Spec.SchedulerImage = "registry.example/nowhere/scheduler:v1"
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		// Well before the Deployment's progress deadline (600 s).
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }, "30s").Should(Equal("True/" + string(v1.ReasonImagePullFailed)))
		Expect(condition(cr, v1.ConditionAvailable)).To(HavePrefix("False/"))

		editSpec(cr, func(cr *v1.SecondaryScheduler) { cr.Spec.SchedulerImage = "" })
		waitAvailable(cr)
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }).Should(HavePrefix("False/"))
	})

	It("says within seconds when the API server refuses the scheduler's pods, and recovers when it admits them", func() {
		ns := newNamespace()
		quota := refusePods(ns)
		cr := binPacking(ns, "over-quota")
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }, "30s").Should(Equal("True/" + string(v1.ReasonPodCreationFailed)))
		Expect(condition(cr, v1.ConditionAvailable)).To(Equal("False/" + string(v1.ReasonPodCreationFailed)))

		Expect(k8s.Delete(ctx, quota)).To(Succeed())
		waitAvailable(cr)
		Eventually(func() string { return condition(cr, v1.ConditionDegraded) }).Should(HavePrefix("False/"))
	})

	It("quotes the scheduler's own last error when its configuration makes it exit, as the kubelet's termination message carries it", func() {
		ns := newNamespace()
		// A configuration the operator accepts and kube-scheduler refuses at start: the
		// operator checks what kube-scheduler checks of a configuration's structure
		// (internal/schedconfig), not what each in-tree plugin checks of its args.
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "exits-config"},
			Data: map[string]string{"config.yaml": "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n" +
				"profiles:\n- schedulerName: exits\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n" +
				"        type: MostPacked\n"}})).To(Succeed())
		cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "exits"}, Spec: v1.SecondarySchedulerSpec{SchedulerConfig: "exits-config"}}
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		Eventually(func() string { return condition(cr, v1.ConditionAvailable) }, "2m").Should(Equal("False/" + string(v1.ReasonSchedulerCrashing)))
		// The scheduler's last words reach Available as the kubelet carries them, in the
		// pod's termination message (podrunner fills it in as a kubelet does, from the
		// process's own output). Every run ends with the same error, after a log header
		// that differs by the time: compared without headers.
		Eventually(func(g Gomega) {
			pods := schedulerPods(cr)
			g.Expect(pods).NotTo(BeEmpty())
			g.Expect(pods[0].Status.ContainerStatuses).NotTo(BeEmpty())
			terminated := pods[0].Status.ContainerStatuses[0].LastTerminationState.Terminated
			g.Expect(terminated).NotTo(BeNil())
			words := strings.TrimSpace(terminated.Message)
			g.Expect(words).NotTo(BeEmpty(), "the termination message of a container that failed with FallbackToLogsOnError")
			log, err := os.ReadFile(filepath.Join(processDir(pods[0]), "process.log"))
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(log)).To(ContainSubstring(words), "the termination message is what the process wrote")
			lines := strings.Split(withoutKlogHeaders(words), "\n")
			lastError := lines[len(lines)-1]
			current := &v1.SecondaryScheduler{}
			g.Expect(k8s.Get(ctx, client.ObjectKeyFromObject(cr), current)).To(Succeed())
			available := meta.FindStatusCondition(current.Status.Conditions, string(v1.ConditionAvailable))
			g.Expect(available).NotTo(BeNil())
			g.Expect(withoutKlogHeaders(available.Message)).To(ContainSubstring(lastError), "Available quotes the scheduler's own last error")
		}).Should(Succeed())
	})

	It("reports a killed scheduler process, and recovers when it restarts", func() {
		ns := newNamespace()
		cr := binPacking(ns, "crashed")
		Expect(k8s.Create(ctx, cr)).To(Succeed())
		waitAvailable(cr)
		pods := schedulerPods(cr)
		Expect(pods).To(HaveLen(1))
		since := time.Now()
		Expect(syscall.Kill(processPID(pods[0]), syscall.SIGKILL)).To(Succeed())
		Eventually(func() []string { return eventReasonsSince(cr, since) }).Should(ContainElement("Available "+string(v1.ReasonSchedulerCrashing)),
			"Available went False, saying the scheduler crashed, while no scheduler was ready")
		waitAvailable(cr)
		expectScheduledBy(ns, createWorkload(ns, "after-crash", "crashed", "100m", 1), "crashed")
	})
})

// klogHeaders are the headers klog writes before each message: severity, date, time,
// thread, file and line.
var klogHeaders = regexp.MustCompile(`(?m)^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+:\d+\] `)

// withoutKlogHeaders is text without klog's headers.
func withoutKlogHeaders(text string) string {
	return klogHeaders.ReplaceAllString(text, "")
}
