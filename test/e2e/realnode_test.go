//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/images"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/netnshost"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// The specs of this file run on a real node what the others run through podrunner: a
// kubelet with containerd and runc (hack/real-node.sh) runs the operator's and the
// schedulers' images, built here from this checkout's binaries (test/images) and
// imported, as containers, with the users, read-only root file systems, dropped
// capabilities, seccomp profiles, probes and projected tokens that the manifests and the
// operator's rendering give them. Nothing is pulled: no registry is reachable.

// realNodeName is the node hack/real-node.sh adds.
const realNodeName = "real-node"

// pauseImage is the image of the real node's pod sandboxes and of the workloads here.
const pauseImage = "registry.k8s.io/pause:3.10"

// realNodeImages are the images the real node holds: the operator's under the reference
// dist/install.yaml names, the pause image, the schedulers' and the test extender's.
type realNodeImages struct {
	archive string
	// scheduler is what BinPacking schedulers set as spec.schedulerImage: empty (the
	// default, scheduler-plugins' release) when SCHEDULER_PLUGINS_BINARY gives that build,
	// else Kubernetes' own kube-scheduler of the control plane's version.
	scheduler string
}

// buildRealNodeImages builds the images into an archive in dir, from static builds of this
// checkout and the control plane's kube-scheduler, and the extra images given.
func buildRealNodeImages(dir string, extra ...images.Spec) realNodeImages {
	Expect(os.MkdirAll(dir, 0o755)).To(Succeed())
	static := func(name, pkg string) string {
		binary := filepath.Join(dir, name)
		run(repoRoot, "env", "CGO_ENABLED=0", "go", "build", "-ldflags", "-s -w", "-o", binary, pkg)
		return binary
	}
	kubeVersion := envOr("KUBE_VERSION", "v1.37.2")
	inTree := "registry.k8s.io/kube-scheduler:" + kubeVersion
	specs := []images.Spec{
		images.Operator(installedOperatorImage(), static("manager", "."), static("kubectl-secondary_scheduler", "./cmd/kubectl-secondary_scheduler")),
		images.Pause(pauseImage, static("pause", "./test/pause")),
		images.Scheduler(inTree, render.KubeSchedulerImage, filepath.Join(controlPlaneDir, "kube-scheduler")),
		{Reference: extenderImage, Files: []images.File{{Path: "/extender", Source: static("extender", "./test/extender")}},
			Entrypoint: []string{"/extender"}, User: images.NonRootUser},
	}
	built := realNodeImages{archive: filepath.Join(dir, "images.tar"), scheduler: inTree}
	if plugins := os.Getenv("SCHEDULER_PLUGINS_BINARY"); plugins != "" {
		minor, err := strconv.Atoi(strings.Split(kubeVersion, ".")[1])
		Expect(err).NotTo(HaveOccurred())
		defaultImage := render.SchedulerImage(&v1.SecondaryScheduler{}, minor)
		specs = append(specs, images.Scheduler(defaultImage.Reference, defaultImage.Kind, plugins))
		built.scheduler = ""
	}
	Expect(images.Write(built.archive, append(specs, extra...)...)).To(Succeed())
	return built
}

// installedOperatorImage is the operator image dist/install.yaml runs.
func installedOperatorImage() string {
	for _, document := range strings.Split(readFile(filepath.Join(repoRoot, "dist", "install.yaml")), "\n---\n") {
		object := &unstructured.Unstructured{}
		Expect(yaml.Unmarshal([]byte(document), &object.Object)).To(Succeed())
		if object.GetKind() != "Deployment" {
			continue
		}
		containers, _, err := unstructured.NestedSlice(object.Object, "spec", "template", "spec", "containers")
		Expect(err).NotTo(HaveOccurred())
		Expect(containers).To(HaveLen(1), "dist/install.yaml's Deployment runs the manager alone")
		return containers[0].(map[string]any)["image"].(string)
	}
	Fail("dist/install.yaml has no Deployment")
	return ""
}

