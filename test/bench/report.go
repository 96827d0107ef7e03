package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
)

// unit is how a figure is written: its symbol and decimals.
type unit struct {
	symbol   string
	decimals int
}

var (
	unitMilliseconds = unit{"ms", 0}
	unitSeconds      = unit{"s", 1}
	unitCPUSeconds   = unit{"CPU s", 2}
	unitMiB          = unit{"MiB", 1}
	unitCount        = unit{"", 0}
	unitPerScheduler = unit{"per scheduler", 1}
	unitPerSecond    = unit{"per second", 0}
	unitCores        = unit{"cores", 2}
)

func (u unit) format(value float64) string {
	number := strconv.FormatFloat(value, 'f', u.decimals, 64)
	if u.symbol == "" {
		return number
	}
	return number + " " + u.symbol
}

// target is the bound a figure should stay under: below limit, or at most limit when
// inclusive (zero writes is at most 0).
type target struct {
	limit     float64
	inclusive bool
}

// below is a target of a figure under limit.
func below(limit float64) *target { return &target{limit: limit} }

// zero is the target of a count that should be none.
func zero() *target { return &target{inclusive: true} }

func (t *target) met(value float64) bool {
	if math.IsNaN(value) {
		return false
	}
	if t.inclusive {
		return value <= t.limit
	}
	return value < t.limit
}

func (t *target) format(u unit) string {
	if t.inclusive && t.limit == 0 {
		return "0"
	}
	operator := "< "
	if t.inclusive {
		operator = "≤ "
	}
	return operator + u.format(t.limit)
}

// row is one figure of a benchmark: its value in each run, and what it should be.
type row struct {
	figure string
	// values holds one value per run of the operator under test; NaN for a run that did
	// not reach the figure (missing says why).
	values []float64
	// baseline holds one value per run of the baseline operator, when one ran.
	baseline []float64
	unit     unit
	target   *target
	// before is the figure measured by hand before the benchmarks existed.
	before  string
	missing string
	// ifMissed says, when the target is missed, why, as far as it is known, and what
	// would meet it: the report names each missed target with its reason and plan.
	ifMissed string
}

// detail is a table that explains figures, such as requests by verb.
type detail struct {
	title  string
	header []string
	rows   [][]string
}

// section is what one benchmark reports.
type section struct {
	name, title string
	// what the benchmark does, and how it measures, for a reader of the report.
	what, how string
	rows      []row
	details   []detail
	notes     []string
	// conditions are the machine and run facts, and runs a line on each run (its
	// duration and the machine's load), set by the harness.
	conditions string
	runs       []string
	// body, when set, is Markdown the benchmark wrote itself (a package with a report of
	// its own), used in place of everything above but the name.
	body string
	// skipped says the benchmark could not run here (its notes say why): the report keeps
	// the section it had.
	skipped bool
}

// value is the figure a row reports: the median of its runs.
func (r row) value() float64 { return median(r.values) }

func (r row) measured() string {
	value := r.value()
	if math.IsNaN(value) {
		if r.missing != "" {
			return r.missing
		}
		return "not reached"
	}
	return r.unit.format(value)
}

func (r row) targetText() string {
	if r.target == nil {
		return "–"
	}
	return r.target.format(r.unit)
}

func (r row) metText() string {
	switch {
	case r.target == nil:
		return "–"
	case r.target.met(r.value()):
		return "yes"
	}
	return "**no**"
}

func (r row) runsText() string {
	parts := make([]string, len(r.values))
	for i, value := range r.values {
		parts[i] = "–"
		if !math.IsNaN(value) {
			parts[i] = strconv.FormatFloat(value, 'f', r.unit.decimals, 64)
		}
	}
	return strings.Join(parts, ", ")
}

// ratio is the median under test over the baseline's median, "–" when either is missing
// or not positive: a ratio of two changes (an RSS growth of -0.2 MiB against 0.003 MiB)
// says nothing.
func (r row) ratio() string {
	current, base := r.value(), median(r.baseline)
	if math.IsNaN(current) || math.IsNaN(base) || current <= 0 || base <= 0 {
		return "–"
	}
	return strconv.FormatFloat(current/base, 'f', 2, 64) + "×"
}

