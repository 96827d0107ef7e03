package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/klog/v2"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/bench/outcome"
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
	began := time.Now()
	binary := pluginsBinary(e.repoRoot)
	if binary == "" {
		return &section{name: "outcome", title: "skipped", skipped: true, notes: []string{
			"No scheduler-plugins kube-scheduler (bin/scheduler-plugins/kube-scheduler, or SCHEDULER_PLUGINS_BINARY): " +
				"the load-aware profiles exist only there. Build it with make scheduler-plugins (README, Development); the report keeps its section."}}, nil
	}
	if err := e.usePodrunnerWith(ctx, false, binary); err != nil {
		return nil, err
	}
	// The other benchmarks measure the in-tree kube-scheduler, as before.
	defer func() {
		if err := e.usePodrunnerWith(context.WithoutCancel(ctx), false, ""); err != nil {
			logf("outcome: restart podrunner with the in-tree kube-scheduler: %v", err)
		}
	}()
	tb := &benchTB{dir: filepath.Join(e.outputDir, "outcome")}
	if err := os.RemoveAll(tb.dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(tb.dir, 0o755); err != nil {
		return nil, err
	}
	defer tb.cleanUp()
	opts := outcome.DefaultOptions
	opts.Client, opts.Clientset = e.client, e.clientset
	opts.StartPrometheus = func() (*promtest.Server, error) { return startPromtest(tb) }
	opts.Log = klog.NewKlogr().WithName("outcome")
	result, err := outcome.Run(ctx, opts)
	if result == nil {
		return nil, err
	}
	report := &section{name: "outcome"}
	if err != nil {
		// The run measured, and cleaning up after it failed: the figures stand.
		report.notes = append(report.notes, fmt.Sprintf("Deleting what the run created failed: %v.", err))
	}
	docs := filepath.Join(e.repoRoot, "docs")
	if err := result.WritePlots(docs); err != nil {
		return nil, fmt.Errorf("outcome plots: %w", err)
	}
	// The whole comparison: the podrunner restarts, the run, its clean-up and the plots.
	result.Duration = time.Since(began)
	report.body = result.Markdown("")
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
