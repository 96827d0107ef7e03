package render

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/bindata"
)

// profileRulesOfTheCRD are the CEL rules of spec.profile in the CRD.
func profileRulesOfTheCRD(t *testing.T) []string {
	t.Helper()
	crd, err := yaml.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "operator.secondary-scheduler.io_secondaryschedulers.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	validations, err := crd.Pipe(yaml.Lookup("spec", "versions", "[name=v1]", "schema", "openAPIV3Schema",
		"properties", "spec", "properties", "profile", "x-kubernetes-validations"))
	if err != nil || validations == nil {
		t.Fatalf("no rules of spec.profile in the CRD: %v", err)
	}
	elements, err := validations.Elements()
	if err != nil {
		t.Fatal(err)
	}
	rules := make([]string, 0, len(elements))
	for _, element := range elements {
		rules = append(rules, yaml.GetValue(element.Field("rule").Value))
	}
	return rules
}

// TestProfilesMatchTheAPI holds the three places that know of profile types to one
// list: the CRD (its enum and the union rules of spec.profile, generated from api/v1's
// markers), api/v1's IsLoadAware, and the profiles table, which alone tells types apart
// in rendering. A profile added to one and not the others fails here, saying where.
func TestProfilesMatchTheAPI(t *testing.T) {
	crdTypes := profileTypesOfTheCRD(t)
	for _, profileType := range crdTypes {
		if _, ok := profiles[profileType]; !ok {
			t.Errorf("the CRD accepts profile type %s, which has no entry in the profiles table of internal/render", profileType)
		}
	}
	rules := profileRulesOfTheCRD(t)
	var loadAware []string
	for profileType, profile := range profiles {
		if !slices.Contains(crdTypes, profileType) {
			t.Errorf("the profiles table has %s, which the CRD's enum of spec.profile.type lacks: add it to the kubebuilder Enum marker of ProfileType in api/v1", profileType)
		}
		if profileType.IsLoadAware() != profile.loadAware {
			t.Errorf("%s: api/v1's IsLoadAware says %t, the profiles table %t: make ProfileType.IsLoadAware agree", profileType, profileType.IsLoadAware(), profile.loadAware)
		}
		if profile.loadAware {
			loadAware = append(loadAware, string(profileType))
			if profile.plugin == "" || profile.args == nil || profile.requestBased == "" {
				t.Errorf("%s is load-aware but has no plugin, args or request-based stand-in in the profiles table", profileType)
			}
		}
		if profile.member != "" {
			union := "self.type == '" + string(profileType) + "' || !has(self." + profile.member + ")"
			if !slices.Contains(rules, union) {
				t.Errorf("%s: the CRD has no union rule %q: add its XValidation marker to Profile in api/v1", profileType, union)
			}
		}
		for _, asset := range []string{profile.asset, profile.requestBased} {
			if asset == "" {
				continue
			}
			if _, err := bindata.Asset("scheduler-config/" + asset); err != nil {
				t.Errorf("%s: asset %s: %v", profileType, asset, err)
			}
		}
	}
	metricsRule := regexp.MustCompile(`^self\.type in \[([^\]]*)\] \|\| !has\(self\.metrics\)$`)
	found := false
	for _, rule := range rules {
		match := metricsRule.FindStringSubmatch(strings.Join(strings.Fields(rule), " "))
		if match == nil {
			continue
		}
		found = true
		var listed []string
		for _, quoted := range strings.Split(match[1], ",") {
			listed = append(listed, strings.Trim(strings.TrimSpace(quoted), "'"))
		}
		slices.Sort(listed)
		slices.Sort(loadAware)
		if !slices.Equal(listed, loadAware) {
			t.Errorf("the CRD allows profile.metrics for %v, but the load-aware profiles are %v: correct the rule's marker on Profile in api/v1", listed, loadAware)
		}
	}
	if !found {
		t.Error("the CRD has no rule limiting profile.metrics to the load-aware profiles")
	}
}
