package schedconfig

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	"github.com/secondary-scheduler/secondary-scheduler-operator/bindata"
)

var (
	kubernetes137     = Scheduler{KubernetesMinor: 37}
	kubernetesUnknown = Scheduler{}
	schedulerPlugins  = Scheduler{SchedulerPlugins: true, KubernetesMinor: 35}
)

// TestPluginPointsKnownFacts holds facts read in the plugins' sources by hand, independently
// of the generator, so that a generator gone wrong cannot pass by agreeing with itself.
func TestPluginPointsKnownFacts(t *testing.T) {
	tests := []struct {
		scheduler   Scheduler
		plugin      string
		implements  []string
		doesNotHave []string
	}{
		{kubernetes137, "ImageLocality", []string{"score"}, []string{"filter", "preScore", "queueSort", "bind"}},
		{kubernetes137, "PrioritySort", []string{"queueSort"}, []string{"score", "filter"}},
		{kubernetes137, "DefaultBinder", []string{"bind"}, []string{"preBind", "postBind"}},
		{kubernetes137, "NodeResourcesFit", []string{"preFilter", "filter", "preScore", "score"}, []string{"bind", "reserve"}},
		{kubernetes137, "VolumeBinding", []string{"preFilter", "filter", "reserve", "preBind", "preScore", "score"}, []string{"bind", "postBind"}},
		{kubernetes137, "DefaultPreemption", []string{"postFilter"}, []string{"filter", "score"}},
		{kubernetes137, "SchedulingGates", []string{"preEnqueue"}, []string{"filter"}},
		{kubernetes137, "TopologyPlacementGenerator", []string{"placementGenerate"}, []string{"score"}},
		{schedulerPlugins, "Coscheduling", []string{"queueSort", "preFilter", "postFilter", "permit", "reserve"}, []string{"postBind", "bind", "score"}},
		{schedulerPlugins, "TargetLoadPacking", []string{"score"}, []string{"filter", "preScore"}},
		{schedulerPlugins, "NodeResourceTopologyMatch", []string{"filter", "score", "reserve", "postBind"}, []string{"bind"}},
		{schedulerPlugins, "QOSSort", []string{"queueSort"}, []string{"score"}},
		{schedulerPlugins, "ImageLocality", []string{"score"}, []string{"filter"}},
		{schedulerPlugins, "DefaultBinder", []string{"bind"}, nil},
	}
	for _, tt := range tests {
		table := tt.scheduler.table()
		points, ok := table.plugins[tt.plugin]
		if !ok {
			t.Errorf("%s: no %s", table.source, tt.plugin)
			continue
		}
		for _, point := range tt.implements {
			if !slices.Contains(points, point) {
				t.Errorf("%s: %s implements %s, the table says only %v", table.source, tt.plugin, point, points)
			}
		}
		for _, point := range tt.doesNotHave {
			if slices.Contains(points, point) {
				t.Errorf("%s: %s does not implement %s, the table says %v", table.source, tt.plugin, point, points)
			}
		}
	}
	// The 1.35 core has no placement extension points, 1.37 does.
	if slices.Contains(schedulerPluginsCorePluginPoints.extensionPoints, "placementGenerate") ||
		!slices.Contains(kubernetesPluginPoints.extensionPoints, "placementGenerate") {
		t.Error("placementGenerate is an extension point of Kubernetes 1.37 only")
	}
}

// TestEveryPluginAtEveryPoint enables every plugin of each table at every extension point of
// its version, alone, and expects a refusal exactly where the plugin does not implement the
// point: kube-scheduler's "plugin ... does not extend ... plugin".
func TestEveryPluginAtEveryPoint(t *testing.T) {
	for _, scheduler := range []Scheduler{kubernetes137, {KubernetesMinor: 35}, schedulerPlugins} {
		table := scheduler.table()
		for plugin, implements := range table.plugins {
			for _, point := range table.extensionPoints {
				config := mustParse(t, fmt.Sprintf(header+"- schedulerName: a\n  plugins:\n    %s:\n      enabled:\n      - name: %s\n", point, plugin))
				problems := StartProblems(config, scheduler)
				refused := slices.ContainsFunc(problems, func(p string) bool {
					return strings.Contains(p, fmt.Sprintf("enables %s at %s, which it does not implement", plugin, point))
				})
				if want := !slices.Contains(implements, point); refused != want {
					t.Errorf("%s: %s at %s: refused %v, want %v (%v)", table.source, plugin, point, refused, want, problems)
				}
			}
			// Under multiPoint kube-scheduler enables it where it implements: never refused for that.
			config := mustParse(t, fmt.Sprintf(header+"- schedulerName: a\n  plugins:\n    multiPoint:\n      enabled:\n      - name: %s\n", plugin))
			for _, problem := range StartProblems(config, scheduler) {
				if strings.Contains(problem, "does not implement") {
					t.Errorf("%s: %s under multiPoint: %s", table.source, plugin, problem)
				}
			}
		}
	}
}

