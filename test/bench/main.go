// Command bench runs the operator's benchmarks on a local cluster of its own: it builds
// the operator and podrunner, starts a kwok cluster with hack/local-cluster.sh, runs the
// operator as a process (under a ServiceAccount of its own, so that the API server's audit
// log shows its requests) and podrunner as the scheduler pods' kubelet, runs the selected
// benchmarks, prints a table of each and writes them into the report, docs/benchmarks.md.
// Everything it started is stopped at the end, also on failure or Ctrl-C.
//
// No benchmark passes or fails: each figure stands next to its target.
//
//	go run ./test/bench [-bench convergence,edit] [-count 3] [-baseline-manager PATH] [-report docs/benchmarks.md]
package main

import (
	"cmp"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/bench/outcome"
)

type options struct {
	bench, report, baselineManager string
	count                          int
	keepCluster                    bool
	driftRunFor                    time.Duration
}

func main() {
	var opts options
	flag.StringVar(&opts.bench, "bench", "", "comma-separated benchmarks to run, of "+strings.Join(benchmarkNames(), ", ")+
		" (default all but "+strings.Join(askedForOnly(), ", ")+", which run only when named)")
	flag.StringVar(&opts.report, "report", "docs/benchmarks.md",
		"the report to write; sections of benchmarks that did not run are kept from it; empty for none")
	flag.IntVar(&opts.count, "count", 0,
		"how many times each benchmark runs; the report shows medians and each run (default: once, three times for those short enough)")
	flag.StringVar(&opts.baselineManager, "baseline-manager", "",
		"a manager binary built from another commit (as the Dockerfile builds it, for comparable memory): each run of a benchmark runs it too, "+
			"the order alternating, and the report shows both and their ratio")
	flag.BoolVar(&opts.keepCluster, "keep-cluster", false, "leave the local cluster running at the end")
	flag.DurationVar(&opts.driftRunFor, "drift-run-for", outcome.DriftOptions.RunFor,
		"how long the drift benchmark's loop runs: shorter to try it, though its descheduler's cycles are 15 minutes apart")
	flag.Parse()
	// The tracker's and clients' own logs (watch errors) go to standard error.
	ctrllog.SetLogger(klog.NewKlogr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, opts); err != nil {
		fmt.Fprintf(os.Stderr, "bench: %v\n", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[bench %s] %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func run(ctx context.Context, opts options) error {
	selected, err := selectBenchmarks(opts.bench)
	if err != nil {
		return err
	}
	if opts.count < 0 {
		return fmt.Errorf("-count %d: a number of runs, or 0 for each benchmark's own", opts.count)
	}
	repoRoot, err := os.Getwd()
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(repoRoot, "go.mod")); err != nil {
		return fmt.Errorf("run from the repository's root: %w", err)
	}
	if opts.baselineManager != "" {
		if opts.baselineManager, err = filepath.Abs(opts.baselineManager); err != nil {
			return err
		}
	}
	kubeVersion := envOr("KUBE_VERSION", "v1.37.2")
	e := newEnv(repoRoot, kubeVersion, selected)
	e.driftRunFor = opts.driftRunFor
	if err := os.MkdirAll(e.outputDir, 0o755); err != nil {
		return err
	}
	conditions := runConditions(e, kubeVersion)
	started := time.Now()
	var sections []*section
	report := func(result *section) {
		result.conditions = conditions + "; " + result.conditions
		sections = append(sections, result)
		result.writeText(os.Stdout)
	}
	// Those that need no cluster run first, and alone start none.
	var onCluster []benchmark
	for _, b := range selected {
		if !b.offline {
			onCluster = append(onCluster, b)
			continue
		}
		result, err := runBenchmark(ctx, e, b, opts, false)
		if err != nil {
			return err
		}
		report(result)
	}
	if len(onCluster) > 0 {
		defer func() { e.tearDown(opts.keepCluster) }()
		if err := e.setUp(ctx); err != nil {
			return err
		}
	}
	for i, b := range onCluster {
		result, err := runBenchmark(ctx, e, b, opts, i == len(onCluster)-1)
		if err != nil {
			return err
		}
		report(result)
	}
	logf("done in %v; logs in %s", time.Since(started).Round(time.Second), e.outputDir)
	if opts.report == "" {
		return nil
	}
	return writeReport(opts.report, sections)
}

// newEnv is the benchmarks' cluster under _output/bench, its operator allowed to run
// schedulers in every benchmark's namespaces (the same whichever run, so that figures
// compare), but for those of a benchmark that runs only when named and is not selected.
func newEnv(repoRoot, kubeVersion string, selected []benchmark) *env {
	outputDir := filepath.Join(repoRoot, "_output", "bench")
	e := &env{
		repoRoot:        repoRoot,
		controlPlaneDir: envOr("CONTROL_PLANE_DIR", filepath.Join(repoRoot, "bin", "k8s", kubeVersion)),
		outputDir:       outputDir,
		binDir:          filepath.Join(outputDir, "bin"),
		clusterName:     "bench",
		kubeconfig:      filepath.Join(outputDir, "kubeconfig"),
	}
	for _, b := range benchmarks {
		if b.onlyWhenNamed && !slices.ContainsFunc(selected, func(s benchmark) bool { return s.name == b.name }) {
			continue
		}
		for _, namespace := range b.namespaces {
			if !slices.Contains(e.namespaces, namespace) {
				e.namespaces = append(e.namespaces, namespace)
			}
		}
	}
	return e
}

// runBenchmark runs b as many times as asked, each run with the baseline operator too
// when there is one, and merges the runs into one section. An error is only ctx's end:
// a run that fails says so in its section.
func runBenchmark(ctx context.Context, e *env, b benchmark, opts options, last bool) (*section, error) {
	current := filepath.Join(e.binDir, "manager")
	var runs, baselineRuns []*section
	count := cmp.Or(opts.count, b.runs, 1)
	if b.offline {
		// What it measures does not vary between runs, nor depends on the operator run.
		count = 1
	}
	for i := range count {
		// With a baseline, each run is a pair whose order alternates, so that neither
		// build always finds the cluster as the other left it.
		pair := []operatorBuild{{binary: current}}
		if opts.baselineManager != "" && !b.offline {
			pair = []operatorBuild{{binary: opts.baselineManager, baseline: true}, {binary: current}}
			if i%2 == 1 {
				slices.Reverse(pair)
			}
		}
		for j, build := range pair {
			e.lastRun = last && i == count-1 && j == len(pair)-1 && !opts.keepCluster
			label := fmt.Sprintf("run %d", i+1)
			if build.baseline {
				baselineRuns = append(baselineRuns, runOne(ctx, e, b, build.binary, label+", baseline"))
			} else {
				runs = append(runs, runOne(ctx, e, b, build.binary, label))
			}
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
		}
	}
	merged := mergeRuns(runs)
	merged.withBaseline(mergeRuns(baselineRuns))
	merged.conditions = runsText(count)
	if len(baselineRuns) > 0 {
		merged.conditions += "; baseline: " + buildIdentity(opts.baselineManager)
	}
	return merged, nil
}

// buildIdentity says which build the binary at path is: the revision Go stamped into it
// (a build in a git checkout), else the start of its file's SHA-256, so that a report's
// baseline column names what it compares with.
func buildIdentity(path string) string {
	if info, err := buildinfo.ReadFile(path); err == nil {
		revision, dirty := "", false
		for _, setting := range info.Settings {
			switch setting.Key {
			case "vcs.revision":
				revision = setting.Value
			case "vcs.modified":
				dirty = setting.Value == "true"
			}
		}
		if revision != "" {
			revision = revision[:min(len(revision), 7)]
			if dirty {
				revision += "-dirty"
			}
			return "the operator at " + revision
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "unreadable " + filepath.Base(path)
	}
	sum := sha256.Sum256(data)
	return fmt.Sprintf("an operator build of no stamped revision, SHA-256 %x…", sum[:6])
}

// operatorBuild is a manager binary the benchmarks run: the checkout's, or the baseline.
type operatorBuild struct {
	binary   string
	baseline bool
}

// runOne runs a benchmark once with the operator from binary. A failure is reported in
// its section, so that the other benchmarks still run and the report says what happened.
func runOne(ctx context.Context, e *env, b benchmark, binary, label string) *section {
	logf("%s (%s)", b.name, label)
	began, loadBefore := time.Now(), loadAverage()
	result, err := func() (*section, error) {
		if b.offline {
			return b.run(ctx, e)
		}
		if err := e.useOperator(ctx, binary, false); err != nil {
			return nil, err
		}
		return b.run(ctx, e)
	}()
	if err != nil {
		logf("%s failed: %v", b.name, err)
		if result == nil {
			result = &section{name: b.name, title: "failed"}
		}
		result.notes = append(result.notes, fmt.Sprintf("This run failed: %v. The operator's log is _output/bench/operator.log.", err))
	}
	took := time.Since(began).Round(time.Second)
	logf("%s (%s) took %v", b.name, label, took)
	result.runs = append(result.runs, fmt.Sprintf("%s: %v, load average %s at its start and %s at its end", label, took, loadBefore, loadAverage()))
	return result
}

// runConditions describes the machine and the run, for every section of the report.
func runConditions(e *env, kubeVersion string) string {
	cpuModel := "unknown CPU"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.Lines(string(data)) {
			if key, value, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(key) == "model name" {
				cpuModel = strings.TrimSpace(value)
				break
			}
		}
	}
	revision, err := e.command(context.Background(), "git", "describe", "--always", "--dirty")
	if err != nil {
		revision = "unknown"
	}
	return fmt.Sprintf("%s at %s, %s/%s; %d cores (%s), Go %s, Kubernetes %s (kwok, binary runtime; kube-controller-manager %s)",
		time.Now().Format("2006-01-02"), strings.TrimSpace(revision), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpuModel,
		strings.TrimPrefix(runtime.Version(), "go"), kubeVersion, controllerManagerArgs)
}

func runsText(count int) string {
	if count == 1 {
		return "one run"
	}
	return fmt.Sprintf("median of %d runs", count)
}

// loadAverage is the machine's load average over the last minute, which says how much
// else ran beside a benchmark.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Fields(string(data))[0]
}

func envOr(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

// reportHeader opens docs/benchmarks.md.
const reportHeader = `# Benchmarks

Generated by ` + "`make bench`" + ` (every benchmark but drift) or ` + "`make bench BENCH=name`" + ` (one, replacing only its
section; drift runs only so, its loop lasting 105 minutes); do not edit by hand. The harness is [test/bench](../test/bench): it builds the operator
(static and stripped, as the Dockerfile builds it) and test/podrunner, starts a local kwok cluster of its own
(` + "`hack/local-cluster.sh`" + `, binary runtime, the pinned control plane), and runs the operator as a
process against it, under a ServiceAccount bound to cluster-admin so that the API server's audit
log records each of its requests. ` + "`go run ./test/bench -h`" + ` lists its flags (` + "`-count`" + ` for
repeated runs, ` + "`-baseline-manager`" + ` to run another build side by side).

How to read the figures:

- Latencies come from watch events (informers), timestamped as they arrive, never from polls.
  Percentiles are nearest-rank: with 50 samples, p99 is the largest.
- The machine is small and shared (2 cores, often with other work running), so absolute figures
  are noisy. With ` + "`-count N`" + ` each figure is the median of N runs, and each run is listed; to
  compare two builds, run one with ` + "`-baseline-manager`" + `: both run in the same session, in
  alternating order, and the ratio of their medians is shown.
- No benchmark passes or fails. A target that is not met says so; "before" is the figure measured
  by hand before these benchmarks existed.
- Request counts come from the operator's own client metrics (` + "`rest_client_requests_total`" + `, by
  method and code; a watch counts as a GET when it starts) and from the API server's audit log
  (by verb and resource).
`

// writeReport writes sections into the report at path, keeping the sections of
// benchmarks that did not run.
func writeReport(path string, sections []*section) error {
	existing, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	fresh := make([]reportBlock, 0, len(sections))
	for _, s := range sections {
		if !s.skipped {
			fresh = append(fresh, reportBlock{name: s.name, text: s.markdown()})
		}
	}
	report := mergeReport(string(existing), reportHeader, fresh, benchmarkNames())
	if err := os.WriteFile(path, []byte(report), 0o644); err != nil {
		return err
	}
	logf("wrote %s", path)
	return nil
}