// mergeRuns puts the runs of one benchmark into one section: each row's values in run
// order (rows matched by figure), the details of the last run, every distinct note.
func mergeRuns(runs []*section) *section {
	if len(runs) == 0 {
		return nil
	}
	merged := *runs[len(runs)-1]
	merged.rows = nil
	index := map[string]int{}
	var notes []string
	seenNote := map[string]bool{}
	for _, run := range runs {
		for _, r := range run.rows {
			i, ok := index[r.figure]
			if !ok {
				i = len(merged.rows)
				index[r.figure] = i
				first := r
				first.values = nil
				merged.rows = append(merged.rows, first)
			}
			merged.rows[i].values = append(merged.rows[i].values, r.values...)
			if r.missing != "" {
				merged.rows[i].missing = r.missing
			}
		}
		for _, note := range run.notes {
			if !seenNote[note] {
				seenNote[note] = true
				notes = append(notes, note)
			}
		}
	}
	merged.notes = notes
	merged.runs = nil
	for _, run := range runs {
		merged.runs = append(merged.runs, run.runs...)
	}
	return &merged
}

func (s *section) rowValues(figure string) []float64 {
	for _, r := range s.rows {
		if r.figure == figure {
			return r.values
		}
	}
	return nil
}

// withBaseline adds the baseline operator's values to s's rows, matched by figure.
func (s *section) withBaseline(baseline *section) {
	if baseline == nil {
		return
	}
	for i := range s.rows {
		s.rows[i].baseline = baseline.rowValues(s.rows[i].figure)
	}
}

func (s *section) hasBaseline() bool {
	for _, r := range s.rows {
		if len(r.baseline) > 0 {
			return true
		}
	}
	return false
}

func (s *section) runCount() int {
	runs := 0
	for _, r := range s.rows {
		runs = max(runs, len(r.values))
	}
	return runs
}

// columns are the table's header and cells of each row.
func (s *section) columns() ([]string, [][]string) {
	header := []string{"figure", "measured", "target", "met?", "before"}
	multipleRuns, baseline := s.runCount() > 1, s.hasBaseline()
	if multipleRuns {
		header = append(header, "each run")
	}
	if baseline {
		header = append(header, "baseline", "ratio")
	}
	cells := make([][]string, 0, len(s.rows))
	for _, r := range s.rows {
		before := r.before
		if before == "" {
			before = "–"
		}
		line := []string{r.figure, r.measured(), r.targetText(), r.metText(), before}
		if multipleRuns {
			line = append(line, r.runsText())
		}
		if baseline {
			base := median(r.baseline)
			baseText := "–"
			if !math.IsNaN(base) {
				baseText = r.unit.format(base)
			}
			line = append(line, baseText, r.ratio())
		}
		cells = append(cells, line)
	}
	return header, cells
}

// markdown is the section's block of docs/benchmarks.md, between markers that let a run
// of some benchmarks replace their blocks and keep the others'.
func (s *section) markdown() string {
	var b strings.Builder
	if s.body != "" {
		fmt.Fprintf(&b, "%s\n%s\n%s\n", blockStart(s.name), strings.TrimSpace(s.body), blockEnd(s.name))
		return b.String()
	}
	fmt.Fprintf(&b, "%s\n## %s: %s\n\n", blockStart(s.name), s.name, s.title)
	fmt.Fprintf(&b, "**What it does.** %s\n\n**How it is measured.** %s\n\n", s.what, s.how)
	if s.conditions != "" {
		fmt.Fprintf(&b, "*Taken %s. %s.*\n\n", s.conditions, strings.Join(s.runs, "; "))
	}
	header, cells := s.columns()
	writeMarkdownTable(&b, header, cells)
	for _, d := range s.details {
		fmt.Fprintf(&b, "\n%s\n\n", d.title)
		writeMarkdownTable(&b, d.header, d.rows)
	}
	notes := s.allNotes()
	if len(notes) > 0 {
		b.WriteString("\n")
		for _, note := range notes {
			fmt.Fprintf(&b, "- %s\n", note)
		}
	}
	fmt.Fprintf(&b, "\n%s\n", blockEnd(s.name))
	return b.String()
}

