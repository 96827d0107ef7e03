// Command manager runs the secondary-scheduler-operator: it turns SecondaryScheduler
// resources into running secondary kube-schedulers.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/controllers"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/admission"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsauth"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1.AddToScheme(scheme))
}

// renderMoved says where "manager render" went.
const renderMoved = "render is no longer part of the operator's binary: run kubectl secondary-scheduler render " +
	"(the binary kubectl-secondary_scheduler: make build writes bin/kubectl-secondary_scheduler; the image has /kubectl-secondary_scheduler), " +
	"with the same flags (docs/render.md)"

func main() {
	// "render" moved to a binary of its own, so that the operator does not link the API
	// server's validation it needs; a script that still runs it here is told where it went.
	// Exit code 1, render's for a command line it cannot read: its 2 means "the resource
	// would be refused", which this is not.
	if len(os.Args) > 1 && os.Args[1] == "render" {
		fmt.Fprintln(os.Stderr, renderMoved)
		os.Exit(1)
	}
	var (
		metricsAddr, probeAddr, pprofAddr         string
		schedulerNamespaces, prometheusNamespaces string
		metricsTokenClusterRoles, allowedImages   string
		ignoredSchedulerNames, monitoringLabels   string
		leaderElect, secureMetrics, enableHTTP2   bool
		requireAdmissionPolicy, monitoring        bool
		metricsProbeInterval, strandedPodGrace    time.Duration
		extenderProbeInterval                     time.Duration
		deschedulerReadInterval                   time.Duration
		concurrentReconciles                      int
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443",
		"Address the metrics endpoint binds to, for example :8443 (HTTPS) or :8080 with --metrics-secure=false; 0 disables it.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true,
		"Serve metrics over HTTPS, to callers the API server authenticates and authorizes (get on /metrics).")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz endpoints bind to.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "",
		"Address Go's profiling endpoints (/debug/pprof/) bind to, for example 127.0.0.1:6060; empty or 0 disables them. "+
			"They are unauthenticated: bind them to loopback only.")
	flag.BoolVar(&leaderElect, "leader-elect", false,
		"Elect a leader so that only one of several operator replicas acts at a time.")
	flag.StringVar(&schedulerNamespaces, "scheduler-namespaces", defaultSchedulerNamespaces(),
		"Comma-separated namespaces where SecondarySchedulers run schedulers; elsewhere they are refused (NamespaceNotAllowed). "+
			"The operator needs ClusterRole "+tenancy.SchedulerNamespaceClusterRole+" bound in each. "+
			"Defaults to $WATCH_NAMESPACE (OLM's target namespaces), else the operator's own namespace ($POD_NAMESPACE).")
	flag.StringVar(&prometheusNamespaces, "prometheus-namespaces", "",
		"Comma-separated namespaces where Prometheus is discovered for load-aware schedulers that give no address; "+
			"a discovered endpoint receives the scheduler's metrics token, so list only namespaces that exist and that only cluster admins may create or write to. "+
			"Defaults to the operator's own namespace, and openshift-monitoring when the cluster is OpenShift (its API server serves config.openshift.io): "+
			"elsewhere nothing reserves that name.")
	flag.StringVar(&allowedImages, "allowed-scheduler-images", os.Getenv("ALLOWED_SCHEDULER_IMAGES"),
		"Comma-separated scheduler images that SecondarySchedulers may set in spec.schedulerImage, checked at admission: "+
			"an entry ending with '/' allows every image under it (registry.example.com/scheduling/), one with '@' exactly that image, "+
			"any other a repository with any tag or digest (registry.k8s.io/scheduler-plugins/kube-scheduler). Empty allows any image; "+
			"the default image is always allowed. Defaults to $ALLOWED_SCHEDULER_IMAGES (which an OLM Subscription's config can set).")
	flag.BoolVar(&requireAdmissionPolicy, "require-admission-policy", true,
		"Run no scheduler while the ValidatingAdmissionPolicy the installer ships, its binding and the parameters the operator writes are not in place: "+
			"they check that whoever creates or changes a SecondaryScheduler may run schedulers and read what it names. false is for development on a cluster without them only: "+
			"then anyone who may create a SecondaryScheduler runs a scheduler.")
	flag.StringVar(&metricsTokenClusterRoles, "metrics-token-cluster-roles", render.DefaultMetricsClusterRole,
		"Comma-separated ClusterRoles a metrics token's ServiceAccount may be bound to (profile.metrics.serviceAccountToken.clusterRole); "+
			"the operator also needs the bind verb on each.")
	flag.StringVar(&ignoredSchedulerNames, "ignored-scheduler-names", "",
		"Comma-separated scheduler names that other schedulers of the cluster serve (Volcano's, a batch scheduler's): "+
			"pods naming them are never told that no SecondaryScheduler provides them.")
	flag.DurationVar(&strandedPodGrace, "stranded-pod-grace", v1.DefaultPendingPodThreshold,
		"How long a pod naming a scheduler no SecondaryScheduler provides may wait for a node before it gets a Warning Event saying so.")
	flag.BoolVar(&monitoring, "monitoring", true,
		"When the cluster has the Prometheus Operator's API, apply at start, in the operator's namespace, ServiceMonitors of the operator's and "+
			"the schedulers' metrics and a PrometheusRule of the alerts (docs/monitoring.md).")
	flag.StringVar(&monitoringLabels, "monitoring-labels", "",
		"Comma-separated key=value labels of those ServiceMonitors and PrometheusRule, for a Prometheus whose serviceMonitorSelector "+
			"and ruleSelector select by label (release=kube-prometheus-stack).")
	flag.BoolVar(&enableHTTP2, "enable-http2", false,
		"Serve metrics over HTTP/2 too; off by default against the HTTP/2 rapid-reset and stream-cancellation attacks.")
	flag.DurationVar(&metricsProbeInterval, "metrics-probe-interval", controllers.DefaultMetricsProbeInterval,
		"How often the metrics of load-aware schedulers are probed again when nothing changes.")
	flag.DurationVar(&extenderProbeInterval, "extender-probe-interval", controllers.DefaultExtenderProbeInterval,
		"How often the schedulers' extenders are probed again when nothing changes.")
	flag.DurationVar(&deschedulerReadInterval, "descheduler-read-interval", controllers.DefaultDeschedulerReadInterval,
		"How often what each descheduler's metrics and the nodes' use say is read, for status.descheduling.")
	flag.IntVar(&concurrentReconciles, "concurrent-reconciles", 4,
		"How many SecondarySchedulers are reconciled at once; one resource is never reconciled twice at once.")
	zapOptions := zap.Options{}
	zapOptions.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOptions)))
	log := ctrl.Log.WithName("setup")

	if err := run(ctrl.SetupSignalHandler(), options{
		metricsAddr: metricsAddr, probeAddr: probeAddr, pprofAddr: pprofAddr,
		schedulerNamespaces:      tenancy.ParseList(schedulerNamespaces),
		prometheusNamespaces:     tenancy.ParseList(prometheusNamespaces),
		metricsTokenClusterRoles: tenancy.ParseList(metricsTokenClusterRoles),
		ignoredSchedulerNames:    tenancy.ParseList(ignoredSchedulerNames),
		allowedImages:            tenancy.ParseList(allowedImages),
		leaderElect:              leaderElect, secureMetrics: secureMetrics, enableHTTP2: enableHTTP2,
		requireAdmissionPolicy: requireAdmissionPolicy,
		metricsProbeInterval:   metricsProbeInterval, concurrentReconciles: concurrentReconciles,
		extenderProbeInterval: extenderProbeInterval, deschedulerReadInterval: deschedulerReadInterval,
		strandedPodGrace: strandedPodGrace,
		monitoring:       monitoring, monitoringLabels: monitoringLabels,
	}); err != nil {
		log.Error(err, "operator stopped")
		os.Exit(1)
	}
}

