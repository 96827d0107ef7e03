package schedconfig

import (
	"slices"

	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
)

// inTreePlugins are the plugins Kubernetes' own kube-scheduler has in some version from
// 1.30 to 1.37: the names of pkg/scheduler/framework/plugins/names/names.go in
// kubernetes/kubernetes v1.37.0, and AzureDiskLimits, CinderLimits, EBSLimits and
// GCEPDLimits, which 1.30 still had (1.31 removed them). A plugin not named here is an
// out-of-tree one, such as scheduler-plugins' Trimaran (TargetLoadPacking,
// LoadVariationRiskBalancing, LowRiskOverCommitment), which only an image built with it
// has. A newer Kubernetes adds names: add them here when its release is added to the
// default images.
var inTreePlugins = map[string]bool{
	"PrioritySort": true, "DefaultBinder": true, "DefaultPreemption": true, "DynamicResources": true,
	"GangScheduling": true, "ImageLocality": true, "InterPodAffinity": true, "NodeAffinity": true,
	"NodeDeclaredFeatures": true, "NodeName": true, "NodePorts": true, "NodeResourcesBalancedAllocation": true,
	"NodeResourcesFit": true, "NodeUnschedulable": true, "NodeVolumeLimits": true, "PodTopologySpread": true,
	"DeferredPodScheduling": true, "SchedulingGates": true, "TaintToleration": true, "VolumeBinding": true,
	"VolumeRestrictions": true, "VolumeZone": true, "TopologyPlacementGenerator": true, "PodGroupPodsCount": true,
	"AzureDiskLimits": true, "CinderLimits": true, "EBSLimits": true, "GCEPDLimits": true,
}

// OutOfTreePlugins lists the plugins that a configuration's profiles enable, at any
// extension point, and that no Kubernetes kube-scheduler of 1.30 to 1.37 has in-tree,
// sorted and without duplicates. Only enabled plugins count: kube-scheduler ignores the
// pluginConfig of a plugin no profile enables, and disabling an unknown one.
func OutOfTreePlugins(config *schedulerconfigv1.KubeSchedulerConfiguration) []string {
	var names []string
	if config == nil {
		return nil
	}
	for _, profile := range config.Profiles {
		plugins := profile.Plugins
		if plugins == nil {
			continue
		}
		for _, set := range []schedulerconfigv1.PluginSet{
			plugins.PreEnqueue, plugins.QueueSort, plugins.PreFilter, plugins.Filter, plugins.PostFilter,
			plugins.PreScore, plugins.Score, plugins.Reserve, plugins.Permit, plugins.PreBind, plugins.Bind,
			plugins.PostBind, plugins.MultiPoint, plugins.PlacementGenerate,
		} {
			for _, plugin := range set.Enabled {
				if !inTreePlugins[plugin.Name] {
					names = append(names, plugin.Name)
				}
			}
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}
