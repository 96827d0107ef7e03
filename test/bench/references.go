package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refwatch"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

const (
	referencesNamespace = "bench-references"
	// referencesCount is how many Custom SecondarySchedulers there are, each referencing a
	// ConfigMap of its own: the operator opens a watch for each (internal/refwatch). The
	// costs are per watch; 100 keeps the run within make bench's time, and the scale
	// benchmark has the 500.
	referencesCount    = 100
	referencesParallel = 16
	// referencesTimeout bounds the wait for every scheduler to be Available.
	referencesTimeout = 6 * time.Minute
	// referenceLabel marks the referenced ConfigMaps, for the shared informer the
	// benchmark compares with and for deleting them.
	referenceLabel = "bench.secondary-scheduler.io/referenced"
	// watchSettle is how long the watches are left open before they are measured.
	watchSettle = 3 * time.Second
)

var (
	unitKiB          = unit{"KiB", 1}
	unitPerWatch     = unit{"per watch", 2}
	unitPerConfigMap = unit{"per ConfigMap", 2}
)

// runReferences measures what the operator's watch per referenced object costs: first
// the watches alone, opened by the harness with the operator's own package beside one
// label-selected informer over the same ConfigMaps, then the operator running
// referencesCount Custom schedulers, each referencing a ConfigMap of its own.
func runReferences(ctx context.Context, e *env) (*section, error) {
	if err := e.usePodrunner(ctx, true); err != nil {
		return nil, err
	}
	s := &section{
		name:  "references",
		title: fmt.Sprintf("%d Custom schedulers, each watching its own ConfigMap", referencesCount),
		what: fmt.Sprintf("Restarts the operator and creates %d ConfigMaps, each holding a valid KubeSchedulerConfiguration of one profile. "+
			"First, without the operator: the harness opens a watch per ConfigMap by name with the operator's own package (internal/refwatch), "+
			"as the operator does for each reference, then closes them and opens instead one informer over the same ConfigMaps selected by a label. "+
			"Then creates %d SecondarySchedulers of profile Custom (%d create requests in flight), each naming its ConfigMap in spec.schedulerConfig, "+
			"and waits until all are Available (pods Ready without a process, podrunner --fake-ready).",
			referencesCount, referencesCount, referencesParallel),
		how: "Open watches: the API server's gauge apiserver_longrunning_requests{verb=\"WATCH\",resource=\"configmaps\"} (every client's), before and after; " +
			"the operator's watches started, from the audit log. The harness's own cost: goroutines (runtime.NumGoroutine), Go heap and goroutine stacks in use " +
			"(runtime.MemStats HeapInuse and StackInuse, after runtime.GC), once every watch has delivered its ConfigMap and the API server counts it open. " +
			"The operator's: go_goroutines, go_memstats_heap_inuse_bytes and go_memstats_stack_inuse_bytes of its metrics, RSS (VmRSS, /proc/PID/status) and open sockets (/proc/PID/fd), " +
			fmt.Sprintf("at rest (nothing queued, no reconcile for %v) and %v more, before the creates and once all are Available. ", quietFor, memorySettle) +
			"The API server's: go_goroutines of its metrics and RSS of its process (the PID kwokctl records). Figures per scheduler divide the operator's " +
			"growth by their count: it holds the schedulers' own objects in its caches too, not only the watches; the harness's figures are the watches alone.",
	}
	if err := e.useOperator(ctx, e.operatorBinary, true); err != nil {
		return s, err
	}
	apiServer := e.apiServerPID()
	if err := e.createReferencedConfigMaps(ctx); err != nil {
		return s, err
	}
	// The harness's GETs of the API server's metrics are noisy neighbours of nothing: the
	// operator is at rest meanwhile, and sampled after.
	logf("references: %d watches by name in the harness, then one shared informer", referencesCount)
	perName, err := e.measureWatchCost(ctx, apiServer, referencesCount, e.startWatchesByName)
	if err != nil {
		return s, fmt.Errorf("watches by name: %w", err)
	}
	shared, err := e.measureWatchCost(ctx, apiServer, 1, e.startSharedInformer)
	if err != nil {
		return s, fmt.Errorf("the shared informer: %w", err)
	}

	if err := e.waitQuiet(ctx, 2*time.Minute); err != nil {
		return s, err
	}
	if err := sleep(ctx, memorySettle); err != nil {
		return s, err
	}
	before, err := e.sampleReferences(ctx, apiServer)
	if err != nil {
		return s, err
	}
	logf("references: creating %d Custom SecondarySchedulers", referencesCount)
	started, err := e.createCustomSchedulers(ctx)
	if err != nil {
		return s, err
	}
	createErr := e.waitAllAvailable(ctx, referencesNamespace, referencesCount, referencesTimeout)
	allAvailable := math.NaN()
	objectCounts := map[int]int{}
	if createErr == nil {
		var lastAvailable time.Time
		for _, state := range e.tracker.inNamespace(referencesNamespace) {
			lastAvailable = latest(lastAvailable, state.currentAt)
			objectCounts[len(state.objects)]++
		}
		allAvailable = lastAvailable.Sub(started).Seconds()
		if err := e.waitQuiet(ctx, 2*time.Minute); err != nil {
			createErr = err
		} else if err := sleep(ctx, memorySettle); err != nil {
			return s, err
		}
	}
	after, err := e.sampleReferences(ctx, apiServer)
	if err != nil {
		return s, err
	}
	created, err := e.activityBetween(before.operator, after.operator)
	if err != nil {
		return s, err
	}

	s.rows = referencesRows(perName, shared, before, after, created, allAvailable)
	s.details = created.requestDetails("Creating")
	s.notes = append(s.notes,
		fmt.Sprintf("Watches by name: every one had delivered its ConfigMap %.1f s after the first was opened; the shared informer had all %d after %.1f s.",
			perName.synced.Seconds(), referencesCount, shared.synced.Seconds()),
		fmt.Sprintf("Each ConfigMap holds %d bytes of configuration; a watch by name holds one ConfigMap, the shared informer all of them.",
			len(referencedConfig(referenceName(0)))),
		fmt.Sprintf("The operator's open sockets: %.0f before, %.0f with the %d schedulers: watches share HTTP/2 connections, but kube-apiserver "+
			"allows 100 streams on one (its default without --http2-max-streams-per-connection), so the client opens another for each 100 more.",
			before.sockets, after.sockets, referencesCount),
		watchShare(perName, before, after),
		fmt.Sprintf("Open WATCH requests at the API server, every resource and client: %.0f before the creates, %.0f after.",
			before.watches(""), after.watches("")))
	if len(objectCounts) > 0 {
		s.notes = append(s.notes, fmt.Sprintf("Objects per scheduler once all were Available: %s.", countsText(objectCounts)))
	}
	if apiServer == 0 {
		s.notes = append(s.notes, "The API server's PID was not found: its RSS is missing.")
	}
	if createErr != nil {
		s.notes = append(s.notes, fmt.Sprintf("Not reached: %v; the figures with the schedulers are of what there was.", createErr))
	}
	if err := e.clean(ctx, referencesNamespace); err != nil {
		return s, err
	}
	return s, e.deleteReferencedConfigMaps(ctx)
}

