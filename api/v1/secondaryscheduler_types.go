package v1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// DefaultSchedulerName is the name of the cluster's own kube-scheduler. A secondary
// scheduler must never claim it: pods without spec.schedulerName would go to it.
const DefaultSchedulerName = "default-scheduler"

// ManagementState says how far the operator manages the scheduler of a SecondaryScheduler.
// +kubebuilder:validation:Enum=Managed;Unmanaged;Removed;Force
type ManagementState string

const (
	// Managed means the operator creates the scheduler and keeps it in the desired state.
	Managed ManagementState = "Managed"
	// Unmanaged means the operator leaves the scheduler's objects alone (they keep running as they are).
	Unmanaged ManagementState = "Unmanaged"
	// Removed means the operator deletes the scheduler's objects but keeps the SecondaryScheduler.
	Removed ManagementState = "Removed"
	// Force is accepted for compatibility with operator.openshift.io/v1 and means Managed.
	Force ManagementState = "Force"
)

// LogLevel is the verbosity of a scheduler's or the operator's logs.
// +kubebuilder:validation:Enum="";Normal;Debug;Trace;TraceAll
type LogLevel string

const (
	// Normal logs at klog verbosity 2. The empty string means Normal too.
	Normal LogLevel = "Normal"
	// Debug logs at klog verbosity 4.
	Debug LogLevel = "Debug"
	// Trace logs at klog verbosity 6.
	Trace LogLevel = "Trace"
	// TraceAll logs at klog verbosity 8.
	TraceAll LogLevel = "TraceAll"
)

// Verbosity is the klog -v value for the level.
func (l LogLevel) Verbosity() int {
	switch l {
	case Debug:
		return 4
	case Trace:
		return 6
	case TraceAll:
		return 8
	default:
		return 2
	}
}

// TopologyMode says how many scheduler replicas run.
// +kubebuilder:validation:Enum=SingleReplica;HighlyAvailable
type TopologyMode string

const (
	// SingleReplica runs one scheduler pod.
	SingleReplica TopologyMode = "SingleReplica"
	// HighlyAvailable runs several scheduler pods; one holds the lease and schedules,
	// the others wait to take over.
	HighlyAvailable TopologyMode = "HighlyAvailable"
)

// DefaultHighlyAvailableReplicas is the replica count of HighlyAvailable mode when
// highlyAvailableTopology.maxReplicas is not set.
const DefaultHighlyAvailableReplicas int32 = 3

// Topology says how the scheduler's pods are laid out.
// +kubebuilder:validation:XValidation:rule="!has(self.highlyAvailableTopology) || self.mode == 'HighlyAvailable'",message="highlyAvailableTopology is only allowed with mode HighlyAvailable"
type Topology struct {
	// Mode is SingleReplica (one scheduler pod, the default) or HighlyAvailable
	// (several pods with leader election; see highlyAvailableTopology).
	// +kubebuilder:default=SingleReplica
	// +optional
	Mode TopologyMode `json:"mode,omitempty"`

	// HighlyAvailableTopology places the replicas of HighlyAvailable mode.
	// +optional
	HighlyAvailableTopology *HighlyAvailableTopology `json:"highlyAvailableTopology,omitempty"`
}

// HighlyAvailableTopology places the scheduler replicas of HighlyAvailable mode.
type HighlyAvailableTopology struct {
	// NodeSelector restricts the scheduler pods to nodes with these labels.
	// Deprecated: use spec.nodeSelector, which applies in both modes.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations let the scheduler pods run on tainted nodes.
	// Deprecated: use spec.tolerations, which applies in both modes.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// MaxReplicas is the most scheduler pods (default 3): one per node the pods may
	// run on (schedulable, Ready, matching nodeSelector and required node affinity,
	// tolerated taints), up to this many, recounted when nodes change. They are spread
	// over nodes and zones, a PodDisruptionBudget lets a drain evict one at a time, and
	// one leads at a time.
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=7
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
}

// ProfileType names a scheduling profile the operator knows how to configure.
// +kubebuilder:validation:Enum=Custom;BinPacking;TargetLoadPacking;LoadVariationRiskBalancing;LowRiskOverCommitment
type ProfileType string

const (
	// CustomProfile runs the user's own KubeSchedulerConfiguration from spec.schedulerConfig.
	CustomProfile ProfileType = "Custom"
	// BinPackingProfile packs pods onto as few nodes as their requests allow, with the
	// in-tree NodeResourcesFit plugin scoring MostAllocated.
	BinPackingProfile ProfileType = "BinPacking"
	// TargetLoadPackingProfile packs pods onto nodes until their measured CPU use reaches
	// a target, then spreads (scheduler-plugins' Trimaran TargetLoadPacking).
	TargetLoadPackingProfile ProfileType = "TargetLoadPacking"
	// LoadVariationRiskBalancingProfile balances the risk of nodes, measured as mean plus
	// variation of their CPU and memory use (Trimaran LoadVariationRiskBalancing).
	LoadVariationRiskBalancingProfile ProfileType = "LoadVariationRiskBalancing"
	// LowRiskOverCommitmentProfile places pods where over-committing their limits is least
	// risky given measured use (Trimaran LowRiskOverCommitment).
	LowRiskOverCommitmentProfile ProfileType = "LowRiskOverCommitment"
)

// ReadsPrometheus reports whether the profile's scheduler reads node load from Prometheus
// through its built-in load-watcher.
func (p *Profile) ReadsPrometheus() bool {
	metrics := p.LoadMetrics()
	if metrics == nil || metrics.WatcherAddress != "" {
		return false
	}
	return metrics.Provider == "" || metrics.Provider == PrometheusProvider
}

// LoadMetrics is where a load-aware profile reads node load: profile.metrics, or when it
// is left out, a Prometheus that the operator discovers. Nil for other profiles.
func (p *Profile) LoadMetrics() *LoadMetrics {
	if p == nil || !p.Type.IsLoadAware() {
		return nil
	}
	if p.Metrics == nil {
		return &LoadMetrics{Provider: PrometheusProvider}
	}
	return p.Metrics
}

// IsLoadAware reports whether the profile scores nodes by their measured load, which it
// reads from a metrics provider. It is the one fact about profile types that the API
// needs (for LoadMetrics); the rest of what the operator knows of each type is the
// profiles table of internal/render, whose tests hold this list to it and to the CRD.
func (t ProfileType) IsLoadAware() bool {
	return t == TargetLoadPackingProfile || t == LoadVariationRiskBalancingProfile || t == LowRiskOverCommitmentProfile
}

