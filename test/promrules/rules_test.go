package promrules

import (
	"bytes"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode"

	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// Paths relative to this package's directory, where go test runs.
var (
	// rulesFile is the rule file the operator embeds and puts into its PrometheusRule.
	rulesFile = filepath.Join("..", "..", "bindata", "assets", "monitoring", "alert-rules.yaml")
	// rulesCopy is its copy for a Prometheus without the Prometheus Operator.
	rulesCopy = filepath.Join("..", "..", "config", "prometheus", "alert-rules.yaml")
	// unitTestsFile holds promtool's unit tests of the rules.
	unitTestsFile = "alerts_test.yaml"
	runbooksFile  = filepath.Join("..", "..", "docs", "runbooks.md")
	monitoringDoc = filepath.Join("..", "..", "docs", "monitoring.md")
)

// runbookBase is where every runbook_url points, followed by the anchor of the alert's
// section.
const runbookBase = "https://github.com/secondary-scheduler/secondary-scheduler-operator/blob/main/docs/runbooks.md#"

// ruleFile is the part of a Prometheus rule file the tests read; promtool checks the rest.
type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

// unitTests is the part of promtool's unit test file the tests read.
type unitTests struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name           string `json:"name"`
		AlertRuleTests []struct {
			EvalTime  string          `json:"eval_time"`
			Alertname string          `json:"alertname"`
			ExpAlerts []expectedAlert `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// expectedAlert is an alert a unit test expects to fire.
type expectedAlert struct {
	ExpLabels      map[string]string `json:"exp_labels"`
	ExpAnnotations map[string]string `json:"exp_annotations"`
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// readAlerts returns the alerting rules of the shipped rule file.
func readAlerts(t *testing.T) []rule {
	t.Helper()
	var file ruleFile
	if err := yaml.Unmarshal(readFile(t, rulesFile), &file); err != nil {
		t.Fatalf("parse %s: %v", rulesFile, err)
	}
	var alerts []rule
	for _, group := range file.Groups {
		for _, r := range group.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r)
			}
		}
	}
	if len(alerts) == 0 {
		t.Fatalf("%s has no alerting rule", rulesFile)
	}
	return alerts
}

// TestPromtool checks the rule file with Prometheus' own parser and evaluates every alert
// against the unit tests of alerts_test.yaml.
func TestPromtool(t *testing.T) {
	binary := promtest.Promtool(t)
	tests := []struct {
		name string
		args []string
	}{
		{"check rules", []string{"check", "rules", rulesFile}},
		{"test rules", []string{"test", "rules", unitTestsFile}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			output, err := exec.Command(binary, tt.args...).CombinedOutput()
			if err != nil {
				t.Fatalf("promtool %s: %v\n%s", strings.Join(tt.args, " "), err, output)
			}
		})
	}
}

// TestRulesCopyIsCurrent: config/prometheus/alert-rules.yaml, which installs without the
// Prometheus Operator load, must be the rules the operator ships.
func TestRulesCopyIsCurrent(t *testing.T) {
	if !bytes.Equal(readFile(t, rulesCopy), readFile(t, rulesFile)) {
		t.Fatalf("%s differs from %s: run make manifests", rulesCopy, rulesFile)
	}
}

// TestEveryAlertHasRunbookAndTests: each alert has a severity, a summary and a
// description, a runbook_url whose anchor is the alert's own section of docs/runbooks.md,
// and unit tests in which it fires and in which it does not.
func TestEveryAlertHasRunbookAndTests(t *testing.T) {
	headings := markdownHeadings(t, runbooksFile)
	var tests unitTests
	if err := yaml.Unmarshal(readFile(t, unitTestsFile), &tests); err != nil {
		t.Fatalf("parse %s: %v", unitTestsFile, err)
	}
	if !slices.ContainsFunc(tests.RuleFiles, func(path string) bool { return filepath.Clean(path) == rulesFile }) {
		t.Fatalf("%s tests rule files %v, not %s", unitTestsFile, tests.RuleFiles, rulesFile)
	}
	firing, silent := map[string]bool{}, map[string]bool{}
	for _, test := range tests.Tests {
		for _, alertTest := range test.AlertRuleTests {
			if len(alertTest.ExpAlerts) == 0 {
				silent[alertTest.Alertname] = true
				continue
			}
			withSummaries := !slices.ContainsFunc(alertTest.ExpAlerts, func(alert expectedAlert) bool {
				return alert.ExpAnnotations["summary"] == ""
			})
			firing[alertTest.Alertname] = firing[alertTest.Alertname] || withSummaries
		}
	}

	alerts := readAlerts(t)
	names := map[string]bool{}
	for _, alert := range alerts {
		names[alert.Alert] = true
		t.Run(alert.Alert, func(t *testing.T) {
			if severity := alert.Labels["severity"]; severity != "warning" && severity != "critical" {
				t.Errorf("severity is %q, want warning or critical", severity)
			}
			for _, annotation := range []string{"summary", "description"} {
				if alert.Annotations[annotation] == "" {
					t.Errorf("no annotation %s", annotation)
				}
			}
			url := alert.Annotations["runbook_url"]
			anchor, found := strings.CutPrefix(url, runbookBase)
			switch {
			case !found:
				t.Errorf("runbook_url %q does not start with %s", url, runbookBase)
			case headings[anchor] != alert.Alert:
				t.Errorf("runbook_url %q: %s has no section %q with anchor %q", url, runbooksFile, "## "+alert.Alert, anchor)
			}
			if !firing[alert.Alert] {
				t.Errorf("%s has no test in which %s fires (with exp_annotations, summary included)", unitTestsFile, alert.Alert)
			}
			if !silent[alert.Alert] {
				t.Errorf("%s has no test in which %s does not fire (exp_alerts: [])", unitTestsFile, alert.Alert)
			}
		})
	}
	// promtool passes a test of an alert that does not exist, as long as it expects none.
	for name := range silent {
		if !names[name] {
			t.Errorf("%s tests alert %s, which %s does not have", unitTestsFile, name, rulesFile)
		}
	}
	// A section of a renamed or removed alert would be a runbook nothing links.
	for _, section := range runbookSections(t) {
		if !names[section.alert] {
			t.Errorf("%s has a section %q, but %s has no such alert", runbooksFile, section.alert, rulesFile)
		}
	}
}

// operatorMetric matches the names of the operator's own metrics.
var operatorMetric = regexp.MustCompile(`secondary_scheduler_operator_[a-z_]+`)

// TestOperatorMetricsDocumented: every metric of the operator an alert reads is in
// docs/monitoring.md, the contract of the metrics' names and labels.
func TestOperatorMetricsDocumented(t *testing.T) {
	documented := string(readFile(t, monitoringDoc))
	used := map[string]bool{}
	for _, alert := range readAlerts(t) {
		for _, metric := range operatorMetric.FindAllString(alert.Expr, -1) {
			used[metric] = true
		}
	}
	if len(used) == 0 {
		t.Fatalf("no alert of %s reads a metric of the operator", rulesFile)
	}
	for metric := range used {
		t.Run(metric, func(t *testing.T) {
			if !strings.Contains(documented, "`"+metric+"`") {
				t.Errorf("%s is not documented in %s", metric, monitoringDoc)
			}
		})
	}
}

// reasonCoverage says, for the alerts on a condition, which of its reasons their runbook
// must explain: every reason the condition can have while the alert fires.
var reasonCoverage = []struct {
	alert     string
	condition v1.ConditionType
	// notAlerting are the condition's reasons while the alert does not fire.
	notAlerting []v1.ConditionReason
}{
	{"SecondarySchedulerUnavailable", v1.ConditionAvailable, []v1.ConditionReason{v1.ReasonSchedulerReady, v1.ReasonServingPreviousConfiguration, v1.ReasonRemoved, v1.ReasonUnmanaged}},
	{"SecondarySchedulerDegraded", v1.ConditionDegraded, []v1.ConditionReason{v1.ReasonAsExpected, v1.ReasonRemoved, v1.ReasonUnmanaged}},
	{"SecondarySchedulerMetricsUnavailable", v1.ConditionMetricsAvailable, []v1.ConditionReason{v1.ReasonMetricsAvailable, v1.ReasonMetricsProbing, v1.ReasonNotChecked}},
	{"SecondarySchedulerPodsPending", v1.ConditionPodsPending, []v1.ConditionReason{v1.ReasonNoPodsPending}},
}

// TestRunbookReasons: the reasons a runbook's Fix table names are reasons the operator
// gives, of the condition the table says, and the runbooks of the alerts on a condition
// explain each reason it can have while they fire; a new reason needs its fix written.
func TestRunbookReasons(t *testing.T) {
	sections := map[string]runbookSection{}
	for _, section := range runbookSections(t) {
		sections[section.alert] = section
		t.Run(section.alert, func(t *testing.T) {
			for _, name := range section.reasons {
				reason, ok := reasons.Of(name)
				switch {
				case !ok:
					t.Errorf("the Fix table names %s, which is no reason of internal/reasons", name)
				case section.condition != "" && !slices.Contains(reason.Conditions, section.condition):
					t.Errorf("the Fix table, by the reason of %s, names %s, which is no reason of %s", section.condition, name, section.condition)
				}
			}
		})
	}
	for _, coverage := range reasonCoverage {
		t.Run(coverage.alert+" covers "+string(coverage.condition), func(t *testing.T) {
			section, ok := sections[coverage.alert]
			if !ok {
				t.Fatalf("%s has no section %s", runbooksFile, coverage.alert)
			}
			if section.condition != coverage.condition {
				t.Errorf("the Fix table goes by the reason of %q, want %s", section.condition, coverage.condition)
			}
			for _, reason := range reasons.All() {
				if slices.Contains(reason.Conditions, coverage.condition) && !slices.Contains(coverage.notAlerting, reason.Name) &&
					!slices.Contains(section.reasons, reason.Name) {
					t.Errorf("the Fix table does not say what to do about %s, a reason of %s", reason.Name, coverage.condition)
				}
			}
		})
	}
}

// TestRunbookLinks: every relative link of docs/runbooks.md leads to a file that exists
// and, with an anchor, to a heading of it.
func TestRunbookLinks(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	dir := filepath.Dir(runbooksFile)
	targets := map[string]bool{}
	for _, match := range link.FindAllStringSubmatch(string(readFile(t, runbooksFile)), -1) {
		if target := match[1]; !strings.HasPrefix(target, "https://") && !strings.HasPrefix(target, "http://") {
			targets[target] = true
		}
	}
	if len(targets) == 0 {
		t.Fatalf("%s has no relative link", runbooksFile)
	}
	for _, target := range slices.Sorted(maps.Keys(targets)) {
		t.Run(target, func(t *testing.T) {
			path, anchor, _ := strings.Cut(target, "#")
			file := runbooksFile
			if path != "" {
				file = filepath.Join(dir, filepath.FromSlash(path))
			}
			if _, err := os.Stat(file); err != nil {
				t.Fatalf("link %s: %v", target, err)
			}
			if anchor != "" {
				if _, ok := markdownHeadings(t, file)[anchor]; !ok {
					t.Errorf("link %s: %s has no heading with anchor %q", target, file, anchor)
				}
			}
		})
	}
}

func TestGithubAnchor(t *testing.T) {
	tests := []struct {
		heading string
		want    string
	}{
		{"SecondarySchedulerPodsPending", "secondaryschedulerpodspending"},
		{"Scraping, with least privilege", "scraping-with-least-privilege"},
		{"In each scheduler namespace: `secondary-scheduler-operator-scheduler-namespace`",
			"in-each-scheduler-namespace-secondary-scheduler-operator-scheduler-namespace"},
		{"The operator's metrics", "the-operators-metrics"},
		{"snake_case stays", "snake_case-stays"},
	}
	for _, tt := range tests {
		t.Run(tt.heading, func(t *testing.T) {
			if got := githubAnchor(tt.heading); got != tt.want {
				t.Errorf("githubAnchor(%q) = %q, want %q", tt.heading, got, tt.want)
			}
		})
	}
}

// githubAnchor is the anchor GitHub gives a Markdown heading: lower-case, spaces turned
// into '-', punctuation other than '-' and '_' dropped.
func githubAnchor(heading string) string {
	var anchor strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			anchor.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			anchor.WriteRune(r)
		}
	}
	return anchor.String()
}

// markdownLines calls line for each line of a Markdown file outside code blocks, where a
// '#' starts a comment, not a heading.
func markdownLines(t *testing.T, path string, line func(string)) {
	t.Helper()
	inCode := false
	for _, text := range strings.Split(string(readFile(t, path)), "\n") {
		if strings.HasPrefix(text, "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			line(text)
		}
	}
}

var heading = regexp.MustCompile(`^#{1,6}\s+(.+?)\s*$`)

// markdownHeadings maps the anchor of each heading of a Markdown file to its text.
func markdownHeadings(t *testing.T, path string) map[string]string {
	t.Helper()
	headings := map[string]string{}
	markdownLines(t, path, func(text string) {
		if match := heading.FindStringSubmatch(text); match != nil {
			headings[githubAnchor(match[1])] = match[1]
		}
	})
	return headings
}

// runbookSection is one alert's section of docs/runbooks.md.
type runbookSection struct {
	alert string
	// condition is the condition whose reasons the Fix table goes by ("**Fix**, by the
	// reason of `Available`"), empty when it names none.
	condition v1.ConditionType
	// reasons are the reasons named in the first column of its Fix table (header
	// "reason").
	reasons []v1.ConditionReason
}

var (
	fixByCondition = regexp.MustCompile("^\\*\\*Fix\\*\\*, by the reason of `([A-Za-z]+)`")
	codeSpan       = regexp.MustCompile("`([A-Za-z]+)`")
)

// runbookSections reads the sections of docs/runbooks.md: each second-level heading
// starts one, named by the alert it explains.
func runbookSections(t *testing.T) []runbookSection {
	t.Helper()
	var sections []runbookSection
	inReasonTable := false
	markdownLines(t, runbooksFile, func(text string) {
		if alert, ok := strings.CutPrefix(text, "## "); ok {
			sections = append(sections, runbookSection{alert: strings.TrimSpace(alert)})
			return
		}
		if len(sections) == 0 {
			return
		}
		section := &sections[len(sections)-1]
		if match := fixByCondition.FindStringSubmatch(text); match != nil {
			section.condition = v1.ConditionType(match[1])
		}
		if !strings.HasPrefix(text, "|") {
			inReasonTable = false
			return
		}
		cells := strings.Split(strings.Trim(text, "| "), "|")
		first := strings.TrimSpace(cells[0])
		switch {
		case first == "reason":
			inReasonTable = true
		case inReasonTable:
			for _, match := range codeSpan.FindAllStringSubmatch(first, -1) {
				section.reasons = append(section.reasons, v1.ConditionReason(match[1]))
			}
		}
	})
	if len(sections) == 0 {
		t.Fatalf("%s has no section", runbooksFile)
	}
	return sections
}