// referencesRows are the section's figures: the operator's growth with the
// schedulers, then the watches alone against the shared informer.
func referencesRows(perName, shared watchCost, before, after referencesSample, created activity, allAvailable float64) []row {
	n := float64(referencesCount)
	notReached := fmt.Sprintf("not within %v", referencesTimeout)
	opened := after.watches("configmaps") - before.watches("configmaps")
	return []row{
		{figure: "create → every scheduler Available", values: []float64{allAvailable}, unit: unitSeconds, missing: notReached},
		{figure: "operator: WATCH requests of configmaps opened (API server's gauge)", values: []float64{opened}, unit: unitCount},
		{figure: "operator: watches of configmaps started while creating (audit log)",
			values: []float64{float64(created.audited[requestKey{verb: "watch", resource: "configmaps"}])}, unit: unitCount},
		{figure: "operator: goroutines before", values: []float64{before.goroutines()}, unit: unitCount},
		{figure: fmt.Sprintf("operator: goroutines with the %d", referencesCount), values: []float64{after.goroutines()}, unit: unitCount},
		{figure: "operator: goroutines added per scheduler", values: []float64{(after.goroutines() - before.goroutines()) / n}, unit: unitPerScheduler},
		{figure: "operator: RSS before", values: []float64{before.operator.memory.rss / mebibyte}, unit: unitMiB},
		{figure: fmt.Sprintf("operator: RSS with the %d", referencesCount), values: []float64{after.operator.memory.rss / mebibyte}, unit: unitMiB},
		{figure: "operator: RSS added per scheduler (its objects too)", values: []float64{(after.operator.memory.rss - before.operator.memory.rss) / n / 1024}, unit: unitKiB},
		{figure: "operator: Go heap in use added per scheduler (its objects too)", values: []float64{(after.heap() - before.heap()) / n / 1024}, unit: unitKiB},
		{figure: "operator: goroutine stacks added per scheduler", values: []float64{(after.stacks() - before.stacks()) / n / 1024}, unit: unitKiB},
		{figure: "API server: RSS added by the schedulers and their objects", values: []float64{(after.apiServerRSS - before.apiServerRSS) / mebibyte}, unit: unitMiB, missing: "no PID"},
		{figure: "API server: goroutines added per scheduler", values: []float64{(after.apiServerGoroutines() - before.apiServerGoroutines()) / n}, unit: unitPerScheduler},
		{figure: "watch per ConfigMap: WATCH requests opened", values: []float64{perName.opened}, unit: unitCount},
		{figure: "watch per ConfigMap: client goroutines", values: []float64{perName.goroutines / n}, unit: unitPerWatch},
		{figure: "watch per ConfigMap: client Go heap", values: []float64{perName.heap / n / 1024}, unit: unitKiB},
		{figure: "watch per ConfigMap: client goroutine stacks", values: []float64{perName.stacks / n / 1024}, unit: unitKiB},
		{figure: "watch per ConfigMap: API server goroutines", values: []float64{perName.apiServerGoroutines / n}, unit: unitPerWatch},
		{figure: "watch per ConfigMap: API server RSS", values: []float64{perName.apiServerRSS / n / 1024}, unit: unitKiB, missing: "no PID"},
		{figure: "shared informer: WATCH requests opened", values: []float64{shared.opened}, unit: unitCount},
		{figure: "shared informer: client goroutines", values: []float64{shared.goroutines / n}, unit: unitPerConfigMap},
		{figure: "shared informer: client Go heap + stacks", values: []float64{(shared.heap + shared.stacks) / n / 1024}, unit: unitKiB},
		{figure: "shared informer: API server goroutines", values: []float64{shared.apiServerGoroutines / n}, unit: unitPerConfigMap},
	}
}

