// Package scheduling is benchmark 7 of issue 12, "Scheduling throughput of what we
// render": the real kube-scheduler binary run with the configuration internal/render
// renders for a BinPacking SecondaryScheduler, against the same binary with upstream's
// defaults (a profile of the same scheduler name and nothing else: client QPS 50 / burst
// 100, default node sampling and scoring), each scheduling the same pods onto the same
// nodes, one after the other in one cluster that is cleared between runs. The nodes are
// the benchmark's own, not kwok's: nothing runs their pods or writes their status, as in
// upstream's scheduler_perf, so that the API server's work in a run is creating the pods
// and what the scheduler does (see createNodes).
//
// A Streamed run, the measure, starts the scheduler, waits until it leads its own
// Lease and answers /readyz, then creates the pods concurrently with no client-side rate
// limit. Times are read on this process's monotonic clock: the run lasts from the start of
// its first create request to the watch event that shows its last pod bound, and a pod's
// bind latency runs from the start of its create request to the watch event that shows
// its spec.nodeName. The API server's timestamps (creationTimestamp, the PodScheduled
// condition) have whole seconds only, too coarse for runs of seconds. A Backlog run
// creates every pod before starting the scheduler and lasts from the first bind to the
// last: on a small machine the API server creates pods slower than ours binds them.
package scheduling

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// Options say which cluster and binary to measure with, and how big the workload is. Zero
// values take the setup.
type Options struct {
	// Kubeconfig is an admin kubeconfig of a cluster, such as hack/local-cluster.sh starts,
	// whose node lifecycle controller allows nodes more than a run (RunTimeout) between
	// heartbeats (kwokctl's clusters: 200 s). Both schedulers use it too.
	Kubeconfig string
	// ControlPlaneDir holds the kube-scheduler binary to run (bin/k8s/v1.37.2).
	ControlPlaneDir string
	// Nodes is how many fake nodes to create (500).
	Nodes int
	// NodeMilliCPU is each node's allocatable CPU in millicores (32000).
	NodeMilliCPU int
	// PodsPerNode is each node's allocatable pods (110).
	PodsPerNode int
	// NodeMemory is each node's allocatable memory (16Gi, as hack/local-cluster.sh's fake
	// nodes). The pods request none, yet it counts: the scheduler scores a pod without a
	// memory request as 200Mi, and the larger the node the less one pod moves its score.
	NodeMemory string
	// Pods is how many pods each run creates (2000).
	Pods int
	// PodMilliCPU is each pod's CPU request in millicores (100).
	PodMilliCPU int
	// Repetitions is how many times the pair of runs is made (1); figures are medians.
	Repetitions int
	// Backlog adds to each repetition a pair of runs in Backlog mode, which tell how fast
	// each configuration schedules when creating pods does not set the pace.
	Backlog bool
	// Routed adds to each repetition a Streamed run of OursRouted: the same scheduler,
	// its pods naming none, routed by the routing policy.
	Routed bool
	// RunTimeout bounds one run from its first create (2m: upstream's defaults take about
	// 40 s); a run that times out is reported with the pods it bound. The nodes' Leases are
	// renewed only between runs, so a run must end within the node lifecycle controller's
	// grace period.
	RunTimeout time.Duration
	// CreateWorkers is how many create requests the benchmark has in flight at once (16).
	CreateWorkers int
	// OutputDir is where the plot is written (the working directory).
	OutputDir string
	// PlotLink is how Markdown links to the plot, relative to the Markdown's file (the
	// plot's file name).
	PlotLink string
	// WorkDir keeps each run's scheduler configuration and log (a temporary directory,
	// removed after a successful Run).
	WorkDir string
	// SchedulerArgs are more kube-scheduler flags for both configurations, such as
	// --feature-gates, to see what one changes; none by default.
	SchedulerArgs []string
	// Log receives progress.
	Log logr.Logger
}

// PlotFile is the name of the plot in Options.OutputDir.
const PlotFile = "scheduling-throughput.png"

func (o Options) withDefaults() Options {
	defaults := []struct {
		value    *int
		fallback int
	}{
		{&o.Nodes, 500}, {&o.NodeMilliCPU, 32000}, {&o.PodsPerNode, 110},
		{&o.Pods, 2000}, {&o.PodMilliCPU, 100}, {&o.Repetitions, 1}, {&o.CreateWorkers, defaultCreateWorkers},
	}
	for _, d := range defaults {
		if *d.value <= 0 {
			*d.value = d.fallback
		}
	}
	if o.NodeMemory == "" {
		o.NodeMemory = "16Gi"
	}
	if o.RunTimeout <= 0 {
		o.RunTimeout = 2 * time.Minute
	}
	if o.OutputDir == "" {
		o.OutputDir = "."
	}
	if o.PlotLink == "" {
		o.PlotLink = PlotFile
	}
	return o
}

