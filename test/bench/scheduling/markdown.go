package scheduling

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The targets: at least three times upstream's throughput, with at most 10% more
// nodes than the ideal.
const (
	targetRatio          = 3.0
	targetNodesOverIdeal = 1.1
)

// ThroughputMet is whether ours schedules at least targetRatio times as fast as upstream.
func (r *Result) ThroughputMet() bool { return r.Ratio() >= targetRatio }

// PackingMet is whether ours used at most 1.1 times the ideal number of nodes.
func (r *Result) PackingMet() bool {
	return r.Ours.NodesUsed <= targetNodesOverIdeal*float64(r.IdealNodes)
}

// Markdown is the benchmark's section of docs/benchmarks.md: what was measured and how, a
// table of both configurations, the ratio, the targets and whether they are met, every
// run, and the plot.
func (r *Result) Markdown() string {
	o := r.Options
	var b strings.Builder
	fmt.Fprintf(&b, "## Scheduling throughput of what we render\n\n")
	fmt.Fprintf(&b, "**What.** The real kube-scheduler binary (%s) run with the configuration `internal/render` renders "+
		"for a `BinPacking` SecondaryScheduler (client QPS 500 / burst 1000, `percentageOfNodesToScore: 100`, "+
		"NodeResourcesFit `MostAllocated` with weights cpu 1 and memory 1, BalancedAllocation and default topology spreading off), "+
		"against the same binary with upstream's defaults: a KubeSchedulerConfiguration with only a profile of the same "+
		"`schedulerName` (client QPS 50 / burst 100, adaptive node sampling, which scores %d of %d nodes, and the default scoring, "+
		"`LeastAllocated` and BalancedAllocation). Each elects its leader on a Lease of its own.",
		r.SchedulerVersion, sampledNodes(o.Nodes), o.Nodes)
	if len(o.SchedulerArgs) > 0 {
		fmt.Fprintf(&b, " Both ran with the extra flags `%s`.", strings.Join(o.SchedulerArgs, " "))
	}
	fmt.Fprintf(&b, "\n\n**How.** A kwok cluster (`hack/local-cluster.sh`) and %d nodes of the benchmark's own, of %s, %s memory "+
		"and %d pods each; %d pods of %dm CPU (no memory) for the scheduler. In a run the scheduler is started and, once it holds "+
		"its Lease and answers `/readyz`, the pods are created. Throughput is pods bound / time from the first create to the last "+
		"bind; a pod's bind latency runs from the start of its create request to the watch event that shows its `spec.nodeName`, "+
		"both on the benchmark's monotonic clock (the API server's timestamps have whole seconds only). Between runs the scheduler "+
		"is stopped and the pods deleted. %d repetition(s) of the pair, alternating which goes first; figures are medians. "+
		"Measured on %d cores shared with the control plane (and whatever else ran), starting %s.\n\n",
		o.Nodes, formatMilliCPU(o.NodeMilliCPU), o.NodeMemory, o.PodsPerNode, o.Pods, o.PodMilliCPU,
		o.Repetitions, r.Cores, r.Started.UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "**So that a run measures the scheduler**, whose cores the API server, etcd, the controller manager, the cluster's own "+
		"kube-scheduler and kwok share, the same for both configurations:\n\n")
	fmt.Fprintf(&b, "- *No kubelet work during a run.* The nodes are not kwok's: nothing marks the bound pods Running, as in upstream's "+
		"`scheduler_perf`, which runs no kubelet. With kwok's, each pod cost the API server a status write, and more writes once "+
		"deleted, and renewing the nodes' Leases %d writes every 50 s: on a real cluster, kubelets on other machines do that work. The "+
		"benchmark renews the nodes' Leases itself before each run, not during one, so that the node lifecycle controller keeps "+
		"them Ready, and checks after each run that every node still is.\n", o.Nodes)
	fmt.Fprintf(&b, "- *Protobuf.* The benchmark's client speaks protobuf, which the API server encodes and decodes for less CPU "+
		"than JSON, with no client-side rate limit. %s\n", contentTypesText(r.Runs))
	fmt.Fprintf(&b, "- %s\n", createWorkersText(o.CreateWorkers))
	fmt.Fprintf(&b, "- *A settled machine.* Each run starts once fewer than %.1f of the machine's cores are busy over a second "+
		"(the cluster done with creating the nodes or deleting the previous run's pods), after at most %.0f s: the runs use every "+
		"core, and what else runs takes from them. The last reading is in the table of runs; the runs that started on a busier "+
		"machine are named below the targets.\n\n", settledCores, settleTimeout.Seconds())
	fmt.Fprintf(&b, "The ideal is %d nodes: the larger of the CPU bound, ceil(%d × %dm / %s) = %d, and the pod-count bound, "+
		"ceil(%d / %d) = %d.\n\n", r.IdealNodes, o.Pods, o.PodMilliCPU, formatMilliCPU(o.NodeMilliCPU),
		IdealNodes(o.Pods, o.PodMilliCPU, o.NodeMilliCPU, 0), o.Pods, o.PodsPerNode, IdealNodes(o.Pods, 0, 0, o.PodsPerNode))

	fmt.Fprintf(&b, "| configuration | pods/s | bind latency p50 | bind latency p99 | nodes used (ideal %d) |\n", r.IdealNodes)
	fmt.Fprintf(&b, "| --- | ---: | ---: | ---: | ---: |\n")
	summaries := []Summary{r.Ours, r.Upstream}
	if r.OursRouted.Runs > 0 {
		summaries = append(summaries, r.OursRouted)
	}
	for _, summary := range summaries {
		fmt.Fprintf(&b, "| %s%s | %.1f | %s | %s | %s |\n", summary.Config.Description(), incomplete(summary), summary.PodsPerSecond,
			formatSeconds(summary.LatencyP50), formatSeconds(summary.LatencyP99), formatCount(summary.NodesUsed))
	}
	if r.OursRouted.Runs > 0 {
		fmt.Fprintf(&b, "\nRouted: the same scheduler, its pods naming no scheduler, given its name as the API server creates them by the "+
			"routing policy `internal/render` renders for a route of the benchmark's namespace (what `spec.routing` does). Ratio routed/ours: "+
			"%.2f× pods/s, %.2f× bind latency p99.\n", r.OursRouted.PodsPerSecond/r.Ours.PodsPerSecond,
			float64(r.OursRouted.LatencyP99)/float64(max(r.Ours.LatencyP99, 1)))
	}
	fmt.Fprintf(&b, "\n| target | measured | met |\n| --- | --- | --- |\n")
	fmt.Fprintf(&b, "| throughput ≥ %.0f× upstream defaults | %.2f× | %s |\n", targetRatio, r.Ratio(), yesNo(r.ThroughputMet()))
	fmt.Fprintf(&b, "| nodes used ≤ %.1f× the ideal (%d) | %s (%.2f×) | %s |\n\n", targetNodesOverIdeal, r.IdealNodes,
		formatCount(r.Ours.NodesUsed), r.Ours.NodesUsed/float64(max(r.IdealNodes, 1)), yesNo(r.PackingMet()))
	for _, note := range []string{r.creationNote(), r.busyNote()} {
		if note != "" {
			b.WriteString(note + "\n\n")
		}
	}
	if r.OursBacklog.Runs > 0 {
		fmt.Fprintf(&b, "With a backlog (all pods created before the scheduler starts; throughput is the pods bound after the first / "+
			"time from the first bind to the last, so creating pods does not set the pace):\n\n")
		fmt.Fprintf(&b, "| configuration | pods/s | nodes used (ideal %d) |\n| --- | ---: | ---: |\n", r.IdealNodes)
		for _, summary := range []Summary{r.OursBacklog, r.UpstreamBacklog} {
			fmt.Fprintf(&b, "| %s%s | %.1f | %s |\n", summary.Config.Description(), incomplete(summary), summary.PodsPerSecond,
				formatCount(summary.NodesUsed))
		}
		fmt.Fprintf(&b, "\nRatio ours/upstream with a backlog: %.2f×.\n\n", r.BacklogRatio())
	}

	fmt.Fprintf(&b, "![Bound pods over time, each configuration's median run](%s)\n\n", o.PlotLink)
	fmt.Fprintf(&b, "Every run (durations: first create, or with a backlog first bind, to last bind; busy cores: the machine's in the "+
		"second before the run, once settled):\n\n")
	fmt.Fprintf(&b, "| run | configuration | pods fed | pods bound | duration | creating took | pods/s | p50 | p99 | nodes used | busy cores before |\n")
	fmt.Fprintf(&b, "| ---: | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, run := range r.Runs {
		p50, p99 := formatSeconds(run.LatencyP50), formatSeconds(run.LatencyP99)
		if run.Mode == Backlog {
			p50, p99 = "", ""
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %d of %d | %s | %s | %.1f | %s | %s | %d | %s |\n", run.Repetition, run.Config.Description(), run.Mode,
			run.Bound, run.Pods, formatSeconds(run.Duration), formatSeconds(run.Creating), run.PodsPerSecond, p50, p99, run.NodesUsed,
			formatBusy(run.BusyBefore))
	}
	return b.String()
}

