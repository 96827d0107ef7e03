package schedconfig

import (
	"maps"
	"slices"

	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// inTreePlugins are the plugins Kubernetes' own kube-scheduler has in some version from
// 1.30 to 1.37: those of the generated tables of 1.37.0 and 1.35.4 (hack/pluginpoints), and
// the ones 1.31 removed (removedInTreePlugins), which 1.30, still a default image's
// version, has: a configuration naming them is not refused as naming an unknown plugin, but
// only where the image is known to be 1.31 or newer (StartProblems). A plugin not named here
// is an out-of-tree one, such as scheduler-plugins' Trimaran (TargetLoadPacking,
// LoadVariationRiskBalancing, LowRiskOverCommitment), which only an image built with it has.
var inTreePlugins = func() map[string]bool {
	known := maps.Clone(removedInTreePlugins)
	for _, table := range []pluginPoints{kubernetesPluginPoints, schedulerPluginsCorePluginPoints} {
		for name := range table.plugins {
			known[name] = true
		}
	}
	return known
}()

// OutOfTreePlugins lists the plugins that a configuration's profiles enable, at any
// extension point, and that no Kubernetes kube-scheduler of 1.30 to 1.37 has in-tree,
// sorted and without duplicates. Only enabled plugins count: kube-scheduler ignores the
// pluginConfig of a plugin no profile enables, and disabling an unknown one.
func OutOfTreePlugins(config *schedulerconfigv1.KubeSchedulerConfiguration) []string {
	outOfTree := slices.DeleteFunc(EnabledPlugins(config), func(name string) bool { return inTreePlugins[name] })
	if len(outOfTree) == 0 {
		return nil
	}
	return outOfTree
}

// enables reports whether plugins enables plugin at some extension point, multiPoint
// included. kube-scheduler then creates an instance of the plugin for the profile
// (pluginsNeeded in its framework runtime), whatever the disabled lists say: they only
// remove default plugins, and an extension point a multiPoint plugin is disabled at
// only skips it there.
func enables(plugins *schedulerconfigv1.Plugins, plugin string) bool {
	if plugins == nil {
		return false
	}
	return slices.ContainsFunc(pointSets(plugins), func(point namedSet) bool { return names(point.set.Enabled, plugin) })
}

// schedulerPluginsPlugins are the out-of-tree plugins that scheduler-plugins' kube-scheduler
// registers beside the in-tree ones, at the commit hack/build-scheduler-plugins.sh pins
// (the generated table of hack/pluginpoints).
var schedulerPluginsPlugins = func() map[string]bool {
	known := map[string]bool{}
	for name := range schedulerPluginsPluginPoints.plugins {
		known[name] = true
	}
	return known
}()

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
