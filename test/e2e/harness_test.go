//go:build e2e

// Package e2e runs the operator binary against a whole local cluster (kwok, binary
// runtime), with the real kube-scheduler running every scheduler pod as a process
// (test/podrunner), and checks what a user cares about: pods placed by the right
// scheduler, on the right nodes, through config edits, bad input, failures and deletion.
package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/installer"
)

var (
	repoRoot        = mustAbs("../..")
	controlPlaneDir = envOr("CONTROL_PLANE_DIR", filepath.Join(repoRoot, "bin", "k8s", envOr("KUBE_VERSION", "v1.37.2")))
	suiteDir        = filepath.Join(repoRoot, "_output", "e2e")
	// binDir holds the binaries the suite builds once, for all its processes.
	binDir = filepath.Join(suiteDir, "bin")

	// The suite runs in parallel processes (ginkgo --procs), each with a cluster, podrunner and
	// operator of its own, kept in a directory of its own: specs share nothing across
	// processes but the binaries. processSetUp sets these.
	clusterName    string
	outputDir      string
	kubeconfigPath string
	artifactsDir   string

	scheme     = runtime.NewScheme()
	restConfig *rest.Config
	k8s        client.Client
	clientset  *kubernetes.Clientset
	operator   *managedProcess
	runner     *managedProcess
)

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1.AddToScheme(scheme))
	utilruntime.Must(apiextensionsv1.AddToScheme(scheme))
}

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	SetDefaultEventuallyTimeout(90 * time.Second)
	SetDefaultEventuallyPollingInterval(250 * time.Millisecond)
	RunSpecs(t, "secondary-scheduler-operator e2e")
}

var _ = SynchronizedBeforeSuite(func() {
	// Once, before any process starts its cluster: what every process runs.
	Expect(os.RemoveAll(suiteDir)).To(Succeed())
	run(repoRoot, "go", "build", "-o", filepath.Join(binDir, "manager"), ".")
	run(repoRoot, "go", "build", "-o", filepath.Join(binDir, "podrunner"), "./test/podrunner")
	run(repoRoot, "go", "build", "-o", filepath.Join(binDir, "extender"), "./test/extender")
}, processSetUp)

// processSetUp starts this process's cluster, its podrunner and its operator.
func processSetUp() {
	logf.SetLogger(GinkgoLogr)
	clusterName = fmt.Sprintf("e2e-%d", GinkgoParallelProcess())
	outputDir = filepath.Join(suiteDir, clusterName)
	kubeconfigPath = filepath.Join(outputDir, "kubeconfig")
	artifactsDir = filepath.Join(outputDir, "artifacts")
	Expect(os.MkdirAll(artifactsDir, 0o755)).To(Succeed())
	clusterScript("down") // a cluster left over from an interrupted run
	clusterScript("up")

	var err error
	restConfig, err = clientcmd.BuildConfigFromFlags("", kubeconfigPath)
	Expect(err).NotTo(HaveOccurred())
	k8s, err = client.New(restConfig, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	clientset = kubernetes.NewForConfigOrDie(restConfig)

	runner = startPodrunner("podrunner", kubeconfigPath, filepath.Join(outputDir, "podrunner"), nil, "--nodes", strconv.Itoa(len(schedulerHosts)))
	// Specs count the cluster's nodes (the metrics exporter serves each): all are there first.
	for _, name := range schedulerHosts {
		Eventually(func() bool {
			node := &corev1.Node{}
			if err := k8s.Get(ctx, client.ObjectKey{Name: name}, node); err != nil {
				return false
			}
			return render.NodeReady(node) && len(node.Spec.Taints) == 0
		}).Should(BeTrue(), "podrunner's node %s is Ready", name)
	}
	// As an installation does: the admission policies the installer ships (the authority
	// policy reading its parameters in the operator's namespace, where the operator writes
	// them; the routing policy reading the RoutingTable the operator writes), the
	// ClusterRoles it binds schedulers to for their plugins, and the identity of
	// scheduler-plugins' controller, which it runs.
	Expect(k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: hostOperatorNamespace}})).To(Succeed())
	Expect(installer.ApplyAdmissionPolicies(ctx, k8s, repoRoot, hostOperatorNamespace)).To(Succeed())
	Expect(installer.ApplyRoutingPolicy(ctx, k8s, repoRoot)).To(Succeed())
	Expect(installer.ApplySchedulerRoles(ctx, k8s, repoRoot)).To(Succeed())
	Expect(installer.ApplyPluginControllerRBAC(ctx, k8s, repoRoot, hostOperatorNamespace)).To(Succeed())
	operator = startProcessWithEnv("operator", []string{"POD_NAMESPACE=" + hostOperatorNamespace}, filepath.Join(binDir, "manager"), "--kubeconfig", kubeconfigPath,
		"--metrics-bind-address=0", "--health-probe-bind-address=0", "--zap-log-level=debug",
		"--scheduler-namespaces="+strings.Join(schedulerNamespaces, ","),
		// The discovery spec finds a Prometheus Operator's Prometheus in monitoring, which
		// an admin lists: it is no default (a tenant could create it where it is missing).
		"--prometheus-namespaces=openshift-monitoring,monitoring",
		// Metrics failures are produced and healed here within seconds, not minutes.
		"--metrics-probe-interval=2s",
		// Extenders stopped and started again are seen within seconds too.
		"--extender-probe-interval=2s",
		// A pod naming a scheduler nobody provides is told within seconds.
		"--stranded-pod-grace=10s")
	// The operator runs nothing for a SecondaryScheduler created before the policy's
	// parameters exist (CreatedBeforeAdmissionPolicy): no spec may create one before the
	// operator has written them, whichever spec comes first.
	Eventually(func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: hostOperatorNamespace, Name: render.AuthorityPolicyName}, &corev1.ConfigMap{})
	}).Should(Succeed(), "the operator writes its admission policy's parameters")
}

