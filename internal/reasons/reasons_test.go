package reasons

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// declaredReasons are the ConditionReason constants of api/v1, read from its source so
// that a reason added there and nowhere else is found.
func declaredReasons(t *testing.T) map[v1.ConditionReason]string {
	t.Helper()
	declared := map[v1.ConditionReason]string{}
	for value, name := range declaredConstants(t, "ConditionReason") {
		declared[v1.ConditionReason(value)] = name
	}
	if len(declared) < 40 {
		t.Fatalf("found only %d reasons in api/v1: is the parsing right?", len(declared))
	}
	return declared
}

// declaredConditionTypes are the ConditionType constants of api/v1, read from its source.
func declaredConditionTypes(t *testing.T) map[v1.ConditionType]string {
	t.Helper()
	declared := map[v1.ConditionType]string{}
	for value, name := range declaredConstants(t, "ConditionType") {
		declared[v1.ConditionType(value)] = name
	}
	if len(declared) < 9 {
		t.Fatalf("found only %d condition types in api/v1: is the parsing right?", len(declared))
	}
	return declared
}

// declaredConstants maps the value of each string constant of api/v1 of type typeName to
// its name.
func declaredConstants(t *testing.T, typeName string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob("../../api/v1/*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]string{}
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(node ast.Node) bool {
			spec, ok := node.(*ast.ValueSpec)
			if !ok || spec.Type == nil || len(spec.Values) != len(spec.Names) {
				return true
			}
			if ident, ok := spec.Type.(*ast.Ident); !ok || ident.Name != typeName {
				return true
			}
			for i, name := range spec.Names {
				value, err := strconv.Unquote(spec.Values[i].(*ast.BasicLit).Value)
				if err != nil {
					t.Fatalf("%s: %v", name.Name, err)
				}
				declared[value] = name.Name
			}
			return true
		})
	}
	return declared
}

func TestEveryReasonIsDeclaredOnceInTheTable(t *testing.T) {
	declared := declaredReasons(t)
	seen := map[v1.ConditionReason]bool{}
	for _, reason := range All() {
		if seen[reason.Name] {
			t.Errorf("reason %s has two entries in the table", reason.Name)
		}
		seen[reason.Name] = true
		if _, ok := declared[reason.Name]; !ok {
			t.Errorf("the table has reason %s, which api/v1 does not declare", reason.Name)
		}
		if reason.Severity != Normal && reason.Severity != Warning {
			t.Errorf("reason %s has no severity", reason.Name)
		}
		if reason.Metrics && !hasCondition(reason, v1.ConditionMetricsAvailable) {
			t.Errorf("reason %s keeps a scheduler from its metrics but is no reason of MetricsAvailable", reason.Name)
		}
	}
	for name, constant := range declared {
		if !seen[name] {
			t.Errorf("api/v1 declares %s (%s), which has no entry in the table of internal/reasons: "+
				"add one, in the place of its precedence", constant, name)
		}
	}
}

// troubleshootingPage is the users' page of what each condition means and what to do
// about each reason, relative to the repository's root.
const troubleshootingPage = "docs/troubleshooting.md"