func mustParse(t *testing.T, text string) *schedulerconfigv1.KubeSchedulerConfiguration {
	t.Helper()
	config, err := Parse([]byte(text), "", "test")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	return config
}

const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"

func TestStartProblems(t *testing.T) {
	tests := []struct {
		name      string
		scheduler Scheduler
		config    string
		want      []string // substrings, one a problem, in order; none: accepted
	}{
		{"defaults only", kubernetes137, header + "- schedulerName: a\n", nil},
		{"the operator's sample: TaintToleration re-enabled at filter, score replaced", kubernetes137, header + `- schedulerName: a
  plugins:
    filter:
      enabled:
      - name: TaintToleration
    score:
      disabled:
      - name: "*"
      enabled:
      - name: ImageLocality
`, nil},
		{"ImageLocality at filter", kubernetes137, header + "- schedulerName: a\n  plugins:\n    filter:\n      enabled:\n      - name: ImageLocality\n",
			[]string{`profile "a" enables ImageLocality at filter, which it does not implement. ImageLocality implements score only (multiPoint enables it there); remove it from filter`}},
		{"Coscheduling at postBind", schedulerPlugins, header + `- schedulerName: gang
  plugins:
    queueSort:
      enabled:
      - name: Coscheduling
      disabled:
      - name: "*"
    postBind:
      enabled:
      - name: Coscheduling
`, []string{`profile "gang" enables Coscheduling at postBind, which it does not implement. Coscheduling implements queueSort, preFilter, postFilter, reserve, permit (and multiPoint enables it at each); remove it from postBind`}},
		{"a second queue sort beside the default one", schedulerPlugins, header + "- schedulerName: a\n  plugins:\n    queueSort:\n      enabled:\n      - name: QOSSort\n",
			[]string{`profile "a" runs 2 queue sort plugins (QOSSort, PrioritySort)`}},
		{"the default queue sort replaced", schedulerPlugins, header + "- schedulerName: a\n  plugins:\n    queueSort:\n      enabled:\n      - name: QOSSort\n      disabled:\n      - name: PrioritySort\n", nil},
		{"the default queue sort replaced under multiPoint", schedulerPlugins, header + "- schedulerName: a\n  plugins:\n    multiPoint:\n      enabled:\n      - name: Coscheduling\n      disabled:\n      - name: PrioritySort\n", nil},
		{"no queue sort", kubernetes137, header + "- schedulerName: a\n  plugins:\n    queueSort:\n      disabled:\n      - name: \"*\"\n",
			[]string{`profile "a" runs no queue sort plugin`}},
		{"no bind plugin", kubernetes137, header + "- schedulerName: a\n  plugins:\n    multiPoint:\n      disabled:\n      - name: DefaultBinder\n",
			[]string{`profile "a" runs no bind plugin`}},
		{"all defaults disabled", kubernetes137, header + "- schedulerName: a\n  plugins:\n    multiPoint:\n      disabled:\n      - name: \"*\"\n",
			[]string{"runs no queue sort plugin", "runs no bind plugin"}},
		{"twice at one point", kubernetes137, header + "- schedulerName: a\n  plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n      - name: ImageLocality\n",
			[]string{`profile "a" enables ImageLocality twice at score`}},
		{"twice under multiPoint", kubernetes137, header + "- schedulerName: a\n  plugins:\n    multiPoint:\n      enabled:\n      - name: NodePorts\n      - name: NodePorts\n",
			[]string{`profile "a" enables NodePorts twice under multiPoint (kube-scheduler enables it at preFilter)`}},
		{"a default re-configured under multiPoint", kubernetes137, header + "- schedulerName: a\n  plugins:\n    multiPoint:\n      enabled:\n      - name: ImageLocality\n        weight: 5\n", nil},
		{"two pluginConfig entries", kubernetes137, header + `- schedulerName: a
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: LeastAllocated
`, []string{`profile "a" has two pluginConfig entries for NodeResourcesFit`}},
		{"different queueSort sections", schedulerPlugins, header + "- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n      enabled:\n      - name: QOSSort\n      disabled:\n      - name: PrioritySort\n",
			[]string{`profile "a" and profile "b" have different queueSort sections`}},
		{"different queue sort plugins through multiPoint", schedulerPlugins, header + "- schedulerName: a\n- schedulerName: b\n  plugins:\n    multiPoint:\n      enabled:\n      - name: QOSSort\n      disabled:\n      - name: PrioritySort\n",
			[]string{`profile "a" runs queue sort plugin PrioritySort and profile "b" runs QOSSort`}},
		{"different queue sort args", schedulerPlugins, header + `- schedulerName: a
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
      disabled:
      - name: PrioritySort
- schedulerName: b
  plugins:
    multiPoint:
      enabled:
      - name: Coscheduling
      disabled:
      - name: PrioritySort
  pluginConfig:
  - name: Coscheduling
    args:
      permitWaitingTimeSeconds: 10
`, []string{`profile "a" and profile "b" give queue sort plugin Coscheduling different args`}},
		{"the same queue sort everywhere", schedulerPlugins, header + "- schedulerName: a\n- schedulerName: b\n- schedulerName: c\n", nil},
		{"an extension point the image's version lacks", schedulerPlugins, header + "- schedulerName: a\n  plugins:\n    placementScore:\n      enabled:\n      - name: NodeResourcesFit\n",
			[]string{`profile "a" enables NodeResourcesFit at placementScore, an extension point kube-scheduler sigs.k8s.io/scheduler-plugins`}},
		{"a plugin 1.31 removed, on 1.37", kubernetes137, header + "- schedulerName: a\n  plugins:\n    filter:\n      enabled:\n      - name: EBSLimits\n",
			[]string{`profile "a" enables EBSLimits at filter, which Kubernetes 1.31 removed`}},
		{"a plugin 1.31 removed, on an image of unknown version", kubernetesUnknown, header + "- schedulerName: a\n  plugins:\n    filter:\n      enabled:\n      - name: EBSLimits\n", nil},
		{"out-of-tree plugins are left to UnknownPlugins", kubernetes137, header + "- schedulerName: a\n  plugins:\n    postBind:\n      enabled:\n      - name: Coscheduling\n", nil},
		{"parallelism, percentages and backoff", kubernetes137, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 0
percentageOfNodesToScore: 101
podInitialBackoffSeconds: 20
profiles:
- schedulerName: a
  percentageOfNodesToScore: -1
`, []string{"parallelism is 0", "percentageOfNodesToScore is 101", "podMaxBackoffSeconds (10) is less than podInitialBackoffSeconds (20)", `profile "a": percentageOfNodesToScore is -1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := StartProblems(mustParse(t, tt.config), tt.scheduler)
			if len(problems) != len(tt.want) {
				t.Fatalf("got %d problems, want %d:\n%s", len(problems), len(tt.want), strings.Join(problems, "\n"))
			}
			for i, want := range tt.want {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d:\n%s\nwant it to contain\n%s", i, problems[i], want)
				}
			}
		})
	}
}