// Profile chooses what the scheduler optimises for. It is a union discriminated by
// type: each type may carry its own arguments in the member named after it (binPacking
// for BinPacking, targetLoadPacking for TargetLoadPacking, ...), and a member is refused
// with any other type. The load-aware types read node load from spec.profile.metrics.
// +kubebuilder:validation:XValidation:rule="self.type == 'BinPacking' || !has(self.binPacking)",message="profile.binPacking applies only to profile type BinPacking"
// +kubebuilder:validation:XValidation:rule="self.type == 'TargetLoadPacking' || !has(self.targetLoadPacking)",message="profile.targetLoadPacking applies only to profile type TargetLoadPacking"
// +kubebuilder:validation:XValidation:rule="self.type == 'LoadVariationRiskBalancing' || !has(self.loadVariationRiskBalancing)",message="profile.loadVariationRiskBalancing applies only to profile type LoadVariationRiskBalancing"
// +kubebuilder:validation:XValidation:rule="self.type == 'LowRiskOverCommitment' || !has(self.lowRiskOverCommitment)",message="profile.lowRiskOverCommitment applies only to profile type LowRiskOverCommitment"
// +kubebuilder:validation:XValidation:rule="self.type in ['TargetLoadPacking', 'LoadVariationRiskBalancing', 'LowRiskOverCommitment'] || !has(self.metrics)",message="profile.metrics applies only to the load-aware profile types"
type Profile struct {
	// Type is the profile: Custom (the KubeSchedulerConfiguration in spec.schedulerConfig),
	// BinPacking (pack pods onto as few nodes as their requests allow), or one of the
	// load-aware Trimaran profiles TargetLoadPacking, LoadVariationRiskBalancing and
	// LowRiskOverCommitment, which need a scheduler-plugins image (the default).
	// +required
	Type ProfileType `json:"type"`

	// BinPacking holds the arguments of profile type BinPacking.
	// +optional
	BinPacking *BinPackingArgs `json:"binPacking,omitempty"`

	// TargetLoadPacking holds the arguments of profile type TargetLoadPacking.
	// +optional
	TargetLoadPacking *TargetLoadPackingArgs `json:"targetLoadPacking,omitempty"`

	// LoadVariationRiskBalancing holds the arguments of profile type LoadVariationRiskBalancing.
	// +optional
	LoadVariationRiskBalancing *LoadVariationRiskBalancingArgs `json:"loadVariationRiskBalancing,omitempty"`

	// LowRiskOverCommitment holds the arguments of profile type LowRiskOverCommitment.
	// +optional
	LowRiskOverCommitment *LowRiskOverCommitmentArgs `json:"lowRiskOverCommitment,omitempty"`

	// Metrics says where the load-aware profiles read node load. Left out, they read a
	// Prometheus that the operator discovers (see LoadMetrics.Address).
	// +optional
	Metrics *LoadMetrics `json:"metrics,omitempty"`
}

// MetricProvider is a source of node load that scheduler-plugins' load-watcher reads.
// +kubebuilder:validation:Enum=Prometheus;KubernetesMetricsServer;SignalFx
type MetricProvider string

const (
	// PrometheusProvider queries a Prometheus (or Thanos) API for node CPU and memory use.
	PrometheusProvider MetricProvider = "Prometheus"
	// KubernetesMetricsServerProvider reads the metrics.k8s.io API of metrics-server.
	KubernetesMetricsServerProvider MetricProvider = "KubernetesMetricsServer"
	// SignalFxProvider queries SignalFx.
	SignalFxProvider MetricProvider = "SignalFx"
)

// MetricsTokenForLabel marks a Secret as meant for the metrics provider of the
// SecondaryScheduler its value names, in the Secret's namespace. The operator reads the
// Secret of profile.metrics.tokenSecretRef only when it carries this label with that
// value, and sends its token only there: whoever labels a Secret decides where its token
// may go, so that naming a Secret is not enough to have the operator send it elsewhere.
const MetricsTokenForLabel = "operator.secondary-scheduler.io/metrics-token-for"

// LoadMetrics says where a load-aware scheduler reads node load: through its built-in
// load-watcher from a provider, or from an external load-watcher service.
// +kubebuilder:validation:XValidation:rule="!has(self.watcherAddress) || (!has(self.address) && !has(self.insecureSkipVerify))",message="watcherAddress (an external load-watcher) excludes address and insecureSkipVerify, which configure the built-in one"
// +kubebuilder:validation:XValidation:rule="has(self.watcherAddress) || self.provider != 'SignalFx' || has(self.address)",message="provider SignalFx needs metrics.address"
// +kubebuilder:validation:XValidation:rule="!has(self.tokenSecretRef) || (!has(self.watcherAddress) && self.provider != 'KubernetesMetricsServer')",message="tokenSecretRef applies to the Prometheus and SignalFx providers"
// +kubebuilder:validation:XValidation:rule="!has(self.tokenSecretRef) || !has(self.serviceAccountToken)",message="tokenSecretRef and serviceAccountToken are two sources of one token: give one"
// +kubebuilder:validation:XValidation:rule="!has(self.serviceAccountToken) || (!has(self.watcherAddress) && self.provider == 'Prometheus')",message="serviceAccountToken applies to provider Prometheus (the token is for a proxy in front of it)"
// +kubebuilder:validation:XValidation:rule="!has(self.caBundle) || (!has(self.watcherAddress) && self.provider != 'KubernetesMetricsServer')",message="caBundle applies to the Prometheus and SignalFx providers"
// +kubebuilder:validation:XValidation:rule="!has(self.caBundle) || !has(self.insecureSkipVerify) || !self.insecureSkipVerify",message="caBundle is for verifying the provider's certificate; it contradicts insecureSkipVerify: true"
// +kubebuilder:validation:XValidation:rule="!has(self.installRecordingRules) || !self.installRecordingRules || (!has(self.watcherAddress) && self.provider == 'Prometheus')",message="installRecordingRules applies to provider Prometheus"
// +kubebuilder:validation:XValidation:rule="(!has(self.staleAfter) && !has(self.whenUnavailable) && !has(self.resumeAfter)) || (!has(self.watcherAddress) && self.provider == 'Prometheus')",message="staleAfter, whenUnavailable and resumeAfter apply to provider Prometheus without watcherAddress: only its metrics are probed"
// +kubebuilder:validation:XValidation:rule="!has(self.resumeAfter) || (has(self.whenUnavailable) && self.whenUnavailable == 'ScoreByRequests')",message="resumeAfter applies to whenUnavailable: ScoreByRequests"
type LoadMetrics struct {
	// Provider is Prometheus (the default), KubernetesMetricsServer or SignalFx.
	// +kubebuilder:default=Prometheus
	// +optional
	Provider MetricProvider `json:"provider,omitempty"`

	// Address is the provider's URL, for example
	// https://thanos-querier.openshift-monitoring.svc:9091. Not used by KubernetesMetricsServer.
	// For Prometheus it may be left out: the operator then looks for OpenShift monitoring,
	// a Prometheus Operator's Prometheus, or a well-known Service, and says in
	// status.metrics what it found. It must not hold credentials (user:password@host):
	// the address is written into the scheduler's configuration and status, which are
	// not secret; give a token with tokenSecretRef or serviceAccountToken instead.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*@')",message="address must not hold credentials (user:password@host): it is stored in plain text; give a token with tokenSecretRef or serviceAccountToken"
	// +optional
	Address string `json:"address,omitempty"`

	// InsecureSkipVerify turns off verification of the provider's TLS certificate.
	// Default false: the scheduler verifies it (load-watcher itself would default to true).
	// +optional
	InsecureSkipVerify *bool `json:"insecureSkipVerify,omitempty"`

	// TokenSecretRef names a Secret in this namespace whose key token holds a bearer token
	// for the provider. The Secret must carry the label
	// operator.secondary-scheduler.io/metrics-token-for set to this SecondaryScheduler's
	// name, which says that its token is meant to be sent to this scheduler's metrics
	// provider: the operator reads no other Secret. The scheduler gets it through a
	// Secret, never a ConfigMap, and restarts when it changes (load-watcher reads it once,
	// at start).
	// +optional
	TokenSecretRef *corev1.LocalObjectReference `json:"tokenSecretRef,omitempty"`

	// ServiceAccountToken makes the operator authenticate the scheduler with a bound token
	// of a dedicated ServiceAccount, which it binds to a ClusterRole, requests from the
	// TokenRequest API and renews before 80% of its lifetime. It is used without being set
	// when the endpoint found is OpenShift's thanos-querier; set it ({} for the defaults)
	// for other endpoints behind kube-rbac-proxy. A new token restarts the scheduler
	// (load-watcher reads it once, at start); with leader election that is harmless.
	// +optional
	ServiceAccountToken *ServiceAccountTokenAuth `json:"serviceAccountToken,omitempty"`

	// CABundle names a ConfigMap in this namespace whose key holds the PEM certificates
	// that sign the provider's TLS certificate. It is mounted into the scheduler, which
	// then trusts it alone (SSL_CERT_FILE) and verifies the provider. When unset and the
	// endpoint found is OpenShift's thanos-querier, the service CA of ConfigMap
	// openshift-service-ca.crt is used.
	// +optional
	CABundle *ConfigMapKeyReference `json:"caBundle,omitempty"`

	// InstallRecordingRules asks the operator to install a PrometheusRule that defines the
	// series load-watcher reads (instance:node_cpu:ratio, instance:node_memory_utilisation:ratio)
	// from node-exporter metrics, keyed by node name, for the Prometheus Operator's
	// Prometheus that discovery finds, labelled to match its ruleSelector. Use it when the
	// MetricsAvailable condition says RecordingRuleMissing or NodeLabelMismatch.
	// +optional
	InstallRecordingRules bool `json:"installRecordingRules,omitempty"`

	// WatcherAddress is the URL of an external load-watcher service to read load from,
	// instead of the scheduler's built-in one. It must not hold credentials
	// (user:password@host): the address is written into the scheduler's configuration,
	// which is not secret.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[a-zA-Z][a-zA-Z0-9+.-]*://[^/?#]*@')",message="watcherAddress must not hold credentials (user:password@host): it is stored in plain text"
	// +optional
	WatcherAddress string `json:"watcherAddress,omitempty"`

	// StaleAfter is how old the newest sample of a node's load may be, and how long the
	// provider may stay unreachable (or its series unusable), before the metrics count as
	// unavailable (default 3m: a few scrape and rule intervals; at least 30s, at most 10m, within the 15 minutes load-watcher reads).
	// The operator probes at least twice per staleAfter. scheduler-plugins' load-watcher
	// keeps scoring with old data (and, once none is left, with the last it fetched)
	// without a word; the MetricsAvailable condition says MetricsStale instead.
	// Provider Prometheus only: the other sources are not probed.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('10m')",message="staleAfter must be between 30s and 10m: load-watcher reads the last 15 minutes, and staleness is measured within them"
	// +optional
	StaleAfter *metav1.Duration `json:"staleAfter,omitempty"`

	// WhenUnavailable says how the scheduler scores nodes while its metrics are
	// unavailable (older than staleAfter, or unreachable for longer): UseLastMetrics (the
	// default) keeps the load-aware plugin, which scores with whatever data it last had;
	// ScoreByRequests switches the scheduler to the equivalent request-based scoring
	// (NodeResourcesFit MostAllocated for TargetLoadPacking, NodeResourcesBalancedAllocation
	// for the others) until the metrics have been healthy for resumeAfter. Each switch
	// restarts the scheduler's pods with the other configuration (with leader election,
	// briefly), emits an Event and shows in status.metrics.scoring.
	// +kubebuilder:validation:Enum=UseLastMetrics;ScoreByRequests
	// +optional
	WhenUnavailable MetricsFailsafe `json:"whenUnavailable,omitempty"`

	// ResumeAfter is how long the metrics must stay healthy, after whenUnavailable
	// ScoreByRequests switched to request-based scoring, before load-aware scoring
	// resumes (default 5m; at least 30s, at most 24h). Longer than staleAfter, so that a
	// provider that flaps does not flap the scheduler.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('24h')",message="resumeAfter must be between 30s and 24h"
	// +optional
	ResumeAfter *metav1.Duration `json:"resumeAfter,omitempty"`
}

