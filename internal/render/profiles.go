package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// profile is what the operator knows of one profile type: how its scheduler is
// configured. Only here are profile types told apart: adding one is its member in
// api/v1 (its type, its arguments, the enum and the union rule) and its entry in
// profiles, with a golden test. TestProfilesMatchTheAPI holds the API's view (IsLoadAware),
// the CRD's enum and rules and this table to the same list of profiles.
type profile struct {
	// member is the JSON name of its arguments in spec.profile, which the CRD's union
	// rules allow with this type alone; empty for a profile without arguments.
	member string
	// asset is its KubeSchedulerConfiguration in bindata/assets/scheduler-config; empty
	// for Custom, which is the user's own configuration.
	asset string
	// customize fills the asset's profile from the resource (BinPacking's weights); nil
	// for none.
	customize func(cr *v1.SecondaryScheduler, profile *yaml.RNode) error
	// loadAware profiles read node load from a metrics provider (spec.profile.metrics):
	// the asset enables plugin at score, and at alsoAt, with trimaranArgs plus args.
	loadAware bool
	plugin    string
	alsoAt    []string
	args      func(*v1.Profile) (map[string]any, error)
	// requestBased is the asset of the in-tree stand-in a load-aware profile is switched
	// to while its metrics are unavailable (whenUnavailable: ScoreByRequests): scoring by
	// requests what it would score by measured load.
	requestBased string
}

// profiles holds every profile type the operator configures.
var profiles = map[v1.ProfileType]profile{
	v1.CustomProfile: {},
	v1.BinPackingProfile: {
		member: "binPacking", asset: "binpacking.yaml", customize: binPackingWeights,
	},
	// TargetLoadPacking packs by measured use: MostAllocated packs by requests.
	v1.TargetLoadPackingProfile: {
		member: "targetLoadPacking", asset: "load-aware.yaml", loadAware: true,
		plugin: "TargetLoadPacking", args: targetLoadPackingOwnArgs, requestBased: "binpacking.yaml",
	},
	// The risk-balancing profiles balance measured use: balanced allocation balances requests.
	v1.LoadVariationRiskBalancingProfile: {
		member: "loadVariationRiskBalancing", asset: "load-aware.yaml", loadAware: true,
		plugin: "LoadVariationRiskBalancing", args: loadVariationRiskBalancingOwnArgs, requestBased: "requests-balanced.yaml",
	},
	v1.LowRiskOverCommitmentProfile: {
		member: "lowRiskOverCommitment", asset: "load-aware.yaml", loadAware: true,
		plugin: "LowRiskOverCommitment", alsoAt: []string{"preScore"}, args: lowRiskOverCommitmentOwnArgs, requestBased: "requests-balanced.yaml",
	},
}

// binPackingWeights sets the resource weights of NodeResourcesFit's MostAllocated
// scoring from profile.binPacking; left out, the asset's weights (cpu 1, memory 1) stand.
func binPackingWeights(cr *v1.SecondaryScheduler, profile *yaml.RNode) error {
	if cr.Spec.Profile.BinPacking == nil || len(cr.Spec.Profile.BinPacking.ResourceWeights) == 0 {
		return nil
	}
	weights := cr.Spec.Profile.BinPacking.ResourceWeights
	resources := make([]map[string]any, 0, len(weights))
	for _, resource := range slices.Sorted(maps.Keys(weights)) {
		resources = append(resources, map[string]any{"name": resource, "weight": weights[resource]})
	}
	fitArgs, err := lookup(profile, "pluginConfig", "[name=NodeResourcesFit]", "args")
	if err != nil {
		return err
	}
	return setValue(fitArgs, resources, "scoringStrategy", "resources")
}

func targetLoadPackingOwnArgs(profile *v1.Profile) (map[string]any, error) {
	args := map[string]any{}
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
	return args, nil
}

func loadVariationRiskBalancingOwnArgs(profile *v1.Profile) (map[string]any, error) {
	args := map[string]any{}
	if own := profile.LoadVariationRiskBalancing; own != nil {
		for field, value := range map[string]string{"safeVarianceMargin": own.SafeVarianceMargin, "safeVarianceSensitivity": own.SafeVarianceSensitivity} {
			if err := setDecimal(args, field, value); err != nil {
				return nil, err
			}
		}
	}
	return args, nil
}

func lowRiskOverCommitmentOwnArgs(profile *v1.Profile) (map[string]any, error) {
	args := map[string]any{}
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
