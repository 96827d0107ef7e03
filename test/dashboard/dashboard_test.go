package dashboard

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// Paths relative to this package's directory, where go test runs.
var (
	dashboardPath = filepath.Join("..", "..", "config", "grafana", "secondary-schedulers.json")
	monitoringDoc = filepath.Join("..", "..", "docs", "monitoring.md")
)

// The variables every query filters by, and the job the schedulers are scraped as.
const (
	namespaceFilter          = `namespace=~"$namespace"`
	secondarySchedulerFilter = `secondary_scheduler=~"$secondary_scheduler"`
	schedulerJob             = `job="secondary-scheduler"`
)

// checkParse has promtool parse every expression, as recording rules of a rule file.
func checkParse(t *testing.T, expressions []string) error {
	t.Helper()
	var rules strings.Builder
	rules.WriteString("groups:\n- name: dashboard\n  rules:\n")
	for i, expr := range expressions {
		fmt.Fprintf(&rules, "  - record: dashboard:query%d\n    expr: %q\n", i, Substitute(expr))
	}
	file := filepath.Join(t.TempDir(), "dashboard-rules.yaml")
	if err := os.WriteFile(file, []byte(rules.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	output, err := exec.Command(promtest.Promtool(t), "check", "rules", file).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%w: %s", err, output)
	}
	return nil
}

// Every query of the dashboard parses as PromQL, once Grafana's variables are replaced.
func TestEveryQueryParses(t *testing.T) {
	expressions, err := Expressions(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(expressions) < 10 {
		t.Fatalf("only %d queries found in %s", len(expressions), dashboardPath)
	}
	if err := checkParse(t, expressions); err != nil {
		t.Fatalf("a query of %s does not parse: %v", dashboardPath, err)
	}
	// The check can fail: a query broken as a typo would break it.
	if err := checkParse(t, []string{`sum by (secondary_scheduler (up)`}); err == nil {
		t.Fatal("promtool accepted a query that does not parse: the check above proves nothing")
	}
}

// Every panel can be read without the source: a title, a sentence saying what it shows,
// a query, the dashboard's data source; ids are unique.
func TestPanelsAreComplete(t *testing.T) {
	dashboard, err := Read(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	if dashboard.UID != "secondary-schedulers" || dashboard.Title == "" {
		t.Errorf("uid %q and title %q, want uid secondary-schedulers and a title", dashboard.UID, dashboard.Title)
	}
	ids := map[int]string{}
	var walk func([]Panel)
	walk = func(panels []Panel) {
		for _, panel := range panels {
			if other, taken := ids[panel.ID]; taken {
				t.Errorf("panels %q and %q share id %d", other, panel.Title, panel.ID)
			}
			ids[panel.ID] = panel.Title
			walk(panel.Panels)
		}
	}
	walk(dashboard.Panels)
	for _, panel := range dashboard.AllPanels() {
		if panel.Title == "" {
			t.Errorf("panel %d has no title", panel.ID)
		}
		if len(strings.Fields(panel.Description)) < 5 {
			t.Errorf("panel %q has no description saying what it shows and what a bad value means", panel.Title)
		}
		if len(panel.Targets) == 0 {
			t.Errorf("panel %q queries nothing", panel.Title)
		}
		if !strings.Contains(string(panel.Datasource), "${datasource}") {
			t.Errorf("panel %q does not use the dashboard's data source variable: %s", panel.Title, panel.Datasource)
		}
	}
}

// The dashboard lets its user pick the Prometheus, and any namespaces and
// SecondarySchedulers among those the operator reports.
func TestVariables(t *testing.T) {
	dashboard, err := Read(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	variables := map[string]Variable{}
	for _, variable := range dashboard.Templating.List {
		variables[variable.Name] = variable
	}
	if datasource := variables["datasource"]; datasource.Type != "datasource" || string(datasource.Query) != `"prometheus"` {
		t.Errorf("variable datasource is of type %q with query %s, want a data source variable of Prometheus data sources", datasource.Type, datasource.Query)
	}
	for _, name := range []string{"namespace", "secondary_scheduler"} {
		variable, ok := variables[name]
		switch {
		case !ok:
			t.Errorf("no variable %s", name)
		case variable.Type != "query" || !strings.HasPrefix(variable.QueryText(), "label_values(secondary_scheduler_operator_scheduler_info"):
			t.Errorf("variable %s is of type %q with query %q, want label_values of secondary_scheduler_operator_scheduler_info", name, variable.Type, variable.QueryText())
		case !strings.HasSuffix(strings.TrimSpace(variable.QueryText()), ", "+name+")"):
			t.Errorf("variable %s takes the values of another label: %q", name, variable.QueryText())
		case !variable.Multi || !variable.IncludeAll:
			t.Errorf("variable %s is multi %t and includeAll %t, want both", name, variable.Multi, variable.IncludeAll)
		case !strings.Contains(string(variable.Datasource), "${datasource}"):
			t.Errorf("variable %s does not query the dashboard's data source: %s", name, variable.Datasource)
		}
	}
}

// The file stays as reviewers diff it: JSON indented by two spaces, keys in the order
// they were written (json.Indent keeps it), one newline at the end.
func TestFormatted(t *testing.T) {
	data, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var compact, indented bytes.Buffer
	if err := json.Compact(&compact, data); err != nil {
		t.Fatal(err)
	}
	if err := json.Indent(&indented, compact.Bytes(), "", "  "); err != nil {
		t.Fatal(err)
	}
	indented.WriteByte('\n')
	if diff := cmp.Diff(indented.String(), string(data)); diff != "" {
		t.Errorf("%s is not indented by two spaces (-want +got):\n%s", dashboardPath, diff)
	}
}

// documentedMetric is a metric row of docs/monitoring.md: a name in the first cell, in
// backquotes, followed by the cells of the row.
var documentedMetric = regexp.MustCompile("(?m)^\\| `((?:secondary_scheduler_operator|scheduler)_[a-z0-9_]+)[`{][^|]*\\|(.*)$")

// documentedMetrics are the metrics docs/monitoring.md documents, each with whether its
// series carry namespace and secondary_scheduler: the operator's say so in their labels
// cell; kube-scheduler's get both from the scrape of job="secondary-scheduler".
func documentedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	doc, err := os.ReadFile(monitoringDoc)
	if err != nil {
		t.Fatal(err)
	}
	perScheduler := map[string]bool{}
	for _, row := range documentedMetric.FindAllStringSubmatch(string(doc), -1) {
		name, cells := row[1], strings.Split(row[2], "|")
		if !strings.HasPrefix(name, "secondary_scheduler_operator_") {
			perScheduler[name] = true
			continue
		}
		if len(cells) < 2 {
			t.Fatalf("%s: the row of %s has no labels cell", monitoringDoc, name)
		}
		labels := cells[1]
		perScheduler[name] = strings.Contains(labels, "`namespace`") && strings.Contains(labels, "`secondary_scheduler`")
	}
	if len(perScheduler) < 15 {
		t.Fatalf("only %d metrics found in the tables of %s: has their format changed?", len(perScheduler), monitoringDoc)
	}
	return perScheduler
}

// documentedName is the name under which docs/monitoring.md documents metric: its own,
// or a histogram's for one of its series.
func documentedName(metric string, documented map[string]bool) (string, bool) {
	if _, ok := documented[metric]; ok {
		return metric, true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if histogram, ok := strings.CutSuffix(metric, suffix); ok {
			if _, ok := documented[histogram]; ok {
				return histogram, true
			}
		}
	}
	return "", false
}

// Every metric the dashboard queries is documented in docs/monitoring.md, and it queries
// what a platform engineer needs to see.
func TestMetricsAreDocumented(t *testing.T) {
	names, err := MetricNames(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	documented := documentedMetrics(t)
	for _, name := range names {
		if _, ok := documentedName(name, documented); !ok && name != "up" {
			t.Errorf("the dashboard queries %s, which %s does not document", name, monitoringDoc)
		}
	}
	for _, wanted := range []string{
		"secondary_scheduler_operator_scheduler_condition",                            // Available, Degraded
		"secondary_scheduler_operator_scheduler_ready_replicas",                       // ready against wanted
		"scheduler_schedule_attempts_total",                                           // attempts by result, placements
		"scheduler_scheduling_attempt_duration_seconds_bucket",                        // latency percentiles
		"scheduler_pending_pods",                                                      // queues
		"scheduler_framework_extension_point_duration_seconds_bucket",                 // extension point durations (recorded every cycle; plugin durations are sampled)
		"secondary_scheduler_operator_scheduler_pending_pods",                         // pending pods
		"secondary_scheduler_operator_scheduler_oldest_pending_pod_timestamp_seconds", // their wait
		"secondary_scheduler_operator_pods_naming_unknown_scheduler",                  // typos
		"secondary_scheduler_operator_scheduler_scoring_by_requests",                  // failsafe state
		"secondary_scheduler_operator_metrics_probe_timestamp_seconds",                // probe age
		"secondary_scheduler_operator_metrics_token_expiry_timestamp_seconds",         // token lifetime
		"secondary_scheduler_operator_reconcile_errors_total",                         // the operator's errors
	} {
		if !slices.Contains(names, wanted) {
			t.Errorf("the dashboard does not query %s", wanted)
		}
	}
}

// matcher is one label matcher of a selector.
var matcher = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"`)

// filterProblems says which selectors of expressions do not filter by the dashboard's
// variables although their series carry namespace and secondary_scheduler, and which of
// kube-scheduler's do not keep to job="secondary-scheduler" (the cluster's own
// kube-scheduler serves the same names).
func filterProblems(expressions []string, documented map[string]bool) []string {
	var problems []string
	for _, expr := range expressions {
		for _, s := range selectors(expr) {
			name, _ := documentedName(s.metric, documented)
			if !documented[name] {
				continue
			}
			var have []string
			for _, m := range matcher.FindAllStringSubmatch(s.matchers, -1) {
				have = append(have, m[1]+m[2]+`"`+m[3]+`"`)
			}
			want := []string{namespaceFilter, secondarySchedulerFilter}
			if !strings.HasPrefix(s.metric, "secondary_scheduler_operator_") {
				want = append(want, schedulerJob)
			}
			for _, w := range want {
				if !slices.Contains(have, w) {
					problems = append(problems, fmt.Sprintf("%s{%s} lacks %s in %s", s.metric, s.matchers, w, expr))
				}
			}
		}
	}
	return problems
}

// Every query of a series of one SecondaryScheduler shows only those picked in the
// dashboard's variables.
func TestQueriesAreFiltered(t *testing.T) {
	expressions, err := Expressions(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	documented := documentedMetrics(t)
	var panelExpressions []string
	for _, expr := range expressions {
		// The variables' own queries are what the filters choose from.
		if !strings.HasPrefix(expr, "secondary_scheduler_operator_scheduler_info") {
			panelExpressions = append(panelExpressions, expr)
		}
	}
	for _, problem := range filterProblems(panelExpressions, documented) {
		t.Error(problem)
	}
}

func TestFilterProblems(t *testing.T) {
	documented := map[string]bool{
		"secondary_scheduler_operator_scheduler_pending_pods":        true,
		"secondary_scheduler_operator_pods_naming_unknown_scheduler": false,
		"scheduler_scheduling_attempt_duration_seconds":              true,
	}
	tests := []struct {
		name string
		expr string
		want int
	}{
		{"filtered", `sum(secondary_scheduler_operator_scheduler_pending_pods{namespace=~"$namespace", secondary_scheduler=~"$secondary_scheduler"})`, 0},
		{"a series without the labels", `sum by (scheduler_name) (secondary_scheduler_operator_pods_naming_unknown_scheduler)`, 0},
		{"no matchers", `secondary_scheduler_operator_scheduler_pending_pods`, 2},
		{"the namespace filter only", `secondary_scheduler_operator_scheduler_pending_pods{namespace=~"$namespace"}`, 1},
		{"a fixed namespace", `secondary_scheduler_operator_scheduler_pending_pods{namespace="a", secondary_scheduler=~"$secondary_scheduler"}`, 1},
		{
			"a histogram of kube-scheduler without its job",
			`rate(scheduler_scheduling_attempt_duration_seconds_bucket{namespace=~"$namespace", secondary_scheduler=~"$secondary_scheduler"}[5m])`, 1,
		},
		{
			"a histogram of kube-scheduler, filtered",
			`rate(scheduler_scheduling_attempt_duration_seconds_bucket{job="secondary-scheduler", namespace=~"$namespace", secondary_scheduler=~"$secondary_scheduler"}[5m])`, 0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := filterProblems([]string{tt.expr}, documented); len(got) != tt.want {
				t.Errorf("%d problems %q, want %d", len(got), got, tt.want)
			}
		})
	}
}

func TestMetricNamesAndExpressions(t *testing.T) {
	tests := []struct {
		name        string
		dashboard   string
		expressions []string
		metrics     []string
		wantErr     bool
	}{
		{
			name: "panels in rows, a label named like a metric, a histogram, a variable",
			dashboard: `{"panels": [
  {"type": "row", "panels": [{"type": "timeseries", "targets": [{"expr": "sum by (scheduler_name) (secondary_scheduler_operator_pods_naming_unknown_scheduler)"}]}]},
  {"type": "timeseries", "targets": [{"expr": "histogram_quantile(0.99, sum by (le) (rate(scheduler_scheduling_attempt_duration_seconds_bucket{job=\"secondary-scheduler\", namespace=~\"$namespace\"}[$__rate_interval])))"}]}
 ],
 "templating": {"list": [
  {"name": "namespace", "type": "query", "query": {"query": "label_values(secondary_scheduler_operator_scheduler_info, namespace)"}},
  {"name": "datasource", "type": "datasource", "query": "prometheus"}]}}`,
			expressions: []string{
				"sum by (scheduler_name) (secondary_scheduler_operator_pods_naming_unknown_scheduler)",
				`histogram_quantile(0.99, sum by (le) (rate(scheduler_scheduling_attempt_duration_seconds_bucket{job="secondary-scheduler", namespace=~"$namespace"}[$__rate_interval])))`,
				"secondary_scheduler_operator_scheduler_info",
			},
			metrics: []string{"scheduler_scheduling_attempt_duration_seconds_bucket", "secondary_scheduler_operator_pods_naming_unknown_scheduler",
				"secondary_scheduler_operator_scheduler_info"},
		},
		{
			name:        "a query variable given as a plain string, a join",
			dashboard:   `{"panels": [{"type": "table", "targets": [{"expr": "a_metric * on (namespace) group_left up"}]}], "templating": {"list": [{"name": "n", "type": "query", "query": "label_values(up, job)"}]}}`,
			expressions: []string{"a_metric * on (namespace) group_left up", "up"},
			metrics:     []string{"up"},
		},
		{
			name: "labels named like metrics in matchers, group_left and strings; a metric twice; a variable with a selector",
			dashboard: `{"panels": [{"type": "timeseries", "targets": [
  {"expr": "label_replace(secondary_scheduler_operator_scheduler_info{scheduler_name=~\"scheduler_x\"}, \"scheduler_copy\", \"$1\", \"scheduler_name\", \"(.*)\")"},
  {"expr": "scheduler_pending_pods * on (namespace) group_left (scheduler_name) secondary_scheduler_operator_scheduler_info"}]}],
 "templating": {"list": [{"name": "secondary_scheduler", "type": "query",
  "query": {"query": "label_values(secondary_scheduler_operator_scheduler_info{namespace=~\"$namespace\"}, secondary_scheduler)"}}]}}`,
			expressions: []string{
				`label_replace(secondary_scheduler_operator_scheduler_info{scheduler_name=~"scheduler_x"}, "scheduler_copy", "$1", "scheduler_name", "(.*)")`,
				"scheduler_pending_pods * on (namespace) group_left (scheduler_name) secondary_scheduler_operator_scheduler_info",
				`secondary_scheduler_operator_scheduler_info{namespace=~"$namespace"}`,
			},
			metrics: []string{"scheduler_pending_pods", "secondary_scheduler_operator_scheduler_info"},
		},
		{
			name:        "no panels",
			dashboard:   `{"title": "empty"}`,
			expressions: nil,
			metrics:     []string{},
		},
		{
			name:      "not JSON",
			dashboard: `{"panels": [`,
			wantErr:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dashboard.json")
			if err := os.WriteFile(path, []byte(tt.dashboard), 0o644); err != nil {
				t.Fatal(err)
			}
			expressions, err := Expressions(path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Expressions error %v, want an error: %t", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.expressions, expressions); diff != "" {
				t.Errorf("Expressions (-want +got):\n%s", diff)
			}
			metrics, err := MetricNames(path)
			if (err != nil) != tt.wantErr {
				t.Fatalf("MetricNames error %v, want an error: %t", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.metrics, metrics); diff != "" {
				t.Errorf("MetricNames (-want +got):\n%s", diff)
			}
		})
	}
	if _, err := MetricNames(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("MetricNames of a missing file returned no error")
	}
}

func TestSubstitute(t *testing.T) {
	tests := []struct {
		expr string
		want string
	}{
		{`rate(x{namespace=~"$namespace"}[$__rate_interval])`, `rate(x{namespace=~".*"}[5m])`},
		{`increase(x[$__range]) / increase(x[${__interval}])`, `increase(x[5m]) / increase(x[5m])`},
		{`x{s=~"${secondary_scheduler}", f=~"${v:regex}"}`, `x{s=~".*", f=~".*"}`},
		{`label_replace(x, "d", "$1", "s", "(.*)")`, `label_replace(x, "d", "$1", "s", "(.*)")`},
	}
	for _, tt := range tests {
		if got := Substitute(tt.expr); got != tt.want {
			t.Errorf("Substitute(%s) = %s, want %s", tt.expr, got, tt.want)
		}
	}
}