// newRealNodeCluster is a cluster of its own whose one real node holds the images built,
// beside fakeNodes kwok nodes (tainted, for workloads that tolerate it: hack/local-cluster.sh).
func newRealNodeCluster(name string, built realNodeImages, fakeNodes int) *installCluster {
	dir := filepath.Join(outputDir, name)
	// The node enforces NetworkPolicies, as a cluster's network plugin may: every spec on it
	// runs with the policies the operator renders in force.
	nodeEnv := []string{"CLUSTER_NAME=" + name, "OUTPUT_DIR=" + dir, "CONTROL_PLANE_DIR=" + controlPlaneDir, "IMAGES=" + built.archive,
		"NETWORK_POLICIES=kube-router"}
	realNode(nodeEnv, "down") // a node left over from an interrupted run
	localCluster(name, dir, "down")
	localCluster(name, dir, "up", "APPLY_CRD=false", "REAL_NODE=true", "FAKE_NODES="+strconv.Itoa(fakeNodes))
	c := connectInstallCluster(name, dir)
	DeferCleanup(func() {
		if CurrentSpecReport().Failed() {
			dumpInstallCluster(c, dir)
			fmt.Fprintf(GinkgoWriter, "the real node's containerd, kubelet and kube-proxy logs are under %s\n", filepath.Join(dir, "node", "logs"))
		}
		if os.Getenv("E2E_KEEP_CLUSTER") == "" {
			By("stopping the real node and its cluster")
			realNode(nodeEnv, "down")
			localCluster(name, dir, "down")
		}
	})
	By("starting the real node")
	realNode(nodeEnv, "up")
	c.createNamespace(workloadNamespace)
	return c
}

// realNode runs hack/real-node.sh.
func realNode(env []string, action string) {
	run(repoRoot, "env", append(env, filepath.Join(repoRoot, "hack", "real-node.sh"), action)...)
}

// realWorkload is a pod that the real node runs: the pause image, asking for schedulerName.
func realWorkload(name, schedulerName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: workloadNamespace, Name: name, Labels: map[string]string{"e2e": "workload"}},
		Spec: corev1.PodSpec{
			SchedulerName:                 schedulerName,
			TerminationGracePeriodSeconds: new(int64),
			Containers: []corev1.Container{{Name: "app", Image: pauseImage, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")},
			}}},
		},
	}
}

// expectRunsPodsOnRealNode creates a pod asking for schedulerName and waits until the
// real node runs it (expectPlacedOnRealNode).
func (c *installCluster) expectRunsPodsOnRealNode(schedulerName, podName string) {
	pod := realWorkload(podName, schedulerName)
	Expect(c.client.Create(ctx, pod)).To(Succeed())
	c.expectPlacedOnRealNode(pod, schedulerName)
}

// expectPlacedOnRealNode waits until the real node runs pod: bound by schedulerName, as
// its Scheduled Event says, and its container started by the kubelet.
func (c *installCluster) expectPlacedOnRealNode(pod *corev1.Pod, schedulerName string) {
	Eventually(func() string {
		if err := c.client.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err.Error()
		}
		return pod.Spec.NodeName + "/" + string(pod.Status.Phase)
	}).Should(Equal(realNodeName+"/"+string(corev1.PodRunning)), "pod %s is bound by %s and runs", pod.Name, schedulerName)
	Eventually(func() string {
		events := &eventsv1.EventList{}
		if err := c.client.List(ctx, events, client.InNamespace(workloadNamespace)); err != nil {
			return err.Error()
		}
		for _, event := range events.Items {
			if event.Regarding.Name == pod.Name && event.Reason == "Scheduled" {
				return event.ReportingController
			}
		}
		return ""
	}).Should(Equal(schedulerName), "the Scheduled event of %s names its scheduler", pod.Name)
}

