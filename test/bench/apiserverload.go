package main

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/procfs"
)

// apiServerLoad is a sample of what the API server has served, every client's requests
// included, and of the CPU the API server and the whole machine have used: what a
// benchmark bound by the API server on a shared machine is bound by.
type apiServerLoad struct {
	at time.Time
	// requests are apiserver_request_total by "VERB resource[/subresource]".
	requests map[string]float64
	// apiServerCPU is kube-apiserver's CPU time, NaN when its process is not found.
	apiServerCPU float64
	// machineBusy is the CPU time every process of the machine has used, from /proc/stat.
	machineBusy float64
}

// sampleAPIServerLoad reads the API server's request counters and the CPU times.
func (e *env) sampleAPIServerLoad(ctx context.Context) (apiServerLoad, error) {
	load := apiServerLoad{at: time.Now(), requests: map[string]float64{}}
	metrics, _, err := e.sampleAPIServer(ctx, 0)
	if err != nil {
		return load, err
	}
	for _, sample := range metrics {
		if sample.name != "apiserver_request_total" {
			continue
		}
		key := sample.labels["verb"] + " " + sample.labels["resource"]
		if sub := sample.labels["subresource"]; sub != "" {
			key += "/" + sub
		}
		load.requests[key] += sample.value
	}
	load.apiServerCPU = math.NaN()
	if pid := e.apiServerPID(); pid != 0 {
		if load.apiServerCPU, err = cpuSeconds(pid); err != nil {
			return load, fmt.Errorf("the API server's CPU time: %w", err)
		}
	}
	load.machineBusy, err = machineBusySeconds()
	return load, err
}

// machineBusySeconds is the time every CPU of the machine has spent neither idle nor
// waiting for I/O (/proc/stat's first line, read with procfs).
func machineBusySeconds() (float64, error) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, err
	}
	stat, err := fs.Stat()
	if err != nil {
		return 0, fmt.Errorf("read /proc/stat: %w", err)
	}
	cpu := stat.CPUTotal
	return cpu.User + cpu.Nice + cpu.System + cpu.IRQ + cpu.SoftIRQ + cpu.Steal, nil
}

// apiServerWork is what the API server served between two samples.
type apiServerWork struct {
	duration     time.Duration
	requests     map[string]float64
	apiServerCPU float64
	machineBusy  float64
}

func apiServerWorkBetween(before, after apiServerLoad) apiServerWork {
	work := apiServerWork{duration: after.at.Sub(before.at), requests: map[string]float64{},
		apiServerCPU: after.apiServerCPU - before.apiServerCPU, machineBusy: after.machineBusy - before.machineBusy}
	for key, count := range after.requests {
		if delta := count - before.requests[key]; delta > 0 {
			work.requests[key] = delta
		}
	}
	return work
}

// perSecond is how many requests the API server served a second.
func (w apiServerWork) perSecond() float64 { return total(w.requests) / w.duration.Seconds() }

// busyCores is how many of the machine's cores its processes kept busy on average.
func (w apiServerWork) busyCores() float64 { return w.machineBusy / w.duration.Seconds() }

// mostServed is a table of the API server's most frequent requests, at most limit rows.
func (w apiServerWork) mostServed(title string, limit int) detail {
	keys := slices.Collect(maps.Keys(w.requests))
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(w.requests[b], w.requests[a]), strings.Compare(a, b))
	})
	rows := make([][]string, 0, limit)
	for _, key := range keys[:min(limit, len(keys))] {
		verb, resource, _ := strings.Cut(key, " ")
		rows = append(rows, []string{verb, resource, strconv.FormatFloat(w.requests[key], 'f', 0, 64)})
	}
	return detail{title: title, header: []string{"verb", "resource", "requests"}, rows: rows}
}
