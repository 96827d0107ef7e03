// Package schedconfig reads a user's KubeSchedulerConfiguration the way kube-scheduler
// will: strictly, with kube-scheduler's own v1 config types. Every way a config can be
// unusable for a SecondaryScheduler becomes a Problem with a reason and a message that
// says what to fix, so that nothing the scheduler would refuse is ever rolled out.
package schedconfig

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// ConfigKey is the ConfigMap key that holds the KubeSchedulerConfiguration, as in
// OpenShift's secondary-scheduler-operator.
const ConfigKey = "config.yaml"

// Kind is the kind of a kube-scheduler configuration file.
const Kind = "KubeSchedulerConfiguration"

// removedVersions are the config API versions that kube-scheduler served once and no
// longer does; v1 replaced them all (v1beta3, the last, went in Kubernetes 1.29).
var removedVersions = []string{"v1alpha1", "v1alpha2", "v1beta1", "v1beta2", "v1beta3"}

// Problem is a reason why a configuration cannot be used, in the terms of the
// SecondaryScheduler's Degraded condition.
type Problem struct {
	// Reason is the Degraded condition's reason.
	Reason v1.ConditionReason
	// Message says what is wrong and what to do about it.
	Message string
}

func (p *Problem) Error() string { return string(p.Reason) + ": " + p.Message }

// AsProblem returns the Problem in err's chain, if any.
func AsProblem(err error) (*Problem, bool) {
	var p *Problem
	ok := errors.As(err, &p)
	return p, ok
}

func problemf(reason v1.ConditionReason, format string, args ...any) *Problem {
	return &Problem{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

var deserializer = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := schedulerconfigv1.AddToScheme(scheme); err != nil {
		panic(fmt.Sprintf("register kube-scheduler config types: %v", err))
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// Parse decodes config.yaml strictly and checks that it configures the scheduler named
// schedulerName and nothing that belongs to the default scheduler. source names where
// the text comes from (for example "ConfigMap ns/name") in messages.
func Parse(data []byte, schedulerName, source string) (*schedulerconfigv1.KubeSchedulerConfiguration, error) {
	var typeMeta struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	var anything any
	if err := yaml.Unmarshal(data, &anything); err != nil {
		return nil, problemf(v1.ReasonConfigNotYAML, "key %s of %s is not valid YAML: %v", ConfigKey, source, err)
	}
	if _, isMap := anything.(map[string]any); !isMap {
		return nil, problemf(v1.ReasonNotKubeSchedulerConfiguration,
			"key %s of %s must be a YAML mapping with apiVersion %s and kind %s", ConfigKey, source, schedulerconfigv1.SchemeGroupVersion, Kind)
	}
	if err := yaml.Unmarshal(data, &typeMeta); err != nil {
		return nil, problemf(v1.ReasonNotKubeSchedulerConfiguration, "key %s of %s has a malformed apiVersion or kind: %v", ConfigKey, source, err)
	}
	gv, err := schema.ParseGroupVersion(typeMeta.APIVersion)
	if err != nil || gv.Group != schedulerconfigv1.GroupName || typeMeta.Kind != Kind {
		return nil, problemf(v1.ReasonNotKubeSchedulerConfiguration,
			"key %s of %s has apiVersion %q and kind %q; a scheduler configuration has apiVersion %s and kind %s",
			ConfigKey, source, typeMeta.APIVersion, typeMeta.Kind, schedulerconfigv1.SchemeGroupVersion, Kind)
	}
	if slices.Contains(removedVersions, gv.Version) {
		return nil, problemf(v1.ReasonUnsupportedConfigVersion,
			"key %s of %s uses %s, which current kube-schedulers no longer serve; change apiVersion to %s (plugin args keep their fields; see the kube-scheduler configuration migration notes)",
			ConfigKey, source, typeMeta.APIVersion, schedulerconfigv1.SchemeGroupVersion)
	}
	if gv.Version != schedulerconfigv1.SchemeGroupVersion.Version {
		return nil, problemf(v1.ReasonUnsupportedConfigVersion,
			"key %s of %s uses unknown version %s; use %s", ConfigKey, source, typeMeta.APIVersion, schedulerconfigv1.SchemeGroupVersion)
	}

	config, err := decodeStrict(data)
	if err != nil {
		return nil, problemf(v1.ReasonInvalidConfig, "key %s of %s is not a valid %s: %v", ConfigKey, source, Kind, err)
	}
	if err := checkProfiles(config, schedulerName, source); err != nil {
		return nil, err
	}
	return config, nil
}

func decodeStrict(data []byte) (*schedulerconfigv1.KubeSchedulerConfiguration, error) {
	obj, _, err := deserializer.Decode(data, nil, nil)
	if err != nil {
		return nil, err
	}
	config, ok := obj.(*schedulerconfigv1.KubeSchedulerConfiguration)
	if !ok {
		return nil, fmt.Errorf("decoded %T, not a %s", obj, Kind)
	}
	// Plugin args are decoded by kube-scheduler too: in-tree args strictly, out-of-tree
	// ones (scheduler-plugins) by their plugin, which the operator cannot know.
	if err := config.DecodeNestedObjects(deserializer); err != nil {
		return nil, err
	}
	return config, nil
}

func checkProfiles(config *schedulerconfigv1.KubeSchedulerConfiguration, schedulerName, source string) error {
	if len(config.Profiles) == 0 {
		return problemf(v1.ReasonNoProfile,
			"the configuration in %s has no profiles; add one with schedulerName: %s (without profiles kube-scheduler would run a default-scheduler profile)",
			source, schedulerName)
	}
	names := make([]string, 0, len(config.Profiles))
	for i, profile := range config.Profiles {
		if profile.SchedulerName == nil || *profile.SchedulerName == "" {
			return problemf(v1.ReasonDefaultSchedulerClaimed,
				"profile %d in %s has no schedulerName, which kube-scheduler reads as %s, the cluster's own scheduler; set schedulerName: %s",
				i, source, v1.DefaultSchedulerName, schedulerName)
		}
		if *profile.SchedulerName == v1.DefaultSchedulerName {
			return problemf(v1.ReasonDefaultSchedulerClaimed,
				"profile %d in %s is named %s, which belongs to the cluster's own scheduler; name it %s",
				i, source, v1.DefaultSchedulerName, schedulerName)
		}
		names = append(names, *profile.SchedulerName)
	}
	if !slices.Contains(names, schedulerName) {
		return problemf(v1.ReasonProfileNotFound,
			"no profile in %s has schedulerName %s (found: %s); name one profile %s, or set the SecondaryScheduler's spec.schedulerName",
			source, schedulerName, strings.Join(names, ", "), schedulerName)
	}
	return nil
}
