// Package dashboard reads the Grafana dashboard of config/grafana, so that its tests can
// check every query it makes (they parse, they use documented metrics) and the end-to-end
// suite can check that a real scrape returns every metric it queries.
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
	// Panels are those of a collapsed row.
	Panels []Panel `json:"panels"`
}

// Dashboard is what the checks read of a Grafana dashboard.
type Dashboard struct {
	UID        string  `json:"uid"`
	Title      string  `json:"title"`
	Panels     []Panel `json:"panels"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
}

// Read parses the dashboard at path.
func Read(path string) (*Dashboard, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
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
var labelValues = regexp.MustCompile(`^label_values\((.*),\s*[a-zA-Z_][a-zA-Z0-9_]*\)$`)

// Expressions are the PromQL expressions of every panel target and query variable, as
// written (with Grafana's variables).
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
		var query struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(variable.Query, &query); err != nil {
			// A query given as a plain string, as older dashboards write it.
			_ = json.Unmarshal(variable.Query, &query.Query)
		}
		if match := labelValues.FindStringSubmatch(query.Query); match != nil {
			expressions = append(expressions, match[1])
		} else if query.Query != "" {
			expressions = append(expressions, query.Query)
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

// metricName matches the names of the metrics the dashboard may query: the operator's,
// kube-scheduler's and Prometheus' up.
var metricName = regexp.MustCompile(`\b(secondary_scheduler_operator_[a-z_]+|scheduler_[a-z_]+|up)\b`)

// labelName matches a label name in a matcher or grouping, which metricName must not take
// for a metric (scheduler_name is a label).
var labelName = regexp.MustCompile(`\b[a-z_]+\s*(=~|!~|!=|=)`)

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
		// Labels inside matchers and by/without lists are no metrics.
		expr = labelName.ReplaceAllString(expr, "$1")
		expr = regexp.MustCompile(`(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`).ReplaceAllString(expr, "")
		for _, name := range metricName.FindAllString(expr, -1) {
			seen[name] = true
		}
	}
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// Substitute replaces Grafana's variables in expr with values PromQL accepts: ranges with
// a duration, a variable in a matcher with the regular expression of any value.
func Substitute(expr string) string {
	for _, duration := range []string{"$__rate_interval", "$__interval", "$__range"} {
		expr = strings.ReplaceAll(expr, duration, "5m")
	}
	return regexp.MustCompile(`\$\{?[a-zA-Z_][a-zA-Z0-9_]*(:[a-z]+)?\}?`).ReplaceAllString(expr, ".*")
}
