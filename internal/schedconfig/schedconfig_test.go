package schedconfig

import (
	"strings"
	"testing"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

const validConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: packer
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
  # Out-of-tree args are left to their plugin: the operator cannot know their fields.
  - name: TargetLoadPacking
    args:
      targetUtilization: 60
`

func TestParse(t *testing.T) {
	tests := []struct {
		name        string
		config      string
		wantReason  v1.ConditionReason // empty: valid
		wantMessage string
	}{
		{"valid", validConfig, "", ""},
		{"second profile for another scheduler", validConfig + "- schedulerName: other\n", "", ""},
		{"not YAML", "profiles: [", v1.ReasonConfigNotYAML, "is not valid YAML"},
		{"tab indentation", "apiVersion: kubescheduler.config.k8s.io/v1\n\tkind: x\n", v1.ReasonConfigNotYAML, "is not valid YAML"},
		{"empty", "", v1.ReasonNotKubeSchedulerConfiguration, "must be a YAML mapping"},
		{"scalar", "just text", v1.ReasonNotKubeSchedulerConfiguration, "must be a YAML mapping"},
		{"list", "- a\n", v1.ReasonNotKubeSchedulerConfiguration, "must be a YAML mapping"},
		{"another kind", "apiVersion: v1\nkind: Pod\n", v1.ReasonNotKubeSchedulerConfiguration, `apiVersion "v1" and kind "Pod"`},
		{"no apiVersion", "kind: KubeSchedulerConfiguration\n", v1.ReasonNotKubeSchedulerConfiguration, `apiVersion ""`},
		{"wrong group", "apiVersion: example.com/v1\nkind: KubeSchedulerConfiguration\n", v1.ReasonNotKubeSchedulerConfiguration, "example.com/v1"},
		{"kind is a list", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: [a]\n", v1.ReasonNotKubeSchedulerConfiguration, "malformed apiVersion or kind"},
		{"v1beta3", strings.Replace(validConfig, "/v1\n", "/v1beta3\n", 1), v1.ReasonUnsupportedConfigVersion, "uses kubescheduler.config.k8s.io/v1beta3, which current kube-schedulers no longer serve; change apiVersion to kubescheduler.config.k8s.io/v1"},
		{"v1beta2", strings.Replace(validConfig, "/v1\n", "/v1beta2\n", 1), v1.ReasonUnsupportedConfigVersion, "v1beta2"},
		{"v1beta1", strings.Replace(validConfig, "/v1\n", "/v1beta1\n", 1), v1.ReasonUnsupportedConfigVersion, "v1beta1"},
		{"v1alpha1", strings.Replace(validConfig, "/v1\n", "/v1alpha1\n", 1), v1.ReasonUnsupportedConfigVersion, "v1alpha1"},
		{"unknown version", strings.Replace(validConfig, "/v1\n", "/v2\n", 1), v1.ReasonUnsupportedConfigVersion, "unknown version"},
		{"unknown top-level field", validConfig + "percentageOfNodesToScor: 10\n", v1.ReasonInvalidConfig, `unknown field "percentageOfNodesToScor"`},
		{"unknown profile field", strings.Replace(validConfig, "  pluginConfig:", "  plugin:\n    score: {}\n  pluginConfig:", 1), v1.ReasonInvalidConfig, `unknown field "profiles[0].plugin"`},
		{"duplicate field", validConfig + "parallelism: 4\nparallelism: 8\n", v1.ReasonInvalidConfig, "parallelism"},
		{"wrong type", validConfig + "parallelism: many\n", v1.ReasonInvalidConfig, "parallelism"},
		{"unknown in-tree plugin arg", strings.Replace(validConfig, "type: MostAllocated", "type: MostAllocated\n      extra: 1", 1), v1.ReasonInvalidConfig, "extra"},
		{"no profiles", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n", v1.ReasonNoProfile, "add one with schedulerName: packer"},
		{"empty profiles", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: []\n", v1.ReasonNoProfile, "has no profiles"},
		{"profile without name", validConfig + "- plugins: {}\n", v1.ReasonDefaultSchedulerClaimed, "profile 1 in test has no schedulerName"},
		{"profile named default-scheduler", validConfig + "- schedulerName: default-scheduler\n", v1.ReasonDefaultSchedulerClaimed, "profile 1 in test is named default-scheduler"},
		{"no matching profile", strings.Replace(validConfig, "schedulerName: packer", "schedulerName: spreader", 1), v1.ReasonProfileNotFound, "no profile in test has schedulerName packer (found: spreader)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config, err := Parse([]byte(tt.config), "packer", "test")
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				if config == nil || len(config.Profiles) == 0 {
					t.Fatalf("want the decoded configuration, got %+v", config)
				}
				return
			}
			problem, ok := AsProblem(err)
			if !ok {
				t.Fatalf("want a Problem with reason %s, got %v", tt.wantReason, err)
			}
			if problem.Reason != tt.wantReason {
				t.Errorf("reason: want %s, got %s (%s)", tt.wantReason, problem.Reason, problem.Message)
			}
			if !strings.Contains(problem.Message, tt.wantMessage) {
				t.Errorf("message %q does not contain %q", problem.Message, tt.wantMessage)
			}
		})
	}
}

// FuzzParse checks that no input, however malformed, makes Parse panic or accept a
// configuration that does not schedule for the requested name.
func FuzzParse(f *testing.F) {
	f.Add([]byte(validConfig))
	f.Add([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- {}\n"))
	f.Add([]byte("{"))
	f.Add([]byte("- - -"))
	f.Fuzz(func(t *testing.T, data []byte) {
		config, err := Parse(data, "packer", "fuzz")
		if err != nil {
			if _, ok := AsProblem(err); !ok {
				t.Fatalf("error is not a Problem: %v", err)
			}
			return
		}
		found := false
		for _, profile := range config.Profiles {
			if profile.SchedulerName == nil || *profile.SchedulerName == v1.DefaultSchedulerName {
				t.Fatalf("accepted a profile for the default scheduler: %q", data)
			}
			found = found || *profile.SchedulerName == "packer"
		}
		if !found {
			t.Fatalf("accepted a configuration without a profile for packer: %q", data)
		}
	})
}
