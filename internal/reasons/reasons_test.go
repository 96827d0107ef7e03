package reasons

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// declaredReasons are the ConditionReason constants of api/v1, read from its source so
// that a reason added there and nowhere else is found.
func declaredReasons(t *testing.T) map[v1.ConditionReason]string {
	t.Helper()
	paths, err := filepath.Glob("../../api/v1/*.go")
	if err != nil {
		t.Fatal(err)
	}
	declared := map[v1.ConditionReason]string{}
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
			if ident, ok := spec.Type.(*ast.Ident); !ok || ident.Name != "ConditionReason" {
				return true
			}
			for i, name := range spec.Names {
				value, err := strconv.Unquote(spec.Values[i].(*ast.BasicLit).Value)
				if err != nil {
					t.Fatalf("%s: %v", name.Name, err)
				}
				declared[v1.ConditionReason(value)] = name.Name
			}
			return true
		})
	}
	if len(declared) < 40 {
		t.Fatalf("found only %d reasons in api/v1: is the parsing right?", len(declared))
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

func TestEveryReasonIsDocumentedInTheREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, reason := range All() {
		if !strings.Contains(string(readme), "`"+string(reason.Name)+"`") {
			t.Errorf("reason %s is not in the README: say there, in backquotes, when it is given and what to do", reason.Name)
		}
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

func TestIsBadAndEventType(t *testing.T) {
	condition := func(conditionType v1.ConditionType, status metav1.ConditionStatus, reason v1.ConditionReason) metav1.Condition {
		return metav1.Condition{Type: string(conditionType), Status: status, Reason: string(reason)}
	}
	tests := []struct {
		condition metav1.Condition
		bad       bool
	}{
		{condition(v1.ConditionDegraded, metav1.ConditionTrue, v1.ReasonInvalidConfig), true},
		{condition(v1.ConditionDegraded, metav1.ConditionFalse, v1.ReasonAsExpected), false},
		{condition(v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonNoReadyScheduler), true},
		{condition(v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonImagePullFailed), true},
		{condition(v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonHandingOver), false},
		{condition(v1.ConditionAvailable, metav1.ConditionFalse, v1.ReasonRemoved), false},
		{condition(v1.ConditionAvailable, metav1.ConditionTrue, v1.ReasonSchedulerReady), false},
		{condition(v1.ConditionMetricsAvailable, metav1.ConditionFalse, v1.ReasonPrometheusUnreachable), false},
		{condition(v1.ConditionProgressing, metav1.ConditionTrue, v1.ReasonRollingOut), false},
	}
	for _, tt := range tests {
		if got := IsBad(tt.condition); got != tt.bad {
			t.Errorf("IsBad(%s=%s %s) = %t, want %t", tt.condition.Type, tt.condition.Status, tt.condition.Reason, got, tt.bad)
		}
		want := "Normal"
		if tt.bad {
			want = "Warning"
		}
		if got := EventType(tt.condition); got != want {
			t.Errorf("EventType(%s=%s %s) = %s, want %s", tt.condition.Type, tt.condition.Status, tt.condition.Reason, got, want)
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