// readyPodsOf returns the UIDs of the pods matching selector in dist/install.yaml's
// namespace that the real node's kubelet found ready by their probes, and how many match
// in all.
func (c *installCluster) readyPodsOf(selector map[string]string) (ready []types.UID, all int) {
	pods := &corev1.PodList{}
	Expect(c.client.List(ctx, pods, client.InNamespace(installNamespace), client.MatchingLabels(selector))).To(Succeed())
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil && pod.Spec.NodeName == realNodeName && slices.ContainsFunc(pod.Status.Conditions, func(condition corev1.PodCondition) bool {
			return condition.Type == corev1.PodReady && condition.Status == corev1.ConditionTrue
		}) {
			ready = append(ready, pod.UID)
		}
	}
	return ready, len(pods.Items)
}

// startNodeLoadPrometheus starts a Prometheus on a test host of its own (a network
// namespace named name, on subnet index subnet), which the real node's pods reach through
// the node, serving a load of 30 % for the real node on every series load-watcher reads,
// and returns both once it has scraped them. Both stop with the spec.
func startNodeLoadPrometheus(name string, subnet int) (*netnshost.Host, *promtest.Server) {
	host, err := netnshost.New(name, subnet)
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(host.Close)
	prometheus := promtest.StartWith(GinkgoT(), promtest.Options{Host: host})
	for _, series := range metricsprobe.Series {
		prometheus.SetSeries(series, map[string]float64{realNodeName: 0.3})
	}
	// The operator's first probe must find the series: one that finds none is retried
	// only after a minute or more, which would make the spec a race with the scrape.
	for _, series := range metricsprobe.Series {
		Eventually(func() ([]map[string]string, error) {
			return prometheus.Query(fmt.Sprintf("%s{instance=%q}", series, realNodeName))
		}).Should(HaveLen(1), "Prometheus scrapes %s of node %s", series, realNodeName)
	}
	return host, prometheus
}

// podNetworkNamespace is the network namespace of the real node's pod whose address is
// ip: one CNI made (named cni-...), holding that address.
func podNetworkNamespace(ip string) string {
	output, err := exec.Command("ip", "netns", "list").Output()
	Expect(err).NotTo(HaveOccurred())
	for line := range strings.Lines(string(output)) {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		if !strings.HasPrefix(name, "cni-") {
			continue
		}
		addresses, err := exec.Command("ip", "-n", name, "-4", "-o", "addr", "show").Output()
		if err == nil && strings.Contains(string(addresses), " "+ip+"/") {
			return name
		}
	}
	Fail("no network namespace of the real node holds " + ip)
	return ""
}

// httpStatus is the HTTP status of a GET of address from network namespace namespace (""
// for the node's own), its certificate unchecked: "000" when no answer came (a connection
// refused or rejected, or none within 5 s).
func httpStatus(namespace, address string) string {
	command := []string{"curl", "-s", "-k", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", address}
	if namespace != "" {
		command = append([]string{"ip", "netns", "exec", namespace}, command...)
	}
	// curl exits non-zero when no answer came, and still prints 000.
	output, _ := exec.Command(command[0], command[1:]...).Output()
	return strings.TrimSpace(string(output))
}

// runLoadAwareScheduler creates a TargetLoadPacking scheduler named name in namespace,
// reading a Prometheus of its own on test host hostName (startNodeLoadPrometheus, subnet
// index subnet), and waits until it is Available.
func (c *installCluster) runLoadAwareScheduler(namespace, name, hostName string, subnet int) *v1.SecondaryScheduler {
	By("a Prometheus on a test host of its own, which the pods reach through the node, serving the node's load")
	_, prometheus := startNodeLoadPrometheus(hostName, subnet)
	loadAware := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Address: prometheus.URL}}}}
	Expect(c.client.Create(ctx, loadAware)).To(Succeed())
	c.kubectl("-n", namespace, "wait", "--for=condition=Available", "secondaryscheduler/"+name, "--timeout=300s")
	return loadAware
}

// extenderImage is the test extender's image (test/extender), which the real node holds.
const extenderImage = "registry.example/e2e/extender:v1"

