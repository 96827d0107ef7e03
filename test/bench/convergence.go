package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"
)

const (
	convergenceNamespace = "bench-convergence"
	convergenceCount     = 50
)

// runConvergence creates BinPacking SecondarySchedulers one after another, each once the
// one before is Available, and measures from each create to its objects and to Available.
// The scheduler pods run as real kube-scheduler processes: Available means one started.
func runConvergence(ctx context.Context, e *env) (*section, error) {
	if err := e.usePodrunner(ctx, false); err != nil {
		return nil, err
	}
	s := &section{
		name:  "convergence",
		title: fmt.Sprintf("%d schedulers, one after another", convergenceCount),
		what: fmt.Sprintf("Creates %d BinPacking SecondarySchedulers in one namespace, one after another: each once the one before is Available. "+
			"Their pods run as real kube-scheduler processes (test/podrunner), which stay running, so the last one is created beside %d running schedulers.",
			convergenceCount, convergenceCount-1),
		how: "From just before each create request to the watch event that brought the last of the scheduler's objects " +
			"(counted by the operator's owner labels, of every kind it makes), and to the watch event in which its Available condition turned True.",
	}
	var toObjects, toAvailable []time.Duration
	objectCounts := map[int]int{}
	for i := range convergenceCount {
		name := fmt.Sprintf("converge-%03d", i)
		key := ownerKey{convergenceNamespace, name}
		started := time.Now()
		if err := e.client.Create(ctx, binPacking(convergenceNamespace, name)); err != nil {
			return s, fmt.Errorf("create %s: %w", key, err)
		}
		if err := e.tracker.waitFor(ctx, 3*time.Minute, key.String()+" Available", func(owners map[ownerKey]*ownerState) bool {
			state, ok := owners[key]
			return ok && state.available
		}); err != nil {
			return s, err
		}
		state := e.tracker.state(key)
		toObjects = append(toObjects, state.allObjectsAt().Sub(started))
		toAvailable = append(toAvailable, state.availableAt.Sub(started))
		objectCounts[len(state.objects)]++
	}
	objects, available := milliseconds(toObjects), milliseconds(toAvailable)
	s.rows = []row{
		{figure: "create → every object, p50", values: []float64{percentile(objects, 50)}, unit: unitMilliseconds, target: below(100), before: "221 ms", ifMissed: convergenceMissed},
		{figure: "create → every object, p99", values: []float64{percentile(objects, 99)}, unit: unitMilliseconds, target: below(300), before: "719 ms", ifMissed: convergenceMissed},
		{figure: "create → Available, p50", values: []float64{percentile(available, 50)}, unit: unitMilliseconds},
		{figure: "create → Available, p99", values: []float64{percentile(available, 99)}, unit: unitMilliseconds},
	}
	s.notes = append(s.notes, fmt.Sprintf("Objects per scheduler when it turned Available: %s.", countsText(objectCounts)),
		fmt.Sprintf("Slowest create → every object: %s; fastest %s.", unitMilliseconds.format(slices.Max(objects)), unitMilliseconds.format(slices.Min(objects))))
	return s, e.clean(ctx, convergenceNamespace)
}

// convergenceMissed explains a missed convergence target.
const convergenceMissed = "A new scheduler's objects take three round trips to the API server, one after another: the objects " +
	"pods need, beside the finalizer patch (concurrent creates; a create proves the name free, so no name is read first), the " +
	"bindings, which the API server checks against the Role they bind, and the Deployment, whose pods need all of them. On this " +
	"machine each round trip waits on an API server and etcd that share 2 cores with kwok, the harness and up to 49 running " +
	"kube-scheduler processes renewing their Leases, and p99 of 50 samples is the single slowest: the load average in the line " +
	"above says how much else ran."

// slowPrometheusMissed explains a missed target of the slow-prometheus benchmark.
const slowPrometheusMissed = "A new scheduler's objects take three round trips to the API server, one after another (the objects pods " +
	"need beside the finalizer patch, the bindings, the Deployment), and a SecondaryScheduler just created goes before the echoes of " +
	"earlier writes in the operator's queue. Here the earlier schedulers' progress (their Deployments, pods made Ready at once, status " +
	"writes and Events) and the 10 load-aware ones keep both cores busy: in a run of 2026-11-28 the machine's processes used 2.2 cores " +
	"over its 15 s (kube-apiserver 12.4 CPU s, the operator 5.8, etcd 3.8), and the API server's audit log showed each of the " +
	"operator's requests taking 40 to 130 ms in it, against 5 to 20 ms in the convergence benchmark. Three such round trips are the " +
	"figure; what is left is the API server's work on a saturated machine."

// countsText writes how many schedulers had each object count, "10 (50 schedulers)".
func countsText(counts map[int]int) string {
	text := ""
	for _, count := range slices.Sorted(maps.Keys(counts)) {
		if text != "" {
			text += ", "
		}
		text += fmt.Sprintf("%d (%d schedulers)", count, counts[count])
	}
	return text
}
