package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// profile is everything the operator knows of one profile type, so that the rest of this
// package tells profile types apart by reading this table, never by naming them.
//
// A new profile type is its entry in profiles (with the function writing its arguments,
// if it has any) and what the API server and OLM must be told of it:
//   - in api/v1: its ProfileType constant, the Enum marker of ProfileType and its name in
//     the comment of Profile.Type; with arguments, their type (each field's comment
//     stating its default), their member of Profile and its union rule on Profile; if
//     load-aware, ProfileType.IsLoadAware and the rule limiting profile.metrics;
//   - with arguments, their spec descriptors in the CSV base in config/manifests/bases;
//   - make manifests generate bundle catalog build-installer docs, for the CRD, the deep
//     copies, the bundle, the catalog, dist and docs/api.md;
//   - go test ./internal/render -run TestProfileGoldens -update, for its golden, to review.
//
// The tests of profiles_test.go hold the CRD, api/v1 and this table to one list of
// profiles, and say which to edit when they disagree.
type profile struct {
	// member is the JSON name of the profile's arguments in spec.profile (its field of
	// api/v1's Profile), which the CRD's union rules allow with this type alone; empty for
	// a profile without arguments.
	member string
	// defaults are the arguments the profile's scheduler uses for those spec.profile leaves
	// out, as a value of the member's type in api/v1 with every field set. The CRD's
	// descriptions state them, which a test checks. The operator renders only what the
	// user set: a load-aware plugin applies these defaults itself, an in-tree profile's
	// asset holds them (the in-tree plugins' own defaults are not the profile's).
	defaults any
	// asset is the profile's KubeSchedulerConfiguration in bindata/assets/scheduler-config;
	// empty for Custom, whose configuration is the user's.
	asset string
	// writeArgs writes the arguments of spec.profile into the asset's profile, over the
	// defaults the asset holds; nil for a profile without arguments or a load-aware one,
	// whose arguments are loadAware.ownArgs.
	writeArgs func(spec *v1.Profile, profile *yaml.RNode) error
	// loadAware is set for a profile that scores nodes by their measured load, which it
	// reads from the metrics provider of spec.profile.metrics; nil for the others.
	loadAware *loadAwareness
}

// loadAwareness is what a load-aware (scheduler-plugins' Trimaran) profile adds: its
// asset is the configuration of one Trimaran plugin, which the profile names, and a
// request-based stand-in replaces it while the metrics are unavailable.
type loadAwareness struct {
	// plugin is enabled at score, and at alsoEnabledAt, with the args that trimaranArgs
	// renders from ownArgs and spec.profile.metrics.
	plugin        string
	alsoEnabledAt []string
	// ownArgs are the plugin's args that spec.profile's member sets, as scheduler-plugins
	// spells them; the part shared by every Trimaran plugin, where load comes from, is
	// trimaranArgs'.
	ownArgs func(spec *v1.Profile) (map[string]any, error)
	// measures are the node resources whose measured use the plugin scores by: the metrics
	// the scheduler needs. load-watcher fetches those of CPU and memory for any plugin, and
	// the metrics probe checks both (metricsprobe.Series); a profile measuring another
	// resource needs both taught to read it.
	measures []corev1.ResourceName
	// requestBased is the asset of the in-tree stand-in the profile is switched to while
	// its metrics are unavailable (whenUnavailable: ScoreByRequests): it scores by requests
	// what the plugin scores by measured use.
	requestBased string
}

// profiles holds every profile type the operator configures.
var profiles = map[v1.ProfileType]profile{
	v1.CustomProfile: {},
	v1.BinPackingProfile: {
		member: "binPacking", asset: "binpacking.yaml", writeArgs: writeBinPackingWeights,
		defaults: &v1.BinPackingArgs{ResourceWeights: map[corev1.ResourceName]int64{corev1.ResourceCPU: 1, corev1.ResourceMemory: 1}},
	},
	v1.TargetLoadPackingProfile: {
		member: "targetLoadPacking", asset: "load-aware.yaml",
		defaults: &v1.TargetLoadPackingArgs{TargetUtilization: ptr.To[int32](40),
			DefaultRequests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1000m")}, DefaultRequestsMultiplier: defaultRequestsMultiplier},
		// It packs by measured CPU use; MostAllocated packs by requests.
		loadAware: &loadAwareness{plugin: "TargetLoadPacking", ownArgs: targetLoadPackingOwnArgs,
			measures: []corev1.ResourceName{corev1.ResourceCPU}, requestBased: "binpacking.yaml"},
	},
	v1.LoadVariationRiskBalancingProfile: {
		member: "loadVariationRiskBalancing", asset: "load-aware.yaml",
		defaults: &v1.LoadVariationRiskBalancingArgs{SafeVarianceMargin: "1", SafeVarianceSensitivity: "1"},
		// It balances measured use; balanced allocation balances requests.
		loadAware: &loadAwareness{plugin: "LoadVariationRiskBalancing", ownArgs: loadVariationRiskBalancingOwnArgs,
			measures: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}, requestBased: "requests-balanced.yaml"},
	},
	v1.LowRiskOverCommitmentProfile: {
		member: "lowRiskOverCommitment", asset: "load-aware.yaml",
		defaults: &v1.LowRiskOverCommitmentArgs{SmoothingWindowSize: ptr.To[int32](5),
			RiskLimitWeights: map[corev1.ResourceName]v1.RiskWeight{corev1.ResourceCPU: "0.5", corev1.ResourceMemory: "0.5"}},
		// Its plugin is a PreScore plugin too. Like LoadVariationRiskBalancing it spreads
		// risk by measured use, which balanced allocation does by requests.
		loadAware: &loadAwareness{plugin: "LowRiskOverCommitment", alsoEnabledAt: []string{"preScore"}, ownArgs: lowRiskOverCommitmentOwnArgs,
			measures: []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}, requestBased: "requests-balanced.yaml"},
	},
}

