package render

import (
	"slices"
	"testing"

	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// Gangs and quotas combine with every typed profile, its request-based stand-in included:
// the configuration is one scheduler-plugins' kube-scheduler starts with, it enables both
// plugins at the extension points they implement, needs their CRDs, and binds their roles.
func TestAddOnsCombineWithEveryTypedProfile(t *testing.T) {
	for _, profileType := range sortedProfileTypes() {
		if profileType == v1.CustomProfile {
			continue
		}
		for _, scoreByRequests := range []bool{false, true} {
			if scoreByRequests && profiles[profileType].loadAware == nil {
				continue
			}
			t.Run(string(profileType), func(t *testing.T) {
				cr := secondaryScheduler("batch", func(cr *v1.SecondaryScheduler) {
					cr.Spec.Profile = profileWithDefaults(t, profileType)
					cr.Spec.Gang = &v1.Gang{PermitWaitingTimeSeconds: ptr.To[int32](30)}
					cr.Spec.Quota = &v1.Quota{}
					cr.Spec.NUMA = &v1.NUMA{}
				})
				result, err := Render(cr, Facts{KubernetesMinor: 35, ScoreByRequests: scoreByRequests,
					PrometheusAddress: "http://prometheus-k8s.monitoring.svc:9090"})
				if err != nil {
					t.Fatal(err)
				}
				if problems := schedconfig.StartProblems(result.Config, schedconfig.Scheduler{SchedulerPlugins: true, KubernetesMinor: 35}); len(problems) > 0 {
					t.Errorf("scheduler-plugins' kube-scheduler would not start: %q\n%s", problems, result.SchedulerConfig)
				}
				enabled := schedconfig.EnabledPlugins(result.Config)
				for _, plugin := range []string{"Coscheduling", "CapacityScheduling", "NodeResourceTopologyMatch"} {
					if !slices.Contains(enabled, plugin) {
						t.Errorf("%s is not enabled: %v", plugin, enabled)
					}
				}
				var crds []string
				for _, crd := range schedconfig.NeededCRDs(result.Config) {
					crds = append(crds, crd.CRDName())
				}
				slices.Sort(crds)
				if !slices.Equal(crds, []string{"elasticquotas.scheduling.x-k8s.io", "noderesourcetopologies.topology.node.k8s.io", "podgroups.scheduling.x-k8s.io"}) {
					t.Errorf("CRDs needed: %v", crds)
				}
				roles, err := schedconfig.NeededClusterRoles(result.Config)
				if err != nil {
					t.Fatal(err)
				}
				for _, role := range []string{"secondary-scheduler-plugin-capacityscheduling", "secondary-scheduler-plugin-coscheduling",
					"secondary-scheduler-plugin-noderesourcetopologymatch"} {
					if !slices.Contains(roles, role) {
						t.Errorf("no binding to %s: %v", role, roles)
					}
				}
			})
		}
	}
}

// Without spec.gang, spec.quota and spec.numa a typed profile enables none of their plugins.
func TestNoAddOnsByDefault(t *testing.T) {
	result, err := Render(secondaryScheduler("packer", nil), Facts{KubernetesMinor: 35})
	if err != nil {
		t.Fatal(err)
	}
	if enabled := schedconfig.EnabledPlugins(result.Config); slices.Contains(enabled, "Coscheduling") || slices.Contains(enabled, "CapacityScheduling") ||
		slices.Contains(enabled, "NodeResourceTopologyMatch") {
		t.Errorf("enabled: %v", enabled)
	}
}