// MetricsFailsafe says how a load-aware scheduler scores nodes while its metrics are unavailable.
type MetricsFailsafe string

const (
	// UseLastMetrics keeps the load-aware plugin, scoring with the last data it has.
	UseLastMetrics MetricsFailsafe = "UseLastMetrics"
	// ScoreByRequests switches to the equivalent request-based scoring until the metrics
	// have been healthy for resumeAfter.
	ScoreByRequests MetricsFailsafe = "ScoreByRequests"
)

// Defaults of the metrics failsafe.
const (
	// DefaultStaleAfter is profile.metrics.staleAfter when it is not set.
	DefaultStaleAfter = 3 * time.Minute
	// DefaultResumeAfter is profile.metrics.resumeAfter when it is not set.
	DefaultResumeAfter = 5 * time.Minute
)

// EffectiveStaleAfter is staleAfter, or its default.
func (m *LoadMetrics) EffectiveStaleAfter() time.Duration {
	if m == nil || m.StaleAfter == nil || m.StaleAfter.Duration <= 0 {
		return DefaultStaleAfter
	}
	return m.StaleAfter.Duration
}

// EffectiveResumeAfter is resumeAfter, or its default.
func (m *LoadMetrics) EffectiveResumeAfter() time.Duration {
	if m == nil || m.ResumeAfter == nil || m.ResumeAfter.Duration <= 0 {
		return DefaultResumeAfter
	}
	return m.ResumeAfter.Duration
}

// ScoresByRequestsWhenUnavailable reports whether the failsafe of whenUnavailable
// ScoreByRequests is on.
func (m *LoadMetrics) ScoresByRequestsWhenUnavailable() bool {
	return m != nil && m.WhenUnavailable == ScoreByRequests
}

// ServiceAccountTokenAuth configures the bound ServiceAccount token a load-aware scheduler
// presents to its metrics provider.
type ServiceAccountTokenAuth struct {
	// ClusterRole is bound to the dedicated ServiceAccount; it must let the endpoint's
	// proxy authorize the scheduler (default cluster-monitoring-view, OpenShift's role for
	// reading cluster metrics). The operator can bind cluster-monitoring-view; for another
	// role, grant the operator the bind verb on it.
	// +kubebuilder:default=cluster-monitoring-view
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ClusterRole string `json:"clusterRole,omitempty"`

	// ExpirationSeconds is the token's requested lifetime (default 86400, one day; at
	// least 600, at most 604800, a week). It is renewed at 80% of the lifetime the API
	// server grants. The token is bound to the Secret that keeps it, so it stops working
	// when that Secret (or the SecondaryScheduler, which owns it) is deleted.
	// +kubebuilder:default=86400
	// +kubebuilder:validation:Minimum=600
	// +kubebuilder:validation:Maximum=604800
	// +optional
	ExpirationSeconds *int64 `json:"expirationSeconds,omitempty"`
}

// ConfigMapKeyReference names a key of a ConfigMap in the SecondaryScheduler's namespace.
type ConfigMapKeyReference struct {
	// Name is the ConfigMap's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Key is the key holding the PEM bundle (default ca.crt).
	// +kubebuilder:default=ca.crt
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
}

