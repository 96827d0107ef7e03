package outcome

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
)

func TestGenerateIsTheSameForTheSameSeed(t *testing.T) {
	first, again, other := Generate(24, DefaultShape), Generate(24, DefaultShape), Generate(25, DefaultShape)
	if diff := cmp.Diff(first, again); diff != "" {
		t.Fatalf("the same seed gave another workload (-first +again):\n%s", diff)
	}
	if cmp.Equal(first, other) {
		t.Fatal("another seed gave the same workload")
	}
}

// The workload is what the report says it is: its pods in arrival order within the window,
// each class's use related to its request as documented, and the shares near the drawn ones.
func TestGenerateDrawsTheDocumentedWorkload(t *testing.T) {
	shape := Shape{Pods: 4000, ArrivalWindow: 6 * time.Minute, DepartingFraction: 0.25, MinLifetime: 2 * time.Minute, MaxLifetime: 4 * time.Minute}
	pods := Generate(7, shape)
	if len(pods) != shape.Pods {
		t.Fatalf("%d pods, want %d", len(pods), shape.Pods)
	}
	counts, departing := map[Class]int{}, 0
	for i, pod := range pods {
		counts[pod.Class]++
		if pod.Arrival < 0 || pod.Arrival >= shape.ArrivalWindow || (i > 0 && pod.Arrival < pods[i-1].Arrival) {
			t.Fatalf("pod %d arrives at %v: not in order within the window", i, pod.Arrival)
		}
		if pod.Lifetime != 0 {
			departing++
			if pod.Lifetime < shape.MinLifetime || pod.Lifetime > shape.MaxLifetime {
				t.Fatalf("pod %s lives %v, outside [%v, %v]", pod.Name, pod.Lifetime, shape.MinLifetime, shape.MaxLifetime)
			}
		}
		ratio := float64(pod.CPUUseMillis) / float64(pod.CPURequestMillis)
		switch pod.Class {
		case OverRequested:
			if ratio < 0.24 || ratio > 0.51 {
				t.Fatalf("over-requested pod %s uses %.2f of its request", pod.Name, ratio)
			}
		case UnderRequested:
			if ratio < 1.19 || ratio > 2.01 {
				t.Fatalf("under-requested pod %s uses %.2f of its request", pod.Name, ratio)
			}
		case Bursty:
			if math.Abs(ratio-0.3) > 0.01 || pod.BurstCPUMillis != 2*pod.CPURequestMillis {
				t.Fatalf("bursty pod %s idles at %.2f and bursts to %d of %d", pod.Name, ratio, pod.BurstCPUMillis, pod.CPURequestMillis)
			}
		case NoRequests:
			if pod.CPURequestMillis != 0 || pod.MemoryRequestBytes != 0 || pod.CPUUseMillis < 200 || pod.CPUUseMillis > 800 {
				t.Fatalf("pod %s without requests: %+v", pod.Name, pod)
			}
		}
	}
	for _, class := range classes {
		share := float64(counts[class.value]) / float64(len(pods))
		if math.Abs(share-class.weight) > 0.03 {
			t.Errorf("class %s: share %.3f, drawn with %.2f", class.value, share, class.weight)
		}
	}
	if share := float64(departing) / float64(len(pods)); math.Abs(share-shape.DepartingFraction) > 0.03 {
		t.Errorf("departing share %.3f, want about %.2f", share, shape.DepartingFraction)
	}
}

func TestBurstyPodUse(t *testing.T) {
	pod := Pod{Class: Bursty, CPUUseMillis: 300, BurstCPUMillis: 2000, BurstPeriod: 4 * time.Minute, BurstLength: time.Minute, BurstPhase: 30 * time.Second}
	for _, tc := range []struct {
		at   time.Duration
		want int64
	}{
		{0, 2000},                // 30 s into the period: bursting
		{29 * time.Second, 2000}, // 59 s in
		{30 * time.Second, 300},  // a minute in: done
		{3*time.Minute + 29*time.Second, 300},
		{3*time.Minute + 30*time.Second, 2000}, // the next period
	} {
		if got := pod.CPUAt(tc.at); got != tc.want {
			t.Errorf("CPUAt(%v) = %d, want %d", tc.at, got, tc.want)
		}
	}
	if got, want := pod.MeanCPUMillis(), 0.25*2000+0.75*300; math.Abs(got-want) > 1e-9 {
		t.Errorf("MeanCPUMillis = %v, want %v", got, want)
	}
}

