package deschedmetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// page is a descheduler's metrics page as v0.36.0 writes it, cut to the families read and
// one more.
const page = `# HELP descheduler_build_info [ALPHA] Build info about descheduler
# TYPE descheduler_build_info gauge
descheduler_build_info{AppVersion="0.36",DeschedulerVersion="v20251120-v0.36.0",GitBranch="",GitSha1="",GoVersion="go1.26.1"} 0
# HELP descheduler_loop_duration_seconds [ALPHA] Time taken to complete a full descheduling cycle
# TYPE descheduler_loop_duration_seconds histogram
descheduler_loop_duration_seconds_bucket{le="0.01"} 0
descheduler_loop_duration_seconds_bucket{le="+Inf"} 3
descheduler_loop_duration_seconds_sum 0.42
descheduler_loop_duration_seconds_count 3
# HELP descheduler_pods_evicted_total [ALPHA] Number of total evicted pods
# TYPE descheduler_pods_evicted_total counter
descheduler_pods_evicted_total{namespace="shop",node="node-1",profile="ProfileName",result="success",strategy="LowNodeUtilization"} 2
descheduler_pods_evicted_total{namespace="jobs",node="node-1",profile="ProfileName",result="success",strategy="LowNodeUtilization"} 1
descheduler_pods_evicted_total{namespace="shop",node="node-2",profile="ProfileName",result="success",strategy="LowNodeUtilization"} 1
descheduler_pods_evicted_total{namespace="shop",node="node-2",profile="ProfileName",result="error",strategy="LowNodeUtilization"} 4
descheduler_pods_evicted_total{namespace="shop",node="node-3",profile="ProfileName",result="maximum number of pods per node reached",strategy="LowNodeUtilization"} 1
# HELP process_start_time_seconds [ALPHA] Start time of the process since unix epoch in seconds.
# TYPE process_start_time_seconds gauge
process_start_time_seconds 1.7646e+09
# HELP go_goroutines Number of goroutines that currently exist.
# TYPE go_goroutines gauge
go_goroutines 80
`

func TestParseCountsCyclesAndEvictionsThatHappened(t *testing.T) {
	reading, err := Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	want := Reading{Cycles: 3, Started: time.Unix(1764600000, 0), Evicted: map[string]uint64{"node-1": 3, "node-2": 1}}
	if diff := cmp.Diff(want, reading); diff != "" {
		t.Errorf("reading (-want +got):\n%s", diff)
	}
}

func TestParseCountsNoCycleBeforeTheFirstEnds(t *testing.T) {
	start := strings.Index(page, "# HELP descheduler_loop_duration_seconds")
	end := strings.Index(page, "# HELP descheduler_pods_evicted_total")
	reading, err := Parse(strings.NewReader(page[:start] + page[end:]))
	if err != nil {
		t.Fatal(err)
	}
	if reading.Cycles != 0 {
		t.Errorf("cycles = %d, want 0", reading.Cycles)
	}
}

func TestParseRefusesWhatIsNoDeschedulersPage(t *testing.T) {
	for name, text := range map[string]string{
		"no loop histogram":   "go_goroutines 80\n",
		"not the text format": "<html>hello</html>",
		"a negative count":    strings.Replace(page, "strategy=\"LowNodeUtilization\"} 2", "strategy=\"LowNodeUtilization\"} -2", 1),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse(strings.NewReader(text)); err == nil {
				t.Error("no error")
			}
		})
	}
}

// at is a time minutes after a start of the test's own.
func at(minutes float64) time.Time {
	return time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC).Add(time.Duration(minutes * float64(time.Minute)))
}

func reading(process string, started, minutes float64, cycles uint64, evicted map[string]uint64) Reading {
	return Reading{Process: process, Started: at(started), At: at(minutes), Cycles: cycles, Evicted: evicted}
}