// TargetLoadPackingArgs configures the TargetLoadPacking profile.
type TargetLoadPackingArgs struct {
	// TargetUtilization is the CPU utilization, in percent, up to which nodes are packed
	// before pods spread (default 40). Set it about 10 below the utilization you want.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	TargetUtilization *int32 `json:"targetUtilization,omitempty"`

	// DefaultRequests are assumed for containers without requests or limits (best-effort
	// QoS). Default: cpu 1000m. At most 16 resources, each a quantity of at most 32
	// characters whose exponent, if any, has at most 3 digits (2e3, not 1e-1000).
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, [self[k]].all(q, type(q) == int || (size(q) <= 32 && [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31].all(i, i >= size(q) || !(q.charAt(i) in ['e', 'E']) || size(q) - i <= 4 || (size(q) - i == 5 && q.charAt(i + 1) in ['+', '-'])))))",message="each quantity must be at most 32 characters long, with an exponent (the digits after e or E and its sign) of at most 3 digits: write one such as 100m, 1.5, 2Gi or 2e3"
	// +optional
	DefaultRequests corev1.ResourceList `json:"defaultRequests,omitempty"`

	// DefaultRequestsMultiplier multiplies the requests of containers without limits
	// (burstable QoS) to estimate their use until it is measured, as a decimal number
	// from 1 to 100 (default "1"; the plugin's own default, 1.5, predicts pods that request
	// more than they use, as most do, at several times their use, so that nodes fill far
	// below the target: see the outcome benchmark). Below 1 would predict that such a
	// container uses less than it requests.
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]+([.][0-9]+)?$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]+([.][0-9]+)?$') || (double(self) >= 1.0 && double(self) <= 100.0)",message="defaultRequestsMultiplier must be from 1 to 100"
	// +optional
	DefaultRequestsMultiplier string `json:"defaultRequestsMultiplier,omitempty"`
}

// LoadVariationRiskBalancingArgs configures the LoadVariationRiskBalancing profile.
type LoadVariationRiskBalancingArgs struct {
	// SafeVarianceMargin multiplies the standard deviation of use in a node's risk, as a
	// decimal number from 0 to 100 (default "1"). The plugin caps the product at 1, so
	// larger margins change nothing.
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]+([.][0-9]+)?$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]+([.][0-9]+)?$') || double(self) <= 100.0",message="safeVarianceMargin must be from 0 to 100"
	// +optional
	SafeVarianceMargin string `json:"safeVarianceMargin,omitempty"`

	// SafeVarianceSensitivity is the root power of the standard deviation in a node's
	// risk, as a decimal number above 0 and at most 100 (default "1"). The plugin raises
	// the deviation to 1/sensitivity, so 0 would divide by zero.
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]+([.][0-9]+)?$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[0-9]+([.][0-9]+)?$') || (double(self) > 0.0 && double(self) <= 100.0)",message="safeVarianceSensitivity must be above 0 and at most 100"
	// +optional
	SafeVarianceSensitivity string `json:"safeVarianceSensitivity,omitempty"`
}

// RiskWeight is a decimal number from 0 to 1, such as "0.5".
// +kubebuilder:validation:MaxLength=16
// +kubebuilder:validation:Pattern=`^(0([.][0-9]+)?|1([.]0+)?)$`
type RiskWeight string

// LowRiskOverCommitmentArgs configures the LowRiskOverCommitment profile.
type LowRiskOverCommitmentArgs struct {
	// SmoothingWindowSize is the number of metric windows over which use is smoothed (default 5).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	SmoothingWindowSize *int32 `json:"smoothingWindowSize,omitempty"`

	// RiskLimitWeights weighs, per resource, the risk that comes from limits, as decimal
	// numbers from 0 to 1 (default cpu "0.5", memory "0.5").
	// +kubebuilder:validation:MaxProperties=16
	// +optional
	RiskLimitWeights map[corev1.ResourceName]RiskWeight `json:"riskLimitWeights,omitempty"`
}

// BinPackingArgs configures the BinPacking profile: in-tree NodeResourcesFit scoring
// MostAllocated over every feasible node, NodeResourcesBalancedAllocation disabled.
type BinPackingArgs struct {
	// ResourceWeights weighs each resource in the MostAllocated score, from 1 to 100.
	// Default: cpu 1, memory 1. Extended resources such as nvidia.com/gpu may be listed too.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(r, self[r] >= 1 && self[r] <= 100)",message="each resource weight must be between 1 and 100"
	// +optional
	ResourceWeights map[corev1.ResourceName]int64 `json:"resourceWeights,omitempty"`
}

// GangImplementation is which plugin schedules gangs.
// +kubebuilder:validation:Enum=Coscheduling;Workload
type GangImplementation string

const (
	// CoschedulingGangs are scheduler-plugins' Coscheduling: a gang is a PodGroup of
	// scheduling.x-k8s.io/v1alpha1 (a CRD), its pods labelled
	// scheduling.x-k8s.io/pod-group; scheduler-plugins' controller keeps its status.
	CoschedulingGangs GangImplementation = "Coscheduling"
	// WorkloadGangs are Kubernetes' own GangScheduling plugin and Workload API (KEP-4671):
	// a gang is a PodGroup of scheduling.k8s.io/v1beta1 with a gang policy, its pods name
	// it in spec.schedulingGroup.podGroupName. No CRD and no controller; it needs a cluster
	// that serves the API (feature gate GenericWorkload, beta and off by default in 1.37,
	// and scheduling.k8s.io/v1beta1 enabled) and Kubernetes' own kube-scheduler of 1.37 or
	// later, which the operator starts with the same gate.
	WorkloadGangs GangImplementation = "Workload"
)

// Gang is how gangs are scheduled: with scheduler-plugins' Coscheduling (its
// CoschedulingArgs) or with Kubernetes' GangScheduling. A Coscheduling PodGroup's own
// scheduleTimeoutSeconds, when set, replaces permitWaitingTimeSeconds for its pods.
// +kubebuilder:validation:XValidation:rule="!has(self.implementation) || self.implementation != 'Workload' || (!has(self.permitWaitingTimeSeconds) && !has(self.podGroupBackoffSeconds))",message="permitWaitingTimeSeconds and podGroupBackoffSeconds are Coscheduling's settings; Kubernetes' GangScheduling (implementation Workload) takes none"
type Gang struct {
	// Implementation is which plugin schedules gangs: Coscheduling (the default),
	// scheduler-plugins' plugin and PodGroup CRD, or Workload, Kubernetes' own
	// GangScheduling plugin and Workload API, which needs no CRD and no controller but a
	// cluster that serves scheduling.k8s.io/v1beta1 and Kubernetes' own kube-scheduler
	// image of 1.37 or later in spec.schedulerImage. status.gang says which is in use.
	// +optional
	Implementation GangImplementation `json:"implementation,omitempty"`

	// PermitWaitingTimeSeconds is how long the pods of a gang that already have a node
	// wait, unbound, for the rest of it; then all of them go back to the queue. Default:
	// 60, the plugin's.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	PermitWaitingTimeSeconds *int32 `json:"permitWaitingTimeSeconds,omitempty"`

	// PodGroupBackoffSeconds is how long a gang that could not be placed waits before it
	// is tried again, so that it does not hold the queue. Default: 0, the plugin's: no
	// wait.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=3600
	// +optional
	PodGroupBackoffSeconds *int32 `json:"podGroupBackoffSeconds,omitempty"`
}

// EffectiveImplementation is Implementation, or its default Coscheduling.
func (g *Gang) EffectiveImplementation() GangImplementation {
	if g == nil || g.Implementation == "" {
		return CoschedulingGangs
	}
	return g.Implementation
}

// Quota turns on ElasticQuotas (scheduler-plugins' CapacityScheduling, which takes no
// arguments).
type Quota struct{}

// NUMA turns on NUMA-aware placement (scheduler-plugins' NodeResourceTopologyMatch, at
// preFilter and filter, with its default arguments).
type NUMA struct{}