// readTroubleshootingPage reads troubleshootingPage.
func readTroubleshootingPage(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(troubleshootingPage)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// troubleshootingHeading opens the page's table of what to do about each reason.
const troubleshootingHeading = "## Troubleshooting by reason"

// troubleshootingColumns are the columns of that table.
var troubleshootingColumns = []string{"reason", "condition(s)", "what to do"}

// troubleshootingRow is one row of the page's Troubleshooting by reason table.
type troubleshootingRow struct {
	line       int    // in troubleshootingPage, for messages
	reason     string // the first cell, without its backquotes
	conditions string
	whatToDo   string
}

// troubleshootingTable reads the rows of the table under troubleshootingHeading, up to
// the next heading. It reads the Markdown by hand: the module has no Markdown parser
// among its dependencies, and a table row is one line of cells between pipes.
func troubleshootingTable(page string) ([]troubleshootingRow, error) {
	lines := strings.Split(page, "\n")
	start := slices.IndexFunc(lines, func(line string) bool { return strings.TrimSpace(line) == troubleshootingHeading })
	if start < 0 {
		return nil, fmt.Errorf(troubleshootingPage+" has no heading %q: add that section, with a table of every reason, after the Status section", troubleshootingHeading)
	}
	var rows []troubleshootingRow
	sawHeader, fenced := false, false
	for i := start + 1; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
		}
		if !fenced && strings.HasPrefix(line, "#") {
			break
		}
		if fenced || !strings.HasPrefix(line, "|") {
			continue
		}
		cells := tableCells(line)
		switch {
		case !sawHeader:
			if !slices.Equal(cells, troubleshootingColumns) {
				return nil, fmt.Errorf(troubleshootingPage+":%d: the Troubleshooting by reason table has columns %q, want %q", i+1, cells, troubleshootingColumns)
			}
			sawHeader = true
			continue
		case strings.Trim(strings.Join(cells, ""), "-: ") == "":
			continue // the delimiter row
		case len(cells) != len(troubleshootingColumns):
			return nil, fmt.Errorf(troubleshootingPage+":%d: a row of Troubleshooting by reason has %d cells, want %d (write a | inside a cell as \\|)",
				i+1, len(cells), len(troubleshootingColumns))
		}
		reason := strings.TrimSuffix(strings.TrimPrefix(cells[0], "`"), "`")
		if cells[0] != "`"+reason+"`" || reason == "" || strings.ContainsAny(reason, "` ") {
			return nil, fmt.Errorf(troubleshootingPage+":%d: the first cell of a Troubleshooting by reason row is %q; write the reason alone, in backquotes", i+1, cells[0])
		}
		rows = append(rows, troubleshootingRow{line: i + 1, reason: reason, conditions: cells[1], whatToDo: cells[2]})
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf(troubleshootingPage+" has no table under %q: add one with columns %q", troubleshootingHeading, troubleshootingColumns)
	}
	return rows, nil
}

// tableCells splits a Markdown table row into its trimmed cells; \| is a pipe within a cell.
func tableCells(line string) []string {
	const escapedPipe = "\x00"
	line = strings.ReplaceAll(line, `\|`, escapedPipe)
	line = strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|")
	cells := strings.Split(line, "|")
	for i, cell := range cells {
		cells[i] = strings.TrimSpace(strings.ReplaceAll(cell, escapedPipe, "|"))
	}
	return cells
}

// troubleshootingProblems is what is wrong with rows as the documentation of table, each
// problem saying how to fix it: a reason without exactly one row, a row of no reason,
// rows out of the table's order, conditions other than the table's, or no advice.
func troubleshootingProblems(rows []troubleshootingRow, table []Reason) []string {
	var problems []string
	rank := map[string]int{}
	conditionTypes := map[string]bool{}
	for i, reason := range table {
		rank[string(reason.Name)] = i
		for _, conditionType := range reason.Conditions {
			conditionTypes[string(conditionType)] = true
		}
	}
	firstRow := map[string]int{}
	previous := -1 // the highest index in table of a reason of the rows so far
	misordered := false
	for _, row := range rows {
		index, known := rank[row.reason]
		if !known {
			problems = append(problems, fmt.Sprintf(troubleshootingPage+":%d: Troubleshooting by reason has a row for %s, which internal/reasons does not declare: "+
				"remove the row, or correct the reason's name", row.line, row.reason))
			continue
		}
		if first, seen := firstRow[row.reason]; seen {
			problems = append(problems, fmt.Sprintf(troubleshootingPage+":%d: reason %s has a second row in Troubleshooting by reason (the first is at line %d): "+
				"keep one of them", row.line, row.reason, first))
			continue
		}
		firstRow[row.reason] = row.line
		if index < previous && !misordered {
			// Only the first: after a row out of place, every later one may seem so too.
			misordered = true
			problems = append(problems, fmt.Sprintf(troubleshootingPage+":%d: the row of %s comes after the row of %s, but internal/reasons lists %s first: "+
				"put the rows in the order of reasons.All() (precedence)", row.line, row.reason, table[previous].Name, row.reason))
		}
		previous = max(previous, index)
		problems = append(problems, rowProblems(row, table[index], conditionTypes)...)
	}
	for i, reason := range table {
		if _, documented := firstRow[string(reason.Name)]; documented {
			continue
		}
		where := "as the first row"
		if i > 0 {
			where = "after the row of " + string(table[i-1].Name)
		}
		problems = append(problems, fmt.Sprintf("reason %s has no row in "+troubleshootingPage+"'s Troubleshooting by reason: add a row for %s, in the table's order "+
			"(%s), saying in its what-to-do cell what a platform engineer does about it", reason.Name, reason.Name, where))
	}
	return problems
}