// Measurement is one run of one scheduler over the workload.
type Measurement struct {
	Config     Config
	Mode       Mode
	Repetition int
	// Pods were created; Bound of them were bound within the run's timeout.
	Pods, Bound int
	// Duration is from the first create (Streamed) or the first bind (Backlog) to the
	// last bind seen.
	Duration time.Duration
	// Creating is from the first create to the last create's response: when it is close
	// to Duration, creating the pods, not scheduling them, set the pace.
	Creating time.Duration
	// PodsPerSecond is Bound / Duration (Streamed), or the pods bound after the first /
	// Duration (Backlog).
	PodsPerSecond float64
	// LatencyP50 and LatencyP99 are percentiles of the pods' bind latencies (Streamed only).
	LatencyP50, LatencyP99 time.Duration
	// NodesUsed is how many nodes got at least one pod.
	NodesUsed int
	// Curve is the count of bound pods over the run.
	Curve []CurvePoint
	// ContentType is what the scheduler's clients encoded their requests in, from the
	// configuration it logged (see loggedContentType).
	ContentType string
	// BusyBefore is how many cores the machine kept busy in the second before the run
	// (see settle); negative when unknown.
	BusyBefore float64
}

// Summary is the median of a configuration's runs, each figure taken separately.
type Summary struct {
	Config                 Config
	PodsPerSecond          float64
	LatencyP50, LatencyP99 time.Duration
	NodesUsed              float64
	// Runs is how many runs there were; Complete is whether every one bound every pod.
	Runs     int
	Complete bool
}

// Result is what Run measured.
type Result struct {
	// Options are those used, defaults filled in.
	Options Options
	// IdealNodes is the fewest nodes that can hold the pods (see IdealNodes).
	IdealNodes int
	// Runs are every run in the order made.
	Runs []Measurement
	// Ours and Upstream are the medians of each configuration's Streamed runs, and
	// OursRouted those of the routed runs, if any.
	Ours, Upstream, OursRouted Summary
	// OursBacklog and UpstreamBacklog are those of the Backlog runs, if any.
	OursBacklog, UpstreamBacklog Summary
	// Plot is the path of the PNG of bound pods over time of each configuration's median run.
	Plot string
	// SchedulerVersion is what the kube-scheduler binary says it is.
	SchedulerVersion string
	// Started is when the benchmark started; Cores is how many CPUs the machine has.
	Started time.Time
	Cores   int
}

// Run measures both configurations opts.Repetitions times, alternating which goes first,
// and writes the plot. It creates opts.Nodes nodes and the namespace scheduling-bench,
// and deletes both when done.
func Run(ctx context.Context, opts Options) (*Result, error) {
	opts = opts.withDefaults()
	if _, err := resource.ParseQuantity(opts.NodeMemory); err != nil {
		return nil, fmt.Errorf("node memory %q: %w", opts.NodeMemory, err)
	}
	binary := filepath.Join(opts.ControlPlaneDir, "kube-scheduler")
	version, err := exec.CommandContext(ctx, binary, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("run %s --version: %w", binary, err)
	}
	// The schedulers run in another directory.
	if opts.Kubeconfig, err = filepath.Abs(opts.Kubeconfig); err != nil {
		return nil, err
	}
	client, err := newClient(opts.Kubeconfig)
	if err != nil {
		return nil, err
	}
	workDir, removeWorkDir, err := workDir(opts.WorkDir)
	if err != nil {
		return nil, err
	}
	result := &Result{Options: opts, SchedulerVersion: strings.TrimSpace(string(version)), Started: time.Now(), Cores: runtime.NumCPU(),
		IdealNodes: IdealNodes(opts.Pods, opts.PodMilliCPU, opts.NodeMilliCPU, opts.PodsPerNode)}
	defer func() {
		// Leave the caller's cluster as found, even when the benchmark failed or was stopped.
		cleanup, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if err := errors.Join(clearPods(cleanup, client), deleteNodes(cleanup, client), deleteNamespace(cleanup, client)); err != nil {
			opts.Log.Error(err, "clean up the benchmark's objects")
		}
	}()
	opts.Log.Info("creating nodes", "nodes", opts.Nodes)
	if err := ensureNamespace(ctx, client); err != nil {
		return nil, err
	}
	if err := createNodes(ctx, client, opts); err != nil {
		return nil, err
	}
	if err := clearPods(ctx, client); err != nil {
		return nil, err
	}
	if result.Runs, err = measureAll(ctx, client, opts, binary, workDir); err != nil {
		return nil, err
	}
	result.Ours, result.Upstream = summarize(result.Runs, Ours, Streamed), summarize(result.Runs, Upstream, Streamed)
	result.OursRouted = summarize(result.Runs, OursRouted, Streamed)
	result.OursBacklog, result.UpstreamBacklog = summarize(result.Runs, Ours, Backlog), summarize(result.Runs, Upstream, Backlog)
	result.Plot = filepath.Join(opts.OutputDir, PlotFile)
	if err := writePlot(result.Plot, result.plotSeries()); err != nil {
		return nil, err
	}
	removeWorkDir()
	return result, nil
}