var _ = AfterSuite(func() {
	if operator != nil {
		operator.stop()
		// controller-runtime recovers a panicking reconcile and retries it: specs may pass
		// all the same, so the operator's log is the evidence.
		log, err := os.ReadFile(operator.logPath)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(log)).NotTo(ContainSubstring("Observed a panic"), "a reconcile panicked; see %s", operator.logPath)
	}
	if runner != nil {
		runner.stop()
	}
	if os.Getenv("E2E_KEEP_CLUSTER") == "" {
		clusterScript("down")
	}
})

// On failure, keep what explains it: the namespace's objects and events, the operator's log.
var _ = ReportAfterEach(func(report SpecReport) {
	if !report.Failed() {
		return
	}
	dir := filepath.Join(artifactsDir, strings.ReplaceAll(report.FullText(), " ", "_"))
	_ = os.MkdirAll(dir, 0o755)
	dump := func(file string, args ...string) {
		output, _ := exec.Command(filepath.Join(controlPlaneDir, "kubectl"), append([]string{"--kubeconfig", kubeconfigPath}, args...)...).CombinedOutput()
		_ = os.WriteFile(filepath.Join(dir, file), output, 0o644)
	}
	dump("objects.yaml", "get", "secondaryschedulers,deployments,pods,configmaps,leases,events", "-A", "-o", "yaml")
	dump("nodes.yaml", "get", "nodes", "-o", "yaml")
	dump("cluster-scoped.yaml", "get", "clusterrolebindings", "-l", "app.kubernetes.io/managed-by=secondary-scheduler-operator", "-o", "yaml")
	fmt.Fprintf(GinkgoWriter, "artifacts in %s; operator log %s; scheduler process logs under %s\n",
		dir, operator.logPath, filepath.Join(outputDir, "podrunner", "pods"))
})

// startPodrunner starts the kubelet of the cluster of kubeconfig: it runs the pods bound to
// its nodes as processes. The operator's image runs the manager binary built for this run
// (extraBinaries, IMAGE-SUBSTRING=PATH pairs, come first and may map some of its tags to
// another build); scheduler-plugins images run SCHEDULER_PLUGINS_BINARY when given, else
// the in-tree kube-scheduler, which carries every in-tree plugin: all that BinPacking and
// the Custom configs here use. Specs that need out-of-tree plugins skip without it.
func startPodrunner(name, kubeconfig, workDir string, extraBinaries []string, args ...string) *managedProcess {
	inTree := filepath.Join(controlPlaneDir, "kube-scheduler")
	binaries := append(slices.Clone(extraBinaries), "secondary-scheduler-operator="+filepath.Join(binDir, "manager"))
	if controller := schedulerPluginsController(); controller != "" {
		// Before scheduler-plugins=, which its image's reference matches too.
		binaries = append(binaries, "scheduler-plugins/controller="+controller)
	}
	binaries = append(binaries, "scheduler-plugins="+envOr("SCHEDULER_PLUGINS_BINARY", inTree), "kube-scheduler="+inTree)
	return startProcess(name, append([]string{filepath.Join(binDir, "podrunner"), "--kubeconfig", kubeconfig, "--work-dir", workDir,
		"--binaries", strings.Join(binaries, ",")}, args...)...)
}