type options struct {
	metricsAddr, probeAddr, pprofAddr                                   string
	schedulerNamespaces, prometheusNamespaces, metricsTokenClusterRoles []string
	allowedImages, ignoredSchedulerNames                                []string
	leaderElect, secureMetrics, enableHTTP2, requireAdmissionPolicy     bool
	metricsProbeInterval, strandedPodGrace, extenderProbeInterval       time.Duration
	deschedulerReadInterval                                             time.Duration
	concurrentReconciles                                                int
	monitoring                                                          bool
	monitoringLabels                                                    string
}

// defaultSchedulerNamespaces is OLM's target namespaces, else the operator's own.
func defaultSchedulerNamespaces() string {
	if namespaces := os.Getenv("WATCH_NAMESPACE"); namespaces != "" {
		return namespaces
	}
	return operatorNamespace()
}

// operatorNamespace is the namespace the operator runs in, "" outside a pod unless
// POD_NAMESPACE says.
func operatorNamespace() string {
	if namespace := os.Getenv("POD_NAMESPACE"); namespace != "" {
		return namespace
	}
	// In a pod without the downward API variable, the ServiceAccount's namespace.
	if namespace, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace"); err == nil {
		return strings.TrimSpace(string(namespace))
	}
	return ""
}

// prometheusDiscoveryNamespaces are the namespaces of --prometheus-namespaces, else
// promdiscovery's defaults for this cluster: the operator's own namespace, and OpenShift's
// monitoring namespace only on OpenShift, which reserves the openshift- prefix. Elsewhere
// whoever may create a namespace could create openshift-monitoring, win discovery and
// receive schedulers' metrics tokens; common names such as monitoring are never defaults
// for the same reason.
func prometheusDiscoveryNamespaces(ctx context.Context, groups discovery.ServerGroupsInterfaceWithContext, given []string) ([]string, error) {
	if len(given) > 0 {
		return given, nil
	}
	onOpenShift, err := promdiscovery.IsOpenShift(ctx, groups)
	if err != nil {
		return nil, fmt.Errorf("default --prometheus-namespaces: %w", err)
	}
	return promdiscovery.Defaults(onOpenShift, operatorNamespace()), nil
}

