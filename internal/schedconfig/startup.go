package schedconfig

import (
	"time"

	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// kube-scheduler serves /livez only once it has built every plugin of every profile (Setup
// in cmd/kube-scheduler/app/server.go, before Run starts serving), and a plugin reading
// load through load-watcher fetches from it while it is built: NewCollector in
// scheduler-plugins' pkg/trimaran waits for the first answer, and a built-in load-watcher
// (NewLibraryClient) fetches every window, one query after another, before it returns. So
// a slow or unreachable metrics provider holds the scheduler's start for as long as
// load-watcher's timeouts allow, and a probe that gives up earlier kills a scheduler that
// would have started, again at every restart: a crash loop. What follows is how long that
// is, from load-watcher v0.2.4 (hack/build-scheduler-plugins.sh pins it), per plugin
// instance.
const (
	// loadWatcherWindows are the windows a built-in load-watcher fetches at start
	// (StartWatching: 15, 10 and 5 minutes).
	loadWatcherWindows = 3
	// prometheusQueriesPerWindow are the queries of one window: avg_over_time and
	// stddev_over_time of each of the 17 series FetchAllHostsMetrics asks for (CPU,
	// memory, network, disk and energy), whether or not Prometheus has them.
	prometheusQueriesPerWindow = 2 * 17
	// prometheusQueryTimeout bounds each query (getPromResults' context).
	prometheusQueryTimeout = 10 * time.Second
	// signalFxRequestsPerWindow are the requests of one window: a metric and its metadata
	// for CPU and for memory.
	signalFxRequestsPerWindow = 2 * 2
	// loadWatcherHTTPTimeout bounds each request to SignalFx and to a load-watcher service
	// (httpClientTimeout, httpClientTimeoutSeconds).
	loadWatcherHTTPTimeout = 55 * time.Second
	// metricsServerRequestsPerWindow are the requests of one window: the NodeMetrics and
	// the Nodes, listed without a timeout of the client's own.
	metricsServerRequestsPerWindow = 2
	// apiServerRequestTimeout bounds a request the client does not: kube-apiserver's
	// --request-timeout default.
	apiServerRequestTimeout = time.Minute
)

// schedulerStartAllowance is how long a kube-scheduler takes to serve /livez with plugins
// that fetch nothing at start, as kubeadm's startupProbe of its kube-scheduler allows
// (24 failures 10 s apart): reading its configuration, building its profiles, and
// starting on a busy node.
const schedulerStartAllowance = 240 * time.Second

// StartupBound is how long the scheduler of config may take to serve /livez, as long as
// kube-scheduler is not stuck: schedulerStartAllowance and, for every instance of a plugin
// that fetches load while it is built (kube-scheduler builds one per profile that enables
// it, at any extension point), as long as load-watcher may wait for its answers. config
// has passed MetricSources' checks.
func StartupBound(config *schedulerconfigv1.KubeSchedulerConfiguration) (time.Duration, error) {
	bound := schedulerStartAllowance
	enabled, err := enabledMetricSources(config)
	if err != nil {
		return 0, err
	}
	for _, instance := range enabled {
		bound += instance.fetchAtStartBound()
	}
	if config == nil {
		return bound, nil
	}
	for _, profile := range config.Profiles {
		// Peaks reads load from a load-watcher service, which its args must name.
		if enables(profile.Plugins, peaksPlugin) {
			bound += loadWatcherHTTPTimeout
		}
	}
	return bound, nil
}

// peaksPlugin is scheduler-plugins' Peaks, which reads load as the Trimaran plugins do,
// from a load-watcher service only.
const peaksPlugin = "Peaks"

// fetchAtStartBound is how long the plugin instance reading load from s may wait for it
// while kube-scheduler builds the plugin: one request to a load-watcher service, or every
// window's requests to the provider of a built-in load-watcher, each to its timeout.
func (s MetricSource) fetchAtStartBound() time.Duration {
	if s.WatcherAddress != "" {
		return loadWatcherHTTPTimeout
	}
	// Prometheus's, the longest, for any provider decodeMetricSource may accept later too.
	perWindow := prometheusQueriesPerWindow * prometheusQueryTimeout
	switch s.Provider {
	case v1.SignalFxProvider:
		perWindow = signalFxRequestsPerWindow * loadWatcherHTTPTimeout
	case v1.KubernetesMetricsServerProvider:
		perWindow = metricsServerRequestsPerWindow * apiServerRequestTimeout
	}
	return loadWatcherWindows * perWindow
}
