package controllers

import (
	"context"
	"time"

	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// pluginControllerDeployment is the controller's Deployment as the API server has it, nil
// when there is none.
func (s *scenario) pluginControllerDeployment() *appsv1.Deployment {
	deployment := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: render.PluginControllerName}}
	if err := s.get(deployment); err != nil {
		s.g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "get the plugin controller: %v", err)
		return nil
	}
	return deployment
}

func controllerImage(deployment *appsv1.Deployment) string {
	if deployment == nil {
		return ""
	}
	return deployment.Spec.Template.Spec.Containers[0].Image
}

// One scheduler-plugins controller runs while any scheduler enables Coscheduling or
// CapacityScheduling, of the newest release they run, owned by the SecondaryScheduler CRD;
// each such scheduler reports it; it goes with the last scheduler that needs it.
func TestPluginControllerRunsWhileASchedulerNeedsIt(t *testing.T) {
	s := newScenario(t)
	for _, plugin := range []string{"Coscheduling", "CapacityScheduling"} {
		s.expectNotServed(s.pluginCRD(plugin))
		s.installStandIn(s.pluginCRD(plugin))
	}
	s.g.Eventually(s.pluginControllerDeployment).Should(BeNil(), "no scheduler of an earlier test needs the controller any more")

	plain := binPacking("plain")
	s.create(plain)
	s.expectCondition(plain, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
	s.g.Consistently(s.pluginControllerDeployment).Should(BeNil(), "no scheduler needs the controller")
	s.g.Expect(s.secondaryScheduler(plain).Status.PluginController).To(BeNil())

	gangs := binPacking("gangs")
	gangs.Spec.Gang = &v1.Gang{}
	gangs.Spec.SchedulerImage = "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7"
	s.create(gangs)
	s.g.Eventually(func() string { return controllerImage(s.pluginControllerDeployment()) }).Should(
		Equal("registry.k8s.io/scheduler-plugins/controller:v0.34.7"), "the controller of the scheduler's release")
	controller := s.pluginControllerDeployment()
	s.g.Expect(controller.Spec.Template.Spec.ServiceAccountName).To(Equal(render.PluginControllerName))
	s.g.Expect(controller.OwnerReferences).To(ConsistOf(HaveField("Name", render.SecondarySchedulerCRDName)))
	s.g.Eventually(func() *v1.PluginControllerStatus { return s.secondaryScheduler(gangs).Status.PluginController }).Should(And(
		HaveField("Deployment", operatorNamespace+"/"+render.PluginControllerName),
		HaveField("Plugins", []string{"Coscheduling"}),
		HaveField("Image", "registry.k8s.io/scheduler-plugins/controller:v0.34.7"),
		HaveField("Message", ContainSubstring("No pod of scheduler-plugins' controller is ready (0 of 2)"))))

	// Its status follows the controller's Deployment.
	controller.Status = appsv1.DeploymentStatus{ObservedGeneration: controller.Generation, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 2}
	s.g.Expect(adminClient.Status().Update(s.ctx, controller)).To(Succeed())
	s.g.Eventually(func() *v1.PluginControllerStatus { return s.secondaryScheduler(gangs).Status.PluginController }).Should(And(
		HaveField("ReadyReplicas", int32(2)), HaveField("Message", "")))

	// A second scheduler of a newer release: one controller, of the newer release.
	quotas := binPacking("quotas")
	quotas.Spec.Quota = &v1.Quota{}
	s.create(quotas)
	newest := "registry.k8s.io/scheduler-plugins/controller:v0.35.7"
	s.g.Eventually(func() string { return controllerImage(s.pluginControllerDeployment()) }).Should(Equal(newest))
	// Its pods of the release before still run until the Deployment replaces them: not
	// "every replica is ready" for the new image.
	s.g.Eventually(func() *v1.PluginControllerStatus { return s.secondaryScheduler(gangs).Status.PluginController }).Should(And(
		HaveField("Image", newest), HaveField("Message", ContainSubstring("rolls out a change (image "+newest+")"))))
	controller = s.pluginControllerDeployment()
	controller.Status = appsv1.DeploymentStatus{ObservedGeneration: controller.Generation, Replicas: 2, ReadyReplicas: 2, AvailableReplicas: 2, UpdatedReplicas: 2}
	s.g.Expect(adminClient.Status().Update(s.ctx, controller)).To(Succeed())
	s.g.Eventually(func() *v1.PluginControllerStatus { return s.secondaryScheduler(gangs).Status.PluginController }).Should(And(
		HaveField("Image", newest), HaveField("Message", "")))
	s.g.Eventually(func() []string {
		if status := s.secondaryScheduler(quotas).Status.PluginController; status != nil {
			return status.Plugins
		}
		return nil
	}).Should(Equal([]string{"CapacityScheduling"}))

	// An annotation someone writes on a scheduler's Deployment is no way to run code: the
	// controller stays one of the operator's releases.
	scheduler := s.deployment(quotas)
	s.update(scheduler, func() { scheduler.Annotations[render.PluginControllerImageAnnotation] = "evil.example/controller:v1" })
	s.g.Consistently(func() string { return controllerImage(s.pluginControllerDeployment()) }).Should(Equal(newest))

	// Someone else's edit is undone.
	s.update(controller, func() { controller.Spec.Replicas = ptr.To[int32](1) })
	s.g.Eventually(func() *int32 { return s.pluginControllerDeployment().Spec.Replicas }).Should(HaveValue(Equal(int32(2))))

	// Without its quota, the second scheduler reports no controller; the first still needs it.
	s.update(quotas, func() { quotas.Spec.Quota = nil })
	s.g.Eventually(func() *v1.PluginControllerStatus { return s.secondaryScheduler(quotas).Status.PluginController }).Should(BeNil())
	s.g.Eventually(func() string { return controllerImage(s.pluginControllerDeployment()) }).Should(
		Equal("registry.k8s.io/scheduler-plugins/controller:v0.34.7"), "back to the release of the one scheduler that needs it")

	// The last scheduler that needs it goes: so does the controller.
	s.g.Expect(adminClient.Delete(s.ctx, gangs)).To(Succeed())
	s.g.Eventually(s.pluginControllerDeployment).Should(BeNil())
}

// The controller is not run while a kind it keeps is not served (it would crash-loop), and
// a Deployment of its name that is not the operator's is left alone; the schedulers that
// need the controller say why none runs.
func TestPluginControllerWaitsForItsCRDsAndLeavesOthersDeploymentAlone(t *testing.T) {
	s := newScenario(t)
	for _, plugin := range []string{"Coscheduling", "CapacityScheduling"} {
		s.expectNotServed(s.pluginCRD(plugin))
	}
	s.installStandIn(s.pluginCRD("Coscheduling"))
	s.g.Eventually(s.pluginControllerDeployment).Should(BeNil(), "no scheduler of an earlier test needs the controller any more")
	gangs := binPacking("gangs")
	gangs.Spec.Gang = &v1.Gang{}
	s.create(gangs)
	message := func() string {
		if status := s.secondaryScheduler(gangs).Status.PluginController; status != nil {
			return status.Message
		}
		return ""
	}
	s.g.Eventually(message).Should(And(ContainSubstring("does not start without both CRDs; this cluster lacks elasticquotas.scheduling.x-k8s.io"),
		ContainSubstring("manifests/capacityscheduling/crd.yaml")))
	s.g.Consistently(s.pluginControllerDeployment).Should(BeNil())

	labels := map[string]string{"app": "theirs"}
	theirs := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: render.PluginControllerName},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: podTemplate(labels)}}
	s.create(theirs)
	s.t.Cleanup(func() { s.g.Expect(adminClient.Delete(s.ctx, theirs)).To(Succeed()) })
	// The CRD comes without an event the operator watches: it looks again every 30 s (the
	// wait bounds that, with room for a busy machine; it asserts no timing).
	s.installStandIn(s.pluginCRD("CapacityScheduling"))
	s.g.Eventually(message, 2*time.Minute).Should(And(ContainSubstring("cannot run scheduler-plugins' controller"), ContainSubstring("is not the operator's")))
	s.g.Consistently(func() types.UID { return s.pluginControllerDeployment().UID }).Should(Equal(theirs.UID))
	s.g.Expect(s.pluginControllerDeployment().Labels).To(Equal(theirs.Labels), "their Deployment is not touched")
}

