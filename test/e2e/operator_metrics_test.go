//go:build e2e

package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/dashboard"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// operatorMetricsReaderRole is the ClusterRole the install manifests ship for whatever
// scrapes the operator's own metrics (config/rbac/metrics_reader_role.yaml): get on the
// non-resource URL /metrics. A cluster admin binds it; nothing is bound to it at install.
const operatorMetricsReaderRole = "secondary-scheduler-operator-metrics-reader"

// metricsScraper reaches the operator's metrics endpoint as a Prometheus would. It skips
// verifying the serving certificate only because the operator, installed without a
// certificate of its own, serves a self-signed one that nothing could verify: this spec
// checks whom the endpoint answers, not its certificate. A new connection for each
// request, so that none outlives the process it was made to.
var metricsScraper = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
	DisableKeepAlives: true,
	TLSClientConfig:   &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the operator's self-signed serving certificate
}}

// scrape GETs url with token as its bearer token (none when token is empty) and returns
// the response's status code and body.
func scrape(url, token string) (int, string, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		request.Header.Set("Authorization", "Bearer "+token)
	}
	response, err := metricsScraper.Do(request)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = response.Body.Close() }()
	body, err := io.ReadAll(response.Body)
	return response.StatusCode, string(body), err
}

// abbreviated is the start of a response body: enough to tell a refusal from metrics in
// a failure message, without every series the operator serves.
func abbreviated(body string) string {
	const limit = 200
	if len(body) <= limit {
		return body
	}
	return body[:limit] + "..."
}

// operatorMetricsURL is where the operator pod that c's podrunner runs serves /metrics.
// The pod declares --metrics-bind-address=:8443, which podrunner moves to a free port on
// loopback (pods share the host's); the process's own command line says which.
func (c *installCluster) operatorMetricsURL(pod corev1.Pod) string {
	return "https://" + c.processFlag(pod, "--metrics-bind-address") + "/metrics"
}

// schedulerMetricsURL is where the scheduler pod that c's podrunner runs serves /metrics:
// kube-scheduler's secure port, which podrunner moves to a free port (--secure-port).
func (c *installCluster) schedulerMetricsURL(pod corev1.Pod) string {
	return "https://127.0.0.1:" + c.processFlag(pod, "--secure-port") + "/metrics"
}

// processFlag is the value of flag on the command line of the process that c's podrunner
// runs for pod.
func (c *installCluster) processFlag(pod corev1.Pod, flag string) string {
	pid := pidIn(processDirIn(filepath.Join(c.dir, "podrunner"), pod))
	Expect(processAlive(pid)).To(BeTrue(), "the process of pod %s runs", pod.Name)
	commandLine, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	Expect(err).NotTo(HaveOccurred())
	for _, arg := range strings.Split(strings.TrimRight(string(commandLine), "\x00"), "\x00") {
		if value, ok := strings.CutPrefix(arg, flag+"="); ok {
			return value
		}
	}
	Fail(fmt.Sprintf("pod %s runs without %s=VALUE: %q", pod.Name, flag, commandLine))
	return ""
}

// operatorPods lists the running pods of the operator's Deployment in namespace.
func (c *installCluster) operatorPods(namespace string) []corev1.Pod {
	pods := &corev1.PodList{}
	Expect(c.client.List(ctx, pods, client.InNamespace(namespace), client.MatchingLabels{"control-plane": "controller-manager"})).To(Succeed())
	var running []corev1.Pod
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil {
			running = append(running, pod)
		}
	}
	return running
}

// schedulerPods lists the running scheduler pods of cr in c.
func (c *installCluster) schedulerPods(cr *v1.SecondaryScheduler) []corev1.Pod {
	pods := &corev1.PodList{}
	Expect(c.client.List(ctx, pods, client.InNamespace(cr.Namespace), client.MatchingLabels{render.LabelInstance: cr.Name})).To(Succeed())
	var running []corev1.Pod
	for _, pod := range pods.Items {
		if pod.DeletionTimestamp == nil && pod.Status.Phase == corev1.PodRunning {
			running = append(running, pod)
		}
	}
	Expect(running).NotTo(BeEmpty(), "a scheduler pod of %s runs", cr.Name)
	return running
}