// measureAll makes every run: for each repetition, both configurations Streamed, then
// both with a Backlog if asked.
func measureAll(ctx context.Context, client kubernetes.Interface, opts Options, binary, workDir string) ([]Measurement, error) {
	modes := []Mode{Streamed}
	if opts.Backlog {
		modes = append(modes, Backlog)
	}
	var runs []Measurement
	for repetition := 1; repetition <= opts.Repetitions; repetition++ {
		// Alternating the order spreads any drift of the machine's load over both.
		order := []Config{Ours, Upstream}
		if repetition%2 == 0 {
			order = []Config{Upstream, Ours}
		}
		if opts.Routed {
			order = append(order, OursRouted)
		}
		for _, mode := range modes {
			for _, config := range order {
				if config == OursRouted && mode != Streamed {
					continue
				}
				run, err := measure(ctx, client, opts, binary, workDir, config, mode, repetition)
				if err != nil {
					return nil, fmt.Errorf("run %d of %s (%s): %w", repetition, config, mode, err)
				}
				runs = append(runs, *run)
			}
		}
	}
	return runs, nil
}

func newClient(kubeconfig string) (kubernetes.Interface, error) {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %q: %w", kubeconfig, err)
	}
	// Protobuf, which kube-scheduler's clients use by default too: the API server, on the
	// cores the scheduler measured shares, encodes and decodes it for less CPU than JSON.
	// JSON remains acceptable for a type that has no protobuf.
	config.ContentType = kruntime.ContentTypeProtobuf
	config.AcceptContentTypes = kruntime.ContentTypeProtobuf + "," + kruntime.ContentTypeJSON
	// No client-side rate limiter at all (a QPS below 0): creating the pods must not be
	// what limits a run.
	config.QPS = -1
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return client, nil
}

// workDir is dir, or a new temporary directory that remove deletes.
func workDir(dir string) (path string, remove func(), err error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	if path, err = os.MkdirTemp("", "scheduling-bench-"); err != nil {
		return "", nil, fmt.Errorf("create work directory: %w", err)
	}
	return path, func() { _ = os.RemoveAll(path) }, nil
}

// Mode is how a run feeds the scheduler its pods.
type Mode string

const (
	// Streamed pods are created while the scheduler runs, as the issue measured: the run
	// lasts from the first create to the last bind.
	Streamed Mode = "streamed"
	// Backlog pods all exist before the scheduler starts: the run lasts from the first
	// bind to the last, so that creating the pods cannot set its pace.
	Backlog Mode = "backlog"
)

