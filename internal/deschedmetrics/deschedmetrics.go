// Package deschedmetrics reads what a descheduler (sigs.k8s.io/descheduler) says of its own
// work in its metrics, and keeps an hour of it: the cycles it ran and the pods it evicted
// (in dry run, would have evicted), by node. Its counters start at zero with each process;
// History counts across restarts and leader changes the way Prometheus' increase() does,
// from readings a minute or so apart, so a count is exact to within one reading's
// interval at the window's start.
//
// The metrics come from a pod of the scheduler's namespace; they are read, never trusted
// for more than they claim: a reading is bounded in size, unknown families are ignored,
// and nothing of its text reaches a status but numbers and the node names it gives,
// which a reader of the status checks against the cluster's nodes.
package deschedmetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// The families a reading takes, as sigs.k8s.io/descheduler v0.36.0 names them
// (metrics/metrics.go); the process collector's start time comes from component-base's
// legacy registry, which the descheduler serves.
const (
	buildInfoFamily    = "descheduler_build_info"
	loopDurationFamily = "descheduler_loop_duration_seconds"
	podsEvictedFamily  = "descheduler_pods_evicted_total"
	processStartFamily = "process_start_time_seconds"
	// successResult is the result label of an eviction that happened (or, in dry run,
	// would have): others count refusals (limits, PodDisruptionBudgets, errors).
	successResult = "success"
)

// maxReadingBytes bounds what is read of a metrics page, and so the memory a pod can make
// the operator use: the descheduler's page is a few tens of kilobytes, with a line per
// node and namespace it evicted from.
const maxReadingBytes = 4 << 20

// maxNodes bounds the nodes a reading keeps counts for; a page naming more is refused.
const maxNodes = 10000

// Reading is what one look at a descheduler's metrics found.
type Reading struct {
	// At is when the reading was taken.
	At time.Time
	// Process tells one process of the descheduler from another: its pod's UID and the
	// process's start time, since a container restarts in the same pod.
	Process string
	// Started is when the process started, by its own clock.
	Started time.Time
	// Cycles counts the descheduling cycles the process completed, failed ones included.
	Cycles uint64
	// Evicted counts the pods the process evicted (in dry run, would have evicted), by
	// node.
	Evicted map[string]uint64
}

// Parse reads a metrics page in Prometheus' text format.
func Parse(page io.Reader) (Reading, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(io.LimitReader(page, maxReadingBytes))
	if err != nil {
		// The parser's message may quote the page: a status must not.
		return Reading{}, errors.New("the descheduler's metrics are not in Prometheus' text format")
	}
	if _, found := families[buildInfoFamily]; !found {
		return Reading{}, fmt.Errorf("the metrics have no %s: is this a descheduler?", buildInfoFamily)
	}
	reading := Reading{Evicted: map[string]uint64{}}
	// The histogram appears with the first cycle's end.
	if loop, found := families[loopDurationFamily]; found {
		if loop.GetType() != dto.MetricType_HISTOGRAM || len(loop.GetMetric()) != 1 {
			return Reading{}, fmt.Errorf("the descheduler's %s is not one histogram", loopDurationFamily)
		}
		reading.Cycles = loop.GetMetric()[0].GetHistogram().GetSampleCount()
	}
	if start, found := families[processStartFamily]; found && len(start.GetMetric()) == 1 {
		seconds := start.GetMetric()[0].GetGauge().GetValue()
		if seconds > 0 && seconds < math.MaxInt32 {
			whole, fraction := math.Modf(seconds)
			reading.Started = time.Unix(int64(whole), int64(fraction*1e9))
		}
	}
	for _, metric := range families[podsEvictedFamily].GetMetric() {
		labels := map[string]string{}
		for _, pair := range metric.GetLabel() {
			labels[pair.GetName()] = pair.GetValue()
		}
		if labels["result"] != successResult || labels["node"] == "" {
			continue
		}
		value := metric.GetCounter().GetValue()
		if value < 0 || value > math.MaxInt32 {
			return Reading{}, fmt.Errorf("the descheduler's metrics count %v evictions from node %q", value, labels["node"])
		}
		reading.Evicted[labels["node"]] += uint64(value)
		if len(reading.Evicted) > maxNodes {
			return Reading{}, fmt.Errorf("the descheduler's metrics name more than %d nodes", maxNodes)
		}
	}
	return reading, nil
}