func TestHistorySummarizesTheLastHour(t *testing.T) {
	type look struct {
		reading Reading
		now     float64
		want    Summary
	}
	for _, tc := range []struct {
		name  string
		looks []look
	}{{
		name: "a leader that predates the first look: counted from it, and since it",
		looks: []look{
			{reading("a", -300, 0, 20, map[string]uint64{"n1": 5}), 0, Summary{CountedSince: at(0), Evicted: map[string]uint64{}}},
			{reading("a", -300, 1, 21, map[string]uint64{"n1": 6, "n2": 1}), 1,
				Summary{CountedSince: at(0), Cycles: 1, LastCycleSeen: at(1), Evicted: map[string]uint64{"n1": 1, "n2": 1}}},
			{reading("a", -300, 2, 21, map[string]uint64{"n1": 6, "n2": 1}), 2,
				Summary{CountedSince: at(0), Cycles: 1, LastCycleSeen: at(1), Evicted: map[string]uint64{"n1": 1, "n2": 1}}},
		},
	}, {
		name: "an hour later the first evictions leave the window, and the counts cover all of it",
		looks: []look{
			{reading("a", -300, 0, 20, map[string]uint64{"n1": 5}), 0, Summary{CountedSince: at(0), Evicted: map[string]uint64{}}},
			{reading("a", -300, 1, 21, map[string]uint64{"n1": 6}), 1, Summary{CountedSince: at(0), Cycles: 1, LastCycleSeen: at(1), Evicted: map[string]uint64{"n1": 1}}},
			{reading("a", -300, 30, 23, map[string]uint64{"n1": 6, "n2": 2}), 30,
				Summary{CountedSince: at(0), Cycles: 3, LastCycleSeen: at(30), Evicted: map[string]uint64{"n1": 1, "n2": 2}}},
			{reading("a", -300, 61, 25, map[string]uint64{"n1": 6, "n2": 2}), 61,
				Summary{Cycles: 4, LastCycleSeen: at(61), Evicted: map[string]uint64{"n2": 2}}},
			// The growth between two readings counts whole when the second is in the window:
			// readings a minute apart make that exact to within a minute.
			{reading("a", -300, 95, 26, map[string]uint64{"n1": 6, "n2": 2}), 95,
				Summary{Cycles: 3, LastCycleSeen: at(95), Evicted: map[string]uint64{}}},
		},
	}, {
		name: "a restart: the new process counts from zero, the old one's counts stay",
		looks: []look{
			{reading("a", -300, 0, 20, map[string]uint64{"n1": 5}), 0, Summary{CountedSince: at(0), Evicted: map[string]uint64{}}},
			{reading("a", -300, 10, 21, map[string]uint64{"n1": 7}), 10, Summary{CountedSince: at(0), Cycles: 1, LastCycleSeen: at(10), Evicted: map[string]uint64{"n1": 2}}},
			{reading("b", 15, 16, 1, map[string]uint64{"n1": 1}), 16, Summary{CountedSince: at(0), Cycles: 2, LastCycleSeen: at(16), Evicted: map[string]uint64{"n1": 3}}},
		},
	}, {
		name: "a standby takes the lead: its counts grow from its readings as a standby",
		looks: []look{
			{reading("a", -300, 0, 20, map[string]uint64{"n1": 5}), 0, Summary{CountedSince: at(0), Evicted: map[string]uint64{}}},
			{reading("b", -300, 0, 0, map[string]uint64{}), 0, Summary{CountedSince: at(0), Evicted: map[string]uint64{}}},
			{reading("b", -300, 20, 2, map[string]uint64{"n3": 2}), 20, Summary{CountedSince: at(0), Cycles: 2, LastCycleSeen: at(20), Evicted: map[string]uint64{"n3": 2}}},
		},
	}, {
		name: "a process that started within the hour counts from its start, one before from its first reading",
		looks: []look{
			{reading("a", -5, 0, 1, map[string]uint64{"n1": 3}), 0, Summary{CountedSince: at(0), Cycles: 1, LastCycleSeen: at(0), Evicted: map[string]uint64{"n1": 3}}},
			{reading("b", -65, 0, 7, map[string]uint64{"n2": 3}), 0, Summary{CountedSince: at(0), Cycles: 1, LastCycleSeen: at(0), Evicted: map[string]uint64{"n1": 3}}},
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var history History
			for i, look := range tc.looks {
				if err := history.Add(look.reading); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(look.want, history.Summarize(at(look.now))); diff != "" {
					t.Errorf("after reading %d (-want +got):\n%s", i, diff)
				}
			}
		})
	}
}

func TestHistoryForgetsWhatTheWindowNoLongerNeeds(t *testing.T) {
	var history History
	for minute := range 600 {
		process := "a"
		if minute >= 300 {
			process = "b"
		}
		if err := history.Add(reading(process, -1, float64(minute), uint64(minute), nil)); err != nil {
			t.Fatal(err)
		}
	}
	if len(history.processes) != 1 || len(history.processes["b"]) != 61 {
		t.Errorf("kept %d processes, %d readings of the newest; want 1 and 61 (the hour and the one before)", len(history.processes), len(history.processes["b"]))
	}
	if err := history.Add(reading("b", -1, 10, 0, nil)); err == nil {
		t.Error("a reading older than the newest of its process was kept")
	}
}

func TestBusiestNodesComeFirst(t *testing.T) {
	got := Busiest(map[string]uint64{"c": 1, "a": 1, "b": 4, "d": 2}, 3)
	if diff := cmp.Diff([]string{"b", "d", "a"}, got); diff != "" {
		t.Errorf("busiest (-want +got):\n%s", diff)
	}
}
