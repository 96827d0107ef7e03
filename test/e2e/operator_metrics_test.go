//go:build e2e

package e2e

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	pid := pidIn(processDirIn(filepath.Join(c.dir, "podrunner"), pod))
	Expect(processAlive(pid)).To(BeTrue(), "the process of operator pod %s runs", pod.Name)
	commandLine, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	Expect(err).NotTo(HaveOccurred())
	for _, arg := range strings.Split(strings.TrimRight(string(commandLine), "\x00"), "\x00") {
		if address, ok := strings.CutPrefix(arg, "--metrics-bind-address="); ok {
			return "https://" + address + "/metrics"
		}
	}
	Fail(fmt.Sprintf("operator pod %s runs without --metrics-bind-address=ADDRESS: %q", pod.Name, commandLine))
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

// newScraperIdentity creates a ServiceAccount in namespace and returns a token of it from
// the TokenRequest API, as a Prometheus in the cluster would be given one.
func (c *installCluster) newScraperIdentity(namespace, name string) string {
	Expect(c.client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}})).To(Succeed())
	// kubectl create token asks the TokenRequest API (serviceaccounts/token).
	return strings.TrimSpace(c.kubectl("-n", namespace, "create", "token", name, "--duration=1h"))
}

var _ = Describe("The installed operator's metrics endpoint", func() {
	// On a cluster of its own, deleted after the spec with all the spec creates there, so
	// that it depends on no other spec and leaves nothing behind for them.
	It("serves metrics only to a caller bound to the shipped metrics-reader ClusterRole: 401 without or with a bad token, 403 unbound", func() {
		c := newInstallCluster("install-metrics")
		c.kubectl("apply", "--server-side", "-f", filepath.Join(repoRoot, "dist", "install.yaml"))
		const namespace = "secondary-scheduler-operator"
		c.waitOperatorRunning(namespace)

		By("a scraper bound to the shipped ClusterRole, and one bound to nothing")
		Expect(c.client.Get(ctx, client.ObjectKey{Name: operatorMetricsReaderRole}, &rbacv1.ClusterRole{})).To(Succeed(),
			"dist/install.yaml ships ClusterRole %s", operatorMetricsReaderRole)
		const scrapersNamespace = "monitoring"
		c.createNamespace(scrapersNamespace)
		boundToken := c.newScraperIdentity(scrapersNamespace, "allowed-scraper")
		Expect(c.client.Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "allowed-scraper-operator-metrics"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: operatorMetricsReaderRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: scrapersNamespace, Name: "allowed-scraper"}},
		})).To(Succeed())
		unboundToken := c.newScraperIdentity(scrapersNamespace, "unbound-scraper")

		// A Service spreads scrapes over the replicas: each must guard its endpoint. Only
		// the leader runs the controllers, so only its metrics have the reconcile counts.
		Eventually(func() string { return c.leadingOperatorPod(namespace).Name }).ShouldNot(BeEmpty(), "an operator replica leads")
		leader := c.leadingOperatorPod(namespace)
		pods := c.operatorPods(namespace)
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
})
