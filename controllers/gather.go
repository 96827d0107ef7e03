package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/imageref"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// gathered is what the first stage of a reconcile found out: the facts render needs,
// and what status reports about the metrics source. Gathering only reads.
type gathered struct {
	facts render.Facts
	// schedulerNames are the scheduler names the configuration serves, each a claim.
	schedulerNames []string
	// customConfigSource names the user's configuration of profile Custom, for messages;
	// empty for the other profiles.
	customConfigSource string
	// prometheus is the endpoint a load-aware scheduler reads, nil when it reads none.
	prometheus *promdiscovery.Endpoint
	// access is how the scheduler reaches its metrics provider.
	access *metricsAccess
	// recordingRulesPlan is what becomes of the recording rules the resource asks for.
	recordingRulesPlan recordingRulesPlan
	// placement is what the nodes offer the scheduler, for status.
	placement placement
}

// gather reads everything cr's scheduler depends on: the user's configuration and the
// names it claims, the nodes it may run on and place pods on, its PriorityClass, the
// Prometheus to read and how to reach it, the cluster's version. What only the user
// (or a cluster admin) can fix is returned as a refusal, any other error is worth a
// retry. It writes nothing. cr is in a namespace where schedulers may run
// (reconcile refuses the others before anything is read).
func (r *SecondarySchedulerReconciler) gather(ctx context.Context, cr *v1.SecondaryScheduler) (*gathered, error) {
	if cr.Spec.SchedulerImage != "" {
		if err := imageref.Validate(cr.Spec.SchedulerImage); err != nil {
			return nil, refusal.New(v1.ReasonInvalidImage,
				"spec.schedulerImage %q is not an image reference: %v; give one like registry.k8s.io/scheduler-plugins/kube-scheduler:v0.35.7, or leave it empty for the default",
				usertext.Cut(cr.Spec.SchedulerImage, 80), err)
		}
	}
	found := &gathered{schedulerNames: []string{cr.EffectiveSchedulerName()}}
	custom, err := r.customConfig(ctx, cr)
	if err != nil {
		return nil, err
	}
	if custom != nil {
		found.facts.CustomConfig, found.schedulerNames = custom.data, schedconfig.ProfileNames(custom.config)
		found.customConfigSource = custom.source
		if err := customMetrics(custom, found); err != nil {
			return nil, err
		}
	}
	if err := r.checkSchedulerNames(ctx, cr, found.schedulerNames); err != nil {
		return nil, err
	}
	if found.placement, err = r.gatherPlacement(ctx, cr); err != nil {
		return nil, err
	}
	found.facts.PlacementNodes = found.placement.matching + found.placement.hosting
	if found.facts.PriorityClassName, err = r.priorityClassName(ctx, cr); err != nil {
		return nil, err
	}
	if err := r.gatherMetrics(ctx, cr, found); err != nil {
		return nil, err
	}
	// The version chooses the default image, and tells whether any image is outside the
	// version-skew policy: without spec.schedulerImage it is needed, with one it only
	// informs.
	if found.facts.KubernetesMinor, err = r.kubernetesMinor(); err != nil {
		if cr.Spec.SchedulerImage == "" {
			return nil, refusal.New(v1.ReasonDiscoveryFailed,
				"reading the cluster's Kubernetes version, to choose the default scheduler image, failed: %v; set spec.schedulerImage to skip this", err)
		}
		logf.FromContext(ctx).V(1).Info("the cluster's Kubernetes version is unknown: the version skew of spec.schedulerImage is not checked", "error", err.Error())
	}
	return found, nil
}

