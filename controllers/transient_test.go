package controllers

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// A transient failure (here the API server's 500 for an admission webhook it cannot
// reach) writes no status: the status keeps describing the generation last applied, so
// that kstatus, Argo CD and Flux do not take a change that was never applied for one
// that was, and the change is applied once the failure passes.
func TestTransientFailureWritesNoStatus(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("transient")
	s.createRunning(cr)
	s.g.Expect(s.get(cr)).To(Succeed())
	applied := cr.Generation
	s.g.Expect(cr.Status.ObservedGeneration).To(Equal(applied))

	webhook := unreachableWebhookFor(s, "deployments")
	s.update(cr, func() { cr.Spec.LogLevel = v1.Debug })
	// The reconcile of the new generation has failed once it says so in the log: any
	// status it wrote is there by then. (Its first write of the Deployment claims the
	// fields of its create, and fails as the apply would.)
	failed := "Deployment " + cr.Namespace + "/" + render.WorkloadName(cr) + ": "
	s.g.Eventually(func() bool {
		for line := range strings.Lines(operatorLog.String()) {
			if strings.Contains(line, failed) && strings.Contains(line, `"namespace": "`+cr.Namespace+`"`) {
				return true
			}
		}
		return false
	}).Should(BeTrue(), "the apply of the new generation fails")
	s.g.Expect(s.get(cr)).To(Succeed())
	s.g.Expect(cr.Generation).To(BeNumerically(">", applied))
	s.g.Expect(cr.Status.ObservedGeneration).To(Equal(applied), "a generation that was not applied is reported as observed")
	for _, condition := range cr.Status.Conditions {
		s.g.Expect(condition.ObservedGeneration).To(Equal(applied), "condition %s describes a generation that was not applied", condition.Type)
	}

	s.g.Expect(adminClient.Delete(s.ctx, webhook)).To(Succeed())
	s.g.Eventually(func() int64 {
		_ = s.get(cr)
		return cr.Status.ObservedGeneration
	}).Should(Equal(cr.Generation), "the change is applied once the failure passes")
	s.g.Expect(s.deployment(cr).Spec.Template.Spec.Containers[0].Command).To(ContainElement("--v=4"))
}

// unreachableWebhookFor makes the API server fail every create and update of resource
// (an apps/v1 kind) in the scenario's namespace with a 500, as when a webhook's server is
// down: it calls a webhook on a port where nothing listens, failing closed. It returns
// once the API server refuses a dry-run update.
func unreachableWebhookFor(s *scenario, resource string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	s.t.Helper()
	url := "https://127.0.0.1:1/refuse"
	webhook := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "unreachable-" + s.namespace},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "unreachable.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{resource}},
			}},
			NamespaceSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: s.namespace}},
			FailurePolicy:           ptr.To(admissionregistrationv1.Fail),
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To[int32](2),
		}},
	}
	s.g.Expect(adminClient.Create(s.ctx, webhook)).To(Succeed())
	s.t.Cleanup(func() { _ = client.IgnoreNotFound(adminClient.Delete(s.ctx, webhook)) })
	probe := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: "webhook-probe"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "probe"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "probe"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "example.com/probe"}}}},
		}}
	s.g.Eventually(func() bool {
		return apierrors.IsInternalError(adminClient.Create(s.ctx, probe.DeepCopy(), client.DryRunAll))
	}).Should(BeTrue(), "the API server calls the webhook")
	return webhook
}
