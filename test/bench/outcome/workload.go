// Package outcome measures what a user gains from each scheduling profile: the same
// workload, whose pods use real CPU that differs from what they request, is placed by the
// default scheduler and by SecondarySchedulers of each profile, each on a pool of kwok
// nodes of its own, side by side on one local cluster. The load is a closed loop: an
// exporter computes every node's utilisation from the pods bound to it, a real Prometheus
// scrapes it, the real scheduler-plugins kube-scheduler reads it through its load-watcher,
// and its placements change the load that it reads next.
//
// Everything random comes from one seed, so that every profile gets the same pods at the
// same times, and a run can be repeated.
package outcome

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Class is how a pod's real use of CPU relates to what it requests.
type Class string

const (
	// OverRequested pods use a quarter to a half of the CPU they request: the common case,
	// a request sized for the peak, or copied from a template.
	OverRequested Class = "over-requested"
	// UnderRequested pods use 1.2 to 2 times what they request.
	UnderRequested Class = "under-requested"
	// Bursty pods idle at 30 % of their request and burst to twice it, one minute in four.
	Bursty Class = "bursty"
	// NoRequests pods request nothing (BestEffort) and use 200m to 800m.
	NoRequests Class = "no-requests"
)

// Pod is one pod of the workload: when it arrives, how long it stays, what it requests
// and what it really uses.
type Pod struct {
	// Name is unique within the workload; each profile's pod of it has the same name in
	// a namespace of its own.
	Name  string
	Class Class
	// Arrival is when the pod is created, after the run's start; Lifetime how long after
	// its arrival it is deleted, zero when it stays until the end.
	Arrival, Lifetime time.Duration
	// CPURequestMillis and MemoryRequestBytes are its containers' requests (zero for
	// NoRequests); it sets no limits.
	CPURequestMillis, MemoryRequestBytes int64
	// CPUUseMillis is the CPU it uses; for Bursty pods, between bursts.
	CPUUseMillis int64
	// BurstCPUMillis is a Bursty pod's use during a burst, which lasts BurstLength of
	// every BurstPeriod, starting BurstPhase into the period.
	BurstCPUMillis                       int64
	BurstPeriod, BurstLength, BurstPhase time.Duration
	// MemoryUseBytes is the memory it uses.
	MemoryUseBytes int64
	// DriftAfter is how long after its arrival the pod's CPU use grows DriftFactor times,
	// for good (a service that takes more traffic, a cache that warms): zero for a pod
	// whose use does not drift (WithDrift draws them). A pod that replaces it (its
	// ReplicaSet's, after an eviction) uses as much: the load is the workload's.
	DriftAfter  time.Duration
	DriftFactor float64
}

// At is the pod as it uses CPU at elapsed since the run's start: with its drift applied
// once it has drifted.
func (p Pod) At(elapsed time.Duration) Pod {
	if p.DriftAfter <= 0 || elapsed < p.Arrival+p.DriftAfter {
		return p
	}
	p.CPUUseMillis, p.BurstCPUMillis = scaled(p.CPUUseMillis, p.DriftFactor), scaled(p.BurstCPUMillis, p.DriftFactor)
	p.DriftAfter = 0
	return p
}

// CPUAt is the CPU the pod uses at elapsed since the run's start, once it runs.
func (p Pod) CPUAt(elapsed time.Duration) int64 {
	p = p.At(elapsed)
	if p.Class != Bursty || p.BurstPeriod <= 0 {
		return p.CPUUseMillis
	}
	if (elapsed+p.BurstPhase)%p.BurstPeriod < p.BurstLength {
		return p.BurstCPUMillis
	}
	return p.CPUUseMillis
}

// MeanCPUMillis is the CPU the pod uses on average over time: the real load it adds.
func (p Pod) MeanCPUMillis() float64 {
	if p.Class != Bursty || p.BurstPeriod <= 0 {
		return float64(p.CPUUseMillis)
	}
	burst := float64(p.BurstLength) / float64(p.BurstPeriod)
	return burst*float64(p.BurstCPUMillis) + (1-burst)*float64(p.CPUUseMillis)
}

// PresentAt is whether the pod exists at elapsed: created, and not yet deleted.
func (p Pod) PresentAt(elapsed time.Duration) bool {
	return elapsed >= p.Arrival && (p.Lifetime == 0 || elapsed < p.Arrival+p.Lifetime)
}

// Shape is the workload's size and rhythm.
type Shape struct {
	// Pods arrive at times uniform over ArrivalWindow (a Poisson process, given their
	// number).
	Pods          int
	ArrivalWindow time.Duration
	// DepartingFraction of them are deleted after a lifetime between MinLifetime and
	// MaxLifetime.
	DepartingFraction        float64
	MinLifetime, MaxLifetime time.Duration
}

