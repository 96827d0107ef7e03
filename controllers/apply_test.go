package controllers

import (
	"maps"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/uuid"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
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

// TestAFieldTheOperatorCreatedGoesOnceNoLongerRendered: the operator creates a new
// scheduler's objects rather than applying them (a create proves that no one else's
// object had the name), which leaves their fields under an Update entry of its field
// owner; server-side apply never removes those. A field rendered at creation and no
// longer rendered must still go away: the first change claims the fields for the
// operator's applies, and the operator's writes leave no Update entry of its own behind.
func TestAFieldTheOperatorCreatedGoesOnceNoLongerRendered(t *testing.T) {
	s := newScenario(t)
	own := s.namespace + "-created-with"
	s.createPriorityClass(own)
	cr := binPacking("created-with-a-class")
	cr.Spec.PriorityClassName = own
	s.create(cr)
	s.g.Eventually(func() string { return s.podPriorityClass(cr) }).Should(Equal(own))
	s.update(cr, func() { cr.Spec.PriorityClassName = "" })
	s.g.Eventually(func() string { return s.podPriorityClass(cr) }).ShouldNot(Equal(own), "the field rendered at creation is gone")
	s.g.Expect(operatorEntries(s.deployment(cr))).To(Equal([]string{string(metav1.ManagedFieldsOperationApply)}),
		"one entry of the operator's, its applies'")

	// An apply under the operator's name between the create and the first change (as
	// the credentials step makes for the metrics identity) leaves both entries: they are
	// merged, and the field goes all the same.
	second := binPacking("created-and-applied")
	second.Spec.PriorityClassName = own
	s.create(second)
	s.g.Eventually(func() string { return s.podPriorityClass(second) }).Should(Equal(own))
	deployment := s.deployment(second)
	labels := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": deployment.Namespace, "name": deployment.Name, "labels": deployment.Labels}}}
	s.g.Expect(adminClient.Apply(s.ctx, client.ApplyConfigurationFromUnstructured(labels), client.FieldOwner(FieldOwner))).To(Succeed())
	s.g.Expect(operatorEntries(s.deployment(second))).To(ConsistOf(string(metav1.ManagedFieldsOperationApply), string(metav1.ManagedFieldsOperationUpdate)))
	s.update(second, func() { second.Spec.PriorityClassName = "" })
	s.g.Eventually(func() string { return s.podPriorityClass(second) }).ShouldNot(Equal(own), "the field rendered at creation is gone")
	s.g.Expect(operatorEntries(s.deployment(second))).To(Equal([]string{string(metav1.ManagedFieldsOperationApply)}))
}

// operatorEntries are the operations of the operator's managed-fields entries of object.
func operatorEntries(object client.Object) []string {
	var entries []string
	for _, entry := range object.GetManagedFields() {
		if entry.Manager == FieldOwner {
			entries = append(entries, string(entry.Operation))
		}
	}
	return entries
}

// TestAnObjectTheCacheHasNotSeenIsAnsweredAsTheAPIServerHoldsIt: a create that answers
// AlreadyExists for an object of cr's the cache has not seen yet (the operator created it
// a moment before) finds it as the API server holds it; when it is as rendered, nothing is
// written and the stage still gets the object (the Deployment, which observe reads).
func TestAnObjectTheCacheHasNotSeenIsAnsweredAsTheAPIServerHoldsIt(t *testing.T) {
	s := newScenario(t)
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: s.namespace, Name: "unseen", UID: uuid.NewUUID()}}
	deployment := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": s.namespace, "name": "unseen"},
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{"app": "unseen"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "unseen"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "scheduler", "image": "example.com/scheduler:1"}}}},
		}}}
	deployment.SetLabels(render.OwnerLabels(cr))
	deployment.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(cr, v1.GroupVersion.WithKind("SecondaryScheduler"))})
	operator, err := client.New(operatorRESTConfig, client.Options{Scheme: testScheme})
	s.g.Expect(err).NotTo(HaveOccurred())
	write := &writer{Client: operator, APIReader: operator, owned: ownership.NewChecker(operator, operator, testScheme)}

	created, err := write.applyDeployment(s.ctx, cr, deployment, ownership.Live{}, nil)
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(created).NotTo(BeNil())
	// Again, with the cache as empty as before: the create answers AlreadyExists.
	found, err := write.applyDeployment(s.ctx, cr, deployment, ownership.Live{}, nil)
	s.g.Expect(err).NotTo(HaveOccurred())
	s.g.Expect(found).NotTo(BeNil(), "the Deployment as the API server holds it")
	s.g.Expect(found.UID).To(Equal(created.UID))
	s.g.Expect(found.ResourceVersion).To(Equal(created.ResourceVersion), "nothing written")
}
