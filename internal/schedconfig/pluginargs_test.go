package schedconfig

import (
	"maps"
	"slices"
	"strings"
	"testing"
)

func TestArgsProblems(t *testing.T) {
	schedulerPlugins := Scheduler{SchedulerPlugins: true, KubernetesMinor: 35}
	gang := `profiles:
- schedulerName: gang
  plugins:
    queueSort: {enabled: [{name: Coscheduling}], disabled: [{name: "*"}]}
    permit: {enabled: [{name: Coscheduling}]}
  pluginConfig:
`
	for _, tc := range []struct {
		name      string
		config    string
		scheduler Scheduler
		want      []string // substrings, one problem each, in order
	}{{
		name:      "args as the types have them",
		config:    gang + "  - name: Coscheduling\n    args: {permitWaitingTimeSeconds: 30, podGroupBackoffSeconds: 5}\n",
		scheduler: schedulerPlugins,
	}, {
		name:      "a misspelt field, with the nearest",
		config:    gang + "  - name: Coscheduling\n    args: {permitWaitingTimeSecond: 30}\n",
		scheduler: schedulerPlugins,
		want:      []string{`profile "gang": the args of plugin Coscheduling have no field permitWaitingTimeSecond (did you mean permitWaitingTimeSeconds?)`},
	}, {
		name:      "field names are case-sensitive",
		config:    gang + "  - name: Coscheduling\n    args: {PermitWaitingTimeSeconds: 30}\n",
		scheduler: schedulerPlugins,
		want:      []string{"no field PermitWaitingTimeSeconds (did you mean permitWaitingTimeSeconds?)"},
	}, {
		name:      "a value of another kind",
		config:    gang + "  - name: Coscheduling\n    args: {permitWaitingTimeSeconds: \"30\", podGroupRejectPercentage: 2.5}\n",
		scheduler: schedulerPlugins,
		want: []string{"field permitWaitingTimeSeconds of the args of plugin Coscheduling must be an integer, not a string",
			"field podGroupRejectPercentage of the args of plugin Coscheduling must be an integer, not a number"},
	}, {
		name: "nested fields and the items of a list of structs",
		config: gang + `  - name: NodeResourceTopologyMatch
    args:
      scoringStrategy: {type: LeastAllocated, resources: [{name: cpu, weight: 1}, {name: memory, wieght: 1}]}
      cache: {resyncMethod: OnlyExclusiveResources, informerMode: 3}
`,
		scheduler: schedulerPlugins,
		want: []string{"field cache.informerMode of the args of plugin NodeResourceTopologyMatch must be a string, not an integer",
			"have no field scoringStrategy.resources[].wieght (did you mean weight?)"},
	}, {
		name:      "the args of a plugin no profile enables are decoded too",
		config:    gang + "  - name: SySched\n    args: {defaultProfile: x}\n",
		scheduler: schedulerPlugins,
		want:      []string{"the args of plugin SySched have no field defaultProfile"},
	}, {
		name:      "a plugin without an args type takes any",
		config:    gang + "  - name: CapacityScheduling\n    args: {anything: 1}\n",
		scheduler: schedulerPlugins,
	}, {
		name:      "Kubernetes' own kube-scheduler does not decode scheduler-plugins' args",
		config:    "profiles:\n- schedulerName: plain\n  pluginConfig:\n  - name: Coscheduling\n    args: {permitWaitingTimeSecond: 30}\n",
		scheduler: Scheduler{KubernetesMinor: 37},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			config, err := Parse([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"+tc.config), "", "test")
			if err != nil {
				t.Fatal(err)
			}
			var problems []string
			for _, problem := range StartProblems(config, tc.scheduler) {
				if strings.Contains(problem, "args") {
					problems = append(problems, problem)
				}
			}
			if len(problems) != len(tc.want) {
				t.Fatalf("problems with args: %q, want %d like %q", problems, len(tc.want), tc.want)
			}
			for i, want := range tc.want {
				if !strings.Contains(problems[i], want) {
					t.Errorf("problem %d: %q does not say %q", i, problems[i], want)
				}
			}
		})
	}
}

// TestArgsKindsAreKnown: every kind the generator wrote is one the check knows.
func TestArgsKindsAreKnown(t *testing.T) {
	known := []string{kindString, kindInteger, kindNumber, kindBool, kindObject, kindList, kindMap, kindAny}
	for plugin, fields := range schedulerPluginsPluginPoints.args {
		for path, kind := range fields {
			if !slices.Contains(known, kind) {
				t.Errorf("%s: field %s has kind %q, which checkPluginArgs does not know", plugin, path, kind)
			}
		}
	}
}

// TestTrimaranArgsFieldsFollowTheSources: the fields the Trimaran checks know by hand
// (checkArgsFields, with their quantities' bounds) are the fields of the generated table.
func TestTrimaranArgsFieldsFollowTheSources(t *testing.T) {
	for _, plugin := range TrimaranPlugins {
		var handMade []string
		for _, set := range []map[string]argsFieldKind{typeMetaFields, trimaranSpecFields, trimaranArgsFields[plugin]} {
			handMade = append(handMade, slices.Collect(maps.Keys(set))...)
		}
		for field := range metricProviderFields {
			handMade = append(handMade, "metricProvider."+field)
		}
		slices.Sort(handMade)
		generated := slices.Sorted(maps.Keys(schedulerPluginsPluginPoints.args[plugin]))
		if !slices.Equal(handMade, generated) {
			t.Errorf("%s: the Trimaran checks know %v, scheduler-plugins' args type has %v", plugin, handMade, generated)
		}
	}
}