// realNodeLabel marks the specs of a real node: make test runs them apart from the others,
// after the docs test, whose cluster has a real node too (two kube-proxies would rewrite each
// other's rules of the machine).
const realNodeLabel = "real-node"

// On a cluster of its own, with one node, a real one, holding the images built from this
// checkout; the operator is installed from dist/install.yaml, and the specs share it.
var _ = Describe("On a real node", Ordered, Label(realNodeLabel), func() {
	const namespace = installNamespace
	var (
		c     *installCluster
		built realNodeImages
	)
	BeforeAll(func() {
		built = buildRealNodeImages(filepath.Join(outputDir, "real-node-images"))
		c = newRealNodeCluster("real-node", built, 0)
		c.kubectl("apply", "--server-side", "-f", filepath.Join(repoRoot, "dist", "install.yaml"))
	})

	It("runs the operator from dist/install.yaml: both replicas Ready by the kubelet's probes, one leading, reaching the API server through the kubernetes Service", func() {
		c.waitOperatorRunning(namespace)
		ready, all := c.readyPodsOf(map[string]string{"control-plane": "controller-manager"})
		Expect(ready).To(HaveLen(2), "of %d operator pods", all)
		Eventually(func() string { return c.leadingOperatorPod().Name }).ShouldNot(BeEmpty(), "an operator replica leads")
		Expect(c.kubectl("get", "namespace", namespace, "-o", "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/enforce}")).
			To(Equal("restricted"), "the schedulers' namespace admits restricted pods only")
	})

	It("runs a BinPacking scheduler as a container, Available once the kubelet's probes pass, binding pods that run, and rolls it on an edit", func() {
		packer := binPacking(namespace, "packer")
		packer.Spec.SchedulerImage = built.scheduler
		Expect(c.client.Create(ctx, packer)).To(Succeed())
		c.kubectl("-n", namespace, "wait", "--for=condition=Available", "secondaryscheduler/packer", "--timeout=120s")
		schedulerPods := render.PodSelector(packer)
		before, _ := c.readyPodsOf(schedulerPods)
		Expect(before).To(HaveLen(1))
		c.expectRunsPodsOnRealNode("packer", "packed-0")
		Expect(c.kubectl("-n", namespace, "logs", "deployment/"+render.WorkloadName(packer))).NotTo(BeEmpty(),
			"the kubelet serves the scheduler's log")

		By("an edit of the profile: a pod of the new configuration replaces the old one")
		Expect(updateSpec(c.client, packer, func(packer *v1.SecondaryScheduler) {
			packer.Spec.Profile.BinPacking = &v1.BinPackingArgs{ResourceWeights: map[corev1.ResourceName]int64{corev1.ResourceCPU: 3, corev1.ResourceMemory: 1}}
		})).To(Succeed())
		c.kubectl("-n", namespace, "wait", "--for=condition=Reconciling=False", "secondaryscheduler/packer", "--timeout=120s")
		Eventually(func() []types.UID {
			after, all := c.readyPodsOf(schedulerPods)
			if all != len(after) {
				return nil // the old pod is still going
			}
			return after
		}).Should(And(HaveLen(1), Not(ContainElement(before[0]))), "the old pod is replaced")
		c.expectRunsPodsOnRealNode("packer", "packed-1")
	})

	It("runs a TargetLoadPacking scheduler as a container reading a real Prometheus, binding pods that run", func() {
		skipWithoutTargetLoadPacking()
		c.runLoadAwareScheduler(namespace, "load-aware", "ssop-e2e-real", 79)
		Eventually(func() string {
			return c.condition(namespace, "load-aware", "MetricsAvailable", "status")
		}).Should(Equal(string(metav1.ConditionTrue)))
		c.expectRunsPodsOnRealNode("load-aware", "load-aware-0")
	})

	// kube-scheduler serves /livez only once it has built its plugins, and TargetLoadPacking
	// is built once its load-watcher has fetched 3 windows of 34 queries, one after another.
	It("starts a TargetLoadPacking scheduler whose Prometheus answers each query late, without the kubelet restarting it", func() {
		skipWithoutTargetLoadPacking()
		const (
			queryDelay = time.Second
			// startQueries are the queries load-watcher v0.2.4 sends before the scheduler
			// serves /livez: at queryDelay each, longer than a liveness probe allows
			// (3 failures 10 s apart).
			startQueries = 3 * 2 * 17
		)
		By("a Prometheus behind a proxy that holds every request a second, which the pods reach through the node")
		host, prometheus := startNodeLoadPrometheus("ssop-e2e-slow", 80)
		target, err := url.Parse(prometheus.URL)
		Expect(err).NotTo(HaveOccurred())
		proxy := promtest.NewDelayingProxy(target, queryDelay)
		listener, err := net.Listen("tcp", net.JoinHostPort(host.HostAddress, "0"))
		Expect(err).NotTo(HaveOccurred())
		server := &http.Server{Handler: proxy, ReadHeaderTimeout: 10 * time.Second}
		go func() { _ = server.Serve(listener) }()
		DeferCleanup(server.Close)

		slow := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "slow-metrics"},
			Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
				Metrics: &v1.LoadMetrics{Address: "http://" + listener.Addr().String()}}}}
		Expect(c.client.Create(ctx, slow)).To(Succeed())
		// Within the startup probe's allowance, which the pod template gives.
		c.kubectl("-n", namespace, "wait", "--for=condition=Available", "secondaryscheduler/slow-metrics", "--timeout=600s")
		Expect(proxy.Counts().Received).To(BeNumerically(">=", startQueries), "the scheduler started only after load-watcher's queries")
		pods := &corev1.PodList{}
		Expect(c.client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(render.PodSelector(slow)))).To(Succeed())
		Expect(pods.Items).To(HaveLen(1))
		Expect(pods.Items[0].Status.ContainerStatuses).To(ConsistOf(And(
			HaveField("Name", "kube-scheduler"), HaveField("Ready", true), HaveField("RestartCount", BeZero()))),
			"the kubelet waited for the scheduler to start")
		c.expectRunsPodsOnRealNode("slow-metrics", "slow-metrics-0")
	})

	// load-watcher, built into a load-aware scheduler, serves Go's profiler on :2020 to
	// anyone; the real node enforces NetworkPolicies (kube-router, hack/real-node.sh).
	It("closes what a load-aware scheduler's pods serve to no one: another pod reaches its metrics port and not load-watcher's, which the node still reaches", func() {
		skipWithoutTargetLoadPacking()
		guarded := c.runLoadAwareScheduler(namespace, "guarded", "ssop-e2e-netpol", 81)
		Expect(c.kubectl("-n", namespace, "get", "networkpolicy", render.WorkloadName(guarded), "-o", "jsonpath={.spec.ingress[*].ports[*].port}")).
			To(Equal("10259"), "the scheduler pods' NetworkPolicy admits the port kube-scheduler declares, and no other")
		pods := &corev1.PodList{}
		Expect(c.client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(render.PodSelector(guarded)))).To(Succeed())
		Expect(pods.Items).To(HaveLen(1))
		scheduler := pods.Items[0].Status.PodIP
		Expect(scheduler).NotTo(BeEmpty())

		By("a pod of the workload namespace, placed by the scheduler on the real node, reaching the scheduler pod from its own network namespace")
		c.expectRunsPodsOnRealNode("guarded", "guarded-client")
		clientPod := &corev1.Pod{}
		Expect(c.client.Get(ctx, types.NamespacedName{Namespace: workloadNamespace, Name: "guarded-client"}, clientPod)).To(Succeed())
		clientNetwork := podNetworkNamespace(clientPod.Status.PodIP)
		watcher := "http://" + net.JoinHostPort(scheduler, "2020") + "/watcher"
		livez := "https://" + net.JoinHostPort(scheduler, "10259") + "/livez"
		Eventually(func() string { return httpStatus("", watcher) }).Should(Equal("200"),
			"load-watcher serves node utilisation on port 2020, and the node, whose traffic NetworkPolicies admit, reaches it")
		Eventually(func() string { return httpStatus(clientNetwork, livez) }).Should(Equal("200"),
			"another pod reaches the port the scheduler pods' NetworkPolicy admits")
		Eventually(func() string { return httpStatus(clientNetwork, watcher) }).Should(Equal("000"),
			"another pod does not reach load-watcher's port, which no NetworkPolicy admits")
		// Refused every time, not once: a connection that failed for another reason would
		// have passed the line above alone.
		Consistently(func() string { return httpStatus(clientNetwork, watcher) }, "10s", "2s").Should(Equal("000"))
		Expect(httpStatus("", watcher)).To(Equal("200"), "load-watcher still serves the node meanwhile")
	})

	It("runs an extender container beside a scheduler, which the scheduler asks for every pod", func() {
		filtered := binPacking(namespace, "filtered")
		filtered.Spec.SchedulerImage = built.scheduler
		extender := func(args ...string) []v1.Extender {
			return []v1.Extender{{Name: "test", FilterVerb: "filter", NodeCacheCapable: true, Container: &v1.ExtenderContainer{
				Image: extenderImage, Port: 9300, Args: append([]string{"--listen=:9300"}, args...)}}}
		}
		filtered.Spec.Extenders = extender("--reject=" + realNodeName)
		Expect(c.client.Create(ctx, filtered)).To(Succeed())
		c.kubectl("-n", namespace, "wait", "--for=condition=Available", "secondaryscheduler/filtered", "--timeout=120s")
		pods := &corev1.PodList{}
		Expect(c.client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels(render.PodSelector(filtered)))).To(Succeed())
		Expect(pods.Items).To(HaveLen(1))
		Expect(pods.Items[0].Status.ContainerStatuses).To(HaveLen(2))
		for _, container := range pods.Items[0].Status.ContainerStatuses {
			Expect(container.Ready).To(BeTrue(), "container %s is Ready by the kubelet's probe", container.Name)
		}

		By("the extender rejects the node: the pod waits, and its Event quotes the extender")
		pod := realWorkload("extended", "filtered")
		Expect(c.client.Create(ctx, pod)).To(Succeed())
		// Any of the pod's FailedScheduling Events: an earlier attempt's may say something
		// else, and the list's order says nothing of which came first.
		Eventually(func() []string {
			events := &eventsv1.EventList{}
			Expect(c.client.List(ctx, events, client.InNamespace(workloadNamespace))).To(Succeed())
			var notes []string
			for _, event := range events.Items {
				if event.Regarding.Name == pod.Name && event.Reason == "FailedScheduling" {
					notes = append(notes, event.Note)
				}
			}
			return notes
		}).Should(ContainElement(ContainSubstring("rejected by the test extender")))

		By("the extender accepts it after an edit of its arguments: the pod waiting is placed")
		Expect(updateSpec(c.client, filtered, func(filtered *v1.SecondaryScheduler) { filtered.Spec.Extenders = extender() })).To(Succeed())
		c.expectPlacedOnRealNode(pod, "filtered")
	})

	It("reports an image the node cannot pull with its reason, and leaves the running schedulers alone", func() {
		unpullable := binPacking(namespace, "unpullable")
		// A registry at a closed port of this machine: the pull fails at once, whatever the
		// machine's resolver does with names it cannot resolve.
		unpullable.Spec.SchedulerImage = "127.0.0.1:9/nowhere/kube-scheduler:" + envOr("KUBE_VERSION", "v1.37.2")
		Expect(c.client.Create(ctx, unpullable)).To(Succeed())
		Eventually(func() string {
			return c.condition(namespace, "unpullable", "Degraded", "reason")
		}).Should(Equal(string(v1.ReasonImagePullFailed)))
		Expect(c.client.Delete(ctx, unpullable)).To(Succeed())
		c.expectRunsPodsOnRealNode("packer", "packed-2")
	})
})