func run(ctx context.Context, opts options) error {
	if len(opts.schedulerNamespaces) == 0 {
		return errors.New("no namespace may run schedulers: set --scheduler-namespaces (outside a pod there is no namespace of the operator's own to default to)")
	}
	config := ctrl.GetConfigOrDie()
	// The operator talks to its own cluster's API server: compressing every response and
	// watch stream costs CPU on both sides and a decompressor of 32 KiB or more per watch,
	// and saves bandwidth that is not scarce there.
	config.DisableCompression = true
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	// A namespace without the operator's RoleBinding would keep its caches from ever
	// syncing, and so the operator from starting: it is left out, and said so.
	// An API server that is restarting or not reachable yet is waited for, not a reason to
	// exit: a crash-looping operator would only wait longer, between restarts.
	var schedulerNamespaces, unbound []string
	err = wait.PollUntilContextCancel(ctx, 2*time.Second, true,
		func(ctx context.Context) (bool, error) {
			schedulerNamespaces, unbound, err = tenancy.CheckAccess(ctx, clientset.AuthorizationV1().SelfSubjectAccessReviews(), opts.schedulerNamespaces)
			if err != nil {
				ctrl.Log.WithName("setup").Error(err, "cannot check the operator's access yet; retrying")
			}
			return err == nil, nil
		})
	if err != nil {
		return err
	}
	if len(unbound) > 0 {
		ctrl.Log.WithName("setup").Error(nil, "the operator lacks its permissions in namespaces it should run schedulers in; it runs none there until a cluster admin binds ClusterRole "+
			tenancy.SchedulerNamespaceClusterRole+" to it there and restarts it", "namespaces", unbound)
	}
	if len(schedulerNamespaces) == 0 {
		return fmt.Errorf("the operator may run schedulers in none of the namespaces %v: bind ClusterRole %s to its ServiceAccount there",
			opts.schedulerNamespaces, tenancy.SchedulerNamespaceClusterRole)
	}
	var tlsOptions []func(*tls.Config)
	if !opts.enableHTTP2 {
		tlsOptions = append(tlsOptions, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOptions := metricsserver.Options{BindAddress: opts.metricsAddr, SecureServing: opts.secureMetrics, TLSOpts: tlsOptions}
	if opts.secureMetrics {
		metricsOptions.FilterProvider = metricsauth.FilterProvider
	}
	routingSupported, err := controllers.RoutingSupported(clientset.Discovery())
	if err != nil {
		return err
	}
	prometheusNamespaces, err := prometheusDiscoveryNamespaces(ctx, discovery.ToServerGroupsInterfaceWithContext(clientset.Discovery()), opts.prometheusNamespaces)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOptions,
		HealthProbeBindAddress:        opts.probeAddr,
		PprofBindAddress:              opts.pprofAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              "secondary-scheduler-operator.operator.secondary-scheduler.io",
		LeaderElectionReleaseOnCancel: true,
		// The operator's own namespace, as the installers set it; controller-runtime would
		// otherwise read it from the mounted ServiceAccount, which a process outside a pod
		// (make run, the e2e process runner) does not have.
		LeaderElectionNamespace: os.Getenv("POD_NAMESPACE"),
		Cache:                   controllers.CacheOptions(schedulerNamespaces, operatorNamespace(), routingSupported),
	})
	if err != nil {
		return err
	}
	policies, err := setUpAdmission(ctx, mgr, config, opts)
	if err != nil {
		return err
	}
	reconciler, err := controllers.NewSecondarySchedulerReconciler(mgr, controllers.Options{
		MetricsProbeInterval:     opts.metricsProbeInterval,
		ExtenderProbeInterval:    opts.extenderProbeInterval,
		DeschedulerReadInterval:  opts.deschedulerReadInterval,
		Tenancy:                  tenancy.Policy{Namespaces: schedulerNamespaces, Unbound: unbound},
		PrometheusNamespaces:     prometheusNamespaces,
		MetricsTokenClusterRoles: opts.metricsTokenClusterRoles,
		MaxConcurrentReconciles:  opts.concurrentReconciles,
		IgnoredSchedulerNames:    opts.ignoredSchedulerNames,
		StrandedPodGrace:         opts.strandedPodGrace,
		Admission:                policies,
		OperatorNamespace:        operatorNamespace(),
	})
	if err != nil {
		return err
	}
	if err := controllers.SetUpRouting(mgr, reconciler, routingSupported, operatorNamespace()); err != nil {
		return err
	}
	if err := controllers.SetUpPluginController(ctx, mgr, reconciler, operatorNamespace()); err != nil {
		return err
	}
	if err := reconciler.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if err := setUpMonitoring(mgr, opts, schedulerNamespaces); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	if policies != nil {
		// Ready only once the admission policies are in place: a SecondaryScheduler created
		// before runs nothing (CreatedBeforeAdmissionPolicy), so kubectl rollout status, and
		// OLM's wait for the CSV, must not say the operator is ready to take one until then.
		if err := mgr.AddReadyzCheck("admission-policy", func(request *http.Request) error {
			_, err := policies.Check(request.Context(), mgr.GetClient())
			return err
		}); err != nil {
			return err
		}
	}
	ctrl.Log.WithName("setup").Info("starting the operator", "schedulerNamespaces", opts.schedulerNamespaces,
		"requireAdmissionPolicy", opts.requireAdmissionPolicy, "allowedSchedulerImages", opts.allowedImages,
		"prometheusNamespaces", prometheusNamespaces, "metricsTokenClusterRoles", opts.metricsTokenClusterRoles)
	return mgr.Start(ctx)
}

