package main

import (
	"context"
	"path/filepath"

	"k8s.io/klog/v2"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/bench/scheduling"
)

// runScheduling is the scheduling throughput of what the operator renders: package
// scheduling runs the real kube-scheduler with the rendered BinPacking configuration and
// with the upstream defaults, one after the other on the same 500 fake nodes, and writes
// its own section of the report and its plot (docs/scheduling-throughput.png). It needs
// no operator: it runs the scheduler processes itself.
func runScheduling(ctx context.Context, e *env) (*section, error) {
	result, err := scheduling.Run(ctx, scheduling.Options{
		Kubeconfig:      e.kubeconfig,
		ControlPlaneDir: e.controlPlaneDir,
		OutputDir:       filepath.Join(e.repoRoot, "docs"),
		PlotLink:        scheduling.PlotFile,
		WorkDir:         filepath.Join(e.outputDir, "scheduling"),
		Routed:          true,
		Log:             klog.NewKlogr().WithName("scheduling"),
	})
	if err != nil {
		return nil, err
	}
	return &section{name: "scheduling", body: result.Markdown()}, nil
}
