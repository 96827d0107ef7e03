package controllers

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/admission"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/clusterdial"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/operatormetrics"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/pendingpods"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/readonly"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/statusapply"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
)

// SecondarySchedulerReconciler keeps each SecondaryScheduler's scheduler in its desired
// state. NewSecondarySchedulerReconciler makes it, and SetupWithManager registers it.
type SecondarySchedulerReconciler struct {
	// cache reads the SecondarySchedulers and the operator's own objects from the
	// manager's cache, and nothing else (internal/readonly).
	cache client.Reader
	// read are the stages that only read, write the steps that change a scheduler's
	// objects, its credentials and the finalizer, status the last stage, which writes
	// status (internal/statusapply).
	read   readStages
	write  *writer
	status *statusapply.Writer
	// recorder emits Events on SecondarySchedulers.
	recorder events.EventRecorder
	// references watch the objects SecondarySchedulers reference by name, a kind each
	// (referenceKinds).
	references []referenceWatch
	// metricsProber probes the metrics of load-aware schedulers, extenderProber the
	// schedulers' extenders.
	metricsProber  *MetricsProber
	extenderProber *ExtenderProber
	// deschedulerWatcher reads what the descheduler of each spec.descheduling does.
	deschedulerWatcher *DeschedulerWatcher
	// clock tells when metrics tokens are due for renewal; nil for the real clock.
	clock clock.PassiveClock
	// tenancy says in which namespaces schedulers may run.
	tenancy tenancy.Policy
	// maxConcurrentReconciles is how many SecondarySchedulers are reconciled at once.
	maxConcurrentReconciles int
	// ignoredSchedulerNames are scheduler names other schedulers of the cluster serve.
	ignoredSchedulerNames []string
	// strandedPodGrace is how long a pod naming a scheduler no SecondaryScheduler provides
	// may wait before it is told so; zero for v1.DefaultPendingPodThreshold.
	strandedPodGrace time.Duration
	// admission are the admission policies that must be in place before the operator
	// applies anything for a SecondaryScheduler; nil only with the development flag
	// --require-admission-policy=false.
	admission *admission.Policies
	// routing are the facts routes are decided by (SetUpRouting); nil reports no route.
	routing *RoutingFacts
	// pluginController is where scheduler-plugins' controller runs, and how writing it
	// went (SetUpPluginController).
	pluginController *PluginControllerFacts
	// pendingPods finds the pods stuck waiting for a scheduler, in the cache of
	// unscheduled pods (SetupWithManager); nil reports none.
	pendingPods *pendingpods.Finder
	// finalized holds, by SecondaryScheduler, the resourceVersion its finalizer was removed
	// from, until the cache sees it gone (finalize).
	finalized sync.Map
	// reconcileErrors counts the reconciles that did not reach the desired state; the
	// token expiries are those of the metrics tokens last seen. Both are served on the
	// operator's /metrics from SetupWithManager.
	reconcileErrors *operatormetrics.ReconcileErrors
	tokenExpiries   operatormetrics.TokenExpiries
}

// Options are what a SecondarySchedulerReconciler is made with beside its manager: the
// admin's choices (main.go's flags) and what the integration tests replace.
type Options struct {
	// Client writes the schedulers' objects and status, and reads the manager's cache; nil
	// for the manager's client. The integration tests wrap it to count applies.
	Client client.Client
	// Dial opens the probes' connections to metrics providers and extenders; nil for
	// internal/clusterdial's, which reaches a Service by its endpoints where its name does
	// not resolve (outside a cluster, with make run).
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// MetricsProbeInterval is how often the metrics of load-aware schedulers are probed
	// again when nothing changes, and how long a discovered Prometheus is remembered;
	// ExtenderProbeInterval, how often extenders are. main.go's flags default them to
	// DefaultMetricsProbeInterval and DefaultExtenderProbeInterval.
	MetricsProbeInterval, ExtenderProbeInterval time.Duration
	// DeschedulerReadInterval is how often what each descheduler's metrics and the nodes'
	// use say is read; zero for DefaultDeschedulerReadInterval.
	DeschedulerReadInterval time.Duration
	// Clock tells when metrics tokens are due for renewal; nil for the real clock.
	Clock clock.PassiveClock
	// Tenancy says in which namespaces schedulers may run.
	Tenancy tenancy.Policy
	// PrometheusNamespaces are the only namespaces where Prometheus is discovered (and so
	// the only ones a discovered endpoint, which may receive a token, can come from).
	PrometheusNamespaces []string
	// MetricsTokenClusterRoles are the ClusterRoles a metrics token's ServiceAccount may be
	// bound to (the admin's allow-list; the operator also needs bind on each).
	MetricsTokenClusterRoles []string
	// MaxConcurrentReconciles is how many SecondarySchedulers are reconciled at once.
	MaxConcurrentReconciles int
	// IgnoredSchedulerNames are scheduler names other schedulers of the cluster serve:
	// pods naming them are never told that no SecondaryScheduler provides them.
	IgnoredSchedulerNames []string
	// StrandedPodGrace is how long a pod naming a scheduler no SecondaryScheduler provides
	// may wait before it is told so; zero for v1.DefaultPendingPodThreshold.
	StrandedPodGrace time.Duration
	// Admission are the admission policies that must be in place before the operator
	// applies anything for a SecondaryScheduler; nil only with the development flag
	// --require-admission-policy=false.
	Admission *admission.Policies
	// OperatorNamespace is the operator's namespace, whose pods no descheduler evicts, as
	// none of the scheduler namespaces', and whose pods alone reach a descheduler's
	// metrics (render.OperatorPodLabels); "" outside a pod.
	OperatorNamespace string
}

