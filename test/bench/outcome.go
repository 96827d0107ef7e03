package main

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/bench/outcome"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/installer"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// runOutcome is what a user gains from each profile: package outcome places one workload
// with real load, different from its requests, by the default scheduler and by a
// SecondaryScheduler of each profile at once, each on a pool of its own, in a closed loop
// through a real Prometheus, and writes its section of the report and its plots
// (docs/outcome-*.png). The load-aware profiles exist only in scheduler-plugins'
// kube-scheduler: without that binary (make scheduler-plugins) the benchmark says so and
// is skipped, and the report keeps its section.
func runOutcome(ctx context.Context, e *env) (*section, error) {
	return runLoop(ctx, e, "outcome", outcome.DefaultOptions, func(result *outcome.Result, docs string) (string, error) {
		if err := result.WritePlots(docs); err != nil {
			return "", fmt.Errorf("outcome plots: %w", err)
		}
		return result.Markdown(""), nil
	})
}

// runDrift is what descheduling gains as load drifts after placement: package outcome
// places its workload, a quarter of whose pods then use four times as much, with
// TargetLoadPacking alone and with spec.descheduling, each on a pool of its own, for
// e.driftRunFor (105 minutes by default: the descheduler's cycles are 15 minutes apart),
// and writes its section and plot (docs/outcome-drift.png). Its descheduler is the one
// make descheduler builds, run by podrunner; without it, or without the scheduler-plugins
// kube-scheduler, the benchmark says so and is skipped.
func runDrift(ctx context.Context, e *env) (*section, error) {
	if _, err := os.Stat(filepath.Join(e.controlPlaneDir, "descheduler")); err != nil {
		return &section{name: "drift", title: "skipped", skipped: true, notes: []string{
			"No descheduler in " + e.controlPlaneDir + ": build it with make descheduler; the report keeps its section."}}, nil
	}
	// What a cluster with descheduling has: the admission policy that labels each pod with
	// its scheduler's name, by which the descheduler selects the pods of its scheduler, and
	// the ClusterRole its ServiceAccount is bound to.
	if err := installer.ApplyRoutingPolicy(ctx, e.client, e.repoRoot); err != nil {
		return nil, err
	}
	defer func() {
		if err := installer.DeleteRoutingPolicy(context.WithoutCancel(ctx), e.client, e.repoRoot); err != nil {
			logf("drift: delete the routing policies: %v", err)
		}
	}()
	if err := installer.ApplyDeschedulerClusterRole(ctx, e.client, e.repoRoot); err != nil {
		return nil, err
	}
	opts := outcome.DriftOptions
	opts.RunFor = cmp.Or(e.driftRunFor, opts.RunFor)
	return runLoop(ctx, e, "drift", opts, func(result *outcome.Result, docs string) (string, error) {
		if err := result.WriteDriftPlot(docs); err != nil {
			return "", fmt.Errorf("drift plot: %w", err)
		}
		return result.DriftMarkdown(""), nil
	})
}

// runLoop runs package outcome's loop with opts, under the scheduler-plugins kube-scheduler,
// and returns the section write makes of its result, write given the docs directory for
// its plots. Without that binary (make scheduler-plugins) the benchmark name says so and
// is skipped: the load-aware profiles exist only there; the report keeps its section.
func runLoop(ctx context.Context, e *env, name string, opts outcome.Options, write func(*outcome.Result, string) (string, error)) (*section, error) {
	began := time.Now()
	binary := pluginsBinary(e.repoRoot)
	if binary == "" {
		return &section{name: name, title: "skipped", skipped: true, notes: []string{
			"No scheduler-plugins kube-scheduler (bin/scheduler-plugins/kube-scheduler, or SCHEDULER_PLUGINS_BINARY): " +
				"the load-aware profiles exist only there. Build it with make scheduler-plugins (README, Development); the report keeps its section."}}, nil
	}
	if err := e.usePodrunnerWith(ctx, false, binary); err != nil {
		return nil, err
	}
	// The other benchmarks measure the in-tree kube-scheduler, as before.
	defer func() {
		if err := e.usePodrunnerWith(context.WithoutCancel(ctx), false, ""); err != nil {
			logf("%s: restart podrunner with the in-tree kube-scheduler: %v", name, err)
		}
	}()
	tb := &benchTB{dir: filepath.Join(e.outputDir, name)}
	if err := os.RemoveAll(tb.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tb.dir, 0o755); err != nil {
		return nil, err
	}
	defer tb.cleanUp()
	opts.Client, opts.Clientset = e.client, e.clientset
	opts.StartPrometheus = func() (*promtest.Server, error) { return startPromtest(tb) }
	opts.Log = klog.NewKlogr().WithName(name)
	result, err := outcome.Run(ctx, opts)
	if result == nil {
		return nil, err
	}
	report := &section{name: name}
	if err != nil {
		// The run measured, and cleaning up after it failed: the figures stand.
		report.notes = append(report.notes, fmt.Sprintf("Deleting what the run created failed: %v.", err))
	}
	// The whole comparison: the podrunner restarts, the run, its clean-up and the plots.
	result.Duration = time.Since(began)
	body, err := write(result, filepath.Join(e.repoRoot, "docs"))
	if err != nil {
		return nil, err
	}
	report.body = body
	for _, note := range report.notes {
		report.body += "\n- " + note + "\n"
	}
	return report, nil
}

// pluginsBinary is the scheduler-plugins kube-scheduler: SCHEDULER_PLUGINS_BINARY, or the
// one make scheduler-plugins builds; empty when there is none.
func pluginsBinary(repoRoot string) string {
	for _, path := range []string{os.Getenv("SCHEDULER_PLUGINS_BINARY"), filepath.Join(repoRoot, "bin", "scheduler-plugins", "kube-scheduler")} {
		if path == "" {
			continue
		}
		if info, err := os.Stat(path); err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return path
		}
	}
	return ""
}