// The exporter serves, for every node of the arms asked, the series load-watcher reads,
// with the utilisation of the pods bound to it; a pod unbound or of another arm counts not.
func TestLoadExposition(t *testing.T) {
	workload := []Pod{
		{Name: "a", CPUUseMillis: 4000, MemoryUseBytes: 16 << 30},
		{Name: "b", CPUUseMillis: 2000, MemoryUseBytes: 8 << 30},
		{Name: "c", CPUUseMillis: 8000},
	}
	load := NewLoad(workload, map[string][]string{"one": {"one-1", "one-2"}, "two": {"two-1"}}, DefaultNodeSize)
	load.Bind("one", "a", "a", "one-1")
	load.Bind("one", "b", "b", "one-1")
	load.Bind("one", "c", "c", "one-2")
	load.Bind("two", "c", "c", "two-1")
	load.Bind("one", "not-of-the-workload", "not-of-the-workload", "one-2")
	load.Unbind("one", "c")
	text := load.Exposition([]string{"one"}, 0)
	cpu, memory := metricsprobe.Series[0], metricsprobe.Series[1]
	for _, line := range []string{
		cpu + `{instance="one-1"} 0.375`, cpu + `{instance="one-2"} 0`,
		memory + `{instance="one-1"} 0.375`, memory + `{instance="one-2"} 0`,
	} {
		if !strings.Contains(text, line+"\n") {
			t.Errorf("exposition lacks %q:\n%s", line, text)
		}
	}
	if strings.Contains(text, "two-1") {
		t.Errorf("exposition of arm one serves arm two's node:\n%s", text)
	}
	if !slices.Equal(metricsprobe.Series, []string{"instance:node_cpu:ratio", "instance:node_memory_utilisation:ratio"}) {
		t.Errorf("the series load-watcher reads changed (%v): Exposition names them by position", metricsprobe.Series)
	}
}

func TestSummarise(t *testing.T) {
	second := 5 * time.Second
	record := NewRecord()
	record.Samples = []Sample{
		{Elapsed: 0, CPU: map[string]float64{"n1": 0, "n2": 0, "n3": 0}, Pods: map[string]int{}},
		{Elapsed: second, CPU: map[string]float64{"n1": 0.9, "n2": 0.2, "n3": 0}, Pods: map[string]int{"n1": 2, "n2": 1}},
		{Elapsed: 2 * second, CPU: map[string]float64{"n1": 0.5, "n2": 0.3, "n3": 0}, Pods: map[string]int{"n1": 1, "n2": 1}},
		{Elapsed: 3 * second, CPU: map[string]float64{"n1": 0.7, "n2": 0.5, "n3": 0}, Pods: map[string]int{"n1": 1, "n2": 1}},
	}
	workload := []Pod{{Name: "p1"}, {Name: "p2"}, {Name: "p3"}, {Name: "never-created"}}
	record.Created = map[string]time.Duration{"p1": 0, "p2": time.Second, "p3": 2 * time.Second}
	record.Bound = map[string]time.Duration{"p1": 100 * time.Millisecond, "p2": 1500 * time.Millisecond}
	got := Summarise(record, workload, 0.8, 2*second, second)
	want := Summary{
		NodesUsed: 2, PeakNodesUsed: 2,
		// Over the last two samples: n1 (0.5+0.7)/2 = 0.6, n2 (0.3+0.5)/2 = 0.4.
		MeanUtilisation: 0.5, P95Utilisation: 0.6, MaxUtilisation: 0.6,
		NodeMinutesAbove: second.Minutes(), NodesEverAbove: 1,
		Unplaced:   1,
		LatencyP50: 100 * time.Millisecond, LatencyP99: 500 * time.Millisecond,
		Final: []float64{0.6, 0.4, 0},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-9 })); diff != "" {
		t.Errorf("Summarise (-want +got):\n%s", diff)
	}
}