// SecondarySchedulerSpec is the desired secondary scheduler. Its first fields are those of
// OpenShift's operator.openshift.io/v1 SecondaryScheduler, with the same meanings;
// docs/migration.md converts an existing resource (dropping the fields OpenShift's operator
// writes itself, such as observedConfig).
// +kubebuilder:validation:XValidation:rule="has(self.profile) || (has(self.schedulerConfig) && size(self.schedulerConfig) > 0)",message="set spec.profile.type (for example BinPacking) or spec.schedulerConfig (the name of a ConfigMap holding a KubeSchedulerConfiguration)"
// +kubebuilder:validation:XValidation:rule="!has(self.profile) || self.profile.type != 'Custom' || (has(self.schedulerConfig) && size(self.schedulerConfig) > 0)",message="profile type Custom needs spec.schedulerConfig: the name of a ConfigMap whose key config.yaml holds a KubeSchedulerConfiguration"
// +kubebuilder:validation:XValidation:rule="!has(self.profile) || self.profile.type == 'Custom' || !has(self.schedulerConfig) || size(self.schedulerConfig) == 0",message="spec.schedulerConfig is only used with profile type Custom; remove it or set profile.type to Custom"
// +kubebuilder:validation:XValidation:rule="(!has(self.gang) && !has(self.quota) && !has(self.numa)) || (has(self.profile) && self.profile.type != 'Custom')",message="spec.gang, spec.quota and spec.numa add Coscheduling, CapacityScheduling and NodeResourceTopologyMatch to a typed profile; with profile Custom, enable them in the configuration itself (docs/plugins.md)"
// +kubebuilder:validation:XValidation:rule="!has(self.descheduling) || (has(self.profile) && self.profile.type in ['TargetLoadPacking', 'LoadVariationRiskBalancing'])",message="spec.descheduling keeps nodes near a load-aware scheduler's aim: it needs profile type TargetLoadPacking (the aim is its target) or LoadVariationRiskBalancing (the nodes' mean use) (docs/descheduling.md)"
// +kubebuilder:validation:XValidation:rule="!has(self.descheduling) || !has(self.profile) || !has(self.profile.metrics) || ((!has(self.profile.metrics.provider) || self.profile.metrics.provider == 'Prometheus') && !has(self.profile.metrics.watcherAddress))",message="spec.descheduling reads node use from the scheduler's Prometheus: it needs profile.metrics.provider Prometheus (the default) and no watcherAddress"
// +kubebuilder:validation:XValidation:rule="!has(self.nodeSelector) || !has(self.topology) || !has(self.topology.highlyAvailableTopology) || !has(self.topology.highlyAvailableTopology.nodeSelector)",message="give nodeSelector once: spec.nodeSelector replaces topology.highlyAvailableTopology.nodeSelector"
// +kubebuilder:validation:XValidation:rule="!has(self.tolerations) || !has(self.topology) || !has(self.topology.highlyAvailableTopology) || !has(self.topology.highlyAvailableTopology.tolerations)",message="give tolerations once: spec.tolerations replaces topology.highlyAvailableTopology.tolerations"
type SecondarySchedulerSpec struct {
	// ManagementState is Managed (the default: create the scheduler and keep it as
	// specified), Unmanaged (leave the scheduler's objects as they are) or Removed
	// (delete the scheduler's objects, keep this resource). Force means Managed.
	// +kubebuilder:default=Managed
	// +optional
	ManagementState ManagementState `json:"managementState,omitempty"`

	// LogLevel is the scheduler's log verbosity: Normal (-v=2, the default), Debug (-v=4),
	// Trace (-v=6) or TraceAll (-v=8). A scheduler whose configuration holds a token (a
	// load-aware profile's Prometheus token, or a Custom configuration's) runs at -v=1
	// whatever this says: from -v=2 on, kube-scheduler logs its whole configuration.
	// +optional
	LogLevel LogLevel `json:"logLevel,omitempty"`

	// OperatorLogLevel is the verbosity of the operator's own logs about this resource,
	// with the same levels as logLevel.
	// +optional
	OperatorLogLevel LogLevel `json:"operatorLogLevel,omitempty"`

	// PendingPodThreshold is how long a pod that names one of this scheduler's names may
	// wait for a node before it counts as stuck: in status.pendingPods and the PodsPending
	// condition, which says why when the operator can tell (default 2m, at least 10s, at
	// most 24h). Pods held by scheduling gates are not counted: they wait by design.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('24h')",message="pendingPodThreshold must be between 10s and 24h"
	// +optional
	PendingPodThreshold *metav1.Duration `json:"pendingPodThreshold,omitempty"`

	// SchedulerConfig is the name of a ConfigMap in this namespace whose key config.yaml
	// holds a KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1). Setting it
	// without a profile means profile type Custom. The operator sets leaderElection and
	// fills clientConnection's rate limits when unset; a clientConnection.kubeconfig is
	// refused (the scheduler connects as its ServiceAccount); the rest is used as written.
	// Edits roll out.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	SchedulerConfig string `json:"schedulerConfig,omitempty" reach:"configmap"`

	// SchedulerImage is the scheduler's container image: a scheduler-plugins build
	// (binary /bin/kube-scheduler) or the upstream kube-scheduler (binary
	// /usr/local/bin/kube-scheduler, run as user 65532; in-tree plugins only, so
	// load-aware profiles are refused with it); other images are run as
	// /bin/kube-scheduler, and status.imageSource says so. Default: the
	// kubernetes-sigs/scheduler-plugins release built for the cluster's Kubernetes minor
	// version, or the newest known (status.image says which, and when it is outside the
	// version-skew policy).
	// +kubebuilder:validation:MaxLength=512
	// +optional
	SchedulerImage string `json:"schedulerImage,omitempty"`

	// Topology is SingleReplica (the default) or HighlyAvailable.
	// +optional
	Topology *Topology `json:"topology,omitempty"`

	// SchedulerName is the name pods give in spec.schedulerName to be placed by this
	// scheduler. Default: metadata.name. It cannot be changed and cannot be
	// default-scheduler. When two resources claim one name, the older keeps it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:validation:XValidation:rule="self != 'default-scheduler'",message="default-scheduler belongs to the cluster's own kube-scheduler; choose another schedulerName"
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// Profile chooses what the scheduler optimises for. Without it, spec.schedulerConfig
	// must be set (profile type Custom).
	// +optional
	Profile *Profile `json:"profile,omitempty"`

	// NodePool restricts the nodes this scheduler places pods on to those matching the
	// selector: it becomes the NodeAffinity plugin's addedAffinity in every profile,
	// Custom ones included. Two schedulers sharing nodes can both bind pods to the last
	// free capacity of one node (each has its own cache); give each a pool of its own,
	// and keep the default scheduler off a pool with a taint its workloads tolerate.
	// status.nodePool says how many nodes the pool matches.
	// +optional
	NodePool *metav1.LabelSelector `json:"nodePool,omitempty"`

	// Resources of the scheduler container. Default: requests of 100m CPU and 128Mi of
	// memory, no limits. A kube-scheduler of a large cluster needs gigabytes. Requests and
	// limits may list cpu, memory and ephemeral-storage, each a quantity of at most 32
	// characters whose exponent, if any, has at most 3 digits (2e3, not 1e-1000).
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || size(self.requests) == ['cpu', 'memory', 'ephemeral-storage'].filter(k, k in self.requests).size()",message="requests may list only cpu, memory and ephemeral-storage",fieldPath=".requests"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || size(self.limits) == ['cpu', 'memory', 'ephemeral-storage'].filter(k, k in self.limits).size()",message="limits may list only cpu, memory and ephemeral-storage",fieldPath=".limits"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || ['cpu', 'memory', 'ephemeral-storage'].all(k, !(k in self.requests) || [self.requests[k]].all(q, type(q) == int || (size(q) <= 32 && [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31].all(i, i >= size(q) || !(q.charAt(i) in ['e', 'E']) || size(q) - i <= 4 || (size(q) - i == 5 && q.charAt(i + 1) in ['+', '-'])))))",message="each quantity in requests must be at most 32 characters long, with an exponent (the digits after e or E and its sign) of at most 3 digits: write one such as 100m, 1.5, 2Gi or 2e3",fieldPath=".requests"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || ['cpu', 'memory', 'ephemeral-storage'].all(k, !(k in self.limits) || [self.limits[k]].all(q, type(q) == int || (size(q) <= 32 && [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31].all(i, i >= size(q) || !(q.charAt(i) in ['e', 'E']) || size(q) - i <= 4 || (size(q) - i == 5 && q.charAt(i + 1) in ['+', '-'])))))",message="each quantity in limits must be at most 32 characters long, with an exponent (the digits after e or E and its sign) of at most 3 digits: write one such as 100m, 1.5, 2Gi or 2e3",fieldPath=".limits"
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector restricts the scheduler's own pods to nodes with these labels, for
	// example infrastructure nodes. It replaces highlyAvailableTopology.nodeSelector.
	// +kubebuilder:validation:MaxProperties=32
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations let the scheduler's own pods run on tainted nodes. They replace
	// highlyAvailableTopology.tolerations.
	// +kubebuilder:validation:MaxItems=32
	// +optional
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity of the scheduler's own pods. HighlyAvailable replicas are also spread
	// over nodes and zones by topology spread constraints, whatever is given here.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// PriorityClassName of the scheduler's pods. Default: secondary-scheduler-critical,
	// shipped with the operator, so that workloads do not preempt the scheduler that
	// places them. A class that does not exist is reported, not created.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('system-')",message="system-* priority classes are reserved for the cluster's own components in kube-system; use secondary-scheduler-critical (the default) or a class of your own"
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// Gang schedules the pods of a gang all together or not at all, beside the profile's
	// scoring, with scheduler-plugins' Coscheduling: a gang is a PodGroup
	// (scheduling.x-k8s.io/v1alpha1) and its pods carry the label
	// scheduling.x-k8s.io/pod-group: NAME. No pod of it binds until minMember of them have
	// a node. The cluster must serve the PodGroup CRD (docs/plugins.md); until it does, the
	// resource is refused with reason PluginCRDMissing. Not with profile Custom, whose
	// configuration enables Coscheduling itself.
	// +optional
	Gang *Gang `json:"gang,omitempty"`

	// Quota enforces ElasticQuotas (scheduling.x-k8s.io/v1alpha1) beside the profile's
	// scoring, with scheduler-plugins' CapacityScheduling: a namespace's pods may use up
	// to its quota's max, borrowing what other namespaces leave of their min, and
	// preemption (which CapacityScheduling does in place of the default) takes back
	// what was borrowed. Give an empty object, quota: {}, to turn it on. The cluster must
	// serve the ElasticQuota CRD (docs/plugins.md). Not with profile Custom.
	// +optional
	Quota *Quota `json:"quota,omitempty"`

	// NUMA places a pod only on a node where one NUMA zone can hold each of its containers
	// (or the whole pod), as the node's kubelet Topology Manager policy will require, with
	// scheduler-plugins' NodeResourceTopologyMatch: it reads each node's zones from its
	// NodeResourceTopology (topology.node.k8s.io/v1alpha2), which a node agent such as
	// NFD's topology-updater publishes. It filters nodes and leaves scoring to the profile.
	// A node without a NodeResourceTopology, and a BestEffort pod, are not filtered. Give
	// an empty object, numa: {}, to turn it on. The cluster must serve the
	// NodeResourceTopology CRD (docs/plugins.md). Not with profile Custom.
	// +optional
	NUMA *NUMA `json:"numa,omitempty"`

	// Descheduling runs a descheduler beside this scheduler, which evicts pods it placed
	// from nodes whose measured load drifted above the band around its aim, so that it
	// places them again (Descheduling). Off when not given.
	// +optional
	Descheduling *Descheduling `json:"descheduling,omitempty"`

	// Routing sends new pods to this scheduler without changing their manifests: the
	// API server sets their spec.schedulerName when they are created (a
	// MutatingAdmissionPolicy the installer ships, which never blocks a pod, reading the
	// routes from a RoutingTable the operator writes). Pods that
	// exist already keep the scheduler they have: spec.schedulerName cannot change.
	// The Routing condition says whether pods are routed now, and why not.
	// +optional
	Routing *Routing `json:"routing,omitempty"`

	// Extenders are HTTP extenders the scheduler calls for each pod (shared by all its
	// profiles): at a URL, at a Service, or in a container of the scheduler's pod. Their
	// TLS certificates come from Secrets mounted as files. The operator checks them as
	// kube-scheduler would before rolling them out, probes each, and says in the
	// ExtendersAvailable condition and status.extenders whether it answers. With profile
	// Custom they are added to the configuration's own extenders, checked alike.
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:XValidation:rule="self.filter(e, has(e.bindVerb)).size() <= 1",message="one extender at most may set bindVerb: the scheduler binds each pod once"
	// +kubebuilder:validation:XValidation:rule="self.all(e, !has(e.container) || !has(e.container.env) || e.container.env.all(v, !has(v.valueFrom) || !has(v.valueFrom.resourceFieldRef) || !has(v.valueFrom.resourceFieldRef.divisor) || [v.valueFrom.resourceFieldRef.divisor].all(q, type(q) == int || (size(q) <= 32 && [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31].all(i, i >= size(q) || !(q.charAt(i) in ['e', 'E']) || size(q) - i <= 4 || (size(q) - i == 5 && q.charAt(i + 1) in ['+', '-']))))))",message="the divisor of a resourceFieldRef in an extender container's env must be a quantity of at most 32 characters, with an exponent (the digits after e or E and its sign) of at most 3 digits, such as 1m or 1Mi"
	// +listType=map
	// +listMapKey=name
	// +optional
	Extenders []Extender `json:"extenders,omitempty"`

	// DecodeRefusal is why the stored spec was not decoded (UnmarshalJSON), nil when it
	// was. It is no field of the API: never serialized, set by decoding only. Exported,
	// for the unstructured converter sets every field it finds.
	DecodeRefusal *QuantityError `json:"-"`
}

