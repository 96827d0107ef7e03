package schedconfig

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestPluginNeedsKnowsEveryPlugin fails when the pinned scheduler-plugins registers a plugin
// the table of needs does not name (the generated table of extension points is read from
// its sources), or when the table names one it does not register.
func TestPluginNeedsKnowsEveryPlugin(t *testing.T) {
	for plugin := range schedulerPluginsPluginPoints.plugins {
		if _, ok := pluginNeeds[plugin]; !ok {
			t.Errorf("scheduler-plugins %s registers %s, which pluginNeeds does not know: read what it needs in its sources and add it", SchedulerPluginsCommit, plugin)
		}
	}
	for plugin := range pluginNeeds {
		if _, ok := schedulerPluginsPluginPoints.plugins[plugin]; !ok {
			t.Errorf("pluginNeeds names %s, which scheduler-plugins %s does not register", plugin, SchedulerPluginsCommit)
		}
	}
}

// TestSchedulerPluginsCommitIsThePin: the CRD manifests come from the commit the scheduler
// is built from and the extension points were read at.
func TestSchedulerPluginsCommitIsThePin(t *testing.T) {
	if !strings.Contains(schedulerPluginsPluginPoints.source, SchedulerPluginsCommit) {
		t.Errorf("the generated extension points were read at %q, not at %s", schedulerPluginsPluginPoints.source, SchedulerPluginsCommit)
	}
	script, err := os.ReadFile(filepath.Join("..", "..", "hack", "build-scheduler-plugins.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(script), "\nSCHEDULER_PLUGINS_COMMIT="+SchedulerPluginsCommit+"\n") {
		t.Errorf("hack/build-scheduler-plugins.sh does not pin SCHEDULER_PLUGINS_COMMIT=%s", SchedulerPluginsCommit)
	}
}

// TestPluginNeedsAreConsistent: a plugin that reads a CRD has a role that grants reading
// it, and a role's grants are the same whichever plugin is bound to it.
func TestPluginNeedsAreConsistent(t *testing.T) {
	for plugin, needs := range pluginNeeds {
		if needs.Source == "" {
			t.Errorf("%s: say where in scheduler-plugins its needs were read", plugin)
		}
		if (needs.ClusterRole == "") != (len(needs.Grants) == 0) {
			t.Errorf("%s: a ClusterRole %q with grants %v", plugin, needs.ClusterRole, needs.Grants)
		}
		for _, crd := range needs.CRDs {
			if !slices.ContainsFunc(needs.Grants, func(grant Grant) bool {
				return grant.Group == crd.Group && slices.Contains(grant.Resources, crd.Resource) && slices.Equal(grant.Verbs, readVerbs)
			}) {
				t.Errorf("%s reads %s, which its ClusterRole %q does not grant", plugin, crd.CRDName(), needs.ClusterRole)
			}
			if !strings.HasPrefix(crd.Manifest, "manifests/") || !strings.HasSuffix(crd.Manifest, ".yaml") {
				t.Errorf("%s: %s's manifest %q is not a file of scheduler-plugins' manifests", plugin, crd.CRDName(), crd.Manifest)
			}
		}
		if needs.ClusterRole != "" {
			if diff := cmp.Diff(PluginGrants(needs.ClusterRole), needs.Grants); diff != "" {
				t.Errorf("%s: ClusterRole %s grants differently to another plugin (-other +this):\n%s", plugin, needs.ClusterRole, diff)
			}
		}
	}
}

func TestNeededClusterRolesAndCRDs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config string
		roles  []string
		crds   []string
		// controller are the plugins scheduler-plugins' controller serves.
		controller []string
	}{{
		name: "in-tree plugins need nothing more",
		config: `profiles:
- schedulerName: a
  plugins:
    score:
      enabled: [{name: NodeResourcesFit}]`,
	}, {
		name: "gangs and quotas, at their extension points and at multiPoint",
		config: `profiles:
- schedulerName: a
  plugins:
    queueSort: {enabled: [{name: Coscheduling}], disabled: [{name: "*"}]}
    preFilter: {enabled: [{name: Coscheduling}]}
    permit: {enabled: [{name: Coscheduling}]}
- schedulerName: b
  plugins:
    multiPoint: {enabled: [{name: CapacityScheduling}, {name: Coscheduling}]}`,
		roles:      []string{"secondary-scheduler-plugin-capacityscheduling", "secondary-scheduler-plugin-coscheduling"},
		crds:       []string{"elasticquotas.scheduling.x-k8s.io", "podgroups.scheduling.x-k8s.io"},
		controller: []string{"CapacityScheduling", "Coscheduling"},
	}, {
		name: "a plugin listed as disabled only is not enabled",
		config: `profiles:
- schedulerName: a
  plugins:
    score: {disabled: [{name: NodeResourceTopologyMatch}]}`,
	}, {
		name: "two plugins read AppGroups: one CRD, two roles",
		config: `profiles:
- schedulerName: a
  plugins:
    queueSort: {enabled: [{name: TopologicalSort}], disabled: [{name: "*"}]}
    multiPoint: {enabled: [{name: NetworkOverhead}]}`,
		roles: []string{"secondary-scheduler-plugin-networkoverhead", "secondary-scheduler-plugin-topologicalsort"},
		crds:  []string{"appgroups.appgroup.diktyo.x-k8s.io", "networktopologies.networktopology.diktyo.x-k8s.io"},
	}, {
		name: "Trimaran reading the metrics API by default is bound to the metrics reader",
		config: `profiles:
- schedulerName: a
  plugins:
    score: {enabled: [{name: TargetLoadPacking}]}`,
		roles: []string{"secondary-scheduler-metrics-reader"},
	}, {
		name: "Trimaran reading Prometheus is not",
		config: `profiles:
- schedulerName: a
  plugins:
    score: {enabled: [{name: TargetLoadPacking}]}
  pluginConfig:
  - name: TargetLoadPacking
    args: {metricProvider: {type: Prometheus, address: "http://prometheus:9090"}}`,
	}, {
		name: "nor with a load-watcher service",
		config: `profiles:
- schedulerName: a
  plugins:
    score: {enabled: [{name: LoadVariationRiskBalancing}]}
  pluginConfig:
  - name: LoadVariationRiskBalancing
    args: {watcherAddress: "http://load-watcher:2020"}`,
	}, {
		name: "PreemptionToleration reads PriorityClasses, which are no CRD",
		config: `profiles:
- schedulerName: a
  plugins:
    postFilter: {enabled: [{name: PreemptionToleration}], disabled: [{name: "*"}]}`,
		roles: []string{"secondary-scheduler-plugin-preemptiontoleration"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			config, err := Parse([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"+tc.config), "", "test")
			if err != nil {
				t.Fatal(err)
			}
			roles, err := NeededClusterRoles(config)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.roles, roles); diff != "" {
				t.Errorf("roles (-want +got):\n%s", diff)
			}
			var crds []string
			for _, crd := range NeededCRDs(config) {
				crds = append(crds, crd.CRDName())
			}
			slices.Sort(crds)
			if diff := cmp.Diff(tc.crds, crds); diff != "" {
				t.Errorf("CRDs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.controller, PluginsNeedingController(config)); diff != "" {
				t.Errorf("plugins needing the controller (-want +got):\n%s", diff)
			}
		})
	}
}

// The controller keeps the status of both kinds, whichever plugin a scheduler enables.
func TestPluginControllerCRDs(t *testing.T) {
	names := make([]string, 0, 2)
	for _, crd := range PluginControllerCRDs() {
		names = append(names, crd.CRDName())
	}
	if diff := cmp.Diff([]string{"elasticquotas.scheduling.x-k8s.io", "podgroups.scheduling.x-k8s.io"}, names); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestInstallCommand(t *testing.T) {
	want := "kubectl apply --server-side -f https://raw.githubusercontent.com/kubernetes-sigs/scheduler-plugins/" + SchedulerPluginsCommit +
		"/manifests/coscheduling/crd.yaml"
	if got := podGroups.InstallCommand(); got != want {
		t.Errorf("InstallCommand() = %q, want %q", got, want)
	}
	if got := podGroups.CRDName(); got != "podgroups.scheduling.x-k8s.io" {
		t.Errorf("CRDName() = %q", got)
	}
}

// TestPluginsPageFollowsTheTable: docs/plugins.md names, for each plugin, the CRDs it reads,
// the ClusterRole bound for it and the manifest that installs each CRD.
func TestPluginsPageFollowsTheTable(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "..", "docs", "plugins.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]string{}
	for line := range strings.Lines(string(page)) {
		if cells := strings.Split(line, "|"); len(cells) > 3 {
			for plugin := range strings.SplitSeq(cells[1], ",") {
				rows[strings.TrimSpace(plugin)] = line
			}
		}
	}
	for plugin, needs := range pluginNeeds {
		row, ok := rows[plugin]
		if !ok {
			t.Errorf("docs/plugins.md has no row for %s", plugin)
			continue
		}
		if needs.ClusterRole != "" && !strings.Contains(row, "`"+needs.ClusterRole+"`") {
			t.Errorf("docs/plugins.md: the row of %s does not name its ClusterRole %s", plugin, needs.ClusterRole)
		}
		for _, crd := range needs.CRDs {
			if !strings.Contains(row, "`"+crd.CRDName()+"`") {
				t.Errorf("docs/plugins.md: the row of %s does not name CRD %s", plugin, crd.CRDName())
			}
			if !strings.Contains(string(page), crd.Manifest) {
				t.Errorf("docs/plugins.md does not name %s, which installs %s", crd.Manifest, crd.CRDName())
			}
		}
	}
	if !strings.Contains(string(page), SchedulerPluginsCommit) {
		t.Errorf("docs/plugins.md does not name the pinned commit %s", SchedulerPluginsCommit)
	}
}
