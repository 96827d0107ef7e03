package main

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/bench/outcome"
)

func TestRowCells(t *testing.T) {
	tests := []struct {
		name                     string
		row                      row
		measured, targetCol, met string
	}{
		{
			name:     "met",
			row:      row{values: []float64{87.4}, unit: unitMilliseconds, target: below(100)},
			measured: "87 ms", targetCol: "< 100 ms", met: "yes",
		},
		{
			name:     "missed",
			row:      row{values: []float64{221}, unit: unitMilliseconds, target: below(100)},
			measured: "221 ms", targetCol: "< 100 ms", met: "**no**",
		},
		{
			name:     "at the limit of a strict bound is missed",
			row:      row{values: []float64{64}, unit: unitMiB, target: below(64)},
			measured: "64.0 MiB", targetCol: "< 64.0 MiB", met: "**no**",
		},
		{
			name:     "zero writes",
			row:      row{values: []float64{0}, unit: unitCount, target: zero()},
			measured: "0", targetCol: "0", met: "yes",
		},
		{
			name:     "a write",
			row:      row{values: []float64{1}, unit: unitCount, target: zero()},
			measured: "1", targetCol: "0", met: "**no**",
		},
		{
			name:     "informational",
			row:      row{values: []float64{12.345}, unit: unitCPUSeconds},
			measured: "12.35 CPU s", targetCol: "–", met: "–",
		},
		{
			name:     "not reached",
			row:      row{values: []float64{math.NaN()}, unit: unitSeconds, target: below(30), missing: "not within 6m0s"},
			measured: "not within 6m0s", targetCol: "< 30.0 s", met: "**no**",
		},
		{
			name:     "median of runs",
			row:      row{values: []float64{300, 100, 200}, unit: unitMilliseconds, target: below(250)},
			measured: "200 ms", targetCol: "< 250 ms", met: "yes",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := []string{tt.row.measured(), tt.row.targetText(), tt.row.metText()}
			if diff := cmp.Diff([]string{tt.measured, tt.targetCol, tt.met}, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeRuns(t *testing.T) {
	run := func(objects, available float64, note string) *section {
		return &section{name: "convergence", title: "t", rows: []row{
			{figure: "objects", values: []float64{objects}, unit: unitMilliseconds, target: below(100), before: "221 ms"},
			{figure: "available", values: []float64{available}, unit: unitMilliseconds},
		}, notes: []string{note}, runs: []string{note}}
	}
	merged := mergeRuns([]*section{run(90, 900, "a"), run(110, 1100, "a"), run(95, 950, "b")})
	header, cells := merged.columns()
	if diff := cmp.Diff([]string{"figure", "measured", "target", "met?", "before", "each run"}, header); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
	want := [][]string{
		{"objects", "95 ms", "< 100 ms", "yes", "221 ms", "90, 110, 95"},
		{"available", "950 ms", "–", "–", "–", "900, 1100, 950"},
	}
	if diff := cmp.Diff(want, cells); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "b"}, merged.notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a", "a", "b"}, merged.runs); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}

	merged.withBaseline(mergeRuns([]*section{run(200, 1000, "base"), run(180, 1000, "base")}))
	header, cells = merged.columns()
	if diff := cmp.Diff([]string{"figure", "measured", "target", "met?", "before", "each run", "baseline", "ratio"}, header); diff != "" {
		t.Errorf("header with baseline (-want +got):\n%s", diff)
	}
	if got := cells[0][6:]; !cmp.Equal(got, []string{"190 ms", "0.50×"}) {
		t.Errorf("baseline and ratio = %v, want [190 ms 0.50×]", got)
	}
}

func TestMarkdown(t *testing.T) {
	s := &section{
		name: "idle", title: "100 schedulers", what: "Waits.", how: "Counts.", conditions: "today",
		runs: []string{"run 1: 1m10s"},
		rows: []row{
			{figure: "writes | per minute", values: []float64{0}, unit: unitCount, target: zero(), before: "0"},
			{figure: "reads", values: []float64{2}, unit: unitCount, target: zero()},
		},
		details: []detail{{title: "By verb", header: []string{"verb", "requests"}, rows: [][]string{{"watch", "12"}}}},
		notes:   []string{"A note."},
	}
	want := `<!-- bench:idle -->
## idle: 100 schedulers

**What it does.** Waits.

**How it is measured.** Counts.

*Taken today. run 1: 1m10s.*

| figure | measured | target | met? | before |
| --- | --- | --- | --- | --- |
| writes \| per minute | 0 | 0 | yes | 0 |
| reads | 2 | 0 | **no** | – |

By verb

| verb | requests |
| --- | --- |
| watch | 12 |

- A note.
- **Missed: reads.** The cause is not analysed yet.

<!-- /bench:idle -->
`
	if diff := cmp.Diff(want, s.markdown()); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	own := &section{name: "scheduling", body: "## Scheduling\n\nIts own table.\n"}
	if diff := cmp.Diff("<!-- bench:scheduling -->\n## Scheduling\n\nIts own table.\n<!-- /bench:scheduling -->\n", own.markdown()); diff != "" {
		t.Errorf("own body (-want +got):\n%s", diff)
	}
}

func TestMergeReport(t *testing.T) {
	block := func(name, text string) string { return blockStart(name) + "\n" + text + "\n" + blockEnd(name) + "\n" }
	existing := "# Old header\n\n" + block("convergence", "old convergence") + "\n" + block("edit", "old edit") + "\n" + block("retired", "gone") + "\n"
	tests := []struct {
		name     string
		existing string
		fresh    []reportBlock
		want     string
	}{
		{
			name:     "no report yet",
			existing: "",
			fresh:    []reportBlock{{"edit", block("edit", "new edit")}},
			want:     "# Header\n\n" + block("edit", "new edit"),
		},
		{
			name:     "one benchmark replaces its block, keeps the others, drops retired ones",
			existing: existing,
			fresh:    []reportBlock{{"edit", block("edit", "new edit")}},
			want:     "# Header\n\n" + block("convergence", "old convergence") + "\n" + block("edit", "new edit"),
		},
		{
			name:     "blocks in the registry's order",
			existing: existing,
			fresh:    []reportBlock{{"idle", block("idle", "new idle")}, {"convergence", block("convergence", "new convergence")}},
			want: "# Header\n\n" + block("convergence", "new convergence") + "\n" + block("edit", "old edit") + "\n" +
				block("idle", "new idle"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := mergeReport(tt.existing, "# Header\n", tt.fresh, []string{"convergence", "edit", "idle"})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestSelectBenchmarks(t *testing.T) {
	tests := []struct {
		list    string
		want    []string
		wantErr string
	}{
		// All but the drift benchmark, too long for make bench's 30 minutes.
		{list: "", want: slices.DeleteFunc(benchmarkNames(), func(name string) bool { return name == "drift" })},
		{list: "edit", want: []string{"edit"}},
		{list: "outcome,drift", want: []string{"outcome", "drift"}},
		{list: "memory, convergence", want: []string{"convergence", "memory"}},
		{list: "edit,nosuch", wantErr: "no benchmark named nosuch"},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			selected, err := selectBenchmarks(tt.list)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, b := range selected {
				names = append(names, b.name)
			}
			if diff := cmp.Diff(tt.want, names); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestRatio(t *testing.T) {
	tests := []struct {
		name             string
		values, baseline []float64
		want             string
	}{
		{name: "half", values: []float64{50}, baseline: []float64{100}, want: "0.50×"},
		{name: "no baseline", values: []float64{50}, want: "–"},
		{name: "zero baseline", values: []float64{50}, baseline: []float64{0}, want: "–"},
		{name: "a shrinking growth against a growth near zero", values: []float64{-0.2}, baseline: []float64{0.003}, want: "–"},
		{name: "nothing measured", values: []float64{math.NaN()}, baseline: []float64{1}, want: "–"},
	}
	for _, test := range tests {
		t.Run(test.name, func(t *testing.T) {
			if got := (row{values: test.values, baseline: test.baseline}).ratio(); got != test.want {
				t.Errorf("ratio = %q, want %q", got, test.want)
			}
		})
	}
}

// make bench's operator watches the namespaces of every benchmark it may run, and not
// those of one that runs only when named, unless it is: a watch per namespace is in the
// idle and memory figures.
func TestOperatorNamespacesFollowTheSelection(t *testing.T) {
	all, err := selectBenchmarks("")
	if err != nil {
		t.Fatal(err)
	}
	withDrift, err := selectBenchmarks("drift")
	if err != nil {
		t.Fatal(err)
	}
	driftNamespace := outcome.DriftNamespaces()[0]
	if namespaces := newEnv(t.TempDir(), "v1.37.2", all).namespaces; slices.Contains(namespaces, driftNamespace) {
		t.Errorf("make bench allows %s, of a benchmark it does not run: %v", driftNamespace, namespaces)
	}
	namespaces := newEnv(t.TempDir(), "v1.37.2", withDrift).namespaces
	if !slices.Contains(namespaces, driftNamespace) || !slices.Contains(namespaces, steadyNamespace) {
		t.Errorf("BENCH=drift allows %v; want the drift benchmark's namespaces beside every other benchmark's", namespaces)
	}
}