// schedulerPluginsController is scheduler-plugins' controller, which make scheduler-plugins
// builds beside its kube-scheduler from the same checkout; "" without one.
func schedulerPluginsController() string {
	binary := os.Getenv("SCHEDULER_PLUGINS_BINARY")
	if binary == "" {
		return ""
	}
	controller := filepath.Join(filepath.Dir(binary), "controller")
	if _, err := os.Stat(controller); err != nil {
		return ""
	}
	return controller
}

// schedulerHosts are the nodes of the suite's podrunner, where scheduler pods run as
// processes (the fake nodes are tainted against them), each in a zone of two.
var schedulerHosts = []string{"scheduler-host-1", "scheduler-host-2", "scheduler-host-3"}

// clusterScript runs hack/local-cluster.sh for the suite's cluster, which serves the
// Workload API (WORKLOAD_API): Kubernetes' own gangs have a spec, and every other spec
// runs the same with it.
func clusterScript(action string) {
	localCluster(clusterName, outputDir, action, "WORKLOAD_API=true")
}

// localCluster runs hack/local-cluster.sh for the cluster name, kept in dir, and returns
// what it printed on stdout.
func localCluster(name, dir, action string, env ...string) string {
	var stdout, stderr bytes.Buffer
	command := exec.Command(filepath.Join(repoRoot, "hack", "local-cluster.sh"), action)
	command.Env = append(append(os.Environ(), "CLUSTER_NAME="+name, "OUTPUT_DIR="+dir, "CONTROL_PLANE_DIR="+controlPlaneDir), env...)
	command.Stdout, command.Stderr = &stdout, &stderr
	Expect(command.Run()).To(Succeed(), "hack/local-cluster.sh %s:\n%s%s", action, stdout.String(), stderr.String())
	return strings.TrimSpace(stdout.String())
}

func run(dir string, name string, args ...string) {
	command := exec.Command(name, args...)
	command.Dir = dir
	output, err := command.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "%s %v:\n%s", name, args, output)
}

// kubectl runs kubectl against the cluster and returns its output.
func kubectl(args ...string) (string, error) {
	return runKubectl(kubeconfigPath, args...)
}

// runKubectl runs kubectl against the cluster of kubeconfig and returns its output.
func runKubectl(kubeconfig string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	command := exec.Command(filepath.Join(controlPlaneDir, "kubectl"), append([]string{"--kubeconfig", kubeconfig}, args...)...)
	command.Stdout, command.Stderr = &stdout, &stderr
	err := command.Run()
	if err != nil {
		return stdout.String(), fmt.Errorf("kubectl %v: %w: %s", args, err, stderr.String())
	}
	return stdout.String(), nil
}

// managedProcess is a binary the suite runs, with its log kept as an artifact.
type managedProcess struct {
	name, logPath string
	args, env     []string
	command       *exec.Cmd
	exited        chan struct{}
}

func startProcess(name string, args ...string) *managedProcess {
	return startProcessWithEnv(name, nil, args...)
}

// startProcessWithEnv starts args with env added to the test's environment.
func startProcessWithEnv(name string, env []string, args ...string) *managedProcess {
	p := &managedProcess{name: name, args: args, env: env, logPath: filepath.Join(outputDir, name+".log")}
	p.start()
	return p
}

// hostOperatorNamespace is the namespace of the operator the specs share, which runs as
// a process of this host: where it writes its admission policy's parameters.
const hostOperatorNamespace = "e2e-operator"

func (p *managedProcess) start() {
	logFile, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	Expect(err).NotTo(HaveOccurred())
	p.command = exec.Command(p.args[0], p.args[1:]...)
	if p.env != nil {
		p.command.Env = append(os.Environ(), p.env...)
	}
	p.command.Stdout, p.command.Stderr = logFile, logFile
	p.command.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	Expect(p.command.Start()).To(Succeed())
	p.exited = make(chan struct{})
	go func() { _ = p.command.Wait(); _ = logFile.Close(); close(p.exited) }()
}

// kill ends the process at once, as a crash or a node failure would.
func (p *managedProcess) kill() {
	_ = syscall.Kill(-p.command.Process.Pid, syscall.SIGKILL)
	<-p.exited
}

func (p *managedProcess) stop() {
	_ = syscall.Kill(-p.command.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.exited:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

func mustAbs(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		panic(err)
	}
	return abs
}

func envOr(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

var ctx = context.Background()