// RoutingMode says what a route does to the pods it selects.
// +kubebuilder:validation:Enum=Enforce;Audit
type RoutingMode string

const (
	// RoutingEnforce sets the pods' spec.schedulerName (and the route's tolerations),
	// and labels them with LabelRoutedTo.
	RoutingEnforce RoutingMode = "Enforce"
	// RoutingAudit changes nothing of how the pods are scheduled: it only labels them
	// with LabelWouldRouteTo, so that a platform team sees what Enforce would route.
	RoutingAudit RoutingMode = "Audit"
)

const (
	// LabelRoutedTo marks a pod that a route sent to a scheduler; its value is the
	// scheduler name.
	LabelRoutedTo = "routing.secondary-scheduler.io/scheduler"
	// LabelWouldRouteTo marks a pod that a route in Audit mode would have sent to a
	// scheduler; its value is the scheduler name.
	LabelWouldRouteTo = "routing.secondary-scheduler.io/would-route-to"
	// LabelRoutingOptOut keeps routing away from a namespace or a pod labelled with it
	// (any value).
	LabelRoutingOptOut = "routing.secondary-scheduler.io/opt-out"
)

// DefaultFailoverAfter is spec.routing.failoverAfter's default.
const DefaultFailoverAfter = time.Minute

// Routing chooses the pods routed to this scheduler: those created in a namespace that
// NamespaceSelector selects, whose labels PodSelector selects. Never routed: pods of
// kube-system, kube-public and kube-node-lease, of the operator's and the schedulers'
// namespaces, and of namespaces or pods labelled routing.secondary-scheduler.io/opt-out;
// pods that name a scheduler other than default-scheduler, or have a node already;
// mirror pods; and DaemonSet pods unless includeDaemonSetPods is set.
type Routing struct {
	// Mode is Enforce (the default: route the pods) or Audit (only label the pods
	// Enforce would route, with routing.secondary-scheduler.io/would-route-to, to roll
	// routing out safely).
	// +kubebuilder:default=Enforce
	// +optional
	Mode RoutingMode `json:"mode,omitempty"`

	// NamespaceSelector selects the namespaces whose new pods are routed; {} selects
	// every namespace but those never routed.
	NamespaceSelector metav1.LabelSelector `json:"namespaceSelector"`

	// PodSelector narrows the route to pods with these labels. Default: every pod of
	// the namespaces selected.
	// +optional
	PodSelector *metav1.LabelSelector `json:"podSelector,omitempty"`

	// IncludeDaemonSetPods routes DaemonSet pods too. They are left to the default
	// scheduler by default: each belongs to one node already.
	// +optional
	IncludeDaemonSetPods bool `json:"includeDaemonSetPods,omitempty"`

	// Tolerations are added to the pods routed (in Enforce mode), typically those of the
	// taints that keep other workloads off this scheduler's node pool.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// FailoverAfter is how long this scheduler may be unavailable before new pods stop
	// being routed to it and go to the default scheduler again, until it is available
	// again (default 1m, at least 10s, at most 1h). Pods routed before keep its name and
	// wait for it: status.pendingPods counts them.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s') && duration(self) <= duration('1h')",message="failoverAfter must be between 10s and 1h"
	// +optional
	FailoverAfter *metav1.Duration `json:"failoverAfter,omitempty"`
}

