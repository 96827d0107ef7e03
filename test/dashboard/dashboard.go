package dashboard

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strings"
)

// Panel is what the checks read of a Grafana panel.
type Panel struct {
	ID          int             `json:"id"`
	Type        string          `json:"type"`
	Title       string          `json:"title"`
	Description string          `json:"description"`
	Datasource  json.RawMessage `json:"datasource"`
	Targets     []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
	// Panels are those of a row (Grafana keeps them here while the row is collapsed).
	Panels []Panel `json:"panels"`
}

// Variable is what the checks read of a template variable.
type Variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Datasource json.RawMessage `json:"datasource"`
	// Query is a data source variable's plugin type ("prometheus"), or a query
	// variable's query: {"query": "label_values(...)"}, or the plain string older
	// dashboards write.
	Query      json.RawMessage `json:"query"`
	Multi      bool            `json:"multi"`
	IncludeAll bool            `json:"includeAll"`
}

// QueryText is the variable's query as a string, whichever form the dashboard gives it.
func (v Variable) QueryText() string {
	var query struct {
		Query string `json:"query"`
	}
	if err := json.Unmarshal(v.Query, &query); err == nil {
		return query.Query
	}
	var plain string
	_ = json.Unmarshal(v.Query, &plain)
	return plain
}

// Dashboard is what the checks read of a Grafana dashboard.
type Dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []Variable `json:"list"`
	} `json:"templating"`
}

// Read parses the dashboard at path.
func Read(path string) (*Dashboard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read dashboard: %w", err)
	}
	dashboard := &Dashboard{}
	if err := json.Unmarshal(data, dashboard); err != nil {
		return nil, fmt.Errorf("parse dashboard %s: %w", path, err)
	}
	return dashboard, nil
}

// AllPanels are the dashboard's panels, those in rows included, rows excluded.
func (d *Dashboard) AllPanels() []Panel {
	var all []Panel
	var walk func([]Panel)
	walk = func(panels []Panel) {
		for _, panel := range panels {
			if panel.Type != "row" {
				all = append(all, panel)
			}
			walk(panel.Panels)
		}
	}
	walk(d.Panels)
	return all
}

// labelValues is a query variable's label_values(EXPR, LABEL).
var labelValues = regexp.MustCompile(`^\s*label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\s*\)\s*$`)

// Expressions are the PromQL expressions of every panel target and query variable, as
// written (with Grafana's variables); of a variable's label_values(EXPR, LABEL), EXPR.
func (d *Dashboard) Expressions() []string {
	var expressions []string
	for _, panel := range d.AllPanels() {
		for _, target := range panel.Targets {
			expressions = append(expressions, target.Expr)
		}
	}
	for _, variable := range d.Templating.List {
		if variable.Type != "query" {
			continue
		}
		query := variable.QueryText()
		if match := labelValues.FindStringSubmatch(query); match != nil {
			expressions = append(expressions, match[1])
		} else if query != "" {
			expressions = append(expressions, query)
		}
	}
	return expressions
}

// Expressions are the PromQL expressions of the dashboard at path.
func Expressions(path string) ([]string, error) {
	dashboard, err := Read(path)
	if err != nil {
		return nil, err
	}
	return dashboard.Expressions(), nil
}

// MetricNames are the sorted names of the metrics the dashboard at path queries, as the
// queries name them (a histogram's _bucket series included).
func MetricNames(path string) ([]string, error) {
	expressions, err := Expressions(path)
	if err != nil {
		return nil, err
	}
	return metricNames(expressions), nil
}

func metricNames(expressions []string) []string {
	seen := map[string]bool{}
	for _, expr := range expressions {
		for _, s := range selectors(expr) {
			seen[s.metric] = true
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// selector is a metric a query names and the label matchers written after it, braces
// excluded ("" when none).
type selector struct {
	metric   string
	matchers string
}

// selectorToken finds, left to right, what may look like a metric name without being
// one (a string literal; the label list of by, without, on, ignoring, group_left and
// group_right; a matcher list of its own) and the names of the metrics the dashboard may
// query: the operator's, kube-scheduler's and Prometheus' up, each with its matchers.
// Skipping the former keeps labels such as scheduler_name from being taken for metrics.
//
// promtool is what parses the queries (TestEveryQueryParses). Picking names out with a
// regular expression instead of the PromQL parser (prometheus/prometheus'
// promql/parser) keeps that module and its dependencies out of go.mod; the queries are
// ours and short, and the unit tests cover the forms they use.
var selectorToken = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`" +
	`|\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)` +
	`|\{[^}]*\}` +
	`|\b(secondary_scheduler_operator_[a-z0-9_]+|scheduler_[a-z0-9_]+|up)\b(?:\s*\{([^}]*)\})?`)

// selectors are the metrics expr names, in order, with their matchers.
func selectors(expr string) []selector {
	var found []selector
	for _, match := range selectorToken.FindAllStringSubmatch(expr, -1) {
		if match[1] != "" {
			found = append(found, selector{metric: match[1], matchers: strings.TrimSpace(match[2])})
		}
	}
	return found
}

var (
	// grafanaRange is a variable Grafana replaces with a duration.
	grafanaRange = regexp.MustCompile(`\$\{?__(?:rate_interval|interval|range)\}?`)
	// grafanaVariable is a dashboard variable, as $name, ${name} or ${name:format}.
	grafanaVariable = regexp.MustCompile(`\$(?:[a-zA-Z_][a-zA-Z0-9_]*|\{[a-zA-Z_][a-zA-Z0-9_]*(?::[a-z]+)?\})`)
)

// Substitute replaces Grafana's variables in expr with values PromQL accepts: a range
// with a duration, a dashboard variable (used in a regular-expression matcher) with the
// regular expression of any value.
func Substitute(expr string) string {
	expr = grafanaRange.ReplaceAllString(expr, "5m")
	return grafanaVariable.ReplaceAllString(expr, ".*")
}