// measure makes one run of config: start its scheduler and create the pods (in the order
// of mode), wait until all are bound or opts.RunTimeout passes, stop the scheduler and
// clear the pods.
func measure(ctx context.Context, client kubernetes.Interface, opts Options, binary, workDir string, config Config, mode Mode, repetition int) (*Measurement, error) {
	runName := fmt.Sprintf("r%d-%s-%s", repetition, config, mode)
	dir := filepath.Join(workDir, runName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	content, lease, err := schedulerConfig(config, opts.Kubeconfig)
	if err != nil {
		return nil, err
	}
	configFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configFile, content, 0o600); err != nil {
		return nil, err
	}
	// Outside the run, so that renewals do not load it (see renewLeases), and before the
	// wait for the machine to settle, which then covers what they cause.
	if err := renewLeases(ctx, client, opts); err != nil {
		return nil, err
	}
	if config == OursRouted {
		if err := routePods(ctx, client); err != nil {
			return nil, err
		}
		defer func() {
			if err := unroutePods(context.WithoutCancel(ctx), client); err != nil {
				opts.Log.Error(err, "remove the routing policy", "run", runName)
			}
		}()
	}
	busyBefore, known := settle(ctx, opts.Log.WithValues("run", runName))
	if !known {
		busyBefore = -1
	}
	recorder, err := watchBindings(ctx, client, runName, opts.Pods)
	if err != nil {
		return nil, err
	}
	defer recorder.close()
	var created createdPods
	if mode == Backlog {
		if created, err = createPods(ctx, client, opts, runName, config, recorder.begin()); err != nil {
			return nil, err
		}
	}
	scheduler, err := startScheduler(binary, configFile, opts.Kubeconfig, filepath.Join(dir, "kube-scheduler.log"), opts.SchedulerArgs)
	if err != nil {
		return nil, err
	}
	defer func() {
		if err := scheduler.stop(10 * time.Second); err != nil {
			opts.Log.Error(err, "stop kube-scheduler", "run", runName)
		}
	}()
	if err := scheduler.waitReady(ctx, client, lease, 2*time.Minute); err != nil {
		return nil, err
	}
	if mode == Streamed {
		opts.Log.V(1).Info("scheduler leads and is ready; creating pods", "run", runName, "pods", opts.Pods)
		if created, err = createPods(ctx, client, opts, runName, config, recorder.begin()); err != nil {
			return nil, err
		}
	}
	if err := waitBound(ctx, recorder, scheduler, opts.RunTimeout, created.start); err != nil {
		return nil, err
	}
	boundAt, nodeOf := recorder.bindings()
	run := summarizeRun(runName, mode, created, boundAt, nodeOf)
	run.Config, run.Repetition, run.BusyBefore = config, repetition, busyBefore
	// A node marked not Ready during the run was also tainted, and the controller wrote to
	// it and its pods: the run was not like the others.
	unschedulable, err := unschedulableNodes(ctx, client, opts.Nodes)
	if err != nil {
		return nil, err
	}
	if len(unschedulable) > 0 {
		return nil, fmt.Errorf("%d nodes (%s) were not schedulable after the run: it outlasted the node lifecycle "+
			"controller's grace period, the nodes' Leases being renewed only between runs",
			len(unschedulable), strings.Join(unschedulable[:min(3, len(unschedulable))], ", "))
	}
	opts.Log.Info("run done", "run", runName, "bound", run.Bound, "podsPerSecond", fmt.Sprintf("%.1f", run.PodsPerSecond),
		"duration", run.Duration, "creating", run.Creating, "p50", run.LatencyP50, "p99", run.LatencyP99, "nodesUsed", run.NodesUsed,
		"busyCoresBefore", fmt.Sprintf("%.2f", run.BusyBefore))
	if err := scheduler.stop(10 * time.Second); err != nil {
		return nil, err
	}
	logged, err := os.ReadFile(scheduler.logs.Name())
	if err != nil {
		return nil, fmt.Errorf("read the scheduler's log: %w", err)
	}
	run.ContentType = loggedContentType(logged)
	// A stopped kube-scheduler releases its Lease; deleting it makes sure the next
	// process of this configuration does not wait for it to expire.
	if err := deleteLease(ctx, client, lease); err != nil {
		return nil, err
	}
	if err := clearPods(ctx, client); err != nil {
		return nil, err
	}
	return run, nil
}

// createdPods says when a run's pods were created.
type createdPods struct {
	start time.Time
	// requested is when each pod's create request started, by index, since start.
	requested []time.Duration
	// last is when the last create was answered, since start.
	last time.Duration
}

// createPods creates the run's pods, opts.Pods of them, concurrently from start on.
func createPods(ctx context.Context, client kubernetes.Interface, opts Options, runName string, config Config, start time.Time) (createdPods, error) {
	created := createdPods{start: start, requested: make([]time.Duration, opts.Pods)}
	var lastMu sync.Mutex
	pods := client.CoreV1().Pods(benchNamespace)
	err := forEachConcurrently(ctx, opts.Pods, opts.CreateWorkers, func(ctx context.Context, i int) error {
		created.requested[i] = time.Since(start)
		if _, err := pods.Create(ctx, benchPod(runName, i, opts, config), metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create pod %d: %w", i, err)
		}
		answered := time.Since(start)
		lastMu.Lock()
		created.last = max(created.last, answered)
		lastMu.Unlock()
		return nil
	})
	if err != nil {
		return createdPods{}, err
	}
	opts.Log.V(1).Info("pods created", "run", runName, "after", created.last)
	return created, nil
}