// secondaryScheduler is cr as the API server has it now.
func (s *scenario) secondaryScheduler(cr *v1.SecondaryScheduler) *v1.SecondaryScheduler {
	current := &v1.SecondaryScheduler{}
	s.g.Expect(adminClient.Get(s.ctx, client.ObjectKeyFromObject(cr), current)).To(Succeed())
	return current
}

// podTemplate is a template of one container with labels.
func podTemplate(labels map[string]string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "theirs", Image: "example.com/theirs:v1"}}}}
}

// A Deployment asks for the controller on behalf of a live SecondaryScheduler only when its
// owner labels name one in its own namespace, UID included; labels naming another
// namespace are no scheduler's, and are not read (the cache may not hold that namespace).
func TestOwnerIsLiveOnlyInTheDeploymentsNamespace(t *testing.T) {
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "gangs", UID: "uid-1"}}
	going := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "going", UID: "uid-2",
		DeletionTimestamp: ptr.To(metav1.Now()), Finalizers: []string{"test"}}}
	reader := fake.NewClientBuilder().WithScheme(testScheme).WithObjects(cr, going).Build()
	deployment := func(namespace, ownerNamespace, ownerName, ownerUID string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "d", Labels: map[string]string{
			render.LabelOwnerNamespace: ownerNamespace, render.LabelOwnerName: ownerName, render.LabelOwnerUID: ownerUID}}}
	}
	tests := []struct {
		name       string
		deployment *appsv1.Deployment
		want       bool
	}{
		{"its live owner", deployment("team-a", "team-a", "gangs", "uid-1"), true},
		{"another UID of that name", deployment("team-a", "team-a", "gangs", "uid-9"), false},
		{"an owner being deleted", deployment("team-a", "team-a", "going", "uid-2"), false},
		{"an owner that is not there", deployment("team-a", "team-a", "gone", "uid-3"), false},
		{"labels naming another namespace", deployment("team-b", "team-a", "gangs", "uid-1"), false},
		{"no owner labels", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "d"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ownerIsLive(context.Background(), reader, tt.deployment)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("ownerIsLive = %v, want %v", got, tt.want)
			}
		})
	}
}
