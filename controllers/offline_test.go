package controllers

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/offline"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// The offline renderer, given the files of a resource and its ConfigMap, prints what the
// operator applied for them: the same configuration (and hash) and the same scheduler
// container.
func TestOfflineRenderIsWhatTheOperatorApplies(t *testing.T) {
	s := newScenario(t)
	userConfig := configMap("offline-config", map[string]string{"config.yaml": goodConfig("offline", 3)})
	cr := custom("offline", "offline-config")
	cr.Spec.LogLevel = v1.Debug
	s.create(userConfig, cr)
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Expect(s.get(cr)).To(Succeed())
	applied := s.deployment(cr)
	s.g.Expect(applied).NotTo(BeNil())

	info, err := adminClientset.Discovery().ServerVersion()
	s.g.Expect(err).NotTo(HaveOccurred())
	// The files a user keeps in git: what they wrote, not what the API server added.
	written := &v1.SecondaryScheduler{TypeMeta: metav1.TypeMeta{APIVersion: v1.GroupVersion.String(), Kind: "SecondaryScheduler"},
		ObjectMeta: metav1.ObjectMeta{Name: cr.Name, Namespace: cr.Namespace}, Spec: *cr.Spec.DeepCopy()}
	writtenConfig := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: userConfig.Name, Namespace: cr.Namespace}, Data: userConfig.Data}
	rendered, err := offline.Render(context.Background(), offline.Input{
		Documents:       []offline.Document{{Source: "scheduler.yaml", Data: toYAML(t, written)}, {Source: "config.yaml", Data: toYAML(t, writtenConfig)}},
		KubernetesMinor: minorOf(t, info.Minor), Namespace: "default",
	})
	s.g.Expect(err).NotTo(HaveOccurred())

	s.g.Expect(rendered.Result.ConfigHash).To(Equal(cr.Status.ConfigHash))
	s.g.Expect(rendered.Result.SchedulerConfig).To(Equal(s.renderedConfig(cr)))
	var offlineDeployment *appsv1.Deployment
	for _, object := range rendered.Result.Objects {
		if object.GetKind() == "Deployment" {
			offlineDeployment = &appsv1.Deployment{}
			s.g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, offlineDeployment)).To(Succeed())
		}
	}
	s.g.Expect(offlineDeployment).NotTo(BeNil())
	want, got := applied.Spec.Template.Spec.Containers[0], offlineDeployment.Spec.Template.Spec.Containers[0]
	s.g.Expect(got.Image).To(Equal(want.Image))
	s.g.Expect(got.Command).To(Equal(want.Command))
	s.g.Expect(got.Args).To(Equal(want.Args))
	// (Not the pod template's hash: its labels carry the resource's UID, which only the
	// API server knows.)
	s.g.Expect(offlineDeployment.Spec.Template.Annotations[render.ConfigHashAnnotation]).
		To(Equal(applied.Spec.Template.Annotations[render.ConfigHashAnnotation]))

	var printed bytes.Buffer
	s.g.Expect(offline.Write(&printed, rendered)).To(Succeed())
	s.g.Expect(printed.String()).To(ContainSubstring("configuration hash " + cr.Status.ConfigHash))
}

func toYAML(t *testing.T, object any) []byte {
	t.Helper()
	data, err := yaml.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func minorOf(t *testing.T, minor string) int {
	t.Helper()
	var value int
	if _, err := fmt.Sscanf(strings.TrimRight(minor, "+"), "%d", &value); err != nil {
		t.Fatalf("minor version %q: %v", minor, err)
	}
	return value
}
