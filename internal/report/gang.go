package report

import (
	"slices"

	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// gangPlugins are the plugins that schedule gangs, by the implementation each is.
var gangPlugins = []struct {
	plugin         string
	implementation v1.GangImplementation
}{
	{render.GangSchedulingPlugin, v1.WorkloadGangs},
	{render.CoschedulingPlugin, v1.CoschedulingGangs},
}

// Gang sets status.gang from config, the configuration applied: the plugin that schedules
// gangs, whether spec.gang or a Custom configuration enabled it; nil when none does.
func Gang(status *v1.SecondarySchedulerStatus, config *schedulerconfigv1.KubeSchedulerConfiguration) {
	status.Gang = nil
	enabled := schedconfig.EnabledPlugins(config)
	for _, gang := range gangPlugins {
		if slices.Contains(enabled, gang.plugin) {
			status.Gang = &v1.GangStatus{Implementation: gang.implementation, Plugin: gang.plugin}
			return
		}
	}
}