// EffectiveMode is the route's mode, or its default.
func (r *Routing) EffectiveMode() RoutingMode {
	if r.Mode == "" {
		return RoutingEnforce
	}
	return r.Mode
}

// EffectiveFailoverAfter is spec.routing.failoverAfter, or its default.
func (r *Routing) EffectiveFailoverAfter() time.Duration {
	if r.FailoverAfter == nil || r.FailoverAfter.Duration <= 0 {
		return DefaultFailoverAfter
	}
	return r.FailoverAfter.Duration
}

// DefaultPriorityClassName is the PriorityClass the operator ships for scheduler pods.
const DefaultPriorityClassName = "secondary-scheduler-critical"

// SecondarySchedulerStatus is what the operator observed of the scheduler.
type SecondarySchedulerStatus struct {
	// ObservedGeneration is the metadata.generation this status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Available (a scheduler pod is ready to schedule), Progressing
	// (a rollout is under way) and Degraded (the desired state cannot be reached;
	// the reason and message say why and what to fix).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// ReadyReplicas is the number of ready scheduler pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas"`

	// SchedulerName is the name pods use in spec.schedulerName to reach this scheduler.
	// +optional
	SchedulerName string `json:"schedulerName,omitempty"`

	// SchedulerNames are every scheduler name this resource claims and serves: its
	// scheduler name, and for a Custom configuration the schedulerName of each of its
	// profiles. Two SecondarySchedulers never serve one name: the older keeps it.
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	SchedulerNames []string `json:"schedulerNames,omitempty"`

	// Profile is the profile type in effect.
	// +optional
	Profile ProfileType `json:"profile,omitempty"`

	// Image is the scheduler image in use, whether given or defaulted.
	// +optional
	Image string `json:"image,omitempty"`

	// ImageSource says where status.image comes from: spec.schedulerImage, or the
	// default chosen for the cluster's Kubernetes version (and whether that version has a
	// matching scheduler-plugins release).
	// +optional
	ImageSource string `json:"imageSource,omitempty"`

	// Metrics is what the operator found when it probed the metrics of a load-aware
	// scheduler, as the MetricsAvailable condition says in words.
	// +optional
	Metrics *MetricsStatus `json:"metrics,omitempty"`

	// ConfigHash identifies the rendered scheduler configuration; pods roll only when it changes.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`

	// Replicas is the number of scheduler pods wanted: 1, or in HighlyAvailable mode one
	// per node the pods may run on, up to maxReplicas.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`

	// NodePool is what spec.nodePool matches.
	// +optional
	NodePool *NodePoolStatus `json:"nodePool,omitempty"`

	// PendingPods are the pods naming one of status.schedulerNames that have waited longer
	// than spec.pendingPodThreshold for a node; unset when there are none.
	// +optional
	PendingPods *PendingPodsStatus `json:"pendingPods,omitempty"`

	// Routing is what spec.routing did; absent without it.
	// +optional
	Routing *RoutingStatus `json:"routing,omitempty"`

	// Extenders is what the operator last observed of each extender: whether the
	// scheduler can reach it.
	// +listType=map
	// +listMapKey=name
	// +optional
	Extenders []ExtenderStatus `json:"extenders,omitempty"`

	// Gang says which plugin schedules this scheduler's gangs, while spec.gang is set.
	// +optional
	Gang *GangStatus `json:"gang,omitempty"`

	// PluginController is scheduler-plugins' controller as the operator last observed it,
	// while this scheduler's configuration enables a plugin whose resources' status the
	// controller keeps (Coscheduling: PodGroups; CapacityScheduling: ElasticQuotas); absent
	// otherwise. One controller serves every scheduler of the cluster.
	// +optional
	PluginController *PluginControllerStatus `json:"pluginController,omitempty"`

	// Descheduling is what the descheduler of spec.descheduling runs with and how it runs;
	// absent without spec.descheduling.
	// +optional
	Descheduling *DeschedulingStatus `json:"descheduling,omitempty"`
}

// GangStatus is how the scheduler schedules gangs.
type GangStatus struct {
	// Implementation is the plugin in use: Coscheduling (scheduler-plugins', with
	// scheduling.x-k8s.io PodGroups) or Workload (Kubernetes' GangScheduling, with
	// scheduling.k8s.io PodGroups).
	Implementation GangImplementation `json:"implementation"`
	// Plugin is the name of that plugin in the scheduler's configuration.
	Plugin string `json:"plugin"`
}

// PluginControllerStatus is scheduler-plugins' controller, which keeps the status of
// PodGroups and ElasticQuotas, as observed. The plugins do not read that status: without
// the controller gangs and quotas are scheduled all the same, but kubectl shows no phase
// of a PodGroup and no use of an ElasticQuota.
type PluginControllerStatus struct {
	// Deployment is the controller's Deployment, as namespace/name.
	Deployment string `json:"deployment"`
	// Plugins are the plugins of this scheduler's configuration that the controller
	// serves.
	// +listType=atomic
	// +optional
	Plugins []string `json:"plugins,omitempty"`
	// Image is the controller image the Deployment runs.
	// +optional
	Image string `json:"image,omitempty"`
	// ReadyReplicas counts the controller's ready pods, of which one leads.
	ReadyReplicas int32 `json:"readyReplicas"`
	// Replicas is how many pods the Deployment runs.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Message says why the controller does not run, or what it waits for; empty while
	// every replica is ready.
	// +optional
	Message string `json:"message,omitempty"`
}

// RoutingStatus is what a route did.
type RoutingStatus struct {
	// AuditedPods counts, for a route in mode Audit, the pods that exist labelled
	// routing.secondary-scheduler.io/would-route-to with this scheduler's name: those
	// mode Enforce would have routed.
	// +optional
	AuditedPods *int32 `json:"auditedPods,omitempty"`
}

// DefaultPendingPodThreshold is spec.pendingPodThreshold's default.
const DefaultPendingPodThreshold = 2 * time.Minute

