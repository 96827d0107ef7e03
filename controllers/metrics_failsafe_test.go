package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// failsafeTimeout bounds the waits of the failsafe's scenarios: staleAfter and
// resumeAfter are at their minimum, 30 s, and a switch comes one probe later.
const failsafeTimeout = 90 * time.Second

// scoring is cr's status.metrics.scoring, or "" before the first probe.
func (s *scenario) scoring(cr *v1.SecondaryScheduler) v1.ScoringMode {
	if err := s.get(cr); err != nil || cr.Status.Metrics == nil {
		return ""
	}
	return cr.Status.Metrics.Scoring
}

// With whenUnavailable ScoreByRequests, a real Prometheus stopped for longer than
// staleAfter switches the scheduler to request-based scoring, and back once it has been
// healthy again for resumeAfter; each switch is an Event and a status field.
func TestFailsafeScoresByRequestsWhileMetricsAreUnavailable(t *testing.T) {
	s := newScenario(t)
	prometheus := promtest.Start(t)
	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "failsafe"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Address: prometheus.URL, WhenUnavailable: v1.ScoreByRequests,
				StaleAfter: &metav1.Duration{Duration: 30 * time.Second}, ResumeAfter: &metav1.Duration{Duration: 30 * time.Second}}}},
	}
	serveLoad(prometheus, s.ownNodePool(cr))
	s.create(cr)
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)
	s.g.Eventually(func() v1.ScoringMode { return s.scoring(cr) }).Should(Equal(v1.ScoringLoadAware))
	s.g.Expect(s.renderedConfig(cr)).To(ContainSubstring("name: TargetLoadPacking"))

	// Prometheus stops: unreachable at once, scoring by requests after staleAfter.
	stopped := time.Now()
	prometheus.Stop()
	unreachable := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonPrometheusUnreachable)
	s.g.Expect(unreachable.Message).To(ContainSubstring("switches to scoring by requests"))
	s.g.Eventually(func() v1.ScoringMode { return s.scoring(cr) }, failsafeTimeout).Should(Equal(v1.ScoringByRequests))
	s.g.Expect(cr.Status.Metrics.ScoringSince.Time).To(BeTemporally(">=", stopped.Add(30*time.Second).Truncate(time.Second)),
		"not before staleAfter")
	// The status that says so was written after the configuration it names was applied,
	// in the same reconcile: status never claims a scoring the scheduler has not got.
	s.g.Expect(s.renderedConfig(cr)).To(And(
		ContainSubstring("type: MostAllocated"), Not(ContainSubstring("TargetLoadPacking"))))
	s.g.Eventually(func() []string { return s.eventReasons(cr) }).Should(ContainElement(string(v1.ReasonScoringByRequests)))
	degraded := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonPrometheusUnreachable)
	s.g.Expect(degraded.Message).To(ContainSubstring("scores by requests since"))

	// Prometheus is back: healthy, but scoring by requests until resumeAfter has passed.
	prometheus.Restart()
	healthyAgain := time.Now()
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)
	resuming := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonScoringByRequests)
	s.g.Expect(resuming.Message).To(ContainSubstring("healthy again since"))
	s.g.Expect(s.scoring(cr)).To(Equal(v1.ScoringByRequests))
	s.g.Eventually(func() v1.ScoringMode { return s.scoring(cr) }, failsafeTimeout).Should(Equal(v1.ScoringLoadAware))
	s.g.Expect(cr.Status.Metrics.ScoringSince.Time).To(BeTemporally(">=", healthyAgain.Add(30*time.Second).Truncate(time.Second)),
		"not before resumeAfter")
	s.g.Expect(s.renderedConfig(cr)).To(ContainSubstring("name: TargetLoadPacking"))
	s.g.Eventually(func() []string { return s.eventReasons(cr) }).Should(ContainElement(string(v1.ReasonLoadAwareScoringResumed)))
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
}