// Scrape reads the metrics page at url (the descheduler's secure port serves it to any
// client, and the operator sends no credentials) and stamps the reading with process
// and at.
func Scrape(ctx context.Context, client *http.Client, url, process string, at time.Time) (Reading, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Reading{}, fmt.Errorf("ask the descheduler for its metrics: %w", err)
	}
	response, err := client.Do(request)
	if err != nil {
		return Reading{}, fmt.Errorf("ask the descheduler for its metrics: %w", err)
	}
	defer func() { _ = response.Body.Close() }()
	if response.StatusCode != http.StatusOK {
		return Reading{}, fmt.Errorf("ask the descheduler for its metrics: HTTP %d", response.StatusCode)
	}
	reading, err := Parse(response.Body)
	if err != nil {
		return Reading{}, err
	}
	reading.At = at
	reading.Process = process + "@" + reading.Started.UTC().Format(time.RFC3339Nano)
	return reading, nil
}

// Window is how far back History counts.
const Window = time.Hour

// History is the readings of the last Window of each process of a descheduler, and the
// newest one of each before the window, from which its counts grow. Readings of every
// replica count: one that does not lead runs no cycle and counts nothing, and when it
// takes the lead its counts grow from its readings before.
type History struct {
	// since is when the first reading was taken: what happened before is not known.
	since     time.Time
	processes map[string][]Reading
}

// errOutOfOrder is a reading older than the newest kept of its process.
var errOutOfOrder = errors.New("a reading older than the newest kept of its process")

// Add keeps reading and forgets what the window no longer needs: the readings older than
// the newest one at or before the window's start, and the processes last read before it.
func (h *History) Add(reading Reading) error {
	if h.processes == nil {
		h.processes, h.since = map[string][]Reading{}, reading.At
	}
	kept := h.processes[reading.Process]
	if n := len(kept); n > 0 && reading.At.Before(kept[n-1].At) {
		return errOutOfOrder
	}
	h.processes[reading.Process] = append(kept, reading)
	start := reading.At.Add(-Window)
	for process, readings := range h.processes {
		if !readings[len(readings)-1].At.After(start) {
			delete(h.processes, process)
			continue
		}
		first := 0
		for i := range readings {
			if !readings[i].At.After(start) {
				first = i
			}
		}
		h.processes[process] = slices.Delete(readings, 0, first)
	}
	return nil
}

// Summary is what the readings say of the window.
type Summary struct {
	// Cycles counts the descheduling cycles of the window, failed ones included.
	Cycles uint64
	// LastCycleSeen is when a reading first showed the newest cycle: it ended before, and
	// after the reading before it of its process. Zero when no reading showed a cycle of
	// the window.
	LastCycleSeen time.Time
	// Evicted counts the evictions of the window (in dry run, the evictions it would have
	// made) by node.
	Evicted map[string]uint64
	// CountedSince is when the first reading was taken, when that is within the window:
	// the counts hold every process read, from its start when that was within the
	// window, but nothing of a process that ended before it.
	CountedSince time.Time
}

// Summarize says what the readings kept say of the window that ends at now. A process
// counts what grew between two of its readings within the window, and, when it started
// within the window, everything its first reading counted: its counters started at zero
// then.
func (h *History) Summarize(now time.Time) Summary {
	summary := Summary{Evicted: map[string]uint64{}}
	start := now.Add(-Window)
	if h.since.After(start) {
		summary.CountedSince = h.since
	}
	for _, readings := range h.processes {
		for i, reading := range readings {
			if !reading.At.After(start) {
				continue
			}
			previous := Reading{}
			switch {
			case i > 0:
				previous = readings[i-1]
			case reading.Started.After(start) && !reading.Started.After(reading.At):
				// Its counters started at zero within the window.
			default:
				// A process that started before: its counts grow from this reading.
				continue
			}
			if reading.Cycles > previous.Cycles {
				summary.Cycles += reading.Cycles - previous.Cycles
				if reading.At.After(summary.LastCycleSeen) {
					summary.LastCycleSeen = reading.At
				}
			}
			for node, count := range reading.Evicted {
				summary.Evicted[node] += count - min(count, previous.Evicted[node])
			}
		}
	}
	for node, count := range summary.Evicted {
		if count == 0 {
			delete(summary.Evicted, node)
		}
	}
	return summary
}

// Total is the sum of counts.
func Total(counts map[string]uint64) uint64 {
	var total uint64
	for _, count := range counts {
		total += count
	}
	return total
}

// Busiest are the nodes of counts with the most evictions, at most limit of them, most
// first, then by name.
func Busiest(counts map[string]uint64, limit int) []string {
	nodes := make([]string, 0, len(counts))
	for node := range counts {
		nodes = append(nodes, node)
	}
	slices.SortFunc(nodes, func(a, b string) int {
		if counts[a] != counts[b] {
			if counts[a] > counts[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return nodes[:min(len(nodes), limit)]
}