// EffectivePendingPodThreshold is spec.pendingPodThreshold, or its default.
func (s *SecondaryScheduler) EffectivePendingPodThreshold() time.Duration {
	if s.Spec.PendingPodThreshold == nil || s.Spec.PendingPodThreshold.Duration <= 0 {
		return DefaultPendingPodThreshold
	}
	return s.Spec.PendingPodThreshold.Duration
}

// PendingPodsStatus counts the pods stuck waiting for this scheduler.
type PendingPodsStatus struct {
	// Count is how many pods have waited longer than the threshold.
	Count int32 `json:"count"`
	// OldestSince is when the oldest of them was created: it has waited since.
	// +optional
	OldestSince *metav1.Time `json:"oldestSince,omitempty"`
	// Examples name a few of them, oldest first, as namespace/name.
	// +kubebuilder:validation:MaxItems=5
	// +listType=atomic
	// +optional
	Examples []string `json:"examples,omitempty"`
}

// NodePoolStatus is what a node pool's selector matches.
type NodePoolStatus struct {
	// Selector is spec.nodePool as a label selector string.
	Selector string `json:"selector"`
	// Nodes is how many nodes match it.
	Nodes int32 `json:"nodes"`
}

// MetricsStatus is the last probe of a load-aware scheduler's metrics.
type MetricsStatus struct {
	// Address is the endpoint probed.
	// +optional
	Address string `json:"address,omitempty"`

	// Source says where the address comes from: spec.profile.metrics.address, or the
	// object discovery found it in.
	// +optional
	Source string `json:"source,omitempty"`

	// NodesWithMetrics counts the nodes that have every series load-watcher reads.
	NodesWithMetrics int32 `json:"nodesWithMetrics"`

	// Nodes counts the cluster's nodes.
	Nodes int32 `json:"nodes"`

	// Credentials says how the scheduler authenticates to the endpoint, never the token
	// itself: none, the Secret of tokenSecretRef, or the ServiceAccount whose token it uses.
	// +optional
	Credentials string `json:"credentials,omitempty"`

	// TokenRenewTime is when the operator renews the ServiceAccount token.
	// +optional
	TokenRenewTime *metav1.Time `json:"tokenRenewTime,omitempty"`

	// TrustedCA says which certificates verify the endpoint: a ConfigMap key, or the
	// system's roots when empty.
	// +optional
	TrustedCA string `json:"trustedCA,omitempty"`

	// RecordingRules names the PrometheusRule the operator installed, if any.
	// +optional
	RecordingRules string `json:"recordingRules,omitempty"`

	// Scoring is how the scheduler scores nodes now: LoadAware, or ByRequests while the
	// failsafe of profile.metrics.whenUnavailable ScoreByRequests holds.
	// +optional
	Scoring ScoringMode `json:"scoring,omitempty"`

	// ScoringSince is when Scoring took its value.
	// +optional
	ScoringSince *metav1.Time `json:"scoringSince,omitempty"`

	// UnavailableSince is when the probes first found the metrics unusable in the current
	// outage (unreachable, refused, missing or stale); unset while they are healthy.
	// +optional
	UnavailableSince *metav1.Time `json:"unavailableSince,omitempty"`

	// NewestSample is, while the data is stale, the time of the stalest node's newest
	// sample, by Prometheus' clock: how old the data the scheduler scores with is.
	// +optional
	NewestSample *metav1.Time `json:"newestSample,omitempty"`

	// HealthySince is, while Scoring is ByRequests, when the metrics became healthy
	// again: load-aware scoring resumes resumeAfter later if they stay so.
	// +optional
	HealthySince *metav1.Time `json:"healthySince,omitempty"`
}

// ScoringMode is how a load-aware scheduler scores nodes.
type ScoringMode string

const (
	// ScoringLoadAware scores nodes by their measured load (the Trimaran plugin).
	ScoringLoadAware ScoringMode = "LoadAware"
	// ScoringByRequests scores nodes by their requests, while the metrics are unavailable.
	ScoringByRequests ScoringMode = "ByRequests"
)

// SecondaryScheduler runs a secondary kube-scheduler beside the cluster's default one.
// Pods opt in with spec.schedulerName.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=secsched;ssched,categories=all
// +kubebuilder:printcolumn:name="Scheduler",type=string,JSONPath=`.status.schedulerName`
// +kubebuilder:printcolumn:name="Profile",type=string,JSONPath=`.status.profile`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Degraded",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`
// +kubebuilder:printcolumn:name="Metrics",type=string,JSONPath=`.status.conditions[?(@.type=="MetricsAvailable")].reason`
// +kubebuilder:printcolumn:name="Pending",type=integer,JSONPath=`.status.pendingPods.count`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:printcolumn:name="Names",type=string,JSONPath=`.status.schedulerNames`,priority=1,description="Every scheduler name served: a Custom configuration's profiles each have one"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$') && size(self.metadata.name) <= 50",message="metadata.name must be a DNS-1035 label (lower-case letters, digits and '-', starting with a letter) of at most 50 characters: the scheduler's Deployment and Service are named after it"
// +kubebuilder:validation:XValidation:rule="has(self.spec.schedulerName) || self.metadata.name != 'default-scheduler'",message="a SecondaryScheduler named default-scheduler must set spec.schedulerName to another name"
// +kubebuilder:validation:XValidation:rule="(has(self.spec.schedulerName) ? self.spec.schedulerName : self.metadata.name) == (has(oldSelf.spec.schedulerName) ? oldSelf.spec.schedulerName : oldSelf.metadata.name)",message="spec.schedulerName cannot be changed; create a new SecondaryScheduler instead"
type SecondaryScheduler struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the desired secondary scheduler.
	// +required
	Spec SecondarySchedulerSpec `json:"spec"`

	// Status is what the operator observed.
	// +optional
	Status SecondarySchedulerStatus `json:"status,omitempty"`
}

// EffectiveSchedulerName is spec.schedulerName, or metadata.name when it is unset.
func (s *SecondaryScheduler) EffectiveSchedulerName() string {
	if s.Spec.SchedulerName != "" {
		return s.Spec.SchedulerName
	}
	return s.Name
}

// EffectiveProfile is spec.profile.type, or Custom when only spec.schedulerConfig is set.
func (s *SecondaryScheduler) EffectiveProfile() ProfileType {
	if s.Spec.Profile != nil && s.Spec.Profile.Type != "" {
		return s.Spec.Profile.Type
	}
	return CustomProfile
}

// EffectiveManagementState is spec.managementState with Force and the empty value read as Managed.
func (s *SecondaryScheduler) EffectiveManagementState() ManagementState {
	switch s.Spec.ManagementState {
	case Unmanaged, Removed:
		return s.Spec.ManagementState
	default:
		return Managed
	}
}

// MaxReplicas is the most scheduler pods the topology allows: 1, or maxReplicas (default
// 3) in HighlyAvailable mode.
func (s *SecondaryScheduler) MaxReplicas() int32 {
	t := s.Spec.Topology
	if t == nil || t.Mode != HighlyAvailable {
		return 1
	}
	if t.HighlyAvailableTopology != nil && t.HighlyAvailableTopology.MaxReplicas != nil {
		return *t.HighlyAvailableTopology.MaxReplicas
	}
	return DefaultHighlyAvailableReplicas
}

// +kubebuilder:object:root=true

// SecondarySchedulerList is a list of SecondarySchedulers.
type SecondarySchedulerList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the SecondarySchedulers.
	Items []SecondaryScheduler `json:"items"`
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &SecondaryScheduler{}, &SecondarySchedulerList{}, &RoutingTable{}, &RoutingTableList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
