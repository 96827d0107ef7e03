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
