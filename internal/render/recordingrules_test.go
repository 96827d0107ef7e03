package render

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
)

func recordingRulesScheduler(name string) *v1.SecondaryScheduler {
	return secondaryScheduler(name, func(cr *v1.SecondaryScheduler) {
		cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Provider: v1.PrometheusProvider, InstallRecordingRules: true}}
	})
}

func TestRecordingRulesGolden(t *testing.T) {
	rule, err := RecordingRules(recordingRulesScheduler("load-packer"),
		RecordingRuleTarget{Namespace: "monitoring", Labels: map[string]string{"release": "kube-prometheus-stack"}})
	if err != nil {
		t.Fatalf("RecordingRules: %v", err)
	}
	data, err := yaml.Marshal(rule.Object)
	if err != nil {
		t.Fatal(err)
	}
	expectGolden(t, "prometheusrule", string(data))
}

func TestRecordingRulesLabelsAndNamespace(t *testing.T) {
	owner := OwnerLabels(recordingRulesScheduler("load-packer"))
	withOwner := func(extra map[string]string) map[string]string {
		labels := maps.Clone(owner)
		maps.Copy(labels, extra)
		return labels
	}
	tests := []struct {
		name   string
		target RecordingRuleTarget
		// wantLabels are all the object's labels; wantOwnerReference says whether the
		// SecondaryScheduler controls it, which it can only within its own namespace.
		wantLabels         map[string]string
		wantOwnerReference bool
		wantErr            string
	}{
		{
			name:       "Prometheus in another namespace, selecting by label",
			target:     RecordingRuleTarget{Namespace: "monitoring", Labels: map[string]string{"release": "kube-prometheus-stack", "role": "alert-rules"}},
			wantLabels: withOwner(map[string]string{"release": "kube-prometheus-stack", "role": "alert-rules"}),
		},
		{
			name:       "Prometheus selecting every rule",
			target:     RecordingRuleTarget{Namespace: "monitoring"},
			wantLabels: owner,
		},
		{
			name:               "Prometheus in the scheduler's namespace",
			target:             RecordingRuleTarget{Namespace: "platform", Labels: map[string]string{"prometheus": "k8s"}},
			wantLabels:         withOwner(map[string]string{"prometheus": "k8s"}),
			wantOwnerReference: true,
		},
		{
			name:       "selector agreeing with an owner label",
			target:     RecordingRuleTarget{Namespace: "monitoring", Labels: map[string]string{LabelManagedBy: ManagedByValue}},
			wantLabels: owner,
		},
		{
			name:    "selector contradicting an owner label",
			target:  RecordingRuleTarget{Namespace: "monitoring", Labels: map[string]string{LabelManagedBy: "helm"}},
			wantErr: `requires label app.kubernetes.io/managed-by="helm"`,
		},
		{
			name:    "selector requiring the scheduler's name",
			target:  RecordingRuleTarget{Namespace: "monitoring", Labels: map[string]string{LabelInstance: "load-packer"}},
			wantErr: `requires label app.kubernetes.io/instance="load-packer", which the operator sets to identify the SecondaryScheduler`,
		},
		{
			name:    "selector requiring an invalid label value",
			target:  RecordingRuleTarget{Namespace: "monitoring", Labels: map[string]string{"release": "kube prometheus"}},
			wantErr: `requires label release="kube prometheus", which is no valid label value`,
		},
		{
			name:    "no namespace",
			target:  RecordingRuleTarget{Labels: map[string]string{"release": "kube-prometheus-stack"}},
			wantErr: "no namespace",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rule, err := RecordingRules(recordingRulesScheduler("load-packer"), tt.target)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("RecordingRules: %v", err)
			}
			if rule.GetNamespace() != tt.target.Namespace {
				t.Errorf("namespace: got %q, want the Prometheus's %q", rule.GetNamespace(), tt.target.Namespace)
			}
			if diff := cmp.Diff(tt.wantLabels, rule.GetLabels()); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if got := len(rule.GetOwnerReferences()) == 1; got != tt.wantOwnerReference {
				t.Errorf("owner references: got %v, want one: %v", rule.GetOwnerReferences(), tt.wantOwnerReference)
			}
		})
	}
}