func TestIdealAndRequestBound(t *testing.T) {
	size := NodeSize{CPUMillis: 10000, MemoryBytes: 10 << 30, Pods: 3}
	workload := []Pod{
		{Name: "a", CPUUseMillis: 3000, CPURequestMillis: 6000, MemoryRequestBytes: 1 << 30},
		{Name: "b", CPUUseMillis: 3000, CPURequestMillis: 6000, MemoryRequestBytes: 1 << 30},
		{Name: "c", CPUUseMillis: 1000, CPURequestMillis: 1000, MemoryRequestBytes: 1 << 30},
		{Name: "gone", CPUUseMillis: 9000, CPURequestMillis: 9000, Lifetime: time.Minute},
		{Name: "late", CPUUseMillis: 9000, CPURequestMillis: 9000, Arrival: time.Hour},
	}
	at := 2 * time.Minute
	if got := IdealNodes(workload, at, size, 0.4); got != 2 { // 7 cores / 4 per node
		t.Errorf("IdealNodes at 40 %% = %d, want 2", got)
	}
	if got := IdealNodes(workload, at, size, 0.8); got != 1 {
		t.Errorf("IdealNodes at 80 %% = %d, want 1", got)
	}
	if got := RequestBound(workload, at, size); got != 2 { // 13 cores of requests
		t.Errorf("RequestBound = %d, want 2", got)
	}
	if use, requests := RealLoad(workload, at); use != 7 || requests != 13 {
		t.Errorf("RealLoad = %v, %v; want 7, 13", use, requests)
	}
}

func TestTimelineDeletesOnlyWithinTheRun(t *testing.T) {
	workload := []Pod{
		{Name: "a", Arrival: time.Minute, Lifetime: time.Minute},
		{Name: "b", Arrival: 2 * time.Minute},
		{Name: "c", Arrival: 3 * time.Minute, Lifetime: 9 * time.Minute},
	}
	events := timeline(workload, 10*time.Minute)
	got := make([]string, 0, len(events))
	for _, e := range events {
		what := "create "
		if e.delete {
			what = "delete "
		}
		got = append(got, what+e.pod.Name+" at "+e.at.String())
	}
	want := []string{"create a at 1m0s", "create b at 2m0s", "delete a at 2m0s", "create c at 3m0s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("timeline (-want +got):\n%s", diff)
	}
}

// Every arm's SecondaryScheduler is one the API accepts in shape: its pool, its own
// scheduler name, and the address given to the load-aware ones only.
func TestArms(t *testing.T) {
	names := map[string]bool{}
	for _, arm := range Arms() {
		if names[arm.SchedulerName()] {
			t.Errorf("scheduler name %s twice", arm.SchedulerName())
		}
		names[arm.SchedulerName()] = true
		scheduler := arm.SecondaryScheduler("http://127.0.0.1:9090")
		if arm.Profile == nil {
			if scheduler != nil || arm.SchedulerName() != "default-scheduler" {
				t.Errorf("arm %s: the default scheduler's arm has a SecondaryScheduler", arm.Key)
			}
			continue
		}
		if scheduler.Spec.NodePool.MatchLabels[PoolLabel] != arm.Key || scheduler.Namespace != arm.Namespace() {
			t.Errorf("arm %s: pool or namespace wrong: %+v", arm.Key, scheduler)
		}
		loadAware := arm.Profile.Type.IsLoadAware()
		if hasAddress := scheduler.Spec.Profile.Metrics != nil && scheduler.Spec.Profile.Metrics.Address != ""; hasAddress != loadAware {
			t.Errorf("arm %s: address given %v, load-aware %v", arm.Key, hasAddress, loadAware)
		}
		if arm.Outage && scheduler.Spec.Profile.Metrics.WhenUnavailable == "" {
			t.Errorf("arm %s: an outage arm without whenUnavailable", arm.Key)
		}
		if arm.Profile.Metrics != nil && arm.Profile.Metrics.Address != "" {
			t.Errorf("arm %s: SecondaryScheduler changed the arm's profile", arm.Key)
		}
	}
	if !slices.Contains(Namespaces(), "outcome-tlp40") || slices.Contains(Namespaces(), "outcome-default") {
		t.Errorf("Namespaces = %v: want every SecondaryScheduler's, not the default scheduler's", Namespaces())
	}
}

