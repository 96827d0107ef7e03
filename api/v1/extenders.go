package v1

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxExtenders bounds spec.extenders: kube-scheduler calls every extender in turn for each
// pod, so a long list is a latency problem long before it is a size problem.
const MaxExtenders = 8

// DefaultExtenderHTTPTimeout is spec.extenders[].httpTimeout's default, kube-scheduler's own.
const DefaultExtenderHTTPTimeout = 5 * time.Second

// LabelExtenderTLSFor marks a Secret or ConfigMap whose certificates are meant for the
// extenders of the SecondaryScheduler it names. The operator reads none without it, and
// mounts none into a scheduler: the scheduler's image is the resource author's choice,
// so an object reaches it only when the object's owner says so.
const LabelExtenderTLSFor = "operator.secondary-scheduler.io/extender-tls-for"

// Extender is an HTTP extender that the scheduler calls for each pod it places: to filter
// nodes, to score them, to choose preemption victims or to bind the pod. It is reached at a
// URL, at a Service, or in a container of the scheduler's own pod on localhost. The verbs
// are the last segment of the requests' paths: the scheduler POSTs to ADDRESS/VERB.
// +kubebuilder:validation:XValidation:rule="(has(self.url) ? 1 : 0) + (has(self.service) ? 1 : 0) + (has(self.container) ? 1 : 0) == 1",message="set exactly one of url, service and container: where the scheduler reaches the extender"
// +kubebuilder:validation:XValidation:rule="has(self.filterVerb) || has(self.prioritizeVerb) || has(self.preemptVerb) || has(self.bindVerb)",message="set at least one of filterVerb, prioritizeVerb, preemptVerb and bindVerb: an extender with no verb is never called"
// +kubebuilder:validation:XValidation:rule="!has(self.prioritizeVerb) || (has(self.weight) && self.weight > 0)",message="weight must be positive when prioritizeVerb is set: the extender's scores are multiplied by it"
// +kubebuilder:validation:XValidation:rule="!has(self.url) || !has(self.tls) || self.url.startsWith('https://')",message="tls is only used with an https:// url"
type Extender struct {
	// Name identifies the extender in status, Events and the names of what the operator
	// mounts for it. Unique in spec.extenders.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// URL is the extender's address, http:// or https:// (with tls), to which the verbs
	// are appended, for example https://placement.example:8443/scheduler. It must not hold
	// credentials, a query or a fragment: it is written into the scheduler's
	// configuration and status, which are not secret.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:Pattern=`^https?://[^/?#@]+(/[^?#]*)?$`
	// +optional
	URL string `json:"url,omitempty"`

	// Service is a Service that serves the extender; https when tls is set, else http.
	// +optional
	Service *ExtenderService `json:"service,omitempty"`

	// Container runs the extender in the scheduler's pod, beside the scheduler, which
	// reaches it on localhost; https when tls is set, else http.
	// +optional
	Container *ExtenderContainer `json:"container,omitempty"`

	// FilterVerb is the path the scheduler POSTs to for the extender to filter the nodes
	// a pod may run on. Unset: the extender does not filter.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*$`
	// +optional
	FilterVerb string `json:"filterVerb,omitempty"`

	// PrioritizeVerb is the path the scheduler POSTs to for the extender's scores (0 to
	// 10 per node), which it multiplies by weight and adds to its own. Errors of a
	// prioritize call are always ignored by the scheduler.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*$`
	// +optional
	PrioritizeVerb string `json:"prioritizeVerb,omitempty"`

	// PreemptVerb is the path the scheduler POSTs to for the extender to narrow the
	// victims of a preemption.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*$`
	// +optional
	PreemptVerb string `json:"preemptVerb,omitempty"`

	// BindVerb is the path the scheduler POSTs to for the extender to bind the pods it is
	// interested in, in place of the scheduler's own binder. One extender at most may bind.
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9._~-]+(/[A-Za-z0-9._~-]+)*$`
	// +optional
	BindVerb string `json:"bindVerb,omitempty"`

	// Weight multiplies the extender's scores (required with prioritizeVerb). The
	// scheduler's own plugins score up to 100 a node each, an extender up to 10 times weight.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Weight int64 `json:"weight,omitempty"`

	// NodeCacheCapable says the extender keeps its own cache of nodes: the scheduler then
	// sends node names only, not whole Node objects, which is much cheaper on a large
	// cluster.
	// +optional
	NodeCacheCapable bool `json:"nodeCacheCapable,omitempty"`

	// ManagedResources are the extended resources the extender manages. When set, the
	// scheduler calls the extender only for pods that request at least one of them;
	// unset, it calls it for every pod.
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=name
	// +optional
	ManagedResources []ExtenderManagedResource `json:"managedResources,omitempty"`

	// Ignorable lets the scheduler place pods when the extender fails or cannot be
	// reached, as if it were not there. Default false: a filter, preempt or bind call
	// that fails fails the pod's scheduling, so that an unreachable extender leaves every
	// pod it is called for Pending; the ExtendersAvailable condition says so.
	// +optional
	Ignorable bool `json:"ignorable,omitempty"`

	// HTTPTimeout bounds each call of the extender (default 5s, at least 100ms, at most
	// 5m). The scheduler waits this long for each pod at most.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('100ms') && duration(self) <= duration('5m')",message="httpTimeout must be between 100ms and 5m"
	// +optional
	HTTPTimeout *metav1.Duration `json:"httpTimeout,omitempty"`

	// TLS is how the scheduler verifies the extender and authenticates to it. Setting it
	// makes a service or container extender https.
	// +optional
	TLS *ExtenderTLS `json:"tls,omitempty"`
}

// ExtenderService is a Service serving an extender.
type ExtenderService struct {
	// Name is the Service's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`

	// Namespace is the Service's namespace. Default: the SecondaryScheduler's.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Namespace string `json:"namespace,omitempty"`

	// Port is the Service's port.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	Port int32 `json:"port"`

	// PathPrefix is put before the verbs, for example /scheduler.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(/[A-Za-z0-9._~-]+)+$`
	// +optional
	PathPrefix string `json:"pathPrefix,omitempty"`
}