// rowProblems is what is wrong with the conditions and the advice of reason's row.
func rowProblems(row troubleshootingRow, reason Reason, conditionTypes map[string]bool) []string {
	var problems, named []string
	for _, quoted := range backquoted(row.conditions) {
		if conditionTypes[quoted] {
			named = append(named, quoted)
		}
	}
	want := make([]string, 0, len(reason.Conditions))
	for _, conditionType := range reason.Conditions {
		want = append(want, string(conditionType))
	}
	slices.Sort(named)
	slices.Sort(want)
	switch {
	case len(want) == 0 && (len(named) > 0 || !strings.Contains(row.conditions, "Event")):
		problems = append(problems, fmt.Sprintf(troubleshootingPage+":%d: %s is a reason of Events only, but its condition(s) cell is %q: write Event there",
			row.line, reason.Name, row.conditions))
	case !slices.Equal(named, want):
		problems = append(problems, fmt.Sprintf(troubleshootingPage+":%d: the row of %s names conditions %q, but internal/reasons gives it %q: "+
			"correct its condition(s) cell", row.line, reason.Name, named, want))
	}
	if advice := lettersAndDigits(row.whatToDo); advice == "" || advice == lettersAndDigits(string(reason.Name)) {
		problems = append(problems, fmt.Sprintf(troubleshootingPage+":%d: the row of %s says nothing but its name in what to do: say in one sentence what "+
			"a platform engineer does about it (\"Nothing: ...\" and what it confirms, for a reason of health)", row.line, reason.Name))
	}
	return problems
}

// backquoted are the code spans of a Markdown cell.
func backquoted(cell string) []string {
	parts := strings.Split(cell, "`")
	var spans []string
	for i := 1; i < len(parts); i += 2 {
		spans = append(spans, parts[i])
	}
	return spans
}

// lettersAndDigits is text lower-cased without anything but letters and digits, so that
// "`NoLeader`." and "no leader" compare equal.
func lettersAndDigits(text string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, text)
}

func pageTroubleshootingTable(t *testing.T) []troubleshootingRow {
	t.Helper()
	rows, err := troubleshootingTable(readTroubleshootingPage(t))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestEveryReasonHasARowInTroubleshooting(t *testing.T) {
	for _, problem := range troubleshootingProblems(pageTroubleshootingTable(t), All()) {
		t.Error(problem)
	}
}

// TestTroubleshootingProblemsFindEachMistake breaks the page's table in each way the
// check above must catch, so that a check that passes everything fails here.
func TestTroubleshootingProblemsFindEachMistake(t *testing.T) {
	pageRows := pageTroubleshootingTable(t)
	if len(pageRows) < 2 {
		t.Fatalf("the table of %s has %d rows; the cases below need 2", troubleshootingPage, len(pageRows))
	}
	first, second := pageRows[0], pageRows[1]
	edited := func(edit func(rows []troubleshootingRow) []troubleshootingRow) []troubleshootingRow {
		return edit(slices.Clone(pageRows))
	}
	tests := []struct {
		name string
		rows []troubleshootingRow
		want string // in the one problem found
	}{
		{"a reason without a row", edited(func(rows []troubleshootingRow) []troubleshootingRow { return rows[1:] }),
			"add a row for " + first.reason},
		{"a row of no reason", edited(func(rows []troubleshootingRow) []troubleshootingRow {
			return slices.Insert(rows, 1, troubleshootingRow{line: 1, reason: "SomethingOld", conditions: "`Degraded`", whatToDo: "Remove it."})
		}), "a row for SomethingOld, which internal/reasons does not declare"},
		{"two rows swapped", edited(func(rows []troubleshootingRow) []troubleshootingRow {
			rows[0], rows[1] = rows[1], rows[0]
			return rows
		}), "the row of " + first.reason + " comes after the row of " + second.reason},
		{"a reason with two rows", edited(func(rows []troubleshootingRow) []troubleshootingRow { return slices.Insert(rows, 1, first) }),
			"reason " + first.reason + " has a second row"},
		{"nothing to do", edited(func(rows []troubleshootingRow) []troubleshootingRow {
			rows[0].whatToDo = ""
			return rows
		}), "the row of " + first.reason + " says nothing but its name"},
		{"only the name to do", edited(func(rows []troubleshootingRow) []troubleshootingRow {
			rows[0].whatToDo = "`" + first.reason + "`."
			return rows
		}), "the row of " + first.reason + " says nothing but its name"},
		{"other conditions", edited(func(rows []troubleshootingRow) []troubleshootingRow {
			rows[0].conditions = "`PodsPending`"
			return rows
		}), "the row of " + first.reason + " names conditions"},
	}
	if problems := troubleshootingProblems(pageRows, All()); len(problems) > 0 {
		t.Fatalf("the table of %s has problems, which TestEveryReasonHasARowInTroubleshooting reports", troubleshootingPage)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := troubleshootingProblems(tt.rows, All())
			if len(problems) != 1 || !strings.Contains(problems[0], tt.want) {
				t.Errorf("problems = %q, want one saying %q", problems, tt.want)
			}
		})
	}
}