// DefaultShape is the benchmark's workload: 260 pods over 6 minutes, a quarter of them
// leaving after 2 to 4 minutes, so that about 200 stay.
var DefaultShape = Shape{Pods: 260, ArrivalWindow: 6 * time.Minute, DepartingFraction: 0.25,
	MinLifetime: 2 * time.Minute, MaxLifetime: 4 * time.Minute}

// weighted is a value drawn with a weight.
type weighted[T any] struct {
	value  T
	weight float64
}

// The distributions the pods are drawn from. Requests come in the round sizes people
// write; the classes' shares are the issue's: most pods over-requested 2-4x, a few
// under-requested, some bursty, and a few BestEffort.
var (
	classes           = []weighted[Class]{{OverRequested, 0.65}, {UnderRequested, 0.15}, {Bursty, 0.15}, {NoRequests, 0.05}}
	cpuRequestsMillis = []weighted[int64]{{250, 0.20}, {500, 0.35}, {1000, 0.30}, {2000, 0.15}}
	memoryRequests    = []weighted[int64]{{256 << 20, 0.25}, {512 << 20, 0.35}, {1 << 30, 0.25}, {2 << 30, 0.15}}
)

// Bursty pods' rhythm: a minute of burst in every four, at a phase of their own.
const (
	burstPeriod = 4 * time.Minute
	burstLength = time.Minute
)

// Generate draws the workload of shape from seed: the same seed, the same pods.
func Generate(seed uint64, shape Shape) []Pod {
	random := rand.New(rand.NewPCG(seed, seed^0x5eed))
	arrivals := make([]time.Duration, shape.Pods)
	for i := range arrivals {
		arrivals[i] = time.Duration(random.Int64N(int64(shape.ArrivalWindow))).Truncate(time.Millisecond)
	}
	slices.Sort(arrivals)
	pods := make([]Pod, shape.Pods)
	for i := range pods {
		pod := Pod{Name: fmt.Sprintf("pod-%03d", i), Arrival: arrivals[i], Class: pick(random, classes)}
		if random.Float64() < shape.DepartingFraction {
			pod.Lifetime = between(random, shape.MinLifetime, shape.MaxLifetime).Truncate(time.Second)
		}
		cpuRequest, memoryRequest := pick(random, cpuRequestsMillis), pick(random, memoryRequests)
		pod.CPURequestMillis, pod.MemoryRequestBytes = cpuRequest, memoryRequest
		memoryUse := uniform(random, 0.4, 0.9)
		switch pod.Class {
		case OverRequested:
			pod.CPUUseMillis = scaled(cpuRequest, uniform(random, 0.25, 0.5))
		case UnderRequested:
			pod.CPUUseMillis = scaled(cpuRequest, uniform(random, 1.2, 2.0))
			memoryUse = uniform(random, 1.0, 1.3)
		case Bursty:
			pod.CPUUseMillis, pod.BurstCPUMillis = scaled(cpuRequest, 0.3), scaled(cpuRequest, 2)
			pod.BurstPeriod, pod.BurstLength = burstPeriod, burstLength
			pod.BurstPhase = time.Duration(random.Int64N(int64(burstPeriod))).Truncate(time.Second)
		case NoRequests:
			pod.CPURequestMillis, pod.MemoryRequestBytes = 0, 0
			pod.CPUUseMillis = scaled(1000, uniform(random, 0.2, 0.8))
		}
		pod.MemoryUseBytes = scaled(memoryRequest, memoryUse)
		pods[i] = pod
	}
	return pods
}

// Drift is how the workload's use grows after placement: a Fraction of its pods, drawn
// from the seed, use Factor times their CPU from After past their arrival.
type Drift struct {
	Fraction, Factor float64
	After            time.Duration
}

// WithDrift is workload with drift drawn from seed, on a random stream of its own: the pods
// are those Generate drew from the same seed, so that a run with drift places the same
// workload as one without.
func WithDrift(workload []Pod, seed uint64, drift Drift) []Pod {
	random := rand.New(rand.NewPCG(seed^0xd41f7, seed))
	drifted := slices.Clone(workload)
	for i := range drifted {
		if random.Float64() < drift.Fraction {
			drifted[i].DriftAfter, drifted[i].DriftFactor = drift.After, drift.Factor
		}
	}
	return drifted
}

func pick[T any](random *rand.Rand, choices []weighted[T]) T {
	total := 0.0
	for _, choice := range choices {
		total += choice.weight
	}
	x := random.Float64() * total
	for _, choice := range choices {
		if x < choice.weight {
			return choice.value
		}
		x -= choice.weight
	}
	return choices[len(choices)-1].value
}

func uniform(random *rand.Rand, low, high float64) float64 { return low + random.Float64()*(high-low) }

func between(random *rand.Rand, low, high time.Duration) time.Duration {
	return low + time.Duration(random.Int64N(int64(high-low)+1))
}

func scaled(value int64, factor float64) int64 { return int64(float64(value)*factor + 0.5) }