// createWorkersText says how many create requests were in flight, and why the default.
func createWorkersText(workers int) string {
	text := fmt.Sprintf("*%d create requests in flight.* ", workers)
	if workers != defaultCreateWorkers {
		text += fmt.Sprintf("Chosen for this benchmark, against a default of %d: ", defaultCreateWorkers)
	}
	return text + fmt.Sprintf("Creating pods is limited by the API server, not by the requests in flight: on two cores, "+
		"8 to 64 in flight created them at rates within the runs' noise of each other, each request waiting the longer the "+
		"more there were. %d keep the API server busy and add little to bind latencies, which count from the start of each "+
		"create request.", defaultCreateWorkers)
}

// contentTypesText says what the schedulers' clients spoke, from the configuration each
// logged (Measurement.ContentType).
func contentTypesText(runs []Measurement) string {
	spoken := map[Config][]string{}
	for _, run := range runs {
		if !slices.Contains(spoken[run.Config], run.ContentType) {
			spoken[run.Config] = append(spoken[run.Config], run.ContentType)
		}
	}
	describe := func(types []string) string {
		quoted := make([]string, len(types))
		for i, contentType := range types {
			quoted[i] = "`" + contentType + "`"
			if contentType == "" {
				quoted[i] = "(not logged)"
			}
		}
		return strings.Join(quoted, " or ")
	}
	ours, upstream := describe(spoken[Ours]), describe(spoken[Upstream])
	if slices.Contains(spoken[Ours], "") || slices.Contains(spoken[Upstream], "") {
		return fmt.Sprintf("What the schedulers' clients spoke is not known for every run: ours %s, upstream's defaults %s "+
			"(a scheduler logs the configuration it uses at its start from -v=2 on).", ours, upstream)
	}
	if ours == upstream {
		return fmt.Sprintf("Both schedulers' clients spoke %s, by the configuration each logged at its start; "+
			"neither configuration file sets `clientConnection.contentType`, so that is kube-scheduler's default.", ours)
	}
	return fmt.Sprintf("The schedulers' clients spoke %s (ours) and %s (upstream's defaults), by the configuration each logged at its start.",
		ours, upstream)
}

