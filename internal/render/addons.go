package render

import (
	"fmt"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// addOn is a setting of the spec that adds a plugin to every profile of a typed
// configuration, whatever the profile's type: a gang beside TargetLoadPacking, quotas
// beside BinPacking, NUMA-aware filtering beside either.
type addOn struct {
	// plugin is the plugin it adds.
	plugin string
	// asset is the profile fragment that enables it, in bindata/assets/scheduler-config/addons:
	// its plugins are merged into each profile's (mergePlugins).
	asset string
	// args are the plugin's args that cr sets, as scheduler-plugins spells them; nil when
	// the add-on is off, empty when it sets none (the plugin's defaults apply).
	args func(cr *v1.SecondaryScheduler) map[string]any
}

// addOns are applied in this order: quota before gang, so that at postFilter
// CapacityScheduling preempts before Coscheduling turns a gang away.
var addOns = []addOn{
	{plugin: QuotaPlugin, asset: "quota.yaml", args: func(cr *v1.SecondaryScheduler) map[string]any {
		if cr.Spec.Quota == nil {
			return nil
		}
		return map[string]any{} // CapacityScheduling takes no args
	}},
	{plugin: CoschedulingPlugin, asset: "gang.yaml", args: gangArgs},
	{plugin: GangSchedulingPlugin, asset: "gang-workload.yaml", args: func(cr *v1.SecondaryScheduler) map[string]any {
		if cr.Spec.Gang == nil || cr.Spec.Gang.EffectiveImplementation() != v1.WorkloadGangs {
			return nil
		}
		return map[string]any{} // GangScheduling takes no args
	}},
	{plugin: "NodeResourceTopologyMatch", asset: "numa.yaml", args: func(cr *v1.SecondaryScheduler) map[string]any {
		if cr.Spec.NUMA == nil {
			return nil
		}
		return map[string]any{} // the plugin's defaults
	}},
}

// The plugins that schedule gangs: scheduler-plugins' (spec.gang.implementation
// Coscheduling) and Kubernetes' own (Workload).
const (
	CoschedulingPlugin   = "Coscheduling"
	GangSchedulingPlugin = "GangScheduling"
)

// QuotaPlugin is the plugin that holds namespaces to their ElasticQuotas (spec.quota).
const QuotaPlugin = "CapacityScheduling"

// GenericWorkloadGate is the feature gate of the Workload API and GangScheduling, which a
// kube-scheduler of 1.37 needs on (beta, off by default) to run the plugin.
const GenericWorkloadGate = "GenericWorkload"

// GangPlugin is the plugin that schedules cr's gangs, "" without spec.gang.
func GangPlugin(cr *v1.SecondaryScheduler) string {
	switch {
	case cr.Spec.Gang == nil:
		return ""
	case cr.Spec.Gang.EffectiveImplementation() == v1.WorkloadGangs:
		return GangSchedulingPlugin
	default:
		return CoschedulingPlugin
	}
}

// gangArgs are CoschedulingArgs from spec.gang, nil unless Coscheduling schedules gangs.
func gangArgs(cr *v1.SecondaryScheduler) map[string]any {
	gang := cr.Spec.Gang
	if gang == nil || gang.EffectiveImplementation() != v1.CoschedulingGangs {
		return nil
	}
	args := map[string]any{}
	if gang.PermitWaitingTimeSeconds != nil {
		args["permitWaitingTimeSeconds"] = int(*gang.PermitWaitingTimeSeconds)
	}
	if gang.PodGroupBackoffSeconds != nil {
		args["podGroupBackoffSeconds"] = int(*gang.PodGroupBackoffSeconds)
	}
	return args
}

// addPlugins adds the plugins of cr's add-ons to every profile of config, a typed
// profile's configuration.
func addPlugins(config *yaml.RNode, cr *v1.SecondaryScheduler) error {
	profiles, err := lookup(config, "profiles")
	if err != nil {
		return err
	}
	for _, addOn := range addOns {
		args := addOn.args(cr)
		if args == nil {
			continue
		}
		fragment, err := loadAsset("scheduler-config/addons/" + addOn.asset)
		if err != nil {
			return err
		}
		profileNodes, err := profiles.Elements()
		if err != nil {
			return fmt.Errorf("read profiles: %w", err)
		}
		for _, profile := range profileNodes {
			if err := mergePlugins(profile, fragment); err != nil {
				return fmt.Errorf("add %s: %w", addOn.plugin, err)
			}
			if len(args) > 0 {
				if err := appendPluginConfig(profile, addOn.plugin, args); err != nil {
					return fmt.Errorf("add %s: %w", addOn.plugin, err)
				}
			}
		}
	}
	return nil
}

// mergePlugins adds the enabled and disabled plugins of each extension point of
// fragment's plugins to profile's, after those profile has.
func mergePlugins(profile, fragment *yaml.RNode) error {
	points, err := lookup(fragment, "plugins")
	if err != nil {
		return err
	}
	plugins, err := ensureField(profile, "plugins", yaml.NewMapRNode(nil))
	if err != nil {
		return err
	}
	return points.VisitFields(func(point *yaml.MapNode) error {
		set, err := ensureField(plugins, point.Key.YNode().Value, yaml.NewMapRNode(nil))
		if err != nil {
			return err
		}
		return point.Value.VisitFields(func(list *yaml.MapNode) error {
			existing, err := ensureField(set, list.Key.YNode().Value, yaml.NewListRNode())
			if err != nil {
				return err
			}
			items, err := list.Value.Elements()
			if err != nil {
				return err
			}
			for _, item := range items {
				if err := existing.PipeE(yaml.Append(item.Copy().YNode())); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// appendPluginConfig adds a pluginConfig entry of plugin with args to profile.
func appendPluginConfig(profile *yaml.RNode, plugin string, args map[string]any) error {
	pluginConfig, err := ensureField(profile, "pluginConfig", yaml.NewListRNode())
	if err != nil {
		return err
	}
	// Name first, as the assets write an entry.
	entry := yaml.NewMapRNode(nil)
	if err := setValue(entry, plugin, "name"); err != nil {
		return err
	}
	if err := setValue(entry, args, "args"); err != nil {
		return err
	}
	return pluginConfig.PipeE(yaml.Append(entry.YNode()))
}