// waitBound waits until every pod is bound, or timeout after start passes (which is no
// error: the run reports what was bound). It fails when the scheduler exits.
func waitBound(ctx context.Context, recorder *bindRecorder, scheduler *schedulerProcess, timeout time.Duration, start time.Time) error {
	timer := time.NewTimer(max(timeout-time.Since(start), 0))
	defer timer.Stop()
	select {
	case <-recorder.allDone:
	case <-timer.C:
	case <-scheduler.exited:
		return fmt.Errorf("during the run: %w", scheduler.exitError())
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// summarizeRun computes a run's figures from when its pods were created, and when each
// was seen bound (since created.start) and where, by name.
func summarizeRun(runName string, mode Mode, created createdPods, boundAt map[string]time.Duration, nodeOf map[string]string) *Measurement {
	run := &Measurement{Mode: mode, Pods: len(created.requested), Bound: len(boundAt), Creating: created.last}
	latencies := make([]time.Duration, 0, len(boundAt))
	offsets := make([]time.Duration, 0, len(boundAt))
	for i, requested := range created.requested {
		at, bound := boundAt[podName(runName, i)]
		if !bound {
			continue
		}
		latencies = append(latencies, at-requested)
		offsets = append(offsets, at)
	}
	run.Curve = boundCurve(offsets)
	run.NodesUsed = sets.New(slices.Collect(maps.Values(nodeOf))...).Len()
	if len(offsets) == 0 {
		return run
	}
	first, last := run.Curve[1].Elapsed, run.Curve[len(run.Curve)-1].Elapsed
	switch mode {
	case Backlog:
		// Latencies would count the wait for the scheduler to start; the rate counts the
		// pods bound after the first.
		run.Duration = last - first
		if run.Duration > 0 {
			run.PodsPerSecond = float64(run.Bound-1) / run.Duration.Seconds()
		}
	default:
		run.Duration = last
		run.PodsPerSecond = float64(run.Bound) / run.Duration.Seconds()
		run.LatencyP50, run.LatencyP99 = Percentile(latencies, 50), Percentile(latencies, 99)
	}
	return run
}

// podName is the name of run's i-th pod.
func podName(runName string, i int) string { return benchPod(runName, i, Options{}, Ours).Name }

// summarize takes the medians of config's runs in mode.
func summarize(runs []Measurement, config Config, mode Mode) Summary {
	summary := Summary{Config: config, Complete: true}
	var perSecond, p50, p99, nodes []float64
	for _, run := range runs {
		if run.Config != config || run.Mode != mode {
			continue
		}
		summary.Runs++
		perSecond = append(perSecond, run.PodsPerSecond)
		p50 = append(p50, float64(run.LatencyP50))
		p99 = append(p99, float64(run.LatencyP99))
		nodes = append(nodes, float64(run.NodesUsed))
		summary.Complete = summary.Complete && run.Bound == run.Pods
	}
	summary.PodsPerSecond = median(perSecond)
	summary.LatencyP50, summary.LatencyP99 = time.Duration(median(p50)), time.Duration(median(p99))
	summary.NodesUsed = median(nodes)
	return summary
}

// Ratio is ours' median throughput over upstream's, in Streamed runs.
func (r *Result) Ratio() float64 { return ratio(r.Ours, r.Upstream) }

// BacklogRatio is ours' median throughput over upstream's, in Backlog runs.
func (r *Result) BacklogRatio() float64 { return ratio(r.OursBacklog, r.UpstreamBacklog) }

func ratio(ours, upstream Summary) float64 {
	if upstream.PodsPerSecond == 0 {
		return 0
	}
	return ours.PodsPerSecond / upstream.PodsPerSecond
}

// medianRun is config's Streamed run of median throughput (of the two middle ones, the
// slower), nil when there is none.
func (r *Result) medianRun(config Config) *Measurement {
	var indexes []int
	var perSecond []float64
	for i, run := range r.Runs {
		if run.Config == config && run.Mode == Streamed {
			indexes = append(indexes, i)
			perSecond = append(perSecond, run.PodsPerSecond)
		}
	}
	if len(indexes) == 0 {
		return nil
	}
	return &r.Runs[indexes[medianIndex(perSecond)]]
}

// plotSeries are the curves of each configuration's median run (see medianRun).
func (r *Result) plotSeries() []series {
	var plotted []series
	for _, config := range []Config{Ours, Upstream, OursRouted} {
		if run := r.medianRun(config); run != nil {
			label := config.Description()
			if r.Options.Repetitions > 1 {
				label += " (run " + strconv.Itoa(run.Repetition) + ")"
			}
			plotted = append(plotted, series{label: label, color: seriesColors[config], curve: run.Curve})
		}
	}
	return plotted
}