// The probes' timeouts: a metrics query may take a while, an extender's answer should not.
const (
	metricsProbeTimeout  = 10 * time.Second
	extenderProbeTimeout = 5 * time.Second
	probeDialTimeout     = 5 * time.Second
)

// NewSecondarySchedulerReconciler makes the reconciler of mgr's SecondarySchedulers and
// every part of it, at once: the read stages from mgr's readers (newReadStages), the
// writer and the status stage from options.Client, the watches of every kind of object
// SecondarySchedulers reference (referenceKinds) and the probers.
func NewSecondarySchedulerReconciler(mgr ctrl.Manager, options Options) (*SecondarySchedulerReconciler, error) {
	full := options.Client
	if full == nil {
		full = mgr.GetClient()
	}
	clientset, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("client of the watches of referenced objects: %w", err)
	}
	version, err := discovery.NewDiscoveryClientForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("client of the cluster's version: %w", err)
	}
	dial := options.Dial
	if dial == nil {
		dial = (&clusterdial.Dialer{Reader: mgr.GetAPIReader(), Net: net.Dialer{Timeout: probeDialTimeout}}).DialContext
	}
	r := &SecondarySchedulerReconciler{
		cache:          readonly.Wrap(full),
		status:         statusapply.NewWriter(full, FieldOwner),
		recorder:       mgr.GetEventRecorder(EventReporter),
		references:     newReferenceWatches(clientset.CoreV1().RESTClient()),
		metricsProber:  &MetricsProber{Dial: dial, Timeout: metricsProbeTimeout, Interval: options.MetricsProbeInterval},
		extenderProber: &ExtenderProber{Dial: dial, Timeout: extenderProbeTimeout, Interval: options.ExtenderProbeInterval},
		deschedulerWatcher: &DeschedulerWatcher{Timeout: extenderProbeTimeout,
			Interval: cmp.Or(options.DeschedulerReadInterval, DefaultDeschedulerReadInterval)},
		clock:                   options.Clock,
		tenancy:                 options.Tenancy,
		maxConcurrentReconciles: options.MaxConcurrentReconciles,
		ignoredSchedulerNames:   options.IgnoredSchedulerNames,
		strandedPodGrace:        options.StrandedPodGrace,
		admission:               options.Admission,
	}
	r.read = newReadStages(gather.Config{
		Cache: r.cache, API: mgr.GetAPIReader(), Mapper: mgr.GetRESTMapper(), Version: version, Kinds: gather.DiscoveredKinds(version),
		Tenancy: options.Tenancy, PrometheusNamespaces: options.PrometheusNamespaces, MetricsTokenClusterRoles: options.MetricsTokenClusterRoles,
		DiscoveryInterval: options.MetricsProbeInterval, Now: r.now, OperatorNamespace: options.OperatorNamespace,
	}, mgr.GetScheme())
	r.write = &writer{Client: full, APIReader: mgr.GetAPIReader(), Recorder: r.recorder, Tenancy: options.Tenancy, now: r.now,
		owned: r.read.ownership}
	return r, nil
}

// now is the reconciler's time, for metrics tokens.
func (r *SecondarySchedulerReconciler) now() time.Time {
	if r.clock == nil {
		return time.Now()
	}
	return r.clock.Now()
}
