package schedconfig

import (
	"maps"
	"slices"

	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
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
		for _, set := range pluginSets(profile.Plugins) {
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

// pluginSets are the plugin sets of every extension point of plugins, multiPoint
// included; none when plugins is nil.
func pluginSets(plugins *schedulerconfigv1.Plugins) []schedulerconfigv1.PluginSet {
	if plugins == nil {
		return nil
	}
	return []schedulerconfigv1.PluginSet{
		plugins.PreEnqueue, plugins.QueueSort, plugins.PreFilter, plugins.Filter, plugins.PostFilter,
		plugins.PreScore, plugins.Score, plugins.Reserve, plugins.Permit, plugins.PreBind, plugins.Bind,
		plugins.PostBind, plugins.MultiPoint, plugins.PlacementGenerate,
	}
}

// enables reports whether plugins enables plugin at some extension point, multiPoint
// included. kube-scheduler then creates an instance of the plugin for the profile
// (pluginsNeeded in its framework runtime), whatever the disabled lists say: they only
// remove default plugins, and an extension point a multiPoint plugin is disabled at
// only skips it there.
func enables(plugins *schedulerconfigv1.Plugins, plugin string) bool {
	return slices.ContainsFunc(pluginSets(plugins), func(set schedulerconfigv1.PluginSet) bool { return names(set.Enabled, plugin) })
}

// schedulerPluginsPlugins are the out-of-tree plugins that scheduler-plugins'
// kube-scheduler registers beside the in-tree ones (cmd/scheduler/main.go of
// kubernetes-sigs/scheduler-plugins, main of August 2026): a superset of what its v0.3x
// releases have, so that no name one of them has is refused.
var schedulerPluginsPlugins = map[string]bool{
	"CapacityScheduling": true, "Coscheduling": true, "LoadVariationRiskBalancing": true, "NetworkOverhead": true,
	"TopologicalSort": true, "NodeMetadata": true, "NodeResourcesAllocatable": true, "NodeResourceTopologyMatch": true,
	"PreemptionToleration": true, "TargetLoadPacking": true, "LowRiskOverCommitment": true, "SySched": true,
	"Peaks": true, "PodState": true, "QOSSort": true,
}

// UnknownPlugins lists the plugins that a configuration's profiles enable and that no
// kube-scheduler of the kind given has: Kubernetes' own (in-tree plugins), or, with
// schedulerPlugins, scheduler-plugins' (in-tree and its own). Sorted, without duplicates.
// kube-scheduler refuses to start with one of them ("plugin ... does not exist").
func UnknownPlugins(config *schedulerconfigv1.KubeSchedulerConfiguration, schedulerPlugins bool) []string {
	var unknown []string
	for _, name := range OutOfTreePlugins(config) {
		if !schedulerPlugins || !schedulerPluginsPlugins[name] {
			unknown = append(unknown, name)
		}
	}
	return unknown
}

// NearestPlugin is the plugin name, of those a kube-scheduler of the kind given has,
// nearest to name (usertext.Nearest); "" when none is near enough.
func NearestPlugin(name string, schedulerPlugins bool) string {
	known := slices.Collect(maps.Keys(inTreePlugins))
	if schedulerPlugins {
		known = slices.AppendSeq(known, maps.Keys(schedulerPluginsPlugins))
	}
	return usertext.Nearest(name, known)
}