func incomplete(summary Summary) string {
	if summary.Complete {
		return ""
	}
	return " (not every pod bound in time: see the runs)"
}

// creationNote says when creating the pods took most of ours' runs: then the machine's
// API server, not the scheduler, set ours' pace, and the ratio understates it.
func (r *Result) creationNote() string {
	run := r.medianRun(Ours)
	if run == nil || run.Duration == 0 || run.Creating < run.Duration*8/10 {
		return ""
	}
	return fmt.Sprintf("Creating the pods took %s of ours' %s (median run): the API server's pace of creating pods on this "+
		"machine, not the scheduler, bounds ours' figure, so the ratio is a lower bound.",
		formatSeconds(run.Creating), formatSeconds(run.Duration))
}

// busyNote names the runs before which the machine did not settle (see settle): others
// kept it busy, and their figures may be lower than the machine allows.
func (r *Result) busyNote() string {
	var busy []string
	for _, run := range r.Runs {
		if run.BusyBefore >= settledCores {
			busy = append(busy, fmt.Sprintf("%d of %s (%s, %.2f cores)", run.Repetition, run.Config.Description(), run.Mode, run.BusyBefore))
		}
	}
	if len(busy) == 0 {
		return ""
	}
	return fmt.Sprintf("Other processes kept the machine busy (%.1f cores or more after %.0f s of waiting) before run %s: the runs "+
		"shared its cores with them, so those figures may be lower than the machine allows; ours' the most, as its runs use "+
		"every core, where upstream's client rate limit leaves some idle.", settledCores, settleTimeout.Seconds(), strings.Join(busy, "; "))
}

func formatBusy(cores float64) string {
	if cores < 0 {
		return "unknown"
	}
	return fmt.Sprintf("%.2f", cores)
}

// sampledNodes is how many of n feasible nodes kube-scheduler scores by default: an
// adaptive 50% - n/125 (at least 5%), and never fewer than 100 nodes.
func sampledNodes(n int) int {
	const minNodes = 100
	if n < minNodes {
		return n
	}
	percentage := max(50-n/125, 5)
	return max(n*percentage/100, minNodes)
}

func formatSeconds(d time.Duration) string {
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func formatMilliCPU(milli int) string {
	if milli%1000 == 0 {
		return fmt.Sprintf("%d cores", milli/1000)
	}
	return fmt.Sprintf("%dm", milli)
}

// formatCount writes a median count, which is a half for an even number of runs.
func formatCount(count float64) string {
	if count == float64(int(count)) {
		return fmt.Sprintf("%d", int(count))
	}
	return fmt.Sprintf("%.1f", count)
}

func yesNo(met bool) string {
	if met {
		return "yes"
	}
	return "**no**"
}
