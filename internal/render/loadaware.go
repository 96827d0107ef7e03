package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// loadAwareConfig renders a Trimaran profile: its plugin enabled (LowRiskOverCommitment
// also at preScore) with arguments exactly as scheduler-plugins' kubescheduler.config.k8s.io/v1
// args types spell them, which the plugins decode strictly.
func loadAwareConfig(cr *v1.SecondaryScheduler, discoveredPrometheus, token string) (*yaml.RNode, error) {
	config, profile, err := profileAsset(cr, "load-aware.yaml")
	if err != nil {
		return nil, err
	}
	plugin := string(cr.Spec.Profile.Type)
	enabled := []map[string]string{{"name": plugin}}
	if err := setValue(profile, enabled, "plugins", "score", "enabled"); err != nil {
		return nil, err
	}
	if cr.Spec.Profile.Type == v1.LowRiskOverCommitmentProfile {
		if err := setValue(profile, enabled, "plugins", "preScore", "enabled"); err != nil {
			return nil, err
		}
	}
	args, err := trimaranArgs(cr.Spec.Profile, discoveredPrometheus, token)
	if err != nil {
		return nil, err
	}
	return config, setValue(profile, []map[string]any{{"name": plugin, "args": args}}, "pluginConfig")
}

// requestBasedConfig renders the in-tree scoring that stands in for a load-aware profile
// while its metrics are unavailable: MostAllocated packing for TargetLoadPacking (which
// packs by measured use), balanced allocation for the risk-balancing profiles. It reads
// no metrics, so it schedules with any kube-scheduler image.
func requestBasedConfig(cr *v1.SecondaryScheduler) (*yaml.RNode, error) {
	asset := "requests-balanced.yaml"
	if cr.Spec.Profile.Type == v1.TargetLoadPackingProfile {
		asset = "binpacking.yaml"
	}
	config, _, err := profileAsset(cr, asset)
	return config, err
}

// trimaranArgs are the plugin's args: the part shared by every Trimaran plugin (where
// load comes from) and the profile's own. An explicit address wins over discovery.
func trimaranArgs(profile *v1.Profile, discoveredPrometheus, token string) (map[string]any, error) {
	args := map[string]any{}
	metrics := profile.LoadMetrics()
	if metrics == nil {
		return nil, fmt.Errorf("profile %s is not load-aware", profile.Type)
	}
	if metrics.WatcherAddress != "" {
		args["watcherAddress"] = metrics.WatcherAddress
	} else {
		provider := metrics.Provider
		if provider == "" {
			provider = v1.PrometheusProvider
		}
		metricProvider := map[string]any{"type": string(provider)}
		if metrics.Address != "" {
			metricProvider["address"] = metrics.Address
		} else if profile.ReadsPrometheus() && discoveredPrometheus != "" {
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
	}
	switch profile.Type {
	case v1.TargetLoadPackingProfile:
		if own := profile.TargetLoadPacking; own != nil {
			if own.TargetUtilization != nil {
				args["targetUtilization"] = *own.TargetUtilization
			}
			if len(own.DefaultRequests) > 0 {
				args["defaultRequests"] = own.DefaultRequests
			}
			if own.DefaultRequestsMultiplier != "" {
				args["defaultRequestsMultiplier"] = own.DefaultRequestsMultiplier
			}
		}
	case v1.LoadVariationRiskBalancingProfile:
		if own := profile.LoadVariationRiskBalancing; own != nil {
			for field, value := range map[string]string{"safeVarianceMargin": own.SafeVarianceMargin, "safeVarianceSensitivity": own.SafeVarianceSensitivity} {
				if err := setDecimal(args, field, value); err != nil {
					return nil, err
				}
			}
		}
	case v1.LowRiskOverCommitmentProfile:
		if own := profile.LowRiskOverCommitment; own != nil {
			if own.SmoothingWindowSize != nil {
				args["smoothingWindowSize"] = *own.SmoothingWindowSize
			}
			if len(own.RiskLimitWeights) > 0 {
				weights := map[string]float64{}
				for _, resource := range slices.Sorted(maps.Keys(own.RiskLimitWeights)) {
					weight, err := strconv.ParseFloat(string(own.RiskLimitWeights[resource]), 64)
					if err != nil {
						return nil, fmt.Errorf("riskLimitWeights[%s]: %w", resource, err)
					}
					weights[string(resource)] = weight
				}
				args["riskLimitWeights"] = weights
			}
		}
	default:
		return nil, fmt.Errorf("profile type %s is not load-aware", profile.Type)
	}
	return args, nil
}

// setDecimal sets a float64 argument that the API holds as a decimal string.
func setDecimal(args map[string]any, field, value string) error {
	if value == "" {
		return nil
	}
	number, err := strconv.ParseFloat(value, 64)
	if err != nil {
		return fmt.Errorf("%s: %w", field, err)
	}
	args[field] = number
	return nil
}

// readsMetricsServer reports whether cr's scheduler reads metrics.k8s.io, and so is bound
// to the metrics-reader ClusterRole.
func readsMetricsServer(cr *v1.SecondaryScheduler) bool {
	profile := cr.Spec.Profile
	metrics := profile.LoadMetrics()
	return metrics != nil && metrics.WatcherAddress == "" && metrics.Provider == v1.KubernetesMetricsServerProvider
}

func metricsReaderBinding(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
	node, err := newObject(cr, "clusterrolebinding-metrics-reader.yaml", ClusterBindingName(cr, "metrics-reader"), "")
	if err != nil {
		return nil, err
	}
	if err := setNode(node, yaml.NewStringRNode(SchedulerMetricsReaderClusterRole), "roleRef", "name"); err != nil {
		return nil, err
	}
	return node, setSchedulerSubject(node, cr)
}