// gatherMetrics finds the Prometheus a load-aware scheduler reads, the recording rules to
// install for it, and the token and CA bundle that reach it.
func (r *SecondarySchedulerReconciler) gatherMetrics(ctx context.Context, cr *v1.SecondaryScheduler, found *gathered) error {
	var err error
	if cr.Spec.Profile.ReadsPrometheus() {
		found.prometheus, err = r.prometheusEndpoint(ctx, cr)
		var forbidden *forbiddenError
		if errors.As(err, &forbidden) {
			return refusal.New(v1.ReasonPrometheusNotFound,
				"profile.metrics gives no Prometheus address and none was found (searched: %s), but %v; "+
					"set spec.profile.metrics.address, or grant the operator get and list on them", r.searched(), forbidden)
		}
		if err != nil {
			return err
		}
		if found.prometheus == nil {
			return refusal.New(v1.ReasonPrometheusNotFound,
				"profile.metrics gives no Prometheus address and none was found (searched: %s); set spec.profile.metrics.address", r.searched())
		}
		found.facts.PrometheusAddress = found.prometheus.URL
		// The failsafe decided from the probes of earlier reconciles (status is its memory).
		found.facts.ScoreByRequests = cr.Spec.Profile.LoadMetrics().ScoresByRequestsWhenUnavailable() &&
			cr.Status.Metrics != nil && cr.Status.Metrics.Scoring == v1.ScoringByRequests
		if found.recordingRulesPlan, err = r.planRecordingRules(ctx, cr, found.prometheus); err != nil {
			return err
		}
		found.facts.RecordingRules = found.recordingRulesPlan.target
	}
	// How a Custom configuration's scheduler reaches its metrics, customMetrics found in it.
	customAccess := found.access
	if found.access, err = r.gatherMetricsAccess(ctx, cr, found.prometheus); err != nil {
		return err
	}
	if customAccess != nil {
		found.access = customAccess
		return nil
	}
	found.facts.MetricsToken, found.facts.MetricsTokenVersion = found.access.token, found.access.tokenVersion
	found.facts.MetricsIdentity, found.facts.TrustedCA = found.access.identity, found.access.trustedCA
	return nil
}

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
// other profiles.
func (r *SecondarySchedulerReconciler) customConfig(ctx context.Context, cr *v1.SecondaryScheduler) (*customConfiguration, error) {
	if cr.EffectiveProfile() != v1.CustomProfile {
		r.ConfigMapWatches.Reference(client.ObjectKeyFromObject(cr), nil)
		return nil, nil
	}
	key := types.NamespacedName{Namespace: cr.Namespace, Name: cr.Spec.SchedulerConfig}
	r.ConfigMapWatches.Reference(client.ObjectKeyFromObject(cr), &key)
	configMap := &corev1.ConfigMap{}
	source := "ConfigMap " + key.String()
	if err := r.APIReader.Get(ctx, key, configMap); err != nil {
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
func customMetrics(custom *customConfiguration, found *gathered) error {
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
		if source.Token != "" && !slices.Contains(found.facts.CustomConfigTokens, source.Token) {
			found.facts.CustomConfigTokens = append(found.facts.CustomConfigTokens, source.Token)
			found.facts.MetricsTokenVersion = "ConfigMap " + custom.version
		}
		address, probed := source.ProbedAddress()
		if !probed || found.prometheus != nil {
			continue
		}
		found.prometheus = &promdiscovery.Endpoint{URL: address, Source: fmt.Sprintf("%s, %s", custom.source, source.Profile+" profile's "+source.Plugin+" args")}
		found.access = &metricsAccess{credentials: "none", token: source.Token,
			// Unset, load-watcher does not verify Prometheus' certificate: neither does the probe.
			insecureSkipVerify: ptr.Deref(source.InsecureSkipVerify, true)}
		if source.Token != "" {
			found.access.credentials = fmt.Sprintf("metricProvider.token in %s, in plain text: anyone who may read ConfigMaps in the namespace can read it", custom.source)
		}
	}
	return nil
}

// kubernetesMinor reads the cluster's minor version ("37" or "37+" for 1.37).
func (r *SecondarySchedulerReconciler) kubernetesMinor() (int, error) {
	return r.serverVersion.minor(r.Version, r.now())
}

// versionTTL is how long the cluster's version is kept: it changes only with an upgrade
// of the control plane, and reading it at every reconcile was a request each time.
const versionTTL = 10 * time.Minute

// versionCache keeps the cluster's Kubernetes minor version for versionTTL. Failures
// are not kept.
type versionCache struct {
	mu        sync.Mutex
	readAt    time.Time
	readMinor int
}

// minor returns the cluster's minor version, read from server when the kept one is older
// than versionTTL.
func (c *versionCache) minor(server discovery.ServerVersionInterface, now time.Time) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.readAt.IsZero() && now.Sub(c.readAt) < versionTTL {
		return c.readMinor, nil
	}
	info, err := server.ServerVersion()
	if err != nil {
		return 0, err
	}
	minor, err := strconv.Atoi(strings.TrimRight(info.Minor, "+"))
	if err != nil {
		return 0, fmt.Errorf("parse minor version %q: %w", info.Minor, err)
	}
	c.readAt, c.readMinor = now, minor
	return minor, nil
}

// searched says, for a message, where Prometheus discovery looks.
func (r *SecondarySchedulerReconciler) searched() string {
	return promdiscovery.SearchedIn(r.discoveryNamespaces())
}

// recordingRules is the namespace/name of the PrometheusRule that defines the scheduler's
// series, its own or the one it shares, empty for none.
func (g *gathered) recordingRules(cr *v1.SecondaryScheduler) string {
	if target := g.recordingRulesPlan.target; target != nil {
		return target.Namespace + "/" + render.RecordingRuleName(cr)
	}
	return g.recordingRulesPlan.shared
}
