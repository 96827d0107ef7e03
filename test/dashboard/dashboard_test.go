package dashboard

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

var (
	dashboardPath = filepath.Join("..", "..", "config", "grafana", "secondary-schedulers.json")
	monitoringDoc = filepath.Join("..", "..", "docs", "monitoring.md")
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
		switch {
		case panel.Title == "":
			t.Errorf("panel %d has no title", panel.ID)
		case len(strings.Fields(panel.Description)) < 5:
			t.Errorf("panel %q has no description saying what it shows and what a bad value means", panel.Title)
		case len(panel.Targets) == 0:
			t.Errorf("panel %q queries nothing", panel.Title)
		case !strings.Contains(string(panel.Datasource), "${datasource}"):
			t.Errorf("panel %q does not use the dashboard's data source variable: %s", panel.Title, panel.Datasource)
		}
	}
}

// Every metric the dashboard queries is documented in docs/monitoring.md, and it queries
// what the issue asks a platform engineer to see.
func TestMetricsAreDocumented(t *testing.T) {
	names, err := MetricNames(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(monitoringDoc)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		documented := strings.TrimSuffix(name, "_bucket")
		if name == "up" {
			continue
		}
		if !strings.Contains(string(doc), "`"+documented) {
			t.Errorf("the dashboard queries %s, which docs/monitoring.md does not document", name)
		}
	}
	for _, wanted := range []string{
		"scheduler_schedule_attempts_total",                            // attempts by result, placements
		"scheduler_scheduling_attempt_duration_seconds_bucket",         // latency percentiles
		"secondary_scheduler_operator_scheduler_pending_pods",          // pending pods
		"secondary_scheduler_operator_scheduler_scoring_by_requests",   // failsafe state
		"secondary_scheduler_operator_metrics_probe_timestamp_seconds", // probe age
	} {
		if !slices.Contains(names, wanted) {
			t.Errorf("the dashboard does not query %s", wanted)
		}
	}
}

func TestMetricNamesAndExpressions(t *testing.T) {
	tests := []struct {
		name        string
		dashboard   string
		expressions []string
		metrics     []string
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
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "dashboard.json")
			if err := os.WriteFile(path, []byte(tt.dashboard), 0o644); err != nil {
				t.Fatal(err)
			}
			expressions, err := Expressions(path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(expressions, tt.expressions) {
				t.Errorf("expressions %q, want %q", expressions, tt.expressions)
			}
			metrics, err := MetricNames(path)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(metrics, tt.metrics) {
				t.Errorf("metrics %q, want %q", metrics, tt.metrics)
			}
		})
	}
}

func TestSubstitute(t *testing.T) {
	got := Substitute(`rate(x{namespace=~"$namespace", s=~"${secondary_scheduler}", f=~"${v:regex}"}[$__rate_interval])`)
	want := `rate(x{namespace=~".*", s=~".*", f=~".*"}[5m])`
	if got != want {
		t.Errorf("Substitute = %s, want %s", got, want)
	}
}
