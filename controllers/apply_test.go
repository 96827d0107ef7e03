package controllers

import (
	"maps"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// TestAReconcileThatChangesNothingWritesNothing checks that the operator applies only
// what differs from what the cluster holds: a reconcile woken by a change that leaves
// the rendered scheduler as it is writes no object, and one woken by someone editing an
// object of the scheduler writes that object back, and only it.
func TestAReconcileThatChangesNothingWritesNothing(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("steady")
	s.createRunning(cr)
	before := appliesIn(s.namespace)
	s.g.Expect(before).To(HaveKey("Deployment/"+s.namespace+"/"+render.WorkloadName(cr)), "the operator's applies are counted")

	// A pod of the scheduler stops being ready: a reconcile reports it, and applies nothing.
	pods := &corev1.PodList{}
	s.g.Expect(adminClient.List(s.ctx, pods, client.InNamespace(s.namespace), client.MatchingLabels(render.PodSelector(cr)))).To(Succeed())
	s.g.Expect(pods.Items).To(HaveLen(1))
	pod := &pods.Items[0]
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	s.g.Expect(adminClient.Status().Update(s.ctx, pod)).To(Succeed())
	s.expectCondition(cr, v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonNoReadyScheduler)
	s.g.Consistently(func() map[string]int { return appliesIn(s.namespace) }).Should(Equal(before), "no object applied again")

	// Someone edits the scheduler's configuration: the operator writes it back, alone.
	configMap := &corev1.ConfigMap{}
	s.g.Expect(adminClient.Get(s.ctx, client.ObjectKey{Namespace: s.namespace, Name: render.ConfigObjectName(cr)}, configMap)).To(Succeed())
	rendered := maps.Clone(configMap.Data)
	s.update(configMap, func() { configMap.Data = map[string]string{"config.yaml": "edited"} })
	s.g.Eventually(func() map[string]string {
		_ = s.get(configMap)
		return configMap.Data
	}).Should(Equal(rendered), "the edit is undone")
	after := appliesIn(s.namespace)
	configMapKey := "ConfigMap/" + s.namespace + "/" + configMap.Name
	s.g.Expect(after[configMapKey]).To(Equal(before[configMapKey]+1), "the ConfigMap applied once more")
	delete(after, configMapKey)
	delete(before, configMapKey)
	s.g.Expect(after).To(Equal(before), "nothing else applied")
}