func TestTroubleshootingTableReadsTheSectionOnly(t *testing.T) {
	tests := []struct {
		name    string
		page    string
		want    []string // the reasons of the rows
		wantErr string
	}{
		{"no section", "# x\n| `A` | `Degraded` | Fix it. |\n", nil, "no heading"},
		{"no table", troubleshootingHeading + "\nText.\n### Next\n| `A` | `Degraded` | Fix it. |\n", nil, "no table"},
		{"up to the next heading", troubleshootingHeading + "\n\n| reason | condition(s) | what to do |\n| --- | --- | --- |\n" +
			"| `A` | `Degraded` | Fix it. |\n| `B` | Event | Set `x` to `a\\|b`. |\n\n### Next\n\n| `C` | `Degraded` | Fix it. |\n", []string{"A", "B"}, ""},
		{"other columns", troubleshootingHeading + "\n| reason | what to do |\n| --- | --- |\n| `A` | Fix it. |\n", nil, "columns"},
		{"a reason out of backquotes", troubleshootingHeading + "\n| reason | condition(s) | what to do |\n| --- | --- | --- |\n" +
			"| A | `Degraded` | Fix it. |\n", nil, "in backquotes"},
		{"a pipe not escaped", troubleshootingHeading + "\n| reason | condition(s) | what to do |\n| --- | --- | --- |\n" +
			"| `A` | `Degraded` | Run `a | b`. |\n", nil, "has 4 cells"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, err := troubleshootingTable(tt.page)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, row := range rows {
				got = append(got, row.reason)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("rows of %q, want %q", got, tt.want)
			}
		})
	}
}

func hasCondition(reason Reason, conditionType v1.ConditionType) bool {
	for _, candidate := range reason.Conditions {
		if candidate == conditionType {
			return true
		}
	}
	return false
}

