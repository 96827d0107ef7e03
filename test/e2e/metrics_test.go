//go:build e2e

package e2e

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/netnshost"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/rbacproxy"
)

func monitoringViewRole() *rbacv1.ClusterRole {
	return rbacproxy.ClusterRoleAllowing("cluster-monitoring-view", rbacproxy.ThanosQuerierAccess)
}

// A real Prometheus on a host of its own (a network namespace), reachable only the way a
// pod is: through a Service and its EndpointSlice. OpenShift monitoring is played by
// that Service in openshift-monitoring in front of a TLS proxy doing TokenReview and
// SubjectAccessReview against the cluster's API server; the Prometheus Operator by its
// CRD, a Prometheus object and prometheus-operated.
var _ = Describe("Load-aware scheduling metrics", Ordered, func() {
	var (
		host       *netnshost.Host
		prometheus *promtest.Server
		proxy      *rbacproxy.Proxy
		namespace  string
		nodeNames  []string
		scheduler  *v1.SecondaryScheduler
		// servedSince is when the exporter first served the series.
		servedSince time.Time
	)
	serveLoad := func(instanceOf func(node string, i int) string) {
		load := map[string]float64{}
		for i, node := range nodeNames {
			load[instanceOf(node, i)] = 0.3
		}
		for _, series := range metricsprobe.Series {
			prometheus.SetSeries(series, load)
		}
	}
	byNodeName := func(node string, _ int) string { return node }
	metricsCondition := func() string { return condition(scheduler, v1.ConditionMetricsAvailable) }
	metricsStatus := func() *v1.MetricsStatus {
		current := &v1.SecondaryScheduler{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(scheduler), current)).To(Succeed())
		return current.Status.Metrics
	}

	BeforeAll(func() {
		if os.Geteuid() != 0 {
			Fail("this spec runs Prometheus on a test host of its own, a network namespace, which needs root")
		}
		var err error
		host, err = netnshost.New("ssop-e2e-prom", 77)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(host.Close)
		prometheus = promtest.StartWith(GinkgoT(), promtest.Options{Host: host})
		nodes := &corev1.NodeList{}
		Expect(k8s.List(ctx, nodes)).To(Succeed())
		for _, node := range nodes.Items {
			nodeNames = append(nodeNames, node.Name)
		}
		serveLoad(byNodeName)
		servedSince = time.Now()

		upstream, err := url.Parse(prometheus.URL)
		Expect(err).NotTo(HaveOccurred())
		proxy, err = rbacproxy.Start(rbacproxy.Options{ListenAddress: net.JoinHostPort(host.HostAddress, "0"), Upstream: upstream,
			DNSNames:      []string{"thanos-querier.openshift-monitoring.svc", "thanos-querier.openshift-monitoring.svc.cluster.local"},
			Authorization: rbacproxy.ThanosQuerierAccess, Config: restConfig})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(proxy.Close)

		createForSpec(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "openshift-monitoring"}})
		createForSpec(monitoringViewRole())
		proxyURL, err := url.Parse(proxy.URL)
		Expect(err).NotTo(HaveOccurred())
		exposeAsService("openshift-monitoring", "thanos-querier", 9091, proxyURL.Host)

		namespace = newNamespace()
		// OpenShift gives every namespace its service CA, which signs thanos-querier's certificate.
		Expect(k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "openshift-service-ca.crt"},
			Data: map[string]string{"service-ca.crt": string(proxy.CAPEM)}})).To(Succeed())

		// All the user writes: the profile and its target.
		scheduler = &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "load-packer"},
			Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
				TargetLoadPacking: &v1.TargetLoadPackingArgs{TargetUtilization: ptr.To[int32](60)}}}}
		Expect(k8s.Create(ctx, scheduler)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, scheduler))).To(Succeed()) })
	})

	It("finds OpenShift monitoring and reads it with a bound token and the service CA, from nothing but the profile type", func() {
		Eventually(metricsCondition).Should(Equal("True/MetricsAvailable"))
		status := metricsStatus()
		Expect(status.Address).To(Equal("https://thanos-querier.openshift-monitoring.svc:9091"))
		Expect(status.Source).To(Equal("Service openshift-monitoring/thanos-querier (OpenShift monitoring)"))
		Expect(status.Credentials).To(Equal(fmt.Sprintf("bound token of ServiceAccount %s/load-packer-scheduler-metrics (ClusterRole cluster-monitoring-view)", namespace)))
		Expect(status.TrustedCA).To(Equal(fmt.Sprintf("ConfigMap %s/openshift-service-ca.crt, key service-ca.crt", namespace)))
		Expect(status.NodesWithMetrics).To(BeEquivalentTo(len(nodeNames)))
		Expect(proxy.Requests(rbacproxy.OutcomeForwarded)).To(BeNumerically(">", 0), "the token passed a real TokenReview and SubjectAccessReview")

		// The scheduler gets the same: address, token, verification on, the CA mounted.
		config := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: render.ConfigObjectName(scheduler)}, config)).To(Succeed())
		token := &corev1.Secret{}
		Expect(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: render.MetricsTokenSecretName(scheduler)}, token)).To(Succeed())
		Expect(string(config.Data["config.yaml"])).To(And(
			ContainSubstring("address: https://thanos-querier.openshift-monitoring.svc:9091"),
			ContainSubstring("token: "+string(token.Data["token"])),
			ContainSubstring("insecureSkipVerify: false"),
			ContainSubstring("targetUtilization: 60")))
		configMaps := &corev1.ConfigMapList{}
		Expect(k8s.List(ctx, configMaps, client.InNamespace(namespace))).To(Succeed())
		for _, configMap := range configMaps.Items {
			for _, value := range configMap.Data {
				Expect(value).NotTo(ContainSubstring(string(token.Data["token"])))
			}
		}

		// kubectl get says whether the metrics are usable.
		output, err := kubectl("get", "secondaryschedulers", "-n", namespace, "load-packer")
		Expect(err).NotTo(HaveOccurred())
		Expect(output).To(MatchRegexp(`METRICS[\s\S]*MetricsAvailable`))
	})

	It("reports each way the metrics fail, produced for real, and heals", func() {
		// Series that stop count as stale after staleAfter (default 3m): 30s here, to see it sooner.
		Eventually(func() error {
			current := &v1.SecondaryScheduler{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(scheduler), current); err != nil {
				return err
			}
			current.Spec.Profile.Metrics = &v1.LoadMetrics{StaleAfter: &metav1.Duration{Duration: 30 * time.Second}}
			return k8s.Update(ctx, current)
		}).Should(Succeed())

		By("a token the API server does not know: the proxy's TokenReview fails, then the operator's, and it gets a new one")
		tokenSecret := &corev1.Secret{}
		tokenKey := client.ObjectKey{Namespace: namespace, Name: render.MetricsTokenSecretName(scheduler)}
		Expect(k8s.Get(ctx, tokenKey, tokenSecret)).To(Succeed())
		const badToken = "not-a-token-of-this-cluster"
		tokenSecret.Data["token"] = []byte(badToken)
		overwritten := time.Now().Add(-time.Second)
		Expect(k8s.Update(ctx, tokenSecret)).To(Succeed())
		// The refusal may last only until the next reconcile, which may come at once (the
		// configuration Secret changed too): the Events it left say it was reported.
		Eventually(func() []string { return eventReasonsSince(scheduler, overwritten) }).Should(
			ContainElements("MetricsAvailable "+string(v1.ReasonUnauthorized), "Degraded "+string(v1.ReasonUnauthorized)))
		Eventually(metricsCondition).Should(Equal("True/MetricsAvailable"))
		Expect(k8s.Get(ctx, tokenKey, tokenSecret)).To(Succeed())
		Expect(string(tokenSecret.Data["token"])).NotTo(Equal(badToken))

		By("an identity the proxy does not authorize: SubjectAccessReview denies")
		Expect(k8s.Delete(ctx, monitoringViewRole())).To(Succeed())
		Eventually(metricsCondition).Should(Equal("False/Unauthorized"))
		Expect(proxy.Requests(rbacproxy.OutcomeForbidden)).To(BeNumerically(">", 0))
		Expect(k8s.Create(ctx, monitoringViewRole())).To(Succeed())
		Eventually(metricsCondition).Should(Equal("True/MetricsAvailable"))

		By("series that stop being written: stale, not missing, since load-watcher reads the last 15 minutes")
		// The probe finds series that stopped at the 30 s steps of a subquery: a series
		// must have lived across one to be seen, as any real one has.
		time.Sleep(time.Until(servedSince.Add(35 * time.Second)))
		for _, series := range metricsprobe.Series {
			prometheus.SetSeries(series, nil)
		}
		Eventually(metricsCondition, "2m").Should(Equal("False/MetricsStale"))
		Expect(condition(scheduler, v1.ConditionDegraded)).To(Equal("True/MetricsStale"))
		Expect(metricsStatus().NewestSample).NotTo(BeNil())
		serveLoad(byNodeName)
		Eventually(metricsCondition).Should(Equal("True/MetricsAvailable"))

		By("series keyed by node-exporter's address instead of the node name")
		for _, series := range metricsprobe.Series {
			prometheus.SetSeries(series, nil)
		}
		serveLoad(func(_ string, i int) string { return fmt.Sprintf("10.0.0.%d:9100", 31+i) })
		Eventually(metricsCondition, "2m").Should(Equal("False/NodeLabelMismatch"))
		current := &v1.SecondaryScheduler{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(scheduler), current)).To(Succeed())
		Expect(current.Status.Conditions).To(ContainElement(And(
			HaveField("Type", string(v1.ConditionMetricsAvailable)),
			HaveField("Message", ContainSubstring("10.0.0.31:9100")))))
		Expect(metricsStatus().NodesWithMetrics).To(BeEquivalentTo(0))
		for _, series := range metricsprobe.Series {
			prometheus.SetSeries(series, nil)
		}
		serveLoad(byNodeName)
		Eventually(metricsCondition, "2m").Should(Equal("True/MetricsAvailable"))

		By("Prometheus stopped")
		prometheus.Stop()
		Eventually(metricsCondition).Should(Equal("False/PrometheusUnreachable"))
		prometheus.Restart()
		Eventually(metricsCondition, "2m").Should(Equal("True/MetricsAvailable"))
	})

	It("finds a Prometheus Operator's Prometheus when there is no OpenShift monitoring, and drops the token it no longer needs", func() {
		Expect(k8s.Delete(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "openshift-monitoring", Name: "thanos-querier"}})).To(Succeed())
		createForSpec(promtest.OperatorCRD("Prometheus", "prometheuses", "prometheus"))
		createForSpec(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "monitoring"}})
		prometheusObject := &unstructured.Unstructured{}
		prometheusObject.SetGroupVersionKind(promdiscovery.PrometheusGVK)
		prometheusObject.SetNamespace("monitoring")
		prometheusObject.SetName("k8s")
		Eventually(func() error { return k8s.Create(ctx, prometheusObject) }).Should(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, prometheusObject))).To(Succeed()) })
		exposeAsService("monitoring", "prometheus-operated", 9090, net.JoinHostPort(host.Address, "9090"))

		Eventually(func() string {
			status := metricsStatus()
			if status == nil {
				return ""
			}
			return status.Address + " from " + status.Source + ", credentials " + status.Credentials
		}).Should(Equal("http://prometheus-operated.monitoring.svc:9090 from Prometheus monitoring/k8s (Prometheus Operator), Service prometheus-operated, credentials none"))
		Eventually(metricsCondition).Should(Equal("True/MetricsAvailable"))
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: render.MetricsTokenSecretName(scheduler)}, &corev1.Secret{}))
		}).Should(BeTrue(), "the token Secret is deleted")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8s.Get(ctx, client.ObjectKey{Name: render.ClusterBindingName(scheduler, "metrics-token")}, &rbacv1.ClusterRoleBinding{}))
		}).Should(BeTrue(), "the metrics ServiceAccount's ClusterRoleBinding is deleted")
		Eventually(func() error {
			return k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: render.ConfigObjectName(scheduler)}, &corev1.ConfigMap{})
		}).Should(Succeed(), "without a token the configuration is a ConfigMap again")
	})

	It("schedules with the Trimaran plugin when a scheduler-plugins binary is provided", func() {
		skipWithoutTargetLoadPacking()
		waitAvailable(scheduler)
		names := createWorkload(namespace, "load-packed", scheduler.EffectiveSchedulerName(), "500m", 3)
		expectBound(namespace, names)
		expectScheduledBy(namespace, names, scheduler.EffectiveSchedulerName())
	})
})

// createForSpec creates an object that may be left from an earlier run, and deletes it
// after the spec (or, called in BeforeAll, after the ordered container).
func createForSpec(object client.Object) {
	if err := k8s.Create(ctx, object); err != nil && !apierrors.IsAlreadyExists(err) {
		Expect(err).NotTo(HaveOccurred())
	}
	DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, object))).To(Succeed()) })
}

// exposeAsService makes a Service without selector whose EndpointSlice routes its port
// to address (host:port), as the endpoints controller would for a pod there.
func exposeAsService(namespace, name string, port int32, address string) {
	endpointHost, endpointPort, err := net.SplitHostPort(address)
	Expect(err).NotTo(HaveOccurred())
	targetPort, err := strconv.Atoi(endpointPort)
	Expect(err).NotTo(HaveOccurred())
	service := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "web", Port: port}}}}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name + "-e2e",
			Labels: map[string]string{discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "e2e.secondary-scheduler.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{endpointHost}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("web"), Port: ptr.To(int32(targetPort))}},
	}
	for _, object := range []client.Object{service, slice} {
		createForSpec(object)
	}
}