// syntheticResult is a run of every arm on 4 nodes: two used, one of them hot.
func syntheticResult() *Result {
	opts := DefaultOptions
	// Its own timings, so that the figures below do not follow the defaults'.
	opts.NodesPerPool, opts.RunFor, opts.OutageFrom, opts.OutageTo = 4, 10*time.Minute, 2*time.Minute, 6*time.Minute
	workload := []Pod{{Name: "p1", CPUUseMillis: 8000, CPURequestMillis: 8000}, {Name: "p2", CPUUseMillis: 1000, CPURequestMillis: 2000}}
	result := &Result{Options: opts, Arms: Arms(), Workload: workload, Records: map[string]*Record{},
		Scoring: map[string][]v1.ScoringMode{}, Duration: 12 * time.Minute}
	for _, arm := range result.Arms {
		record := NewRecord()
		nodes := nodeNames(arm, opts.NodesPerPool)
		for at := time.Duration(0); at <= opts.RunFor; at += opts.SampleInterval {
			sample := Sample{Elapsed: at, CPU: map[string]float64{}, Pods: map[string]int{}}
			for _, node := range nodes {
				sample.CPU[node] = 0
			}
			sample.CPU[nodes[0]], sample.Pods[nodes[0]] = 0.9, 1
			sample.CPU[nodes[1]], sample.Pods[nodes[1]] = 0.2, 1
			record.Samples = append(record.Samples, sample)
			if arm.Outage {
				scoring := v1.ScoringLoadAware
				if at >= 3*time.Minute && at < 7*time.Minute {
					scoring = v1.ScoringByRequests
				}
				result.Scoring[arm.Key] = append(result.Scoring[arm.Key], scoring)
			}
		}
		record.Created = map[string]time.Duration{"p1": 0, "p2": 0}
		record.Bound = map[string]time.Duration{"p1": time.Second, "p2": 2 * time.Second}
		result.Records[arm.Key] = record
	}
	return result
}

func TestMarkdown(t *testing.T) {
	text := syntheticResult().Markdown("")
	for _, want := range []string{
		// 9 cores of real load need ⌈9 / 6.4⌉ = 2 nodes at 40 %; one node is at 90 % in
		// each of the 121 samples, 5 s apart.
		"⌈9.0 cores / (16 cores × 40 %)⌉ = **2 nodes** (at 60 %: 1)",
		"| TargetLoadPacking 40 % | 2 | 2 | 1.00× | 55 % | 90 % | 90 % | 10.1 | 1 | 0 | 1.00 s | 2.00 s |",
		"| TargetLoadPacking 40 % uses ≤ 1.2× the ideal | 2 nodes, 1.00× | yes |",
		"| TargetLoadPacking 40 %: no node-minute above 80 % | 10.1 | **no** |",
		"| the default scheduler uses ≥ 2× the ideal | 2 nodes, 1.00× | **no** |",
		"node-minutes above 80 %: 4.0 while Prometheus was down",
		"| the whole comparison takes < 15m0s | 12m0s | yes |",
		"status said it scored by requests from minute 3 to 7",
		// Every arm of the synthetic run has a node at 90 %: none is without risk.
		"**What to choose.** For the fewest nodes, whatever the risk: default scheduler (2 nodes; 10.1 node-minutes above 80 %, on 1 nodes).",
		"](" + UtilisationPlot + ")",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the report lacks %q:\n%s", want, text)
		}
	}
}

func TestWritePlots(t *testing.T) {
	dir := t.TempDir()
	if err := syntheticResult().WritePlots(dir); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{UtilisationPlot, DistributionPlot} {
		file, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		image, err := png.Decode(file)
		_ = file.Close()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if image.Bounds().Dx() != plotWidth {
			t.Errorf("%s is %d pixels wide, want %d", name, image.Bounds().Dx(), plotWidth)
		}
	}
}

// TargetLoadPacking's prediction of a pod without limits, as its PredictUtilisation:
// request times the multiplier, or defaultRequests.cpu for a pod that requests nothing.
func TestPredictedMillis(t *testing.T) {
	for _, tc := range []struct {
		pod        Pod
		multiplier float64
		want       float64
	}{
		{Pod{CPURequestMillis: 500}, 1.5, 750},
		{Pod{CPURequestMillis: 250}, 1.5, 375},
		{Pod{CPURequestMillis: 500}, 1, 500},
		{Pod{Class: NoRequests, CPUUseMillis: 300}, 1.5, 1000},
		{Pod{Class: NoRequests, CPUUseMillis: 300}, 1, 1000},
	} {
		if got := predictedMillis(tc.pod, tc.multiplier); got != tc.want {
			t.Errorf("predictedMillis(%+v, %v) = %v, want %v", tc.pod, tc.multiplier, got, tc.want)
		}
	}
	// The synthetic workload uses 9 cores and requests 10, none of it requestless: the
	// prediction is 15/9 of the use.
	if text := syntheticResult().Markdown(""); !strings.Contains(text, "that prediction is 1.1 times what they use (1.7 with multiplier 1.5)") {
		t.Errorf("the arithmetic is not explained from the workload:\n%s", text)
	}
}