func writeMarkdownTable(w io.Writer, header []string, rows [][]string) {
	fmt.Fprintf(w, "| %s |\n", strings.Join(header, " | "))
	separators := make([]string, len(header))
	for i := range separators {
		separators[i] = "---"
	}
	fmt.Fprintf(w, "| %s |\n", strings.Join(separators, " | "))
	for _, cells := range rows {
		escaped := make([]string, len(cells))
		for i, cell := range cells {
			escaped[i] = strings.ReplaceAll(cell, "|", `\|`)
		}
		fmt.Fprintf(w, "| %s |\n", strings.Join(escaped, " | "))
	}
}

// writeText prints the section as the terminal table make bench shows.
func (s *section) writeText(w io.Writer) {
	fmt.Fprintf(w, "\n== %s: %s\n", s.name, s.title)
	if s.skipped {
		for _, note := range s.notes {
			fmt.Fprintf(w, "- %s\n", note)
		}
		return
	}
	if s.body != "" {
		fmt.Fprintln(w, s.body)
		return
	}
	tab := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	header, cells := s.columns()
	fmt.Fprintln(tab, strings.Join(header, "\t"))
	for _, line := range cells {
		fmt.Fprintln(tab, strings.ReplaceAll(strings.Join(line, "\t"), "**", ""))
	}
	_ = tab.Flush()
	for _, d := range s.details {
		fmt.Fprintf(w, "%s\n", d.title)
		tab := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tab, "  "+strings.Join(d.header, "\t"))
		for _, line := range d.rows {
			fmt.Fprintln(tab, "  "+strings.Join(line, "\t"))
		}
		_ = tab.Flush()
	}
	for _, note := range s.allNotes() {
		fmt.Fprintf(w, "- %s\n", strings.ReplaceAll(note, "**", ""))
	}
}

// allNotes are the section's notes, then a line naming the targets this run missed.
func (s *section) allNotes() []string {
	notes := slices.Clone(s.notes)
	for _, r := range s.rows {
		if r.target == nil || r.target.met(r.value()) {
			continue
		}
		reason := r.ifMissed
		if reason == "" {
			reason = "The cause is not analysed yet."
		}
		notes = append(notes, fmt.Sprintf("**Missed: %s.** %s", r.figure, reason))
	}
	return notes
}

func blockStart(name string) string { return "<!-- bench:" + name + " -->" }
func blockEnd(name string) string   { return "<!-- /bench:" + name + " -->" }

// reportBlock is one benchmark's block of the report.
type reportBlock struct{ name, text string }

// parseBlocks finds the benchmarks' blocks in a report, in order.
func parseBlocks(report string) []reportBlock {
	var blocks []reportBlock
	rest := report
	for {
		start := strings.Index(rest, "<!-- bench:")
		if start < 0 {
			return blocks
		}
		rest = rest[start:]
		nameEnd := strings.Index(rest, " -->")
		if nameEnd < 0 {
			return blocks
		}
		name := rest[len("<!-- bench:"):nameEnd]
		end := strings.Index(rest, blockEnd(name))
		if end < 0 {
			return blocks
		}
		end += len(blockEnd(name))
		blocks = append(blocks, reportBlock{name: name, text: rest[:end] + "\n"})
		rest = rest[end:]
	}
}

// mergeReport writes a report of header, then a block for each name of order: the new
// one when this run has it, else the one existing had; blocks of existing whose names
// are not in order (a benchmark since renamed or removed) are dropped.
func mergeReport(existing, header string, fresh []reportBlock, order []string) string {
	blocks := map[string]string{}
	for _, block := range parseBlocks(existing) {
		blocks[block.name] = block.text
	}
	for _, block := range fresh {
		blocks[block.name] = block.text
	}
	var b strings.Builder
	b.WriteString(header)
	for _, name := range order {
		if text, ok := blocks[name]; ok {
			b.WriteString("\n")
			b.WriteString(text)
		}
	}
	return b.String()
}