func TestCheckRuleSelector(t *testing.T) {
	tests := []struct {
		name     string
		selector map[string]string
		// wantErr is part of the error, empty when rules can carry the labels.
		wantErr string
	}{
		{name: "no labels", selector: nil},
		{name: "the usual labels", selector: map[string]string{"release": "kube-prometheus-stack", "prometheus": "k8s", "role": "alert-rules"}},
		{name: "a prefixed key and an empty value", selector: map[string]string{"example.com/rules": ""}},
		{name: "agreeing with a label every object of the operator carries", selector: map[string]string{LabelManagedBy: ManagedByValue, LabelName: NameValue}},
		{
			name:     "key with a space",
			selector: map[string]string{"rule set": "load"},
			wantErr:  `label key "rule set", which is no valid label key: name part must consist of alphanumeric characters`,
		},
		{
			name:     "key with an invalid prefix",
			selector: map[string]string{"Example.com/rules": "load"},
			wantErr:  `label key "Example.com/rules", which is no valid label key: prefix part a lowercase RFC 1123 subdomain`,
		},
		{
			name:     "value too long, cut in the error",
			selector: map[string]string{"release": strings.Repeat("v", 300)},
			wantErr:  `label release="` + strings.Repeat("v", 63) + `"..., which is no valid label value: must be no more than 63`,
		},
		{
			name:     "value with a slash",
			selector: map[string]string{"release": "team/prometheus"},
			wantErr:  `label release="team/prometheus", which is no valid label value: a valid label must be an empty string or consist of alphanumeric characters`,
		},
		{
			name:     "contradicting managed-by",
			selector: map[string]string{LabelManagedBy: "Helm"},
			wantErr:  `requires label app.kubernetes.io/managed-by="Helm", which the operator sets to "secondary-scheduler-operator" on every object it manages`,
		},
		{
			name:     "contradicting the name label",
			selector: map[string]string{LabelName: "prometheus"},
			wantErr:  `requires label app.kubernetes.io/name="prometheus", which the operator sets to "secondary-scheduler"`,
		},
		{
			name:     "requiring an owner's namespace",
			selector: map[string]string{LabelOwnerNamespace: "platform"},
			wantErr:  `requires label operator.secondary-scheduler.io/owner-namespace="platform", which the operator sets to identify the SecondaryScheduler owning each object`,
		},
		{
			name:     "the first offending key in order is named",
			selector: map[string]string{"zz": "a b", LabelOwnerName: "load-packer", "release": "ok"},
			wantErr:  `requires label operator.secondary-scheduler.io/owner-name="load-packer"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckRuleSelector(tt.selector)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("CheckRuleSelector(%v): %v, want nil", tt.selector, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("CheckRuleSelector(%v) = %v, want an error containing %q", tt.selector, err, tt.wantErr)
			}
		})
	}
}

// Every label the operator puts on its objects is either required with its one value or
// refused, including labels added to OwnerLabels later: otherwise a selector requiring it
// would get past planning and fail each render.
func TestCheckRuleSelectorRefusesOtherOwnerLabelValues(t *testing.T) {
	for key, value := range OwnerLabels(recordingRulesScheduler("load-packer")) {
		if err := CheckRuleSelector(map[string]string{key: value + "-other"}); err == nil {
			t.Errorf("a selector requiring %s=%q, which the operator sets to %q, was accepted", key, value+"-other", value)
		}
	}
}

func TestRecordingRuleName(t *testing.T) {
	// The rules of two schedulers may land in one namespace: names must differ even when
	// namespace and name split the same words differently.
	names := map[string]string{}
	for _, cr := range []*v1.SecondaryScheduler{
		recordingRulesScheduler("b-c"),
		withNamespace(recordingRulesScheduler("c"), "platform-b"),
		withNamespace(recordingRulesScheduler("c"), "platform"),
		withNamespace(recordingRulesScheduler(strings.Repeat("n", 50)), strings.Repeat("s", 63)),
	} {
		name := RecordingRuleName(cr)
		if other, ok := names[name]; ok {
			t.Errorf("%s/%s and %s both get PrometheusRule name %s", cr.Namespace, cr.Name, other, name)
		}
		names[name] = cr.Namespace + "/" + cr.Name
		// The API server only takes DNS subdomains as names of custom resources.
		if problems := validation.IsDNS1123Subdomain(name); len(problems) > 0 {
			t.Errorf("PrometheusRule name %s is not a valid object name: %v", name, problems)
		}
	}
}

func withNamespace(cr *v1.SecondaryScheduler, namespace string) *v1.SecondaryScheduler {
	cr.Namespace = namespace
	return cr
}

// nodeExporter is one node as one scrape job of node-exporter sees it: two CPUs, idle
// idleRate seconds per second each and busy the rest, and memAvailable of memTotal bytes.
type nodeExporter struct {
	job, instance, nodename string
	idleRate                float64
	memAvailable, memTotal  float64
	extraLabels             string
}

// series are the node's input series in promtool's notation, sampled every minute for
// 20 minutes.
func (n nodeExporter) series() []map[string]string {
	labels := fmt.Sprintf(`job=%q, instance=%q%s`, n.job, n.instance, n.extraLabels)
	var series []map[string]string
	for _, cpu := range []string{"0", "1"} {
		series = append(series,
			map[string]string{
				"series": fmt.Sprintf(`node_cpu_seconds_total{%s, cpu=%q, mode="idle"}`, labels, cpu),
				"values": fmt.Sprintf("0+%gx20", n.idleRate*60),
			},
			map[string]string{
				"series": fmt.Sprintf(`node_cpu_seconds_total{%s, cpu=%q, mode="user"}`, labels, cpu),
				"values": fmt.Sprintf("0+%gx20", (1-n.idleRate)*60),
			})
	}
	return append(series,
		map[string]string{"series": fmt.Sprintf(`node_memory_MemAvailable_bytes{%s}`, labels), "values": fmt.Sprintf("%gx20", n.memAvailable)},
		map[string]string{"series": fmt.Sprintf(`node_memory_MemTotal_bytes{%s}`, labels), "values": fmt.Sprintf("%gx20", n.memTotal)},
		map[string]string{
			"series": fmt.Sprintf(`node_uname_info{%s, nodename=%q, sysname="Linux", machine="x86_64"}`, labels, n.nodename),
			"values": "1x20",
		})
}

// TestRecordingRulesWithPromtool evaluates the rendered rules with Prometheus's own
// engine, on node-exporter series labelled as the usual ways of scraping it label them.
func TestRecordingRulesWithPromtool(t *testing.T) {
	promtool, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("promtool is needed to test the recording rules: %v", err)
		}
		t.Skipf("promtool is not installed (Debian package prometheus): %v", err)
	}
	rule, err := RecordingRules(recordingRulesScheduler("load-packer"), RecordingRuleTarget{Namespace: "monitoring"})
	if err != nil {
		t.Fatalf("RecordingRules: %v", err)
	}
	groups, found, err := unstructured.NestedSlice(rule.Object, "spec", "groups")
	if err != nil || !found {
		t.Fatalf("rendered PrometheusRule has no spec.groups (%v):\n%v", err, rule.Object)
	}
	checkRecordsWhatLoadWatcherReads(t, groups)
	rulesFile := writeYAML(t, "rules.yaml", map[string]any{"groups": groups})

	// Node worker-a is 75% busy with 60% of its memory used, worker-b 50% and 25%.
	workerA := nodeExporter{job: "node-exporter", instance: "10.0.0.31:9100", nodename: "worker-a", idleRate: 0.25, memAvailable: 400, memTotal: 1000}
	workerB := nodeExporter{job: "node-exporter", instance: "10.0.0.32:9100", nodename: "worker-b", idleRate: 0.5, memAvailable: 1500, memTotal: 2000}
	// kube-prometheus relabels instance to the node name, and adds target labels.
	kubePrometheus := func(n nodeExporter) nodeExporter {
		n.instance = n.nodename
		n.extraLabels = `, namespace="monitoring", pod="node-exporter-` + n.nodename + `", container="kube-rbac-proxy"`
		return n
	}
	secondJob := func(n nodeExporter) nodeExporter {
		n.job = "node-exporter-federated"
		return n
	}
	// As while a node-exporter DaemonSet is replaced by one on another port.
	otherPort := func(n nodeExporter) nodeExporter {
		n.instance = strings.Replace(n.instance, ":9100", ":9101", 1)
		return n
	}
	tests := []struct {
		name  string
		nodes []nodeExporter
	}{
		{"instance is the node-exporter address", []nodeExporter{workerA, workerB}},
		{"instance is already the node name (kube-prometheus)", []nodeExporter{kubePrometheus(workerA), kubePrometheus(workerB)}},
		{"node-exporter scraped by two jobs", []nodeExporter{workerA, workerB, secondJob(workerA), secondJob(workerB)}},
		{"two jobs, one of them labelling instance with the node name", []nodeExporter{workerA, workerB, secondJob(kubePrometheus(workerA)), secondJob(kubePrometheus(workerB))}},
		{"one job scraping two node-exporters on each node", []nodeExporter{workerA, workerB, otherPort(workerA), otherPort(workerB)}},
	}
	want := map[string][]map[string]any{
		"instance:node_cpu:ratio": {
			{"labels": `instance:node_cpu:ratio{instance="worker-a"}`, "value": 0.75},
			{"labels": `instance:node_cpu:ratio{instance="worker-b"}`, "value": 0.5},
		},
		"instance:node_memory_utilisation:ratio": {
			{"labels": `instance:node_memory_utilisation:ratio{instance="worker-a"}`, "value": 0.6},
			{"labels": `instance:node_memory_utilisation:ratio{instance="worker-b"}`, "value": 0.25},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var input []map[string]string
			for _, node := range tt.nodes {
				input = append(input, node.series()...)
			}
			exprTests := make([]map[string]any, 0, len(want))
			for _, record := range slices.Sorted(maps.Keys(want)) {
				// promtool fails on any series beyond these, or other labels on them.
				exprTests = append(exprTests, map[string]any{"expr": record, "eval_time": "10m", "exp_samples": want[record]})
			}
			testFile := writeYAML(t, "rules_test.yaml", map[string]any{
				"rule_files":          []string{rulesFile},
				"evaluation_interval": "1m",
				"tests":               []map[string]any{{"interval": "1m", "input_series": input, "promql_expr_test": exprTests}},
			})
			output, err := exec.CommandContext(t.Context(), promtool, "test", "rules", testFile).CombinedOutput()
			if err != nil {
				t.Errorf("promtool test rules: %v\n%s", err, output)
			}
		})
	}
}

// checkRecordsWhatLoadWatcherReads makes sure the rules record exactly the series the
// metrics probe looks for, in one group.
func checkRecordsWhatLoadWatcherReads(t *testing.T, groups []any) {
	t.Helper()
	var records []string
	for _, group := range groups {
		rules, _, err := unstructured.NestedSlice(group.(map[string]any), "rules")
		if err != nil {
			t.Fatal(err)
		}
		for _, rule := range rules {
			records = append(records, rule.(map[string]any)["record"].(string))
		}
	}
	if len(groups) != 1 || !slices.Equal(records, metricsprobe.Series) {
		t.Errorf("got %d groups recording %v, want one group recording %v", len(groups), records, metricsprobe.Series)
	}
}

func writeYAML(t *testing.T, name string, content any) string {
	t.Helper()
	data, err := yaml.Marshal(content)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
