// Command manager runs the secondary-scheduler-operator: it turns SecondaryScheduler
// resources into running secondary kube-schedulers.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"net"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/controllers"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/clusterdial"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refwatch"
)

var scheme = runtime.NewScheme()

func init() {
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(v1.AddToScheme(scheme))
}

func main() {
	var (
		metricsAddr, probeAddr, watchNamespace  string
		leaderElect, secureMetrics, enableHTTP2 bool
		metricsProbeInterval                    time.Duration
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443",
		"Address the metrics endpoint binds to, for example :8443 (HTTPS) or :8080 with --metrics-secure=false; 0 disables it.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true,
		"Serve metrics over HTTPS, to callers the API server authenticates and authorizes (get on /metrics).")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address the /healthz and /readyz endpoints bind to.")
	flag.BoolVar(&leaderElect, "leader-elect", false,
		"Elect a leader so that only one of several operator replicas acts at a time.")
	flag.StringVar(&watchNamespace, "watch-namespace", os.Getenv("WATCH_NAMESPACE"),
		"Manage only SecondarySchedulers in this namespace; empty means all namespaces. Defaults to $WATCH_NAMESPACE (OLM sets it from olm.targetNamespaces).")
	flag.BoolVar(&enableHTTP2, "enable-http2", false,
		"Serve metrics over HTTP/2 too; off by default against the HTTP/2 rapid-reset and stream-cancellation attacks.")
	flag.DurationVar(&metricsProbeInterval, "metrics-probe-interval", controllers.DefaultMetricsProbeInterval,
		"How often the metrics of load-aware schedulers are probed again when nothing changes.")
	zapOptions := zap.Options{}
	zapOptions.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOptions)))
	log := ctrl.Log.WithName("setup")

	if err := run(ctrl.SetupSignalHandler(), options{
		metricsAddr: metricsAddr, probeAddr: probeAddr, watchNamespace: watchNamespace,
		leaderElect: leaderElect, secureMetrics: secureMetrics, enableHTTP2: enableHTTP2,
		metricsProbeInterval: metricsProbeInterval,
	}); err != nil {
		log.Error(err, "operator stopped")
		os.Exit(1)
	}
}

type options struct {
	metricsAddr, probeAddr, watchNamespace  string
	leaderElect, secureMetrics, enableHTTP2 bool
	metricsProbeInterval                    time.Duration
}

func run(ctx context.Context, opts options) error {
	config := ctrl.GetConfigOrDie()
	var tlsOptions []func(*tls.Config)
	if !opts.enableHTTP2 {
		tlsOptions = append(tlsOptions, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOptions := metricsserver.Options{BindAddress: opts.metricsAddr, SecureServing: opts.secureMetrics, TLSOpts: tlsOptions}
	if opts.secureMetrics {
		metricsOptions.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	mgr, err := ctrl.NewManager(config, ctrl.Options{
		Scheme:                        scheme,
		Metrics:                       metricsOptions,
		HealthProbeBindAddress:        opts.probeAddr,
		LeaderElection:                opts.leaderElect,
		LeaderElectionID:              "secondary-scheduler-operator.operator.secondary-scheduler.io",
		LeaderElectionReleaseOnCancel: true,
		Cache:                         controllers.CacheOptions(opts.watchNamespace),
	})
	if err != nil {
		return err
	}
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		return err
	}
	discoveryClient, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return err
	}
	reconciler := &controllers.SecondarySchedulerReconciler{
		Client:           mgr.GetClient(),
		APIReader:        mgr.GetAPIReader(),
		Version:          discoveryClient,
		Recorder:         mgr.GetEventRecorder("secondary-scheduler-operator"),
		ConfigMapWatches: refwatch.New(clientset.CoreV1().RESTClient(), "configmaps", &corev1.ConfigMap{}),
		SecretWatches:    refwatch.New(clientset.CoreV1().RESTClient(), "secrets", &corev1.Secret{}),
		CABundleWatches:  refwatch.New(clientset.CoreV1().RESTClient(), "configmaps", &corev1.ConfigMap{}),
		MetricsProber: &controllers.MetricsProber{Interval: opts.metricsProbeInterval, Timeout: 10 * time.Second,
			// Outside a cluster (make run) Service names do not resolve; their endpoints do.
			Dial: (&clusterdial.Dialer{Reader: mgr.GetAPIReader(), Net: net.Dialer{Timeout: 5 * time.Second}}).DialContext},
	}
	if err := reconciler.SetupWithManager(ctx, mgr); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	ctrl.Log.WithName("setup").Info("starting the operator", "watchNamespace", opts.watchNamespace)
	return mgr.Start(ctx)
}
