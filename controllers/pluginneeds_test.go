package controllers

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// gangConfig is a profile that schedules gangs with Coscheduling at the extension points
// its README names, its queue sort in place of the default one.
func gangConfig(schedulerName string) string {
	return `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: ` + schedulerName + `
  plugins:
    queueSort:
      enabled: [{name: Coscheduling}]
      disabled: [{name: "*"}]
    preFilter: {enabled: [{name: Coscheduling}]}
    postFilter: {enabled: [{name: Coscheduling}]}
    permit: {enabled: [{name: Coscheduling}]}
    reserve: {enabled: [{name: Coscheduling}]}
`
}

// standInCRD serves kind as a CustomResourceDefinition does, without upstream's schema:
// the operator only asks whether the kind is served.
func standInCRD(kind schedconfig.CustomResource) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: kind.CRDName()},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: kind.Group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: kind.Resource, Kind: kind.Kind, ListKind: kind.Kind + "List",
				Singular: strings.ToLower(kind.Kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: kind.Version, Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
}

// pluginCRD is the kind plugin reads.
func (s *scenario) pluginCRD(plugin string) schedconfig.CustomResource {
	s.t.Helper()
	needs, ok := schedconfig.PluginNeedsOf(plugin)
	s.g.Expect(ok).To(BeTrue())
	s.g.Expect(needs.CRDs).To(HaveLen(1))
	return needs.CRDs[0]
}

// served reports whether the API server's discovery serves kind, as the operator asks.
func served(kind schedconfig.CustomResource) (bool, error) {
	return gather.DiscoveredKinds(adminClientset.Discovery()).Serves(kind.GroupVersionKind)
}

// expectNotServed waits until the API server no longer serves kind: a test before may have
// installed it, and a CRD deleted leaves discovery a moment later, or, on a machine busy
// with other suites, more than the default half minute later (seen: the apiextensions
// finalizer and discovery lagging behind under load).
func (s *scenario) expectNotServed(kind schedconfig.CustomResource) {
	s.t.Helper()
	s.g.Eventually(func() (bool, error) { return served(kind) }, 2*time.Minute).Should(BeFalse(), "%s is still served", kind.CRDName())
}

// installStandIn installs kind's stand-in CRD for the rest of the test, and deletes it at
// its end, waiting until it is no longer served, so that the next test starts without it.
func (s *scenario) installStandIn(kind schedconfig.CustomResource) {
	s.t.Helper()
	s.create(standInCRD(kind))
	s.t.Cleanup(func() {
		s.g.Expect(adminClient.Delete(s.ctx, standInCRD(kind))).To(Succeed())
		s.expectNotServed(kind)
	})
}

// A configuration enabling a plugin whose CRD the cluster does not serve is refused, with
// the command that installs it, and nothing rolls out; once the CRD is served, the
// scheduler rolls out bound to its plugin's ClusterRole, and the binding goes when the
// configuration stops enabling the plugin.
func TestPluginCRDsAndBindingsFollowTheConfiguration(t *testing.T) {
	s := newScenario(t)
	crd := s.pluginCRD("Coscheduling")
	s.expectNotServed(crd)
	userConfig := configMap("gang-config", map[string]string{"config.yaml": gangConfig("gang")})
	cr := custom("gang", "gang-config")
	s.create(userConfig, cr)
	refused := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonPluginCRDMissing)
	s.g.Expect(refused.Message).To(And(
		ContainSubstring("the configuration in ConfigMap "+s.namespace+"/gang-config enables plugins that read kinds this cluster does not serve"),
		ContainSubstring("Coscheduling reads PodGroup (scheduling.x-k8s.io/v1alpha1), whose CustomResourceDefinition podgroups.scheduling.x-k8s.io"),
		ContainSubstring("kubectl apply --server-side -f https://raw.githubusercontent.com/kubernetes-sigs/scheduler-plugins/"+
			schedconfig.SchedulerPluginsCommit+"/manifests/coscheduling/crd.yaml")))
	s.g.Consistently(func() bool { return s.deployment(cr) == nil }).Should(BeTrue(), "nothing is rolled out")
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.ClusterBindingName(cr, "plugin-coscheduling")}}
	s.g.Expect(apierrors.IsNotFound(s.get(binding))).To(BeTrue(), "no binding before the scheduler can run")

	// Installed: no event tells the operator, which looks again by itself.
	s.installStandIn(crd)
	s.expectConditionWithin(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected, 30*time.Second)
	s.g.Eventually(func() *appsv1.Deployment { return s.deployment(cr) }).ShouldNot(BeNil())
	s.g.Eventually(func() error { return s.get(binding) }).Should(Succeed())
	s.g.Expect(binding.RoleRef).To(Equal(rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "secondary-scheduler-plugin-coscheduling"}))
	s.g.Expect(binding.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Namespace: cr.Namespace, Name: render.WorkloadName(cr)}))

	// The plugin disabled: its binding goes, the others stay.
	s.update(userConfig, func() { userConfig.Data["config.yaml"] = goodConfig("gang", 3) })
	s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(binding)) }).Should(BeTrue(), "the plugin's binding is pruned")
	s.g.Expect(s.clusterScopedChildren(cr)).NotTo(ContainElement("ClusterRoleBinding/" + binding.Name))
	s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected)
}

