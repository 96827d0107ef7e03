// Package schedconfig reads a user's KubeSchedulerConfiguration the way kube-scheduler
// will: strictly, with kube-scheduler's own v1 config types. Every way a config can be
// unusable for a SecondaryScheduler becomes a refusal with a reason and a message that
// says what to fix, so that nothing the scheduler would refuse is ever rolled out.
package schedconfig

import (
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// ConfigKey is the ConfigMap key that holds the KubeSchedulerConfiguration, as in
// OpenShift's secondary-scheduler-operator.
const ConfigKey = "config.yaml"

// Kind is the kind of a kube-scheduler configuration file.
const Kind = "KubeSchedulerConfiguration"

// removedVersions are the config API versions that kube-scheduler served once and no
// longer does; v1 replaced them all (v1beta3, the last, went in Kubernetes 1.29).
var removedVersions = []string{"v1alpha1", "v1alpha2", "v1beta1", "v1beta2", "v1beta3"}

// shorten cuts a value quoted from the user's text so that the rest of a message, which
// says what to do, still fits.
func shorten(value string) string { return usertext.Cut(value, 100) }

var deserializer = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	if err := schedulerconfigv1.AddToScheme(scheme); err != nil {
		panic(fmt.Sprintf("register kube-scheduler config types: %v", err))
	}
	return serializer.NewCodecFactory(scheme, serializer.EnableStrict).UniversalDeserializer()
}()

// Parse decodes config.yaml strictly and checks the scheduler names its profiles claim.
// When schedulerName is set, one profile must be named so; when it is empty (a
// resource whose Custom configuration names its own profiles), every profile's name is
// served and none is required. In both cases every profile needs a name of its own:
// not empty, not default-scheduler, a DNS-1123 subdomain of at most 63 characters, and
// unique; and there are at most MaxProfiles. Configurations larger than MaxConfigBytes
// and configurations with YAML anchors or aliases are refused before they are decoded.
// source names where the text comes from (for example "ConfigMap ns/name") in messages.
func Parse(data []byte, schedulerName, source string) (*schedulerconfigv1.KubeSchedulerConfiguration, error) {
	if err := checkSize(len(data), source); err != nil {
		return nil, err
	}
	document, err := firstDocument(data, source)
	if err != nil {
		return nil, err
	}
	apiVersion, kind, err := typeMeta(document, source)
	if err != nil {
		return nil, err
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || gv.Group != schedulerconfigv1.GroupName || kind != Kind {
		return nil, refusal.New(v1.ReasonNotKubeSchedulerConfiguration,
			"key %s of %s has apiVersion %q and kind %q; a scheduler configuration has apiVersion %s and kind %s",
			ConfigKey, source, shorten(apiVersion), shorten(kind), schedulerconfigv1.SchemeGroupVersion, Kind)
	}
	if slices.Contains(removedVersions, gv.Version) {
		return nil, refusal.New(v1.ReasonUnsupportedConfigVersion,
			"key %s of %s uses %s, which current kube-schedulers no longer serve; change apiVersion to %s (plugin args keep their fields; see the kube-scheduler configuration migration notes)",
			ConfigKey, source, apiVersion, schedulerconfigv1.SchemeGroupVersion)
	}
	if gv.Version != schedulerconfigv1.SchemeGroupVersion.Version {
		return nil, refusal.New(v1.ReasonUnsupportedConfigVersion,
			"key %s of %s uses unknown version %s; use %s", ConfigKey, source, shorten(apiVersion), schedulerconfigv1.SchemeGroupVersion)
	}

	config, err := decodeStrict(data)
	if err != nil {
		return nil, refusal.New(v1.ReasonInvalidConfig, "key %s of %s is not a valid %s: %v", ConfigKey, source, Kind, err)
	}
	if err := checkConnection(config, source); err != nil {
		return nil, err
	}
	if err := checkProfiles(config, schedulerName, source); err != nil {
		return nil, err
	}
	return config, nil
}

// checkConnection refuses a kubeconfig path. The scheduler must reach this cluster as
// its own ServiceAccount, through the in-cluster configuration: a kubeconfig, which can
// name any server and any token file (the ServiceAccount's own token included), would let
// the configuration's author send the scheduler's credentials to an address of theirs,
// whatever image the admission policy allows. Rate limits and content types may stay.
func checkConnection(config *schedulerconfigv1.KubeSchedulerConfiguration, source string) error {
	if kubeconfig := config.ClientConnection.Kubeconfig; kubeconfig != "" {
		return refusal.New(v1.ReasonInvalidConfig,
			"the configuration in %s sets clientConnection.kubeconfig (%q); the scheduler connects to this cluster as its own ServiceAccount, so remove kubeconfig (qps, burst and contentType may stay)",
			source, shorten(kubeconfig))
	}
	return nil
}

// ReadRendered decodes a configuration the operator rendered, which the user's part of
// went through Parse before: as kube-scheduler decodes it, without Parse's checks of what
// only a user writes (its size, its YAML, the names its profiles claim).
func ReadRendered(data []byte) (*schedulerconfigv1.KubeSchedulerConfiguration, error) {
	return decodeStrict(data)
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
