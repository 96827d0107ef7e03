package controllers

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// trimaranConfig is goodConfig with scheduler-plugins' TargetLoadPacking enabled too.
func trimaranConfig(schedulerName string) string {
	return goodConfig(schedulerName, 5) + "      - name: TargetLoadPacking\n        weight: 1\n"
}

// Kubernetes' own kube-scheduler image runs, started from its own path as a user that is
// not root; a configuration with plugins it does not have is refused before it rolls out,
// and the running scheduler is left as it is.
func TestKubernetesOwnSchedulerImage(t *testing.T) {
	s := newScenario(t)
	userConfig := configMap("upstream-config", map[string]string{"config.yaml": goodConfig("upstream", 5)})
	cr := custom("upstream", "upstream-config")
	cr.Spec.SchedulerImage = "registry.k8s.io/kube-scheduler:v1.37.1"
	s.create(userConfig, cr)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	container := s.deployment(cr).Spec.Template.Spec.Containers[0]
	s.g.Expect(container.Image).To(Equal("registry.k8s.io/kube-scheduler:v1.37.1"))
	s.g.Expect(container.Command[0]).To(Equal("/usr/local/bin/kube-scheduler"))
	s.g.Expect(container.SecurityContext.RunAsUser).To(Equal(ptr.To[int64](65532)))
	s.g.Expect(container.TerminationMessagePolicy).To(Equal(corev1.TerminationMessageFallbackToLogsOnError))
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Status.ImageSource).To(And(ContainSubstring("Kubernetes' own kube-scheduler"), Not(ContainSubstring("version-skew"))))
	runningHash := s.deployment(cr).Spec.Template.Annotations[render.PodTemplateHashAnnotation]

	// Trimaran enabled in the configuration: that image would not start.
	s.update(userConfig, func() { userConfig.Data["config.yaml"] = trimaranConfig("upstream") })
	refused := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonPluginsNotInImage)
	s.g.Expect(refused.Message).To(And(ContainSubstring("registry.k8s.io/kube-scheduler:v1.37.1 is Kubernetes' own kube-scheduler, which has the in-tree plugins only"),
		ContainSubstring("the configuration in ConfigMap "+s.namespace+"/upstream-config enables TargetLoadPacking"),
		ContainSubstring("registry.k8s.io/scheduler-plugins/kube-scheduler:v0.35.7"), ContainSubstring("keeps running with its last good configuration")))
	s.g.Consistently(func() string {
		return s.deployment(cr).Spec.Template.Annotations[render.PodTemplateHashAnnotation]
	}, 2*time.Second).Should(Equal(runningHash), "the running scheduler is left as it is")
	s.g.Expect(s.renderedConfig(cr)).NotTo(ContainSubstring("TargetLoadPacking"))

	// With scheduler-plugins' image the configuration rolls out. Its release for 1.35 is
	// two minor versions behind envtest's 1.37: status says so, and a Warning Event once.
	s.update(cr, func() { cr.Spec.SchedulerImage = "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.35.7" })
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Eventually(func() string { return s.renderedConfig(cr) }).Should(ContainSubstring("TargetLoadPacking"))
	container = s.deployment(cr).Spec.Template.Spec.Containers[0]
	s.g.Expect(container.Command[0]).To(Equal("/bin/kube-scheduler"))
	s.g.Expect(container.SecurityContext.RunAsUser).To(BeNil())
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Status.ImageSource).To(ContainSubstring("built for Kubernetes 1.35, 2 minor versions older than the cluster's 1.37"))
	s.markDeploymentReady(cr)
	available := s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady)
	s.g.Expect(available.Message).To(ContainSubstring(imageSkewPointer))
	s.g.Expect(available.Message).NotTo(ContainSubstring("usually works"), "the skew is pointed to, not repeated: status.imageSource says it")
	s.g.Expect(len(available.Message)).To(BeNumerically("<", 300), "Available stays readable: %s", available.Message)
	s.g.Eventually(func() []string { return s.eventReasons(cr) }).Should(ContainElement(string(v1.ReasonImageVersionSkew)))
	s.g.Consistently(func() int { return countOf(s.eventReasons(cr), string(v1.ReasonImageVersionSkew)) }, 2*time.Second).Should(Equal(1))

	// A load-aware profile is scheduler-plugins' Trimaran: refused with Kubernetes' own image.
	loadAware := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Name: "upstream-load-aware"},
		Spec: v1.SecondarySchedulerSpec{SchedulerImage: "my.mirror/k8s/kube-scheduler:v1.37.1",
			Profile: &v1.Profile{Type: v1.LowRiskOverCommitmentProfile, Metrics: &v1.LoadMetrics{Provider: v1.KubernetesMetricsServerProvider}}}}
	s.create(loadAware)
	refused = s.expectCondition(loadAware, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonPluginsNotInImage)
	s.g.Expect(refused.Message).To(ContainSubstring("profile type LowRiskOverCommitment enables LowRiskOverCommitment"))
	s.g.Expect(s.deployment(loadAware)).To(BeNil(), "nothing is rolled out")
}

func countOf(values []string, value string) int {
	count := 0
	for _, v := range values {
		if v == value {
			count++
		}
	}
	return count
}