// writeBinPackingWeights sets the resource weights of NodeResourcesFit's MostAllocated
// scoring from profile.binPacking; left out, the asset's weights (the defaults) stand.
// The list is built node by node, as sigs.k8s.io/yaml would write it: its text for the
// list took about a fifteenth of a BinPacking rendering's time.
func writeBinPackingWeights(spec *v1.Profile, profile *yaml.RNode) error {
	if spec.BinPacking == nil || len(spec.BinPacking.ResourceWeights) == 0 {
		return nil
	}
	weights := spec.BinPacking.ResourceWeights
	resources := yaml.NewListRNode()
	for _, name := range slices.Sorted(maps.Keys(weights)) {
		weight := yaml.NewMapRNode(nil)
		if err := setValue(weight, string(name), "name"); err != nil {
			return err
		}
		if err := setValue(weight, weights[name], "weight"); err != nil {
			return err
		}
		if err := resources.PipeE(yaml.Append(weight.YNode())); err != nil {
			return fmt.Errorf("append the weight of %s: %w", name, err)
		}
	}
	fitArgs, err := lookup(profile, "pluginConfig", "[name=NodeResourcesFit]", "args")
	if err != nil {
		return err
	}
	return setNode(fitArgs, resources, "scoringStrategy", "resources")
}

func targetLoadPackingOwnArgs(spec *v1.Profile) (map[string]any, error) {
	args := map[string]any{"defaultRequestsMultiplier": defaultRequestsMultiplier}
	if own := spec.TargetLoadPacking; own != nil {
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
	return args, nil
}

// defaultRequestsMultiplier is TargetLoadPacking's multiplier of requests when the
// resource sets none, written out because it is not the plugin's (1.5). Pods commonly
// request more than they use; the plugin predicts a pod at its request times the
// multiplier until load-watcher has measured it, so with 1.5 a node that TargetLoadPacking
// sees at its target ran far below it. In the outcome benchmark (docs/benchmarks.md),
// TargetLoadPacking 40 % placed a load that 16 nodes hold at 40 % on 26 nodes with 1.5,
// and on 19 with 1, with no node above 80 % either way.
const defaultRequestsMultiplier = "1"

func loadVariationRiskBalancingOwnArgs(spec *v1.Profile) (map[string]any, error) {
	args := map[string]any{}
	if own := spec.LoadVariationRiskBalancing; own != nil {
		for field, value := range map[string]string{"safeVarianceMargin": own.SafeVarianceMargin, "safeVarianceSensitivity": own.SafeVarianceSensitivity} {
			if err := setDecimal(args, field, value); err != nil {
				return nil, err
			}
		}
	}
	return args, nil
}

func lowRiskOverCommitmentOwnArgs(spec *v1.Profile) (map[string]any, error) {
	args := map[string]any{}
	if own := spec.LowRiskOverCommitment; own != nil {
		if own.SmoothingWindowSize != nil {
			args["smoothingWindowSize"] = *own.SmoothingWindowSize
		}
		if len(own.RiskLimitWeights) > 0 {
			weights := map[string]float64{}
			for _, name := range slices.Sorted(maps.Keys(own.RiskLimitWeights)) {
				weight, err := strconv.ParseFloat(string(own.RiskLimitWeights[name]), 64)
				if err != nil {
					return nil, fmt.Errorf("riskLimitWeights[%s]: %w", name, err)
				}
				weights[string(name)] = weight
			}
			args["riskLimitWeights"] = weights
		}
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