// setUpMonitoring adds what applies the ServiceMonitors and PrometheusRule, unless turned
// off or outside a pod (no namespace of the operator's to put them in). The schedulers'
// ServiceMonitor selects only schedulerNamespaces, where the operator runs schedulers.
func setUpMonitoring(mgr ctrl.Manager, opts options, schedulerNamespaces []string) error {
	if !opts.monitoring {
		return nil
	}
	monitoringLabels, err := labels.ConvertSelectorToLabelsMap(opts.monitoringLabels)
	if err != nil {
		return fmt.Errorf("--monitoring-labels: %w", err)
	}
	if err := render.CheckMonitoringLabels(monitoringLabels); err != nil {
		return fmt.Errorf("--monitoring-labels: %w", err)
	}
	namespace := operatorNamespace()
	if namespace == "" {
		ctrl.Log.WithName("setup").Info("not in a pod and no $POD_NAMESPACE: no ServiceMonitor or PrometheusRule is applied")
		return nil
	}
	return mgr.Add(&controllers.MonitoringInstaller{Client: mgr.GetClient(), Mapper: mgr.GetRESTMapper(),
		Namespace: namespace, SchedulerNamespaces: schedulerNamespaces, Labels: monitoringLabels})
}

// setUpAdmission renders the admission policy the installer ships, to check it, and its
// parameters, which the operator writes in its namespace; it writes them once before the
// controllers start (so that SecondarySchedulers are not reported refused for a moment at
// every start), registers the controller that keeps them in place, and returns them, for
// the reconciler to check. The operator still starts when it cannot write them: it then
// runs no scheduler and says why in each SecondaryScheduler's status, rather than
// crash-looping. Nil policies with --require-admission-policy=false.
func setUpAdmission(ctx context.Context, mgr ctrl.Manager, config *rest.Config, opts options) (*admission.Policies, error) {
	log := ctrl.Log.WithName("setup")
	if !opts.requireAdmissionPolicy {
		log.Error(nil, "--require-admission-policy=false: nothing checks who creates SecondarySchedulers, so anyone who may create one runs a scheduler "+
			"whose ServiceAccount binds and deletes pods in every namespace; for development only")
		return nil, nil
	}
	namespace := operatorNamespace()
	if namespace == "" {
		return nil, fmt.Errorf("the admission policy's parameters live in the operator's namespace, and it is not known: set $POD_NAMESPACE")
	}
	policies, err := admission.Desired(namespace, opts.allowedImages)
	if err != nil {
		return nil, fmt.Errorf("--allowed-scheduler-images: %w", err)
	}
	direct, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	if err := policies.Ensure(ctx, direct, direct); err != nil {
		log.Error(err, "cannot write the admission policy's parameters; the operator runs no scheduler until it can", "parameters", render.AuthorityPolicyName)
	}
	return policies, (&controllers.AdmissionParametersReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Policies: policies}).SetupWithManager(mgr)
}