// ExtenderContainer is an extender that runs in the scheduler's pod. It gets no token of the
// scheduler's ServiceAccount unless mountServiceAccountToken says so: that ServiceAccount
// may bind and read every pod of the cluster.
// +kubebuilder:validation:XValidation:rule="self.port != 10259",message="port 10259 is the scheduler's own secure port: give the extender another"
type ExtenderContainer struct {
	// Image is the extender's container image.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +required
	Image string `json:"image"`

	// Command replaces the image's entrypoint.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	Command []string `json:"command,omitempty"`

	// Args are the extender's arguments.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Args []string `json:"args,omitempty"`

	// Port is where the extender listens in the pod; the scheduler calls localhost:PORT.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +required
	Port int32 `json:"port"`

	// PathPrefix is put before the verbs, for example /scheduler.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^(/[A-Za-z0-9._~-]+)+$`
	// +optional
	PathPrefix string `json:"pathPrefix,omitempty"`

	// Env is the extender's environment.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Env []corev1.EnvVar `json:"env,omitempty"`

	// Resources are the extender container's requests and limits. Default: requests of
	// 50m CPU and 64Mi memory.
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || size(self.requests) == ['cpu', 'memory', 'ephemeral-storage'].filter(k, k in self.requests).size()",message="requests may list only cpu, memory and ephemeral-storage",fieldPath=".requests"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || size(self.limits) == ['cpu', 'memory', 'ephemeral-storage'].filter(k, k in self.limits).size()",message="limits may list only cpu, memory and ephemeral-storage",fieldPath=".limits"
	// +kubebuilder:validation:XValidation:rule="!has(self.requests) || ['cpu', 'memory', 'ephemeral-storage'].all(k, !(k in self.requests) || [self.requests[k]].all(q, type(q) == int || (size(q) <= 32 && [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31].all(i, i >= size(q) || !(q.charAt(i) in ['e', 'E']) || size(q) - i <= 4 || (size(q) - i == 5 && q.charAt(i + 1) in ['+', '-'])))))",message="each quantity in requests must be at most 32 characters long, with an exponent (the digits after e or E and its sign) of at most 3 digits: write one such as 100m, 1.5, 2Gi or 2e3",fieldPath=".requests"
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || ['cpu', 'memory', 'ephemeral-storage'].all(k, !(k in self.limits) || [self.limits[k]].all(q, type(q) == int || (size(q) <= 32 && [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31].all(i, i >= size(q) || !(q.charAt(i) in ['e', 'E']) || size(q) - i <= 4 || (size(q) - i == 5 && q.charAt(i + 1) in ['+', '-'])))))",message="each quantity in limits must be at most 32 characters long, with an exponent (the digits after e or E and its sign) of at most 3 digits: write one such as 100m, 1.5, 2Gi or 2e3",fieldPath=".limits"
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`

	// ReadinessProbe tells when the extender can answer. Default: a TCP check of port.
	// +optional
	ReadinessProbe *corev1.Probe `json:"readinessProbe,omitempty"`

	// LivenessProbe restarts the extender when it fails. Default: none.
	// +optional
	LivenessProbe *corev1.Probe `json:"livenessProbe,omitempty"`

	// MountServiceAccountToken gives the extender container the scheduler's
	// ServiceAccount token, and so the scheduler's powers (reading every pod and node,
	// binding pods). Default false: only the scheduler container gets it.
	// +optional
	MountServiceAccountToken bool `json:"mountServiceAccountToken,omitempty"`
}

// ExtenderManagedResource is an extended resource an extender manages.
type ExtenderManagedResource struct {
	// Name is the extended resource's name, for example example.com/gpu-memory.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// IgnoredByScheduler leaves the resource out of the scheduler's own fit check
	// (NodeResourcesFit), for resources that only the extender accounts for.
	// +optional
	IgnoredByScheduler bool `json:"ignoredByScheduler,omitempty"`
}

// ExtenderTLS is the TLS of the connection from the scheduler to an extender. Every
// Secret and ConfigMap it names must be in the SecondaryScheduler's namespace and carry
// the label operator.secondary-scheduler.io/extender-tls-for set to the
// SecondaryScheduler's name.
// Certificates and keys reach the scheduler as files mounted from those Secrets, never
// through a ConfigMap; a change of a Secret restarts the scheduler, which reads them at
// start.
// +kubebuilder:validation:XValidation:rule="!(has(self.insecureSkipVerify) && self.insecureSkipVerify) || !has(self.caBundle)",message="insecureSkipVerify and caBundle exclude each other: give the CA that signs the extender's certificate, or skip verification"
type ExtenderTLS struct {
	// CABundle holds the PEM certificates that sign the extender's certificate. Default:
	// the system's roots.
	// +optional
	CABundle *ExtenderCABundle `json:"caBundle,omitempty"`

	// ClientCertificateSecretRef names a Secret of type kubernetes.io/tls (keys tls.crt
	// and tls.key) whose certificate the scheduler presents to the extender.
	// +optional
	ClientCertificateSecretRef *corev1.LocalObjectReference `json:"clientCertificateSecretRef,omitempty"`

	// ServerName is the name the extender's certificate is verified against. Default:
	// the host of the address.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServerName string `json:"serverName,omitempty"`

	// InsecureSkipVerify turns off verification of the extender's certificate. For tests
	// only: anyone on the path may then read and change what the scheduler sends.
	// +optional
	InsecureSkipVerify bool `json:"insecureSkipVerify,omitempty"`
}

// ExtenderCABundle is where an extender's CA bundle is: a key of a ConfigMap or of a
// Secret, either labelled operator.secondary-scheduler.io/extender-tls-for.
// +kubebuilder:validation:XValidation:rule="has(self.configMap) != has(self.secret)",message="set exactly one of configMap and secret"
type ExtenderCABundle struct {
	// ConfigMap is a ConfigMap key holding the PEM bundle (default key ca.crt).
	// +optional
	ConfigMap *ConfigMapKeyReference `json:"configMap,omitempty"`

	// Secret is a Secret key holding the PEM bundle (default key ca.crt).
	// +optional
	Secret *SecretKeyReference `json:"secret,omitempty"`
}

// SecretKeyReference names a key of a Secret in the SecondaryScheduler's namespace.
type SecretKeyReference struct {
	// Name is the Secret's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// Key is the key (default ca.crt).
	// +kubebuilder:default=ca.crt
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
}

// ReferencesConsentLabel says that the Secrets and ConfigMaps an extender's TLS names are
// read and mounted only when labelled LabelExtenderTLSFor with the SecondaryScheduler's
// name: their owner's consent, which the operator checks, in place of the author's own
// authority, which admission could check for a few references only.
func (ExtenderTLS) ReferencesConsentLabel() string { return LabelExtenderTLSFor }

// EffectiveHTTPTimeout is the extender's httpTimeout, or its default.
func (e *Extender) EffectiveHTTPTimeout() time.Duration {
	if e.HTTPTimeout == nil {
		return DefaultExtenderHTTPTimeout
	}
	return e.HTTPTimeout.Duration
}

// ExtenderStatus is what the operator last observed of an extender.
type ExtenderStatus struct {
	// Name is the extender's name in spec.extenders; for an extender of a Custom
	// configuration, extenders[INDEX], its place in the configuration's list.
	Name string `json:"name"`

	// Address is where the scheduler calls it.
	Address string `json:"address,omitempty"`

	// Reachable says whether the operator's last probe got an answer (any HTTP status)
	// over the transport the scheduler uses, TLS included.
	Reachable bool `json:"reachable"`

	// Ignorable repeats spec: an ignorable extender that cannot be reached is skipped by
	// the scheduler; any other leaves the pods it is called for Pending.
	Ignorable bool `json:"ignorable,omitempty"`

	// Reason is why it is not reachable, one of the ExtendersAvailable reasons.
	// +optional
	Reason string `json:"reason,omitempty"`

	// Message says what the probe saw.
	// +optional
	Message string `json:"message,omitempty"`

	// LastProbeTime is when the operator last probed it.
	// +optional
	LastProbeTime *metav1.Time `json:"lastProbeTime,omitempty"`
}