// watchShare says how much of the operator's growth of Go heap and stacks the watches
// by name account for, as the harness measured them alone.
func watchShare(perName watchCost, before, after referencesSample) string {
	watches := perName.heap + perName.stacks
	grown := after.heap() + after.stacks() - before.heap() - before.stacks()
	return fmt.Sprintf("The %d watches alone (the harness's figures) take %.1f MiB of Go heap and stacks: %.0f%% of the operator's growth of both (%.1f MiB) "+
		"with the %d schedulers; their goroutines are %.0f of the %.0f it gained.", referencesCount, watches/mebibyte, 100*watches/grown, grown/mebibyte,
		referencesCount, perName.goroutines, after.goroutines()-before.goroutines())
}

func referenceName(i int) string { return fmt.Sprintf("ref-%03d", i) }

// referencedConfig is the configuration of the ConfigMap scheduler name references: one
// profile, named as the scheduler, which claims that name.
func referencedConfig(name string) string {
	return fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: %s
  plugins:
    score:
      enabled:
      - name: ImageLocality
        weight: 2
`, name)
}

// createReferencedConfigMaps creates the ConfigMap of each scheduler, named as it,
// labelled for the shared informer.
func (e *env) createReferencedConfigMaps(ctx context.Context) error {
	names := make(chan string, referencesCount)
	for i := range referencesCount {
		names <- referenceName(i)
	}
	close(names)
	return forEachParallel(ctx, referencesParallel, names, func(name string) error {
		configMap := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: referencesNamespace, Name: name, Labels: map[string]string{referenceLabel: "true"}},
			Data:       map[string]string{schedconfig.ConfigKey: referencedConfig(name)},
		}
		if err := e.client.Create(ctx, configMap); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create ConfigMap %s: %w", name, err)
		}
		return nil
	})
}

func (e *env) deleteReferencedConfigMaps(ctx context.Context) error {
	if e.lastRun {
		return nil
	}
	err := e.client.DeleteAllOf(ctx, &corev1.ConfigMap{}, client.InNamespace(referencesNamespace), client.MatchingLabels{referenceLabel: "true"})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete the referenced ConfigMaps: %w", err)
	}
	return nil
}

// createCustomSchedulers creates the Custom SecondarySchedulers, each naming its own
// ConfigMap, and returns when the first request was sent.
func (e *env) createCustomSchedulers(ctx context.Context) (time.Time, error) {
	names := make(chan string, referencesCount)
	for i := range referencesCount {
		names <- referenceName(i)
	}
	close(names)
	started := time.Now()
	return started, forEachParallel(ctx, referencesParallel, names, func(name string) error {
		cr := &v1.SecondaryScheduler{
			ObjectMeta: metav1.ObjectMeta{Namespace: referencesNamespace, Name: name},
			Spec:       v1.SecondarySchedulerSpec{SchedulerConfig: name, Profile: &v1.Profile{Type: v1.CustomProfile}},
		}
		return e.client.Create(ctx, cr)
	})
}

// referencesSample is the operator and the API server at one moment.
type referencesSample struct {
	operator     operatorSample
	sockets      float64
	apiServer    metricsSnapshot
	apiServerRSS float64
}

func (s referencesSample) goroutines() float64 { return s.operator.metrics.sum("go_goroutines", nil) }
func (s referencesSample) heap() float64 {
	return s.operator.metrics.sum("go_memstats_heap_inuse_bytes", nil)
}
func (s referencesSample) stacks() float64 {
	return s.operator.metrics.sum("go_memstats_stack_inuse_bytes", nil)
}
func (s referencesSample) apiServerGoroutines() float64 { return s.apiServer.sum("go_goroutines", nil) }

// watches is how many WATCH requests of resource the API server serves; every
// resource's when empty.
func (s referencesSample) watches(resource string) float64 { return openWatches(s.apiServer, resource) }

// openWatches is how many WATCH requests of resource (every resource's when empty) an
// API server's metrics count open.
func openWatches(metrics metricsSnapshot, resource string) float64 {
	match := map[string]string{"verb": "WATCH"}
	if resource != "" {
		match["resource"] = resource
	}
	return metrics.sum("apiserver_longrunning_requests", match)
}

func (e *env) sampleReferences(ctx context.Context, apiServerPID int) (referencesSample, error) {
	var sample referencesSample
	var err error
	if sample.operator, err = e.sampleOperator(ctx); err != nil {
		return sample, err
	}
	if sample.sockets, err = openSockets(e.operator.pid()); err != nil {
		return sample, err
	}
	sample.apiServer, sample.apiServerRSS, err = e.sampleAPIServer(ctx, apiServerPID)
	return sample, err
}

// sampleAPIServer reads the API server's metrics and, when its PID is known, its RSS
// (NaN otherwise).
func (e *env) sampleAPIServer(ctx context.Context, pid int) (metricsSnapshot, float64, error) {
	body, err := e.clientset.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("read the API server's metrics: %w", err)
	}
	metrics, err := parseMetrics(string(body))
	if err != nil {
		return nil, 0, fmt.Errorf("the API server's metrics: %w", err)
	}
	rss := math.NaN()
	if pid != 0 {
		memory, err := readMemoryStatus(pid)
		if err != nil {
			return nil, 0, fmt.Errorf("the API server's memory: %w", err)
		}
		rss = memory.rss
	}
	return metrics, rss, nil
}

// apiServerPID is the PID of this cluster's kube-apiserver, from the file kwokctl's
// binary runtime keeps it in, checked against the process's command line; 0 when not
// found.
func (e *env) apiServerPID() int {
	data, err := os.ReadFile(filepath.Join(e.outputDir, "kwok", "clusters", e.clusterName, "pids", "kube-apiserver.pid"))
	if err != nil {
		logf("the API server's PID: %v", err)
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		logf("the API server's PID: %v", err)
		return 0
	}
	commandLine, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || !bytes.Contains(commandLine, []byte("kube-apiserver")) || !bytes.Contains(commandLine, []byte(e.outputDir)) {
		logf("process %d is not this cluster's kube-apiserver", pid)
		return 0
	}
	return pid
}

// openSockets counts the process's file descriptors that are sockets.
func openSockets(pid int) (float64, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, err
	}
	sockets := 0
	for _, entry := range entries {
		// A descriptor closed meanwhile is not counted.
		if target, err := os.Readlink(filepath.Join(dir, entry.Name())); err == nil && strings.HasPrefix(target, "socket:") {
			sockets++
		}
	}
	return float64(sockets), nil
}

// watchCost is what a set of watches of the referenced ConfigMaps, opened by the
// harness, costs it and the API server.
type watchCost struct {
	// opened is how many WATCH requests of configmaps the API server counted more.
	opened float64
	// goroutines, heap and stacks (Go heap and goroutine stacks in use, bytes) are the
	// harness's growth.
	goroutines, heap, stacks float64
	// apiServerGoroutines and apiServerRSS (bytes) are the API server's growth.
	apiServerGoroutines, apiServerRSS float64
	// synced is how long until every watch had delivered its ConfigMap.
	synced time.Duration
}

// startWatches opens watches that end with ctx, and returns whether they have all
// delivered what they watch.
type startWatches func(ctx context.Context) (synced func() bool, err error)

// measureWatchCost opens watches with start, waits until they have delivered their
// objects and the API server counts opened WATCH requests of configmaps more, measures,
// and closes them, waiting until the API server counts them closed.
func (e *env) measureWatchCost(ctx context.Context, apiServerPID, opened int, start startWatches) (watchCost, error) {
	// Other clients' watches come and go too (a restarted operator's informers, the
	// controller manager's): the baseline is a count that held for watchSettle.
	if err := e.waitWatchesSteady(ctx); err != nil {
		return watchCost{}, err
	}
	serverBefore, rssBefore, err := e.sampleAPIServer(ctx, apiServerPID)
	if err != nil {
		return watchCost{}, err
	}
	baseline := openWatches(serverBefore, "configmaps")
	before := sampleHarness()
	watchCtx, stop := context.WithCancel(ctx)
	defer stop()
	began := time.Now()
	synced, err := start(watchCtx)
	if err != nil {
		return watchCost{}, err
	}
	if err := e.poll(ctx, 2*time.Minute, "every watch delivered its ConfigMap", func() (bool, error) { return synced(), nil }); err != nil {
		return watchCost{}, err
	}
	cost := watchCost{synced: time.Since(began)}
	if err := e.pollEvery(ctx, time.Second, time.Minute, "the API server counts the watches open", func() (bool, error) {
		metrics, _, err := e.sampleAPIServer(ctx, 0)
		return err == nil && openWatches(metrics, "configmaps") >= baseline+float64(opened), err
	}); err != nil {
		return watchCost{}, err
	}
	if err := sleep(ctx, watchSettle); err != nil {
		return watchCost{}, err
	}
	after := sampleHarness()
	serverAfter, rssAfter, err := e.sampleAPIServer(ctx, apiServerPID)
	if err != nil {
		return watchCost{}, err
	}
	cost.opened = openWatches(serverAfter, "configmaps") - baseline
	cost.goroutines = float64(after.goroutines - before.goroutines)
	cost.heap, cost.stacks = after.heap-before.heap, after.stacks-before.stacks
	cost.apiServerGoroutines = serverAfter.sum("go_goroutines", nil) - serverBefore.sum("go_goroutines", nil)
	cost.apiServerRSS = rssAfter - rssBefore
	stop()
	// Closed when the count has dropped by what these watches added, not back to the
	// baseline: a watch another client opened meanwhile would keep it above that.
	withOurs, now := openWatches(serverAfter, "configmaps"), 0.0
	err = e.pollEvery(ctx, time.Second, time.Minute, "the API server counts the watches closed", func() (bool, error) {
		metrics, _, err := e.sampleAPIServer(ctx, 0)
		if err != nil {
			return false, err
		}
		now = openWatches(metrics, "configmaps")
		return now <= withOurs-float64(opened), nil
	})
	if err != nil {
		return cost, fmt.Errorf("%w (open WATCH requests of configmaps: %v before, %v with these %d, %v now)", err, baseline, withOurs, opened, now)
	}
	return cost, nil
}

// waitWatchesSteady waits until the API server's count of open WATCH requests of
// configmaps has not changed for watchSettle.
func (e *env) waitWatchesSteady(ctx context.Context) error {
	last, since := -1.0, time.Now()
	return e.pollEvery(ctx, time.Second, time.Minute, "the count of open watches holds still", func() (bool, error) {
		metrics, _, err := e.sampleAPIServer(ctx, 0)
		if err != nil {
			return false, err
		}
		if count := openWatches(metrics, "configmaps"); count != last {
			last, since = count, time.Now()
			return false, nil
		}
		return time.Since(since) >= watchSettle, nil
	})
}

// harnessSample is the harness's own goroutines and Go memory in use (heap and stacks),
// after a collection.
type harnessSample struct {
	goroutines   int
	heap, stacks float64
}

func sampleHarness() harnessSample {
	runtime.GC()
	var stats runtime.MemStats
	runtime.ReadMemStats(&stats)
	return harnessSample{goroutines: runtime.NumGoroutine(), heap: float64(stats.HeapInuse), stacks: float64(stats.StackInuse)}
}

// startWatchesByName opens a watch per referenced ConfigMap as the operator does, with
// its package: each owner references its ConfigMap, and the events for the owners are
// drained into a queue, as the operator's controller drains them.
func (e *env) startWatchesByName(ctx context.Context) (func() bool, error) {
	watches := refwatch.New(e.clientset.CoreV1().RESTClient(), "configmaps", &corev1.ConfigMap{})
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	go func() { _ = watches.Start(ctx) }()
	if err := watches.Source().Start(ctx, queue); err != nil {
		return nil, err
	}
	for i := range referencesCount {
		name := referenceName(i)
		watches.Reference(types.NamespacedName{Namespace: referencesNamespace, Name: "owner-" + name},
			&types.NamespacedName{Namespace: referencesNamespace, Name: name})
	}
	return func() bool { return queue.Len() >= referencesCount }, nil
}

// startSharedInformer opens one informer over the referenced ConfigMaps, selected by
// their label: what the operator would run instead of a watch per reference.
func (e *env) startSharedInformer(ctx context.Context) (func() bool, error) {
	byLabel := func(options *metav1.ListOptions) { options.LabelSelector = referenceLabel + "=true" }
	listWatch := toolscache.NewFilteredListWatchFromClient(e.clientset.CoreV1().RESTClient(), "configmaps", referencesNamespace, byLabel)
	informer := toolscache.NewSharedIndexInformer(listWatch, &corev1.ConfigMap{}, 0, toolscache.Indexers{})
	// A handler, as the operator's would map a ConfigMap to its owners.
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{}); err != nil {
		return nil, err
	}
	go informer.RunWithContext(ctx)
	return func() bool { return informer.HasSynced() && len(informer.GetStore().ListKeys()) >= referencesCount }, nil
}