// TestStartProblemsBounded: a configuration with many problems gets a message of bounded
// length, which says how many more there are.
func TestStartProblemsBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString(header + "- schedulerName: a\n  plugins:\n    filter:\n      enabled:\n")
	for range 50 {
		b.WriteString("      - name: ImageLocality\n")
	}
	problems := StartProblems(mustParse(t, b.String()), kubernetes137)
	if len(problems) != maxStartProblems+1 || !strings.HasSuffix(problems[maxStartProblems], "more problems") {
		t.Errorf("got %d problems, the last %q", len(problems), problems[len(problems)-1])
	}
}

// TestOperatorProfilesStart: the configurations of the operator's own profile types start on
// every kube-scheduler it knows.
func TestOperatorProfilesStart(t *testing.T) {
	for _, asset := range []string{"binpacking.yaml", "load-aware.yaml", "requests-balanced.yaml"} {
		data, err := bindata.Asset("scheduler-config/" + asset)
		if err != nil {
			t.Fatal(err)
		}
		config := mustParse(t, string(data))
		for _, scheduler := range []Scheduler{kubernetes137, schedulerPlugins} {
			if problems := StartProblems(config, scheduler); len(problems) > 0 {
				t.Errorf("%s on %s: %v", asset, scheduler.table().source, problems)
			}
		}
	}
}