// newScraperIdentity creates a ServiceAccount in namespace and returns a token of it from
// the TokenRequest API, as a Prometheus in the cluster would be given one.
func (c *installCluster) newScraperIdentity(namespace, name string) string {
	Expect(c.client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})).To(Succeed())
	// kubectl create token asks the TokenRequest API (serviceaccounts/token).
	return strings.TrimSpace(c.kubectl("-n", namespace, "create", "token", name, "--duration=1h"))
}

// On a cluster of its own, deleted after the specs with all they create there, so that
// they depend on no other spec and leave nothing behind for them. The cluster has the
// Prometheus Operator's API (its CRDs; no Prometheus Operator runs) before the operator
// is installed from dist/install.yaml.
var _ = Describe("The installed operator's metrics endpoint, and monitoring", Ordered, func() {
	var (
		c                        *installCluster
		boundToken, unboundToken string
	)
	BeforeAll(func() {
		c = newInstallCluster("install-metrics")
		for _, crd := range []*apiextensionsv1.CustomResourceDefinition{
			promtest.OperatorCRD("ServiceMonitor", "servicemonitors", "servicemonitor"),
			promtest.OperatorCRD("PrometheusRule", "prometheusrules", "prometheusrule"),
		} {
			Expect(c.client.Create(ctx, crd)).To(Succeed())
		}
		c.kubectl("apply", "--server-side", "-f", filepath.Join(repoRoot, "dist", "install.yaml"))
		// Pods naming a scheduler nobody provides are told after 10 s rather than 2 minutes.
		c.kubectl("-n", installNamespace, "patch", "deployment", operatorDeployment, "--type=json",
			"-p", `[{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"--stranded-pod-grace=10s"}]`)
		c.waitOperatorRunning(installNamespace)

		Expect(c.client.Get(ctx, client.ObjectKey{Name: operatorMetricsReaderRole}, &rbacv1.ClusterRole{})).To(Succeed(),
			"dist/install.yaml ships ClusterRole %s", operatorMetricsReaderRole)
		const scrapersNamespace = "monitoring"
		c.createNamespace(scrapersNamespace)
		boundToken = c.newScraperIdentity(scrapersNamespace, "allowed-scraper")
		Expect(c.client.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "allowed-scraper-operator-metrics"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: operatorMetricsReaderRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: scrapersNamespace, Name: "allowed-scraper"}},
		})).To(Succeed())
		unboundToken = c.newScraperIdentity(scrapersNamespace, "unbound-scraper")
		Eventually(func() string { return c.leadingOperatorPod().Name }).ShouldNot(BeEmpty(), "an operator replica leads")
	})

	It("serves metrics only to a caller bound to the shipped metrics-reader ClusterRole: 401 without or with a bad token, 403 unbound", func() {
		// A Service spreads scrapes over the replicas: each must guard its endpoint. Only
		// the leader runs the controllers, so only its metrics have the reconcile counts.
		leader := c.leadingOperatorPod()
		pods := c.operatorPods(installNamespace)
		Expect(pods).To(HaveLen(2), "both replicas of dist/install.yaml run")
		for _, pod := range pods {
			url := c.operatorMetricsURL(pod)
			By(fmt.Sprintf("scraping %s of replica %s", url, pod.Name))

			// Eventually: the API server's RBAC sees the new binding a moment later, and the
			// operator keeps a refusal for seconds (metricsauth.DeniedTTL).
			Eventually(func(g Gomega) {
				status, body, err := scrape(url, boundToken)
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(status).To(Equal(http.StatusOK), abbreviated(body))
				if pod.Name == leader.Name {
					g.Expect(body).To(ContainSubstring("controller_runtime_reconcile_total"))
				}
			}).Should(Succeed(), "the bound scraper reads the metrics of %s", pod.Name)

			status, body, err := scrape(url, unboundToken)
			Expect(err).NotTo(HaveOccurred())
			Expect(status).To(Equal(http.StatusForbidden), "a ServiceAccount not bound to %s: %s", operatorMetricsReaderRole, abbreviated(body))

			status, body, err = scrape(url, "")
			Expect(err).NotTo(HaveOccurred())
			Expect(status).To(Equal(http.StatusUnauthorized), "no bearer token: %s", abbreviated(body))

			status, body, err = scrape(url, "not-a-token-of-this-cluster")
			Expect(err).NotTo(HaveOccurred())
			Expect(status).To(Equal(http.StatusUnauthorized), "a token the API server does not authenticate: %s", abbreviated(body))
		}
	})

	It("applies its ServiceMonitors and the PrometheusRule of its alerts at start, with its shipped RBAC, since the cluster has the API", func() {
		want, err := render.MonitoringObjects(installNamespace, []string{installNamespace}, nil)
		Expect(err).NotTo(HaveOccurred())
		for _, object := range want {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(object.GroupVersionKind())
			Eventually(func() error { return c.client.Get(ctx, client.ObjectKeyFromObject(object), got) }).Should(Succeed(),
				"%s %s/%s applied", object.GetKind(), object.GetNamespace(), object.GetName())
			Expect(got.Object["spec"]).To(Equal(object.Object["spec"]))
		}
	})

	It("is scraped with its schedulers by a real Prometheus through the shipped ClusterRole: every series the dashboard uses, and the alerts fire", func() {
		By("what makes every series: a bin-packing scheduler placing pods and with one waiting, a load-aware one reading a real Prometheus with a bound token, " +
			"a refused one, a pod naming a scheduler nobody provides")
		prometheus := promtest.Start(GinkgoT())
		packer := binPacking(installNamespace, "packer")
		packer.Spec.PendingPodThreshold = &metav1.Duration{Duration: 10 * time.Second}
		Expect(c.client.Create(ctx, packer)).To(Succeed())
		c.kubectl("-n", installNamespace, "wait", "--for=condition=Available", "secondaryscheduler/packer", "--timeout=120s")
		c.expectBinds("packer", "packed")
		waiting := workload(workloadNamespace, "waits-for-packer", "packer", "100m", "registry.example/app:1")
		waiting.Spec.NodeSelector = map[string]string{"no-such-label": "anywhere"}
		stranded := workload(workloadNamespace, "names-a-typo", "packr", "100m", "registry.example/app:1")
		Expect(c.client.Create(ctx, waiting)).To(Succeed())
		Expect(c.client.Create(ctx, stranded)).To(Succeed())

		nodes := &corev1.NodeList{}
		Expect(c.client.List(ctx, nodes)).To(Succeed())
		load := map[string]float64{}
		for _, node := range nodes.Items {
			load[node.Name] = 0.3
		}
		for _, series := range metricsprobe.Series {
			prometheus.SetSeries(series, load)
		}
		Expect(c.client.Create(ctx, monitoringViewRole())).To(Succeed())
		loadAware := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: installNamespace, Name: "load-packer"},
			Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
				Metrics: &v1.LoadMetrics{Address: prometheus.URL, ServiceAccountToken: &v1.ServiceAccountTokenAuth{}}}}}
		Expect(c.client.Create(ctx, loadAware)).To(Succeed())
		refused := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: installNamespace, Name: "misconfigured"},
			Spec: v1.SecondarySchedulerSpec{SchedulerConfig: "no-such-configmap"}}
		Expect(c.client.Create(ctx, refused)).To(Succeed())

		By("a Prometheus scraping both operator replicas and the packer's scheduler, with the token of a ServiceAccount bound only to " + operatorMetricsReaderRole +
			", evaluating config/prometheus/alert-rules.yaml with every 'for' cut to 5s")
		tokenFile := filepath.Join(c.dir, "scraper-token")
		Expect(os.WriteFile(tokenFile, []byte(boundToken), 0o600)).To(Succeed())
		operatorPods := c.operatorPods(installNamespace)
		operatorTargets := make([]string, 0, len(operatorPods))
		for _, pod := range operatorPods {
			operatorTargets = append(operatorTargets, strings.TrimSuffix(strings.TrimPrefix(c.operatorMetricsURL(pod), "https://"), "/metrics"))
		}
		schedulerPod := c.schedulerPods(packer)[0]
		schedulerTarget := strings.TrimSuffix(strings.TrimPrefix(c.schedulerMetricsURL(schedulerPod), "https://"), "/metrics")
		scrapeConfigs := fmt.Sprintf(`- job_name: secondary-scheduler-operator
  scheme: https
  honor_labels: true
  authorization: {credentials_file: %[1]q}
  tls_config: {insecure_skip_verify: true}
  static_configs: [{targets: [%[2]s]}]
- job_name: secondary-scheduler
  scheme: https
  authorization: {credentials_file: %[1]q}
  tls_config: {insecure_skip_verify: true}
  static_configs: [{targets: [%[3]q], labels: {namespace: %[4]q, secondary_scheduler: packer, pod: %[5]q}}]
`, tokenFile, quotedList(operatorTargets), schedulerTarget, installNamespace, schedulerPod.Name)
		monitor := promtest.StartWith(GinkgoT(), promtest.Options{ScrapeConfigs: scrapeConfigs})
		rules, err := os.ReadFile(filepath.Join(repoRoot, "config", "prometheus", "alert-rules.yaml"))
		Expect(err).NotTo(HaveOccurred())
		Expect(monitor.LoadRules(regexp.MustCompile(`(?m)^(\s+for:) \S+$`).ReplaceAll(rules, []byte("$1 5s")))).To(Succeed())

		Eventually(func(g Gomega) {
			up, err := monitor.Query(`up{job=~"secondary-scheduler-operator|secondary-scheduler"}`)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(up).To(HaveLen(len(operatorTargets)+1), "both operator replicas and the scheduler are targets")
			for _, target := range up {
				g.Expect(target["__value__"]).To(Equal("1"), "target %s is scraped: Prometheus' token passes TokenReview and SubjectAccessReview", target["instance"])
			}
		}).Should(Succeed())

		By("every metric the dashboard queries is one a real scrape returned")
		used, err := dashboard.MetricNames(filepath.Join(repoRoot, "config", "grafana", "secondary-schedulers.json"))
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			held, err := monitor.MetricNames()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(held).To(ContainElements(used))
		}, "3m").Should(Succeed())

		By("the alerts of what this spec broke fire, with the labels that say where")
		Eventually(func(g Gomega) {
			alerts, err := monitor.Alerts()
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(alerts).To(ContainElement(SatisfyAll(
				HaveField("Labels", HaveKeyWithValue("alertname", "SecondarySchedulerPodsPending")),
				HaveField("Labels", HaveKeyWithValue("secondary_scheduler", "packer")),
				HaveField("Labels", HaveKeyWithValue("namespace", installNamespace)),
				HaveField("State", "firing"))))
			g.Expect(alerts).To(ContainElement(SatisfyAll(
				HaveField("Labels", HaveKeyWithValue("alertname", "SecondarySchedulerUnknownSchedulerName")),
				HaveField("Labels", HaveKeyWithValue("scheduler_name", "packr")),
				HaveField("State", "firing"))))
			g.Expect(alerts).To(ContainElement(SatisfyAll(
				HaveField("Labels", HaveKeyWithValue("alertname", "SecondarySchedulerDegraded")),
				HaveField("Labels", HaveKeyWithValue("secondary_scheduler", "misconfigured")),
				HaveField("State", "firing"))))
		}, "3m").Should(Succeed())
	})
})

// quotedList is items as a YAML flow list's items: "a", "b".
func quotedList(items []string) string {
	quoted := make([]string, 0, len(items))
	for _, item := range items {
		quoted = append(quoted, strconv.Quote(item))
	}
	return strings.Join(quoted, ", ")
}
