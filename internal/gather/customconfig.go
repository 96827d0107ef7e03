package gather

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// customConfiguration is the user's configuration of profile Custom, checked.
type customConfiguration struct {
	data   []byte
	config *schedulerconfigv1.KubeSchedulerConfiguration
	// source names it for messages: "ConfigMap ns/name".
	source string
	// version identifies the ConfigMap's content (UID and resourceVersion), for the
	// configuration hash of a configuration holding a token.
	version string
}

// customConfig reads and checks the user's configuration of profile Custom; nil for the
// other profiles. It notes the ConfigMap in references, to be watched.
func (g *Gatherer) customConfig(ctx context.Context, cr *v1.SecondaryScheduler, references *References) (*customConfiguration, error) {
	if cr.EffectiveProfile() != v1.CustomProfile {
		references.Config = known(nil)
		return nil, nil
	}
	key := types.NamespacedName{Namespace: cr.Namespace, Name: cr.Spec.SchedulerConfig}
	references.Config = known(&key)
	configMap := &corev1.ConfigMap{}
	source := "ConfigMap " + key.String()
	if err := g.api.Get(ctx, key, configMap); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, refusal.New(v1.ReasonConfigMapNotFound,
				"%s, named by spec.schedulerConfig, does not exist; create it with key %s holding a KubeSchedulerConfiguration, or correct spec.schedulerConfig.",
				source, schedconfig.ConfigKey)
		}
		return nil, fmt.Errorf("read %s: %w", source, err)
	}
	data, err := schedconfig.FromConfigMap(configMap, source)
	if err != nil {
		return nil, err
	}
	config, err := schedconfig.Parse(data, cr.Spec.SchedulerName, source)
	if err != nil {
		return nil, err
	}
	return &customConfiguration{data: data, config: config, source: source,
		version: string(configMap.UID) + "/" + configMap.ResourceVersion}, nil
}

// customMetrics finds where the Trimaran plugins of a Custom configuration read load, as
// the typed profiles' metrics are found: an address load-watcher cannot query (a
// placeholder such as ${PROM_URL}, no URL) is refused with its own reason, the first
// Prometheus is probed with the token and verification the plugin uses, and a
// configuration holding a token is rendered into a Secret.
func customMetrics(custom *customConfiguration, found *Facts) error {
	sources, err := schedconfig.MetricSources(custom.config)
	if err != nil && !refusal.Is(err) {
		err = refusal.New(v1.ReasonInvalidConfig, "%s", err.Error())
	}
	if err != nil {
		return err
	}
	for _, source := range sources {
		if err := source.CheckAddresses(); err != nil {
			if refused, ok := refusal.As(err); ok {
				return refusal.New(refused.Reason, "key %s of %s: %s", schedconfig.ConfigKey, custom.source, refused.Message)
			}
			return err
		}
		if source.Token != "" && !slices.Contains(found.Render.CustomConfigTokens, source.Token) {
			found.Render.CustomConfigTokens = append(found.Render.CustomConfigTokens, source.Token)
			found.Render.MetricsTokenVersion = "ConfigMap " + custom.version
		}
		address, probed := source.ProbedAddress()
		if !probed || found.Prometheus != nil {
			continue
		}
		found.Prometheus = &promdiscovery.Endpoint{URL: address, Source: fmt.Sprintf("%s, %s", custom.source, source.Profile+" profile's "+source.Plugin+" args")}
		found.Access = &MetricsAccess{Credentials: "none", Token: source.Token,
			// Unset, the plugin asks load-watcher not to verify Prometheus' certificate, which
			// load-watcher heeds only with a token (loadWatcherSkipsVerify): the probe does as it does.
			InsecureSkipVerify: loadWatcherSkipsVerify(ptr.Deref(source.InsecureSkipVerify, true), source.Token != "")}
		if source.Token != "" {
			found.Access.Credentials = fmt.Sprintf("metricProvider.token in %s, in plain text: anyone who may read ConfigMaps in the namespace can read it", custom.source)
		}
	}
	return nil
}
