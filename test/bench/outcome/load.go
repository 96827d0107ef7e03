package outcome

import (
	"slices"
	"sync"
	"time"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// NodeSize is the capacity of every node of the pools.
type NodeSize struct {
	CPUMillis, MemoryBytes int64
	Pods                   int
}

// DefaultNodeSize is a node of 16 cores and 64 GiB, taking 110 pods.
var DefaultNodeSize = NodeSize{CPUMillis: 16000, MemoryBytes: 64 << 30, Pods: 110}

// Usage is a node's real utilisation, as fractions of its capacity.
type Usage struct{ CPU, Memory float64 }

// Load is the closed loop's state: which pod of the workload each arm's cluster has bound
// to which node. The exporter serves from it what node-exporter and the recording rules
// would report, and the sampler reads the same, so that the figures are the load the
// schedulers were shown. It is safe for concurrent use.
type Load struct {
	size NodeSize
	pods map[string]Pod
	// nodes are each arm's node names, in order.
	nodes map[string][]string

	mu sync.Mutex
	// boundTo is each bound pod object of an arm, by arm and object name: the pod of the
	// workload it runs and its node. A ReplicaSet's pod has a name of its own, and its
	// replacement may be bound before the evicted one is gone.
	boundTo map[string]map[string]binding
}

// binding is a pod object of the workload on a node.
type binding struct{ pod, node string }

// NewLoad is the loop's state for the workload on nodes (node names by arm), each of size.
func NewLoad(workload []Pod, nodes map[string][]string, size NodeSize) *Load {
	load := &Load{size: size, pods: make(map[string]Pod, len(workload)), nodes: nodes, boundTo: map[string]map[string]binding{}}
	for _, pod := range workload {
		load.pods[pod.Name] = pod
	}
	for arm := range nodes {
		load.boundTo[arm] = map[string]binding{}
	}
	return load
}

// Bind records that arm's pod object runs the workload's pod on node; a pod that is not
// of the workload, or an arm that is not the loop's, is ignored.
func (l *Load) Bind(arm, object, pod, node string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if bound, ok := l.boundTo[arm]; ok && l.pods[pod].Name != "" {
		bound[object] = binding{pod: pod, node: node}
	}
}

// Unbind records that arm's pod object is gone.
func (l *Load) Unbind(arm, object string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.boundTo[arm], object)
}

// Usage is each of arm's nodes' utilisation at elapsed since the run's start, and how
// many pods each runs.
func (l *Load) Usage(arm string, elapsed time.Duration) (map[string]Usage, map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cpu, memory, count := map[string]int64{}, map[string]int64{}, map[string]int{}
	for _, bound := range l.boundTo[arm] {
		pod := l.pods[bound.pod]
		cpu[bound.node] += pod.CPUAt(elapsed)
		memory[bound.node] += pod.MemoryUseBytes
		count[bound.node]++
	}
	usage := make(map[string]Usage, len(l.nodes[arm]))
	for _, node := range l.nodes[arm] {
		// A node uses at most all of its CPU and memory: pods that want more are throttled
		// (or OOM-killed), and node-exporter reports the node full, which the descheduler,
		// that takes a utilisation above 1 for an error, reads too.
		usage[node] = Usage{CPU: min(1, float64(cpu[node])/float64(l.size.CPUMillis)), Memory: min(1, float64(memory[node])/float64(l.size.MemoryBytes))}
	}
	return usage, count
}

// Exposition is the Prometheus exposition text of the arms' nodes' utilisation at
// elapsed: the series load-watcher reads, one sample per node, empty nodes included, as
// node-exporter reports an idle node.
func (l *Load) Exposition(arms []string, elapsed time.Duration) string {
	var nodes []string
	load := map[string]promtest.NodeLoad{}
	for _, arm := range arms {
		usage, _ := l.Usage(arm, elapsed)
		for _, node := range l.nodes[arm] {
			nodes = append(nodes, node)
			load[node] = promtest.NodeLoad{CPU: usage[node].CPU, Memory: usage[node].Memory}
		}
	}
	return promtest.NodeLoadExposition(metricsprobe.Series[0], metricsprobe.Series[1], nodes, load)
}

// Nodes are arm's node names, in order.
func (l *Load) Nodes(arm string) []string { return slices.Clone(l.nodes[arm]) }