// Series that stop being written (a recording rule or a scrape stopped) are stale, not
// missing: load-watcher still scores with them. The condition says how old they are.
func TestStaleMetricsAreReported(t *testing.T) {
	s := newScenario(t)
	prometheus := promtest.Start(t)
	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: "stale"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Address: prometheus.URL, StaleAfter: &metav1.Duration{Duration: 30 * time.Second}}}},
	}
	node := s.ownNodePool(cr)
	serveLoad(prometheus, node)
	s.create(cr)
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)

	frozen := time.Now()
	for _, series := range metricsprobe.Series {
		prometheus.FreezeSeries(series)
	}
	stale := s.expectConditionWithin(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonMetricsStale, failsafeTimeout)
	s.g.Expect(stale.Message).To(ContainSubstring("older than staleAfter 30s"))
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonMetricsStale)
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Status.Metrics.NewestSample).NotTo(BeNil())
	s.g.Expect(cr.Status.Metrics.NewestSample.Time).To(BeTemporally("~", frozen, 5*time.Second), "the time of the frozen samples")
	s.g.Expect(cr.Status.Metrics.Scoring).To(Equal(v1.ScoringLoadAware), "UseLastMetrics, the default, keeps the load-aware plugin")

	serveLoad(prometheus, node)
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Status.Metrics.NewestSample).To(BeNil())
	s.g.Expect(cr.Status.Metrics.UnavailableSince).To(BeNil())
}

// customTrimaranConfig is a Custom configuration enabling TargetLoadPacking with the
// given metricProvider lines.
func customTrimaranConfig(schedulerName, metricProvider string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: %s
  plugins:
    score:
      enabled:
      - name: TargetLoadPacking
  pluginConfig:
  - name: TargetLoadPacking
    args:
      targetUtilization: 60
      metricProvider:
%s`, schedulerName, metricProvider)
}

// A Custom configuration enabling a Trimaran plugin gets the care of the typed profiles:
// a placeholder address is refused with its own reason (the running scheduler is kept),
// the real address is probed with the token of the args, and the configuration, which
// holds that token, is rendered into a Secret.
func TestCustomTrimaranConfigIsProbed(t *testing.T) {
	s := newScenario(t)
	const token = "custom-config-token-51c2"
	prometheus := promtest.Start(t)
	guarded := prometheus.TokenProxy(token)

	cr := custom("custom-load", "custom-load-config")
	serveLoad(prometheus, s.ownNodePool(cr))
	s.create(configMap("custom-load-config", map[string]string{"config.yaml": customTrimaranConfig("custom-load",
		"        type: Prometheus\n        address: ${PROM_URL}\n")}))
	s.create(cr)
	invalid := s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonMetricsAddressInvalid)
	s.g.Expect(invalid.Message).To(And(ContainSubstring("${PROM_URL}"), ContainSubstring("ConfigMap "+s.namespace+"/custom-load-config")))
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonMetricsAddressInvalid)
	s.g.Expect(s.deployment(cr)).To(BeNil(), "a configuration whose metrics cannot be read is not applied")

	userConfig := configMapIn(s.namespace, "custom-load-config")
	s.update(userConfig, func() {
		userConfig.Data["config.yaml"] = customTrimaranConfig("custom-load",
			fmt.Sprintf("        type: Prometheus\n        address: %s\n        token: %s\n", guarded.URL, token))
	})
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionTrue, v1.ReasonMetricsAvailable)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Status.Metrics.Source).To(ContainSubstring("ConfigMap " + s.namespace + "/custom-load-config"))
	s.g.Expect(cr.Status.Metrics.Credentials).To(ContainSubstring("plain text"))

	rendered := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: render.ConfigObjectName(cr)}}
	s.g.Expect(s.get(rendered)).To(Succeed(), "the configuration holding a token is a Secret")
	s.g.Expect(string(rendered.Data["config.yaml"])).To(ContainSubstring("token: " + token))
	s.expectTokenHidden(token, s.namespace+"/custom-load-config")

	// A token the proxy refuses is reported as for the typed profiles.
	s.update(userConfig, func() {
		userConfig.Data["config.yaml"] = strings.ReplaceAll(userConfig.Data["config.yaml"], token, "wrong-token")
	})
	s.expectCondition(cr, v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonUnauthorized)
}
