package render

import (
	"fmt"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// loadAwareConfig renders a Trimaran profile: its plugin enabled at score (and where
// alsoEnabledAt says) with arguments exactly as scheduler-plugins' kubescheduler.config.k8s.io/v1
// args types spell them, which the plugins decode strictly.
func loadAwareConfig(cr *v1.SecondaryScheduler, profile profile, discoveredPrometheus, token string) (*yaml.RNode, error) {
	config, profileNode, err := profileAsset(cr, profile.asset)
	if err != nil {
		return nil, err
	}
	plugin := profile.loadAware.plugin
	enabled := []map[string]string{{"name": plugin}}
	for _, point := range append([]string{"score"}, profile.loadAware.alsoEnabledAt...) {
		if err := setValue(profileNode, enabled, "plugins", point, "enabled"); err != nil {
			return nil, err
		}
	}
	args, err := trimaranArgs(cr.Spec.Profile, profile.loadAware, discoveredPrometheus, token)
	if err != nil {
		return nil, err
	}
	pluginConfig := []map[string]any{{"name": plugin, "args": args}}
	if cr.Spec.Descheduling != nil {
		// The scheduler's default topology spreading places a pod of a workload on the node
		// with the fewest of its pods: the very node the descheduler just relieved of them,
		// whatever its load (seen on a real node, TargetLoadPacking's weight against
		// PodTopologySpread's). Without it, the load-aware plugin decides where an evicted
		// pod goes, as the band assumes; constraints that pods set themselves still apply.
		pluginConfig = append(pluginConfig, map[string]any{"name": "PodTopologySpread",
			"args": map[string]any{"defaultingType": "List", "defaultConstraints": []any{}}})
	}
	return config, setValue(profileNode, pluginConfig, "pluginConfig")
}

// trimaranArgs are the plugin's args: the part shared by every Trimaran plugin (where
// load comes from) and the profile's own. An explicit address wins over discovery.
func trimaranArgs(spec *v1.Profile, loadAware *loadAwareness, discoveredPrometheus, token string) (map[string]any, error) {
	metrics := spec.LoadMetrics()
	if metrics == nil {
		return nil, fmt.Errorf("profile %s is not load-aware", spec.Type)
	}
	args, err := loadAware.ownArgs(spec)
	if err != nil {
		return nil, err
	}
	if metrics.WatcherAddress != "" {
		args["watcherAddress"] = metrics.WatcherAddress
		return args, nil
	}
	provider := metrics.Provider
	if provider == "" {
		provider = v1.PrometheusProvider
	}
	metricProvider := map[string]any{"type": string(provider)}
	if metrics.Address != "" {
		metricProvider["address"] = metrics.Address
	} else if spec.ReadsPrometheus() && discoveredPrometheus != "" {
		metricProvider["address"] = discoveredPrometheus
	}
	if token != "" {
		metricProvider["token"] = token
	}
	if provider != v1.KubernetesMetricsServerProvider {
		// load-watcher skips verification when this is unset: always say it.
		metricProvider["insecureSkipVerify"] = ptr.Deref(metrics.InsecureSkipVerify, false)
	}
	args["metricProvider"] = metricProvider
	return args, nil
}
