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

// A configuration enabling a plugin whose CRD the cluster does not serve is refused, with
// the command that installs it, and nothing rolls out; once the CRD is served, the
// scheduler rolls out bound to its plugin's ClusterRole, and the binding goes when the
// configuration stops enabling the plugin.
func TestPluginCRDsAndBindingsFollowTheConfiguration(t *testing.T) {
	s := newScenario(t)
	podGroups, ok := schedconfig.PluginNeedsOf("Coscheduling")
	s.g.Expect(ok).To(BeTrue())
	crd := podGroups.CRDs[0]
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
	s.create(standInCRD(crd))
	t.Cleanup(func() { _ = adminClient.Delete(s.ctx, standInCRD(crd)) })
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