// Gangs and quotas as settings of a typed profile: refused until both CRDs are served,
// then rolled out with both plugins and both bindings; turning gangs off removes
// Coscheduling and its binding and keeps the quotas'.
func TestGangsAndQuotasBesideATypedProfile(t *testing.T) {
	s := newScenario(t)
	for _, plugin := range []string{"Coscheduling", "CapacityScheduling"} {
		s.expectNotServed(s.pluginCRD(plugin))
	}
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Name: "batch"},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.BinPackingProfile},
			Gang: &v1.Gang{PermitWaitingTimeSeconds: ptr.To[int32](90)}, Quota: &v1.Quota{}}}
	s.create(cr)
	refused := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonPluginCRDMissing)
	s.g.Expect(refused.Message).To(And(ContainSubstring("profile type BinPacking enables plugins that read kinds this cluster does not serve"),
		ContainSubstring("CapacityScheduling reads ElasticQuota"), ContainSubstring("Coscheduling reads PodGroup"),
		ContainSubstring("manifests/capacityscheduling/crd.yaml"), ContainSubstring("manifests/coscheduling/crd.yaml")))
	s.g.Consistently(func() bool { return s.deployment(cr) == nil }).Should(BeTrue(), "nothing is rolled out")

	for _, plugin := range []string{"Coscheduling", "CapacityScheduling"} {
		s.installStandIn(s.pluginCRD(plugin))
	}
	s.expectConditionWithin(cr, v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected, 30*time.Second)
	s.g.Eventually(func() string { return s.renderedConfig(cr) }).Should(And(ContainSubstring("name: Coscheduling"),
		ContainSubstring("name: CapacityScheduling"), ContainSubstring("permitWaitingTimeSeconds: 90")))
	gang := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.ClusterBindingName(cr, "plugin-coscheduling")}}
	quota := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: render.ClusterBindingName(cr, "plugin-capacityscheduling")}}
	s.g.Eventually(func() error { return s.get(gang) }).Should(Succeed())
	s.g.Eventually(func() error { return s.get(quota) }).Should(Succeed())
	s.g.Eventually(func() *v1.GangStatus { return s.secondaryScheduler(cr).Status.Gang }).Should(
		Equal(&v1.GangStatus{Implementation: v1.CoschedulingGangs, Plugin: "Coscheduling"}), "status says which plugin schedules gangs")

	s.update(cr, func() { cr.Spec.Gang = nil })
	s.g.Eventually(func() string { return s.renderedConfig(cr) }).ShouldNot(ContainSubstring("Coscheduling"))
	s.g.Eventually(func() *v1.GangStatus { return s.secondaryScheduler(cr).Status.Gang }).Should(BeNil())
	s.g.Eventually(func() bool { return apierrors.IsNotFound(s.get(gang)) }).Should(BeTrue(), "the gang plugin's binding is pruned")
	s.g.Expect(s.get(quota)).To(Succeed(), "the quota plugin's binding stays")
}

// Kubernetes' own gangs are refused where the scheduler could not run them: with an image
// that does not read the Workload API of 1.37, and on a cluster that does not serve it
// (envtest's API server runs without the GenericWorkload gate); nothing is rolled out.
func TestWorkloadGangsNeedTheirImageAndAPI(t *testing.T) {
	s := newScenario(t)
	cr := binPacking("workload-gangs")
	cr.Spec.Gang = &v1.Gang{Implementation: v1.WorkloadGangs}
	s.create(cr)
	refused := s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonPluginsNotInImage)
	s.g.Expect(refused.Message).To(And(ContainSubstring("spec.gang.implementation Workload runs Kubernetes' GangScheduling"),
		ContainSubstring("registry.k8s.io/kube-scheduler:v1.N.x")))

	s.update(cr, func() { cr.Spec.SchedulerImage = "registry.k8s.io/kube-scheduler:v1.37.2" })
	refused = s.expectCondition(cr, v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonWorkloadAPIMissing)
	s.g.Expect(refused.Message).To(And(ContainSubstring("this cluster does not serve scheduling.k8s.io/v1beta1 PodGroups"),
		ContainSubstring("feature gate GenericWorkload")))
	s.g.Consistently(func() bool { return s.deployment(cr) == nil }).Should(BeTrue(), "nothing is rolled out")
}
