package schedconfig

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
)

func TestOutOfTreePlugins(t *testing.T) {
	const header = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
	tests := []struct {
		name   string
		config string
		want   []string
	}{
		{"no plugins section", header + "- schedulerName: a\n", nil},
		{"in-tree only", header + `- schedulerName: a
  plugins:
    score:
      enabled:
      - name: ImageLocality
        weight: 3
      - name: NodeResourcesFit
    multiPoint:
      enabled:
      - name: PodTopologySpread
`, nil},
		// The config args of a plugin no profile enables are ignored by kube-scheduler, and
		// disabling an unknown plugin is harmless.
		{"configured or disabled but not enabled", validConfig + `  plugins:
    score:
      disabled:
      - name: TargetLoadPacking
      - name: "*"
`, nil},
		{"Trimaran at several extension points and in several profiles, once each", header + `- schedulerName: a
  plugins:
    score:
      enabled:
      - name: TargetLoadPacking
      - name: NodeResourcesFit
- schedulerName: b
  plugins:
    multiPoint:
      enabled:
      - name: LowRiskOverCommitment
    preScore:
      enabled:
      - name: LowRiskOverCommitment
    score:
      enabled:
      - name: LoadVariationRiskBalancing
`, []string{"LoadVariationRiskBalancing", "LowRiskOverCommitment", "TargetLoadPacking"}},
		{"any plugin Kubernetes does not have", header + `- schedulerName: a
  plugins:
    filter:
      enabled:
      - name: NodeResourceTopologyMatch
    permit:
      enabled:
      - name: Coscheduling
    queueSort:
      enabled:
      - name: Coscheduling
`, []string{"Coscheduling", "NodeResourceTopologyMatch"}},
		{"a plugin of a newer Kubernetes than 1.30 is in-tree", header + `- schedulerName: a
  plugins:
    multiPoint:
      enabled:
      - name: GangScheduling
      - name: NodeDeclaredFeatures
`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config, err := Parse([]byte(tt.config), "", "test")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, OutOfTreePlugins(config)); diff != "" {
				t.Errorf("OutOfTreePlugins (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNearestPlugin(t *testing.T) {
	tests := []struct {
		name             string
		schedulerPlugins bool
		want             string
	}{
		{"ImageLocalty", true, "ImageLocality"},
		{"imagelocality", false, "ImageLocality"},
		{"TargetLoadPackng", true, "TargetLoadPacking"},
		{"TargetLoadPackng", false, ""}, // Kubernetes' own image has no Trimaran to suggest
		{"NodeResourceFit", true, "NodeResourcesFit"},
		{"Coscheduling2", true, "Coscheduling"},
		{"SomethingElseEntirely", true, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := NearestPlugin(tt.name, tt.schedulerPlugins); got != tt.want {
				t.Errorf("NearestPlugin(%q, %v) = %q, want %q", tt.name, tt.schedulerPlugins, got, tt.want)
			}
		})
	}
}

func TestUnknownPlugins(t *testing.T) {
	config := &schedulerconfigv1.KubeSchedulerConfiguration{Profiles: []schedulerconfigv1.KubeSchedulerProfile{{
		Plugins: &schedulerconfigv1.Plugins{
			Score:  schedulerconfigv1.PluginSet{Enabled: []schedulerconfigv1.Plugin{{Name: "ImageLocalty"}, {Name: "TargetLoadPacking"}, {Name: "NodeResourcesFit"}}},
			Filter: schedulerconfigv1.PluginSet{Disabled: []schedulerconfigv1.Plugin{{Name: "NoSuchDisabled"}}},
		},
	}}}
	if got := UnknownPlugins(config, true); !slices.Equal(got, []string{"ImageLocalty"}) {
		t.Errorf("with scheduler-plugins: %q, want only the misspelt one (a disabled unknown plugin is ignored, as kube-scheduler does)", got)
	}
	if got := UnknownPlugins(config, false); !slices.Equal(got, []string{"ImageLocalty", "TargetLoadPacking"}) {
		t.Errorf("with Kubernetes' own kube-scheduler: %q", got)
	}
}
