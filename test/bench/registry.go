package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/bench/outcome"
)

// benchmark is one benchmark on the local cluster.
type benchmark struct {
	name string
	// namespaces are where it runs SecondarySchedulers; the operator is allowed them all.
	namespaces []string
	// run measures and returns its section of the report. It starts from a running
	// operator and podrunner (env.useOperator and env.usePodrunner change them), and
	// leaves its namespaces empty of SecondarySchedulers (env.clean), but for the
	// steady schedulers.
	run func(ctx context.Context, e *env) (*section, error)
	// runs is how many times it runs unless -count says otherwise: more than once where
	// the repetitions fit in make bench's time, so that its figures are medians.
	runs int
	// offline is a benchmark that needs no cluster: it runs once, before the cluster
	// starts, and make bench BENCH=name starts none when every benchmark named is offline.
	offline bool
	// onlyWhenNamed is a benchmark too long for make bench's 30 minutes, which runs only
	// when BENCH names it.
	onlyWhenNamed bool
}

// benchmarks are every benchmark, in the order they run and appear in the report. A new
// one goes in a file of its own and is added here. binaries needs no cluster and runs
// before it starts (offline). memory, idle and pending-pods come
// last: they share schedulers that stay (steadySchedulers). pending-pods is the very
// last, since the last benchmark leaves what it made to the cluster's deletion: deleting
// its 50,000 pods took about 6 of its 13 minutes on 2026-11-26, when memory came after
// it. It follows idle, whose minute at rest counts towards the rest it starts with.
var benchmarks = []benchmark{
	{name: "binaries", run: runBinaries, offline: true},
	{name: "convergence", namespaces: []string{convergenceNamespace}, run: runConvergence},
	{name: "edit", namespaces: []string{editNamespace}, run: runEdit, runs: 3},
	{name: "scale", namespaces: []string{scaleNamespace}, run: runScale},
	{name: "references", namespaces: []string{referencesNamespace}, run: runReferences},
	{name: "slow-prometheus", namespaces: []string{slowPrometheusNamespace}, run: runSlowPrometheus},
	{name: "scheduling", namespaces: []string{steadyNamespace}, run: runScheduling},
	{name: "outcome", namespaces: outcome.Namespaces(), run: runOutcome},
	// 105 minutes of loop: the descheduler's cycles are 15 minutes apart.
	{name: "drift", namespaces: outcome.DriftNamespaces(), run: runDrift, onlyWhenNamed: true},
	// Once: three runs took 4m36s of make bench's 30 minutes, and its p99 moves by
	// tens of points between runs whatever their number (BENCH_COUNT=3 for a median).
	{name: "routing", namespaces: []string{routingNamespace}, run: runRouting},
	{name: "memory", namespaces: []string{steadyNamespace}, run: runMemory},
	{name: "idle", namespaces: []string{steadyNamespace}, run: runIdle},
	{name: "pending-pods", namespaces: []string{steadyNamespace}, run: runPendingPods},
}

// selectBenchmarks returns the benchmarks named in list (comma-separated; empty for all),
// in the registry's order.
func selectBenchmarks(list string) ([]benchmark, error) {
	if strings.TrimSpace(list) == "" {
		return slices.DeleteFunc(slices.Clone(benchmarks), func(b benchmark) bool { return b.onlyWhenNamed }), nil
	}
	wanted := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		if name = strings.TrimSpace(name); name != "" {
			wanted[name] = true
		}
	}
	var selected []benchmark
	for _, b := range benchmarks {
		if wanted[b.name] {
			selected = append(selected, b)
			delete(wanted, b.name)
		}
	}
	if len(wanted) > 0 {
		return nil, fmt.Errorf("no benchmark named %s; there are %s", strings.Join(mapKeys(wanted), ", "), strings.Join(benchmarkNames(), ", "))
	}
	return selected, nil
}

// askedForOnly are the benchmarks that run only when named.
func askedForOnly() []string {
	var names []string
	for _, b := range benchmarks {
		if b.onlyWhenNamed {
			names = append(names, b.name)
		}
	}
	return names
}

func benchmarkNames() []string {
	names := make([]string, len(benchmarks))
	for i, b := range benchmarks {
		names[i] = b.name
	}
	return names
}
