package scheduling

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"time"

	"github.com/go-logr/logr"
)

const (
	// settledCores is how many of the machine's cores may be busy for a run to start: the
	// idle cluster keeps a few hundredths busy (kube-controller-manager watching 500
	// nodes, etcd and the API server), the tail of the previous run's deletions more.
	settledCores = 0.3
	// settleTimeout is how long a run waits for the machine to settle: beyond it, others
	// keep it busy, and the run starts anyway (and is named in the report).
	settleTimeout = 15 * time.Second
)

// settle waits until the machine's busy cores, read over a second at a time, fall below
// settledCores, or settleTimeout passes, and returns the last reading; false when
// /proc/stat cannot be read. Each run then starts from a cluster done with what came
// before it (creating the nodes, deleting the previous run's pods), and the reading says
// how much else the machine was running.
func settle(ctx context.Context, log logr.Logger) (float64, bool) {
	start := time.Now()
	for {
		busy, known := busyCores(ctx, time.Second)
		if !known || busy < settledCores || time.Since(start) >= settleTimeout {
			log.V(1).Info("machine load before the run", "busyCores", fmt.Sprintf("%.2f", busy), "waited", time.Since(start).Round(time.Second))
			return busy, known
		}
	}
}

// busyCores is how many of the machine's cores were busy on average over the period
// (steal time included: a core the hypervisor gave elsewhere is not the benchmark's),
// false where /proc/stat cannot be read.
func busyCores(ctx context.Context, over time.Duration) (float64, bool) {
	busy0, total0, err := readCPUTimes()
	if err != nil {
		return 0, false
	}
	select {
	case <-time.After(over):
	case <-ctx.Done():
		return 0, false
	}
	busy1, total1, err := readCPUTimes()
	if err != nil || total1 <= total0 {
		return 0, false
	}
	return float64(busy1-busy0) / float64(total1-total0) * float64(runtime.NumCPU()), true
}

func readCPUTimes() (busy, total uint64, err error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, err
	}
	return parseCPUTimes(stat)
}

// parseCPUTimes reads the busy and total time of all cores together from the first line
// of /proc/stat: user nice system idle iowait irq softirq steal (guest time is within
// user already), in ticks. Idle and iowait are not busy.
func parseCPUTimes(stat []byte) (busy, total uint64, err error) {
	line, _, _ := bytes.Cut(stat, []byte("\n"))
	fields := bytes.Fields(line)
	if len(fields) < 9 || string(fields[0]) != "cpu" {
		return 0, 0, fmt.Errorf("/proc/stat begins with %q, not the cpu line", line)
	}
	for i, field := range fields[1:9] {
		ticks, err := strconv.ParseUint(string(field), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("/proc/stat cpu field %d: %w", i+1, err)
		}
		total += ticks
		if i != 3 && i != 4 { // idle, iowait
			busy += ticks
		}
	}
	return busy, total, nil
}
