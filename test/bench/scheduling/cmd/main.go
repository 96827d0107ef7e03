// Command cmd runs the scheduling throughput benchmark (package scheduling) on a local
// kwok cluster of its own, started and deleted through hack/local-cluster.sh, or on the
// cluster of -kubeconfig. It prints the Markdown section for docs/benchmarks.md and writes
// it, with the plot, to -output.
//
//	go run ./test/bench/scheduling/cmd [-repetitions 3] [-backlog=false] [-nodes 500] [-pods 2000]
//
// On two otherwise idle cores, one repetition takes about 80 s (setting up the 500 nodes
// included), 2.5 minutes with the backlog runs, and each further one 70 s (140 s); a run
// waits up to 15 s more for a busy machine to settle.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/bench/scheduling"
)

// clusterName is the benchmark's own local cluster, apart from the e2e and demo clusters.
const clusterName = "bench-scheduling"

func main() {
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 1, LogTimestamp: true})
	if err := run(log); err != nil {
		log.Error(err, "scheduling benchmark failed")
		os.Exit(1)
	}
}

func run(log logr.Logger) error {
	repoRoot, err := findRepoRoot()
	if err != nil {
		return err
	}
	opts := scheduling.Options{Log: log}
	var output string
	var keepCluster bool
	flag.StringVar(&opts.Kubeconfig, "kubeconfig", "", "an admin kubeconfig of a kwok cluster to use; empty starts a local cluster of its own")
	flag.StringVar(&opts.ControlPlaneDir, "control-plane", filepath.Join(repoRoot, "bin", "k8s", "v1.37.2"), "directory of the kube-scheduler binary")
	flag.IntVar(&opts.Nodes, "nodes", 500, "fake nodes")
	flag.IntVar(&opts.Pods, "pods", 2000, "pods per run")
	flag.StringVar(&opts.NodeMemory, "node-memory", "16Gi", "each node's allocatable memory")
	flag.IntVar(&opts.Repetitions, "repetitions", 1, "runs of each configuration; figures are medians")
	flag.BoolVar(&opts.Backlog, "backlog", true, "also measure each configuration with every pod created before it starts")
	flag.BoolVar(&opts.Routed, "routed", true, "also measure the rendered configuration with pods routed to it by the routing policy (spec.routing)")
	flag.IntVar(&opts.CreateWorkers, "create-workers", 0, "create requests in flight at once (0: the package's default)")
	flag.StringVar(&output, "output", filepath.Join(repoRoot, "_output", clusterName), "directory for the plot, the Markdown, the cluster and the schedulers' logs")
	flag.BoolVar(&keepCluster, "keep-cluster", false, "leave the local cluster running")
	flag.Func("scheduler-arg", "a kube-scheduler flag for both configurations, such as --feature-gates=...; repeatable", func(arg string) error {
		opts.SchedulerArgs = append(opts.SchedulerArgs, arg)
		return nil
	})
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	opts.OutputDir, opts.WorkDir = output, filepath.Join(output, "runs")
	if err := os.MkdirAll(output, 0o755); err != nil {
		return err
	}
	if opts.Kubeconfig == "" {
		cluster := localCluster{repoRoot: repoRoot, outputDir: filepath.Join(output, "cluster"), controlPlaneDir: opts.ControlPlaneDir}
		if !keepCluster {
			// Also after a failed start, which may leave processes running.
			defer func() {
				if err := cluster.script(context.WithoutCancel(ctx), "down"); err != nil {
					log.Error(err, "delete the local cluster")
				}
			}()
		}
		log.Info("starting a local cluster", "name", clusterName)
		if err := cluster.script(ctx, "up"); err != nil {
			return err
		}
		opts.Kubeconfig = filepath.Join(cluster.outputDir, "kubeconfig")
	}
	result, err := scheduling.Run(ctx, opts)
	if err != nil {
		return err
	}
	markdown := result.Markdown()
	fmt.Print(markdown)
	return os.WriteFile(filepath.Join(output, "scheduling-throughput.md"), []byte(markdown), 0o644)
}

// localCluster is the benchmark's cluster of hack/local-cluster.sh.
type localCluster struct {
	repoRoot, outputDir, controlPlaneDir string
}

// script runs hack/local-cluster.sh with action. The cluster has no fake node of the
// script's: the benchmark makes its own.
func (c localCluster) script(ctx context.Context, action string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.repoRoot, "hack", "local-cluster.sh"), action)
	cmd.Env = append(os.Environ(), "CLUSTER_NAME="+clusterName, "OUTPUT_DIR="+c.outputDir, "CONTROL_PLANE_DIR="+c.controlPlaneDir,
		"FAKE_NODES=0", "APPLY_CRD=false")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("hack/local-cluster.sh %s: %w", action, err)
	}
	return nil
}

// findRepoRoot is the nearest directory at or above the working directory with go.mod.
func findRepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod at or above the working directory: run from the repository")
		}
		dir = parent
	}
}
