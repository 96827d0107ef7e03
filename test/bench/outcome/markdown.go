package outcome

import (
	"fmt"
	"math"
	"strings"
	"time"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// The targets of the issue that asked for this benchmark: figures, not tests.
const (
	// targetPackingRatio: TargetLoadPacking at 40 % uses at most this many times the ideal.
	targetPackingRatio = 1.2
	// defaultSpreadRatio: the default scheduler uses at least this many times the ideal.
	defaultSpreadRatio = 2.0
	// targetDuration: the whole comparison runs in less.
	targetDuration = 15 * time.Minute
)

// targetPercent is a TargetLoadPacking arm's target utilisation in percent, 0 for others.
func (a Arm) targetPercent() float64 {
	if a.Profile == nil || a.Profile.TargetLoadPacking == nil || a.Profile.TargetLoadPacking.TargetUtilization == nil {
		return 0
	}
	return float64(*a.Profile.TargetLoadPacking.TargetUtilization)
}

// end is the moment the final figures are taken at: the run's end.
func (r *Result) end() time.Duration { return r.Options.RunFor }

// Summary is arm's outcome.
func (r *Result) Summary(arm Arm) Summary {
	return Summarise(r.Records[arm.Key], r.Workload, r.Options.Threshold, r.Options.FinalWindow, r.Options.SampleInterval)
}

// Ideal is the fewest nodes that hold the real load present at the end under target.
func (r *Result) Ideal(target float64) int {
	return IdealNodes(r.Workload, r.end(), r.Options.Size, target)
}

func (r *Result) arm(key string) Arm {
	for _, arm := range r.Arms {
		if arm.Key == key {
			return arm
		}
	}
	return Arm{Key: key}
}

// Markdown is the benchmark's section of the report, linking the plots under link (a
// directory, relative to the report).
func (r *Result) Markdown(link string) string {
	var b strings.Builder
	opts := r.Options
	use, requests := RealLoad(r.Workload, r.end())
	ideal40, ideal60 := r.Ideal(0.4), r.Ideal(0.6)
	stay := 0
	counts := map[Class]int{}
	for _, pod := range r.Workload {
		counts[pod.Class]++
		if pod.PresentAt(r.end()) {
			stay++
		}
	}
	fmt.Fprintf(&b, "## outcome: what each profile gains, on a simulated cluster with real load\n\n")
	fmt.Fprintf(&b, "**What.** The same workload placed %d ways at once, each on a pool of its own of %d kwok nodes of %s CPU and %s memory: "+
		"%d pods arriving over %v (uniformly, from seed %d), %d of them deleted after %v to %v, so that %d are there at the end. "+
		"Pods request CPU and memory and use something else: %d over-requested (using a quarter to a half of their CPU request), "+
		"%d under-requested (1.2 to 2 times it), %d bursty (30 %% of it, and twice it one minute in four) and %d that request nothing (200m to 800m). "+
		"At the end they use %.1f cores on average and request %.1f.\n\n",
		len(r.Arms), opts.NodesPerPool, formatCores(opts.Size.CPUMillis), formatGiB(opts.Size.MemoryBytes),
		len(r.Workload), opts.Shape.ArrivalWindow, opts.Seed, departing(r.Workload, opts.RunFor), opts.Shape.MinLifetime, opts.Shape.MaxLifetime, stay,
		counts[OverRequested], counts[UnderRequested], counts[Bursty], counts[NoRequests], use, requests)
	fmt.Fprintf(&b, "**How.** A closed loop of real parts: the benchmark's exporter computes each node's CPU and memory utilisation from the pods bound to it, "+
		"as the series the operator's recording rules define (`instance:node_cpu:ratio`, `instance:node_memory_utilisation:ratio`); "+
		"Debian's Prometheus scrapes it every second; each SecondaryScheduler runs the real scheduler-plugins kube-scheduler (as a process, through the operator), "+
		"whose load-watcher queries that Prometheus every minute for the averages over the last 15 minutes, which Trimaran reads every 30 s; "+
		"its placements change the load it reads next. The default scheduler is the cluster's own kube-scheduler. "+
		"The loop runs %v: every pod has arrived after %v, and the rest lets the last placements reach load-watcher's averages. "+
		"Before it, Prometheus served the idle nodes for %v while the schedulers started, which the 15-minute averages include, as they include a real cluster's idle past. "+
		"Every node's utilisation is sampled every %v; the final figures average each node over the last %v. "+
		"Two more TargetLoadPacking 40 %% schedulers read a second Prometheus, which is stopped from minute %s to minute %s.\n\n",
		opts.RunFor, opts.Shape.ArrivalWindow, r.LeadIn.Round(time.Second), opts.SampleInterval, opts.FinalWindow, formatMinutes(opts.OutageFrom), formatMinutes(opts.OutageTo))
	fmt.Fprintf(&b, "**The ideal** is the fewest nodes whose CPU holds the pods' mean real use at the end at or under the target, "+
		"a bound for any placement that keeps every node under the target on average (pods are not divisible, and bursts go above it): "+
		"⌈%.1f cores / (%s × 40 %%)⌉ = **%d nodes** (at 60 %%: %d). "+
		"Every scheduler here also honours requests (NodeResourcesFit filters by them), which need at least %d nodes.\n\n",
		use, formatCores(opts.Size.CPUMillis), ideal40, ideal60, RequestBound(r.Workload, r.end(), opts.Size))
	b.WriteString("| placement | nodes used | peak | × ideal (40 %) | mean CPU | p95 | max | node-minutes > " +
		formatPercent(opts.Threshold) + " | nodes ever > " + formatPercent(opts.Threshold) + " | not placed | bind p50 | bind p99 |\n")
	b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, arm := range r.Arms {
		s := r.Summary(arm)
		fmt.Fprintf(&b, "| %s | %d | %d | %.2f× | %s | %s | %s | %.1f | %d | %d | %s | %s |\n", arm.Title, s.NodesUsed, s.PeakNodesUsed,
			float64(s.NodesUsed)/float64(ideal40), formatPercent(s.MeanUtilisation), formatPercent(s.P95Utilisation), formatPercent(s.MaxUtilisation),
			s.NodeMinutesAbove, s.NodesEverAbove, s.Unplaced, formatLatency(s.LatencyP50), formatLatency(s.LatencyP99))
	}
	b.WriteString("\n")
	r.writeTargets(&b, ideal40)
	r.writeOutage(&b)
	r.writeArithmetic(&b)
	r.writeChoice(&b)
	fmt.Fprintf(&b, "![Each node's CPU utilisation over time, per placement](%s%s)\n\n", link, UtilisationPlot)
	fmt.Fprintf(&b, "![Each node's final CPU utilisation, per placement](%s%s)\n", link, DistributionPlot)
	return b.String()
}

// writeTargets writes the targets' table.
func (r *Result) writeTargets(b *strings.Builder, ideal int) {
	tlp, defaults := r.Summary(r.arm("tlp40")), r.Summary(r.arm("default"))
	tlpRatio, defaultRatio := float64(tlp.NodesUsed)/float64(ideal), float64(defaults.NodesUsed)/float64(ideal)
	b.WriteString("| target | measured | met |\n| --- | --- | --- |\n")
	fmt.Fprintf(b, "| TargetLoadPacking 40 %% uses ≤ %.1f× the ideal | %d nodes, %.2f× | %s |\n", targetPackingRatio, tlp.NodesUsed, tlpRatio, yesNo(tlpRatio <= targetPackingRatio))
	fmt.Fprintf(b, "| TargetLoadPacking 40 %%: no node-minute above %s | %.1f | %s |\n", formatPercent(r.Options.Threshold), tlp.NodeMinutesAbove, yesNo(tlp.NodeMinutesAbove == 0))
	fmt.Fprintf(b, "| the default scheduler uses ≥ %.0f× the ideal | %d nodes, %.2f× | %s |\n", defaultSpreadRatio, defaults.NodesUsed, defaultRatio, yesNo(defaultRatio >= defaultSpreadRatio))
	fmt.Fprintf(b, "| the whole comparison takes < %v | %v | %s |\n\n", targetDuration, r.Duration.Round(time.Second), yesNo(r.Duration < targetDuration))
}

// writeOutage writes what the outage arms' schedulers did while their Prometheus was down.
func (r *Result) writeOutage(b *strings.Builder) {
	opts := r.Options
	b.WriteString("**The failsafe in the loop.** ")
	for _, arm := range r.Arms {
		if !arm.Outage {
			continue
		}
		during, after := r.riskBetween(arm, opts.OutageFrom, opts.OutageTo), r.riskBetween(arm, opts.OutageTo, opts.RunFor+time.Nanosecond)
		fmt.Fprintf(b, "With whenUnavailable %s, %s; node-minutes above %s: %.1f while Prometheus was down, %.1f after. ",
			arm.Profile.Metrics.WhenUnavailable, r.scoringText(arm), formatPercent(opts.Threshold), during, after)
	}
	b.WriteString("\n\n")
}

// scoringText says when arm's scheduler scored by requests, by its status' samples.
func (r *Result) scoringText(arm Arm) string {
	var spans []string
	samples := r.Records[arm.Key].Samples
	scoring := r.Scoring[arm.Key]
	from := time.Duration(-1)
	for i := range min(len(samples), len(scoring)) {
		byRequests := scoring[i] == v1.ScoringByRequests
		switch {
		case byRequests && from < 0:
			from = samples[i].Elapsed
		case !byRequests && from >= 0:
			spans = append(spans, formatMinutes(from)+" to "+formatMinutes(samples[i].Elapsed))
			from = -1
		}
	}
	if from >= 0 {
		spans = append(spans, formatMinutes(from)+" to the end")
	}
	if len(spans) == 0 {
		return "status said it scored by load throughout"
	}
	return "status said it scored by requests from minute " + strings.Join(spans, " and from minute ")
}

// riskBetween is the node-minutes above the threshold of arm's samples in [from, to).
func (r *Result) riskBetween(arm Arm, from, to time.Duration) float64 {
	minutes := 0.0
	for _, sample := range r.Records[arm.Key].Samples {
		if sample.Elapsed < from || sample.Elapsed >= to {
			continue
		}
		for _, cpu := range sample.CPU {
			if cpu > r.Options.Threshold {
				minutes += r.Options.SampleInterval.Minutes()
			}
		}
	}
	return minutes
}

// departing counts the pods deleted within runFor.
func departing(workload []Pod, runFor time.Duration) int {
	n := 0
	for _, pod := range workload {
		if pod.Lifetime > 0 && pod.Arrival+pod.Lifetime < runFor {
			n++
		}
	}
	return n
}

func formatCores(millis int64) string {
	if millis%1000 == 0 {
		return fmt.Sprintf("%d cores", millis/1000)
	}
	return fmt.Sprintf("%.1f cores", float64(millis)/1000)
}

func formatGiB(bytes int64) string { return fmt.Sprintf("%d GiB", bytes>>30) }

func formatPercent(ratio float64) string { return fmt.Sprintf("%.0f %%", 100*ratio) }

func formatMinutes(d time.Duration) string {
	if d%time.Minute == 0 {
		return fmt.Sprintf("%d", int(d.Minutes()))
	}
	return fmt.Sprintf("%.1f", d.Minutes())
}

func formatLatency(d time.Duration) string {
	if d == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f s", d.Seconds())
}

func yesNo(met bool) string {
	if met {
		return "yes"
	}
	return "**no**"
}

// defaultRequestlessMillis is what TargetLoadPacking predicts of a container that requests
// no CPU and sets no limit: its defaultRequests.cpu, which the operator leaves at the
// plugin's default.
const defaultRequestlessMillis = 1000

// predictedMillis is what TargetLoadPacking predicts pod uses, with multiplier: a
// container's CPU limit (the workload sets none), else its request times the multiplier,
// else defaultRequests.cpu, as the plugin's PredictUtilisation does.
func predictedMillis(pod Pod, multiplier float64) float64 {
	if pod.CPURequestMillis == 0 {
		return defaultRequestlessMillis
	}
	return math.Round(float64(pod.CPURequestMillis) * multiplier)
}

// writeArithmetic explains the figures from the plugins' arithmetic and the workload.
func (r *Result) writeArithmetic(b *strings.Builder) {
	var real, predicted, predictedM1, realRequestless, requestless float64
	for _, pod := range r.Workload {
		if !pod.PresentAt(r.end()) {
			continue
		}
		real += pod.MeanCPUMillis()
		predicted += predictedMillis(pod, 1.5)
		predictedM1 += predictedMillis(pod, 1)
		if pod.CPURequestMillis == 0 {
			realRequestless += pod.MeanCPUMillis()
			requestless++
		}
	}
	if real == 0 {
		return
	}
	b.WriteString("**Why: the arithmetic.** ")
	fmt.Fprintf(b, "TargetLoadPacking scores a node by its measured utilisation plus what it predicts the pod will use, "+
		"rising to the target and falling beyond it, and predicts a pod that sets no CPU limit at its request times defaultRequestsMultiplier "+
		"(the operator's default 1; the plugin's own is 1.5), or at defaultRequests.cpu (%dm) when it requests nothing. "+
		"Of the pods here at the end, that prediction is %.1f times what they use (%.1f with multiplier 1.5): ",
		defaultRequestlessMillis, predictedM1/real, predicted/real)
	fmt.Fprintf(b, "a pod placed within the last minute counts at its prediction (Trimaran adds the pods it bound since load-watcher's last fetch, and for 60 s before it), "+
		"so while a node fills, TargetLoadPacking 40 %% sees it at 40 %% when its pods use about %.0f %% of it (%.0f %% with 1.5). ", 40/(predictedM1/real), 40/(predicted/real))
	if requestless > 0 {
		fmt.Fprintf(b, "A pod that requests nothing is predicted at %dm whatever the multiplier, where these use %.0fm on average: "+
			"it goes to an emptier node than its real use needs, and the default scheduler counts it as 100m. ",
			defaultRequestlessMillis, realRequestless/requestless)
	}
	fmt.Fprintf(b, "Once load-watcher has fetched again, the same pods count by their measured use, averaged over the last 15 minutes: "+
		"at the end of this run that window holds the %v of idle lead-in and the whole run, so a pod placed 4 minutes before counts at about %.0f %% of its use, "+
		"and the node looks emptier than it is: TargetLoadPacking then fills it further. "+
		"BinPacking and LowRiskOverCommitment are bound by requests (NodeResourcesFit), which here are %.1f times the real use.\n\n",
		r.LeadIn.Round(time.Second), 100*4/math.Min(15, (r.Options.RunFor+r.LeadIn).Minutes()), r.requestRatio())
}

// requestRatio is what the pods here at the end request over what they use.
func (r *Result) requestRatio() float64 {
	use, requests := RealLoad(r.Workload, r.end())
	if use == 0 {
		return 0
	}
	return requests / use
}

// writeChoice says which placement serves which goal, by this run's figures: the fewest
// nodes at any risk, and the fewest with no node above the threshold.
func (r *Result) writeChoice(b *strings.Builder) {
	var fewest, fewestSafe *Arm
	var fewestSummary, fewestSafeSummary Summary
	for i := range r.Arms {
		arm := &r.Arms[i]
		if arm.Outage {
			continue
		}
		summary := r.Summary(*arm)
		if fewest == nil || summary.NodesUsed < fewestSummary.NodesUsed {
			fewest, fewestSummary = arm, summary
		}
		if summary.NodeMinutesAbove == 0 && (fewestSafe == nil || summary.NodesUsed < fewestSafeSummary.NodesUsed) {
			fewestSafe, fewestSafeSummary = arm, summary
		}
	}
	if fewest == nil {
		return
	}
	threshold := formatPercent(r.Options.Threshold)
	b.WriteString("**What to choose.** ")
	fmt.Fprintf(b, "For the fewest nodes, whatever the risk: %s (%d nodes; %.1f node-minutes above %s, on %d nodes). ",
		fewest.Title, fewestSummary.NodesUsed, fewestSummary.NodeMinutesAbove, threshold, fewestSummary.NodesEverAbove)
	if fewestSafe != nil {
		fmt.Fprintf(b, "For the fewest nodes with none above %s: %s (%d nodes, the hottest at %s at the end). ",
			threshold, fewestSafe.Title, fewestSafeSummary.NodesUsed, formatPercent(fewestSafeSummary.MaxUtilisation))
	}
	b.WriteString("Requests bound every profile here (NodeResourcesFit filters by them): a load-aware profile packs beyond what requests allow only where pods request less than they use. " +
		"TargetLoadPacking's target is the knob between nodes and headroom; its multiplier should be what pods use over what they request, " +
		"which the API holds to 1 at least: 1 is right where pods request more than they use, as here. Pods that set CPU limits are predicted at their limits instead. " +
		"While Prometheus is away, whenUnavailable ScoreByRequests packs by requests, as BinPacking does, with its risk; " +
		"UseLastMetrics keeps the last load it read and adds the pods placed since at their prediction until Trimaran's cache drops them " +
		"(every 5 minutes, those placed over a minute before), after which it would stack pods on nodes whose load it no longer sees: compare their rows above.\n\n")
}
