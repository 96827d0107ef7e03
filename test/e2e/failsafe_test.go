//go:build e2e

package e2e

import (
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// prometheusOutage is how long Prometheus stays down: minutes, as a real outage lasts,
// well past staleAfter.
const prometheusOutage = 2 * time.Minute

// A TargetLoadPacking scheduler with whenUnavailable: ScoreByRequests, reading a real
// Prometheus that is stopped for minutes: the scheduler process goes on scheduling, by
// requests, and returns to load-aware scoring once Prometheus has been back for
// resumeAfter. The in-tree kube-scheduler has no TargetLoadPacking plugin, so without
// SCHEDULER_PLUGINS_BINARY the load-aware configuration cannot run here: the spec then
// shows the request-based one running, which needs in-tree plugins only, and that it
// keeps scheduling when the load-aware one comes back and crashes.
var _ = Describe("Metrics failsafe", Ordered, func() {
	var (
		prometheus *promtest.Server
		scheduler  *v1.SecondaryScheduler
		namespace  string
	)
	withPlugins := os.Getenv("SCHEDULER_PLUGINS_BINARY") != ""
	scoring := func() v1.ScoringMode {
		current := &v1.SecondaryScheduler{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(scheduler), current); err != nil || current.Status.Metrics == nil {
			return ""
		}
		return current.Status.Metrics.Scoring
	}
	podTemplateHash := func() string {
		deployment := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: namespace, Name: render.WorkloadName(scheduler)}, deployment); err != nil {
			return ""
		}
		return deployment.Spec.Template.Annotations[render.ConfigHashAnnotation]
	}

	BeforeAll(func() {
		prometheus = promtest.Start(GinkgoT())
		nodes := &corev1.NodeList{}
		Expect(k8s.List(ctx, nodes)).To(Succeed())
		load := map[string]float64{}
		for _, node := range nodes.Items {
			load[node.Name] = 0.3
		}
		for _, series := range metricsprobe.Series {
			prometheus.SetSeries(series, load)
		}
		namespace = newNamespace()
		scheduler = &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "failsafe"},
			Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
				Metrics: &v1.LoadMetrics{Address: prometheus.URL, WhenUnavailable: v1.ScoreByRequests,
					StaleAfter: &metav1.Duration{Duration: 30 * time.Second}, ResumeAfter: &metav1.Duration{Duration: 30 * time.Second}}}}}
		Expect(k8s.Create(ctx, scheduler)).To(Succeed())
		DeferCleanup(func() { Expect(client.IgnoreNotFound(k8s.Delete(ctx, scheduler))).To(Succeed()) })
	})

	It("keeps scheduling, by requests, through a Prometheus outage of minutes, and returns to load-aware scoring", func() {
		Eventually(func() string { return condition(scheduler, v1.ConditionMetricsAvailable) }).Should(Equal("True/MetricsAvailable"))
		Eventually(scoring).Should(Equal(v1.ScoringLoadAware))
		loadAwareHash := podTemplateHash()
		if withPlugins {
			waitAvailable(scheduler)
			names := createWorkload(namespace, "before-outage", scheduler.EffectiveSchedulerName(), "100m", 2)
			expectBound(namespace, names)
			expectScheduledBy(namespace, names, scheduler.EffectiveSchedulerName())
		}

		By("Prometheus stops: after staleAfter the scheduler scores by requests, and keeps scheduling")
		stopped := time.Now()
		prometheus.Stop()
		Eventually(func() string { return condition(scheduler, v1.ConditionMetricsAvailable) }).Should(Equal("False/PrometheusUnreachable"))
		Eventually(scoring, "90s").Should(Equal(v1.ScoringByRequests))
		// The Event follows the status write that it announces: it may come a moment later.
		Eventually(func() []string { return eventReasonsSince(scheduler, stopped) }).Should(ContainElement("Scoring " + string(v1.ReasonScoringByRequests)))
		Eventually(podTemplateHash).ShouldNot(Equal(loadAwareHash), "the request-based configuration rolls out")
		// In effect, not only Available: until a pod of the request-based configuration
		// leads, the load-aware pod (a scheduler-plugins build runs it) still places pods.
		// Not Reconciling=False (waitInEffect): Degraded is True through the outage
		// (PrometheusUnreachable), so Stalled is, and Reconciling False from the start of the
		// rollout; Available says SchedulerReady only once a pod of the current
		// configuration leads, and ServingPreviousConfiguration until then (it changed in the
		// status write that said ScoringByRequests, read above).
		Eventually(func() string { return condition(scheduler, v1.ConditionAvailable) }, "2m").Should(Equal("True/" + string(v1.ReasonSchedulerReady)))
		names := createWorkload(namespace, "during-outage", scheduler.EffectiveSchedulerName(), "100m", 4)
		nodes := expectBound(namespace, names)
		expectScheduledBy(namespace, names, scheduler.EffectiveSchedulerName())
		Expect(nodes).To(HaveLen(1), "MostAllocated, the stand-in for TargetLoadPacking, packs small pods onto one node")
		Expect(condition(scheduler, v1.ConditionDegraded)).To(Equal("True/PrometheusUnreachable"))

		// The outage lasts minutes; the scheduler keeps running all along.
		time.Sleep(time.Until(stopped.Add(prometheusOutage)))
		Expect(condition(scheduler, v1.ConditionAvailable)).To(Equal("True/SchedulerReady"))
		Expect(scoring()).To(Equal(v1.ScoringByRequests))

		By("Prometheus is back: healthy at once, load-aware scoring after resumeAfter")
		prometheus.Restart()
		restarted := time.Now()
		Eventually(func() string { return condition(scheduler, v1.ConditionMetricsAvailable) }, "60s").Should(Equal("True/MetricsAvailable"))
		Expect(condition(scheduler, v1.ConditionDegraded)).To(Equal("True/" + string(v1.ReasonScoringByRequests)))
		Eventually(scoring, "90s").Should(Equal(v1.ScoringLoadAware))
		// Judged from status, in the API server's whole seconds: the operator counts
		// resumeAfter from the second of its first healthy probe, which came after restarted.
		current := &v1.SecondaryScheduler{}
		Expect(k8s.Get(ctx, client.ObjectKeyFromObject(scheduler), current)).To(Succeed())
		Expect(current.Status.Metrics.ScoringSince.Time).To(BeTemporally(">=", restarted.Add(30*time.Second).Truncate(time.Second)),
			"not before resumeAfter")
		Eventually(func() []string { return eventReasonsSince(scheduler, restarted) }).Should(ContainElement("Scoring " + string(v1.ReasonLoadAwareScoringResumed)))
		Eventually(podTemplateHash).Should(Equal(loadAwareHash), "the load-aware configuration is back, as it was")
		if !withPlugins {
			// The in-tree kube-scheduler cannot run TargetLoadPacking: its new pod crashes,
			// which status says once the operator sees it (as it must, since the pod crashes
			// at every start), while the request-based pod goes on scheduling: a
			// configuration that cannot run takes down no running scheduler, and status says
			// that it still serves.
			Eventually(func() string { return condition(scheduler, v1.ConditionDegraded) }, "2m").Should(Equal("True/SchedulerCrashing"))
			Expect(condition(scheduler, v1.ConditionAvailable)).To(Equal("True/" + string(v1.ReasonServingPreviousConfiguration)))
			names = createWorkload(namespace, "after-outage", scheduler.EffectiveSchedulerName(), "100m", 2)
			expectBound(namespace, names)
			expectScheduledBy(namespace, names, scheduler.EffectiveSchedulerName())
			return
		}
		Eventually(func() string { return condition(scheduler, v1.ConditionDegraded) }).Should(Equal("False/AsExpected"))
		waitAvailable(scheduler)
		names = createWorkload(namespace, "after-outage", scheduler.EffectiveSchedulerName(), "100m", 2)
		expectBound(namespace, names)
		expectScheduledBy(namespace, names, scheduler.EffectiveSchedulerName())
	})
})
