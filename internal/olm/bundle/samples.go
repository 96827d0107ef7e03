package bundle

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"
)

// almExamples is the CSV's alm-examples: one SecondaryScheduler of config/samples per
// profile type, in file name order, without a namespace (the console creates an example
// in the namespace the user is in).
func almExamples(dir string) ([]byte, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	var examples []map[string]any
	var profiles []string
	for _, path := range paths {
		if filepath.Base(path) == "kustomization.yaml" {
			continue
		}
		documents, err := manifests.Documents(path)
		if err != nil {
			return nil, err
		}
		for _, document := range documents {
			var object map[string]any
			if err := yaml.Unmarshal(document, &object); err != nil {
				return nil, fmt.Errorf("%s: %w", path, err)
			}
			u := unstructured.Unstructured{Object: object}
			if u.GetKind() != "SecondaryScheduler" {
				continue
			}
			profile := ProfileOf(object)
			if slices.Contains(profiles, profile) {
				continue
			}
			profiles = append(profiles, profile)
			u.SetNamespace("")
			examples = append(examples, u.Object)
		}
	}
	if len(examples) == 0 {
		return nil, fmt.Errorf("%s holds no SecondaryScheduler", dir)
	}
	data, err := json.MarshalIndent(examples, "", "  ")
	if err != nil {
		return nil, err
	}
	return data, nil
}

// ProfileOf is the profile type of a SecondaryScheduler object: spec.profile.type, or
// Custom when only spec.schedulerConfig is set, as the operator reads it.
func ProfileOf(object map[string]any) string {
	if profile, _, _ := unstructured.NestedString(object, "spec", "profile", "type"); profile != "" {
		return profile
	}
	if config, _, _ := unstructured.NestedString(object, "spec", "schedulerConfig"); strings.TrimSpace(config) != "" {
		return "Custom"
	}
	return ""
}