func TestForemostFollowsTheTablesOrderNotTheCallers(t *testing.T) {
	nodes := &Finding{Reason: v1.ReasonNoSchedulableNodes, Message: "no node"}
	stale := &Finding{Reason: v1.ReasonMetricsStale, Message: "old data"}
	crash := &Finding{Reason: v1.ReasonSchedulerCrashing, Message: "crash"}
	pull := &Finding{Reason: v1.ReasonImagePullFailed, Message: "pull"}
	creation := &Finding{Reason: v1.ReasonPodCreationFailed, Message: "quota"}
	stalled := &Finding{Reason: v1.ReasonRolloutStalled, Message: "deadline"}
	unknown := &Finding{Reason: "SomethingNew", Message: "?"}
	tests := []struct {
		name     string
		findings []*Finding
		want     *Finding
	}{
		{"none", nil, nil},
		{"only nils", []*Finding{nil, nil}, nil},
		{"nodes before metrics, either order", []*Finding{stale, nodes}, nodes},
		{"nodes before metrics", []*Finding{nodes, stale}, nodes},
		{"metrics before pods", []*Finding{crash, nil, stale}, stale},
		{"a pull failure before a crash", []*Finding{crash, pull}, pull},
		{"a pod's account before the Deployment's", []*Finding{creation, crash}, crash},
		{"pods before a stalled rollout", []*Finding{stalled, creation}, creation},
		{"an unknown reason last", []*Finding{unknown, stalled}, stalled},
		{"the first of one reason", []*Finding{crash, {Reason: v1.ReasonSchedulerCrashing, Message: "other"}}, crash},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Foremost(tt.findings...); got != tt.want {
				t.Errorf("Foremost = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// problemStatus is, for each condition type, the status in which api/v1 documents it as a
// problem; Progressing and Reconciling tell work under way.
var problemStatus = map[v1.ConditionType]metav1.ConditionStatus{
	v1.ConditionAvailable: metav1.ConditionFalse, v1.ConditionMetricsAvailable: metav1.ConditionFalse,
	v1.ConditionExtendersAvailable: metav1.ConditionFalse, v1.ConditionRouting: metav1.ConditionFalse, v1.ConditionDescheduling: metav1.ConditionFalse,
	v1.ConditionDegraded: metav1.ConditionTrue, v1.ConditionPodsPending: metav1.ConditionTrue, v1.ConditionStalled: metav1.ConditionTrue,
	v1.ConditionProgressing: "", v1.ConditionReconciling: "",
}

func TestEveryConditionTypeHasAKind(t *testing.T) {
	for conditionType, constant := range declaredConditionTypes(t) {
		if _, ok := conditionKinds[conditionType]; !ok {
			t.Errorf("api/v1 declares condition %s (%s), which conditionKinds lacks: say in which status it tells a problem", conditionType, constant)
		}
		if _, ok := problemStatus[conditionType]; !ok {
			t.Errorf("condition %s has no row in this test's problemStatus", conditionType)
		}
	}
	for _, reason := range All() {
		for _, conditionType := range reason.Conditions {
			if _, ok := conditionKinds[conditionType]; !ok {
				t.Errorf("reason %s names condition %s, which conditionKinds lacks", reason.Name, conditionType)
			}
		}
	}
}

// TestIsProblem: every reason of the table, with every condition it may be the reason
// of, in every status, is a problem exactly when the condition is in its problem status
// and the reason is a Warning; its Event is then a Warning, and its first report is told
// but for the start of every scheduler (Available False).
func TestIsProblem(t *testing.T) {
	for _, reason := range All() {
		for _, conditionType := range reason.Conditions {
			for _, status := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
				condition := metav1.Condition{Type: string(conditionType), Status: status, Reason: string(reason.Name)}
				problem := status == problemStatus[conditionType] && reason.Severity == Warning
				if got := IsProblem(condition); got != problem {
					t.Errorf("IsProblem(%s=%s %s) = %t, want %t", conditionType, status, reason.Name, got, problem)
				}
				wantType := map[bool]string{true: "Warning", false: "Normal"}[problem]
				if got := EventType(condition); got != wantType {
					t.Errorf("EventType(%s=%s %s) = %s, want %s", conditionType, status, reason.Name, got, wantType)
				}
				told := problem && conditionType != v1.ConditionAvailable
				if got := TellsFirstReport(condition); got != told {
					t.Errorf("TellsFirstReport(%s=%s %s) = %t, want %t", conditionType, status, reason.Name, got, told)
				}
			}
		}
	}
}

func TestIsProblemCases(t *testing.T) {
	tests := []struct {
		name                 string
		conditionType        v1.ConditionType
		status               metav1.ConditionStatus
		reason               v1.ConditionReason
		problem, firstIsTold bool
	}{
		{"metrics that cannot be read, at once", v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonPrometheusUnreachable, true, true},
		{"metrics still probed", v1.ConditionMetricsAvailable, metav1.ConditionUnknown, v1.ReasonMetricsProbing, false, false},
		{"an extender that cannot be reached", v1.ConditionExtendersAvailable, metav1.ConditionFalse, v1.ReasonExtenderUnreachable, true, true},
		{"failed over", v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonFailedOver, true, true},
		{"not routed while the scheduler starts", v1.ConditionRouting, metav1.ConditionFalse, v1.ReasonSchedulerNotAvailable, false, false},
		{"a refusal", v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonInvalidConfig, true, true},
		{"an unknown reason of Degraded", v1.ConditionDegraded, metav1.ConditionTrue, "SomethingNew", true, true},
		{"pods pending", v1.ConditionPodsPending, metav1.ConditionTrue, v1.ReasonPodsUnschedulable, true, true},
		{"a new scheduler not ready yet", v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonNoReadyScheduler, true, false},
		{"no leader yet", v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonNoLeader, false, false},
		{"removed", v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonRemoved, false, false},
		{"rolling out", v1.ConditionProgressing, metav1.ConditionTrue, v1.ReasonRollingOut, false, false},
		{"a condition the operator does not know", "Other", metav1.ConditionFalse, v1.ReasonInvalidConfig, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			condition := metav1.Condition{Type: string(tt.conditionType), Status: tt.status, Reason: string(tt.reason)}
			if got := IsProblem(condition); got != tt.problem {
				t.Errorf("IsProblem = %t, want %t", got, tt.problem)
			}
			if got := TellsFirstReport(condition); got != tt.firstIsTold {
				t.Errorf("TellsFirstReport = %t, want %t", got, tt.firstIsTold)
			}
		})
	}
}

// TestFirstReportsHideNoProblem: a condition whose first report is not told (a new
// scheduler starts with it) has no Warning reason that another condition, whose first
// report is told, does not report too; but the start itself (NoReadyScheduler).
func TestFirstReportsHideNoProblem(t *testing.T) {
	for _, reason := range All() {
		if reason.Severity != Warning || reason.Name == v1.ReasonNoReadyScheduler {
			continue
		}
		hidden := slices.ContainsFunc(reason.Conditions, func(conditionType v1.ConditionType) bool {
			return conditionKinds[conditionType].startsThere
		})
		told := slices.ContainsFunc(reason.Conditions, func(conditionType v1.ConditionType) bool {
			kind := conditionKinds[conditionType]
			return kind.problemStatus != "" && !kind.startsThere
		})
		if hidden && !told {
			t.Errorf("reason %s is a Warning of %v, whose first report is not told, and of no condition whose first report is", reason.Name, reason.Conditions)
		}
	}
}

func TestKeepsFromMetrics(t *testing.T) {
	for reason, want := range map[v1.ConditionReason]bool{
		v1.ReasonPrometheusNotFound: true, v1.ReasonTokenSecretNotFound: true, v1.ReasonRecordingRulesNotInstalled: true,
		v1.ReasonInvalidConfig: false, v1.ReasonObjectNameTaken: false, "SomethingNew": false,
	} {
		if got := KeepsFromMetrics(reason); got != want {
			t.Errorf("KeepsFromMetrics(%s) = %t, want %t", reason, got, want)
		}
	}
}

// TestEveryReasonIsInTheStatusTable: the Status table of troubleshootingPage lists, in the row of
// each condition, every reason that condition may have, by name or as "the `OTHER`
// reasons" (or problems) of another condition the reason also belongs to. Reconciling and
// Stalled repeat other conditions, and their row says so.
func TestEveryReasonIsInTheStatusTable(t *testing.T) {
	page := readTroubleshootingPage(t)
	start := strings.Index(page, "\n## Status\n")
	if start < 0 {
		t.Fatalf("%s has no ## Status section", troubleshootingPage)
	}
	section := page[start+1:]
	if end := strings.Index(section[1:], "\n## "); end >= 0 {
		section = section[:end+1]
	}
	rows := map[v1.ConditionType]string{}
	for _, line := range strings.Split(section, "\n") {
		cells := tableCells(line)
		if len(cells) != 3 {
			continue
		}
		for _, name := range backquoted(cells[0]) {
			rows[v1.ConditionType(name)] = cells[2]
		}
	}
	for _, reason := range All() {
		for _, conditionType := range reason.Conditions {
			if conditionType == v1.ConditionReconciling || conditionType == v1.ConditionStalled {
				continue
			}
			row, found := rows[conditionType]
			if !found {
				t.Errorf("%s: the Status table has no row for condition %s, a condition of reason %s", troubleshootingPage, conditionType, reason.Name)
				continue
			}
			if strings.Contains(row, "`"+string(reason.Name)+"`") {
				continue
			}
			listed := false
			for _, other := range reason.Conditions {
				listed = listed || other != conditionType && (strings.Contains(row, "the `"+string(other)+"` reasons") ||
					strings.Contains(row, "the `"+string(other)+"` problems"))
			}
			if !listed {
				t.Errorf("%s: in the Status table, the row of %s does not name reason %s; add it, with what it means when that is not obvious", troubleshootingPage, conditionType, reason.Name)
			}
		}
	}
}
