package schedconfig

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
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

// laughs is the "billion laughs" attack: nine levels of nine aliases that expand 40
// bytes of text per line into a billion strings.
var laughs = func() string {
	var text strings.Builder
	text.WriteString("l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for level := 1; level <= 9; level++ {
		fmt.Fprintf(&text, "l%d: &l%d [%s]\n", level, level, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", level-1), 9), ", "))
	}
	return text.String()
}()

// profilesConfig is a configuration with one empty profile per name.
func profilesConfig(names ...string) string {
	var text strings.Builder
	text.WriteString("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n")
	for _, name := range names {
		fmt.Fprintf(&text, "- schedulerName: %s\n", name)
	}
	return text.String()
}

// expectProblem fails t unless err is a refusal of reason whose message contains message.
func expectProblem(t *testing.T, err error, reason v1.ConditionReason, message string) {
	t.Helper()
	problem, ok := refusal.As(err)
	if !ok {
		t.Fatalf("want a refusal with reason %s, got %v", reason, err)
	}
	if problem.Reason != reason || !strings.Contains(problem.Message, message) {
		t.Errorf("got %s: %s\nwant %s: ...%s...", problem.Reason, problem.Message, reason, message)
	}
}

// packerNames is packer followed by count-1 names derived from it.
func packerNames(count int) []string {
	names := []string{"packer"}
	for i := 1; i < count; i++ {
		names = append(names, fmt.Sprintf("packer-%d", i))
	}
	return names
}

// padTo appends a comment to config so that it is size bytes long.
func padTo(config string, size int) string {
	return config + "#" + strings.Repeat("x", size-len(config)-2) + "\n"
}

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
		{"names found are sorted", profilesConfig("zeta", "alpha"), v1.ReasonProfileNotFound, "(found: alpha, zeta)"},
		{"null apiVersion", "apiVersion: ~\nkind: KubeSchedulerConfiguration\n", v1.ReasonNotKubeSchedulerConfiguration, `apiVersion ""`},
		{"apiVersion is a mapping", "apiVersion: {group: x}\nkind: KubeSchedulerConfiguration\n", v1.ReasonNotKubeSchedulerConfiguration, "apiVersion at line 1 must be a string"},
		{"long kind is cut in the message", "apiVersion: v1\nkind: " + strings.Repeat("K", 10000) + "\n", v1.ReasonNotKubeSchedulerConfiguration, `kind "` + strings.Repeat("K", 100) + `..."; a scheduler configuration`},
		{"long unknown field is cut in the message", validConfig + "? " + strings.Repeat("x", 50000) + "\n: 1\n", v1.ReasonInvalidConfig, "... (truncated)"},

		{"largest size accepted", padTo(validConfig, MaxConfigBytes), "", ""},
		{"one byte too many", padTo(validConfig, MaxConfigBytes+1), v1.ReasonConfigTooLarge,
			"key config.yaml of test is 65537 bytes, more than the 65536 bytes (64 KiB) the operator accepts; shorten it"},
		{"too large is checked before YAML", padTo("profiles: [", 1<<20), v1.ReasonConfigTooLarge, "is 1048576 bytes"},

		{"anchor and alias", validConfig + "leaderElection: &election\n  leaderElect: true\nclientConnection: *election\n", v1.ReasonInvalidConfig,
			"uses a YAML anchor or alias (&name or *name, first at line 14); write the values out instead"},
		{"alias inside leaderElection", strings.Replace(validConfig, "targetUtilization: 60", "targetUtilization: &target 60", 1) +
			"leaderElection:\n  leaseDuration: *target\n", v1.ReasonInvalidConfig, "first at line 13"},
		{"unused anchor", strings.Replace(validConfig, "- schedulerName: packer", "- &profile\n  schedulerName: packer", 1), v1.ReasonInvalidConfig, "YAML anchor or alias"},
		{"alias of an undefined anchor", validConfig + "parallelism: *p\n", v1.ReasonConfigNotYAML, "unknown anchor"},
		{"billion laughs", laughs, v1.ReasonInvalidConfig, "first at line 1"},
		{"ampersand and asterisk in text", validConfig + "      # weights: cpu*2 & memory\n  - name: Example\n    args:\n      expr: '*a & &b'\n", "", ""},

		{"duplicate profile names", validConfig + "- schedulerName: packer\n", v1.ReasonInvalidConfig,
			"profiles 0 and 1 in test are both named packer; kube-scheduler refuses two profiles with one schedulerName"},
		{"upper-case profile name", validConfig + "- schedulerName: Spreader\n", v1.ReasonInvalidConfig,
			`profile 1 in test has schedulerName "Spreader", which is not a valid scheduler name (a lowercase RFC 1123 subdomain`},
		{"profile name with underscore", validConfig + "- schedulerName: my_scheduler\n", v1.ReasonInvalidConfig, `"my_scheduler", which is not a valid scheduler name`},
		{"profile name of 64 characters", validConfig + "- schedulerName: " + strings.Repeat("a", 64) + "\n", v1.ReasonInvalidConfig, "must be no more than 63 characters"},
		{"profile name of 63 characters with dots", validConfig + "- schedulerName: " + strings.Repeat("a.", 31) + "b\n", "", ""},
		{"very long profile name is cut in the message", validConfig + "- schedulerName: " + strings.Repeat("a", 5000) + "\n", v1.ReasonInvalidConfig,
			strings.Repeat("a", 100) + `...", which is not a valid scheduler name`},
		{"clientConnection.kubeconfig", validConfig + "clientConnection:\n  kubeconfig: /etc/kubernetes/scheduler.conf\n", v1.ReasonInvalidConfig,
			`sets clientConnection.kubeconfig ("/etc/kubernetes/scheduler.conf"); the scheduler connects to this cluster as its own ServiceAccount`},
		{"clientConnection rate limits and content type", validConfig + "clientConnection:\n  qps: 200\n  burst: 400\n  contentType: application/json\n", "", ""},
		{"empty clientConnection.kubeconfig", validConfig + "clientConnection:\n  kubeconfig: \"\"\n", "", ""},
		{"64 profiles", profilesConfig(packerNames(64)...), "", ""},
		{"65 profiles", profilesConfig(packerNames(65)...), v1.ReasonInvalidConfig, "has 65 profiles; at most 64 are accepted"},
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
			problem, ok := refusal.As(err)
			if !ok {
				t.Fatalf("want a refusal with reason %s, got %v", tt.wantReason, err)
			}
			if problem.Reason != tt.wantReason {
				t.Errorf("reason: want %s, got %s (%s)", tt.wantReason, problem.Reason, problem.Message)
			}
			if !strings.Contains(problem.Message, tt.wantMessage) {
				t.Errorf("message %q does not contain %q", problem.Message, tt.wantMessage)
			}
			if len(problem.Message) > refusal.MaxMessageBytes+len(" ... (truncated)") {
				t.Errorf("message is %d bytes, more than the %d a condition should carry", len(problem.Message), refusal.MaxMessageBytes)
			}
		})
	}
}

// TestParseClaims checks which scheduler names a configuration may claim, with and
// without a scheduler name required of it.
func TestParseClaims(t *testing.T) {
	tests := []struct {
		name          string
		config        string
		schedulerName string
		wantReason    v1.ConditionReason // empty: valid
		wantMessage   string
		wantNames     []string
	}{
		{"required name among others", profilesConfig("spreader", "packer", "balancer"), "packer", "", "", []string{"balancer", "packer", "spreader"}},
		{"required name missing", profilesConfig("spreader", "balancer"), "packer", v1.ReasonProfileNotFound, "found: balancer, spreader", nil},
		{"no required name: every profile served", profilesConfig("spreader", "packer"), "", "", "", []string{"packer", "spreader"}},
		{"no required name, one profile", profilesConfig("packer"), "", "", "", []string{"packer"}},
		{"no required name, no profiles", profilesConfig(), "", v1.ReasonNoProfile, "add one with schedulerName: a name of its own", nil},
		{"no required name, profile without name", profilesConfig("packer") + "- plugins: {}\n", "", v1.ReasonDefaultSchedulerClaimed,
			"profile 1 in test has no schedulerName, which kube-scheduler reads as default-scheduler, the cluster's own scheduler; set schedulerName: a name of its own", nil},
		{"no required name, default-scheduler", profilesConfig("packer", "default-scheduler"), "", v1.ReasonDefaultSchedulerClaimed, "profile 1 in test is named default-scheduler", nil},
		{"no required name, duplicate", profilesConfig("packer", "spreader", "packer"), "", v1.ReasonInvalidConfig, "profiles 0 and 2 in test are both named packer", nil},
		{"no required name, invalid name", profilesConfig("packer", "-spreader"), "", v1.ReasonInvalidConfig, `schedulerName "-spreader", which is not a valid scheduler name`, nil},
		{"no required name, 65 profiles", profilesConfig(packerNames(65)...), "", v1.ReasonInvalidConfig, "has 65 profiles", nil},
		{"invalid name reported before a missing one", profilesConfig("Packer"), "packer", v1.ReasonInvalidConfig, `"Packer", which is not a valid scheduler name`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config, err := Parse([]byte(tt.config), tt.schedulerName, "test")
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				if diff := cmp.Diff(tt.wantNames, ProfileNames(config)); diff != "" {
					t.Errorf("ProfileNames (-want +got):\n%s", diff)
				}
				return
			}
			expectProblem(t, err, tt.wantReason, tt.wantMessage)
		})
	}
}

func TestProfileNames(t *testing.T) {
	tests := []struct {
		name   string
		config *schedulerconfigv1.KubeSchedulerConfiguration
		want   []string
	}{
		{"nil configuration", nil, nil},
		{"no profiles", &schedulerconfigv1.KubeSchedulerConfiguration{}, []string{}},
		{"sorted, without duplicates or empty names", &schedulerconfigv1.KubeSchedulerConfiguration{Profiles: []schedulerconfigv1.KubeSchedulerProfile{
			{SchedulerName: ptr.To("zeta")}, {SchedulerName: ptr.To("alpha")}, {}, {SchedulerName: ptr.To("")}, {SchedulerName: ptr.To("zeta")},
		}}, []string{"alpha", "zeta"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ProfileNames(tt.config)); diff != "" {
				t.Errorf("ProfileNames (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFromConfigMap(t *testing.T) {
	manyKeys := map[string]string{}
	for i := range 25 {
		manyKeys[fmt.Sprintf("key-%02d", i)] = ""
	}
	tests := []struct {
		name        string
		configMap   *corev1.ConfigMap
		wantReason  v1.ConditionReason // empty: the text is returned
		wantMessage string
	}{
		{"config.yaml under data", &corev1.ConfigMap{Data: map[string]string{ConfigKey: validConfig, "notes": "x"}}, "", ""},
		{"largest size", &corev1.ConfigMap{Data: map[string]string{ConfigKey: padTo(validConfig, MaxConfigBytes)}}, "", ""},
		{"not parsed", &corev1.ConfigMap{Data: map[string]string{ConfigKey: "profiles: ["}}, "", ""},
		{"too large", &corev1.ConfigMap{Data: map[string]string{ConfigKey: padTo(validConfig, MaxConfigBytes+1)}}, v1.ReasonConfigTooLarge,
			"key config.yaml of ConfigMap ns/cm is 65537 bytes, more than the 65536 bytes (64 KiB) the operator accepts"},
		{"no keys", &corev1.ConfigMap{}, v1.ReasonConfigKeyMissing,
			"ConfigMap ns/cm has no key config.yaml (its keys: none); put the KubeSchedulerConfiguration under config.yaml"},
		{"other keys, sorted", &corev1.ConfigMap{Data: map[string]string{"scheduler.yaml": "", "config.yml": ""}, BinaryData: map[string][]byte{"blob": nil}},
			v1.ReasonConfigKeyMissing, "(its keys: config.yml, scheduler.yaml, blob)"},
		{"many keys", &corev1.ConfigMap{Data: manyKeys}, v1.ReasonConfigKeyMissing, "key-18, key-19 and 5 more)"},
		{"long key cut", &corev1.ConfigMap{Data: map[string]string{strings.Repeat("k", 253): ""}}, v1.ReasonConfigKeyMissing,
			"(its keys: " + strings.Repeat("k", 100) + "...)"},
		{"under binaryData", &corev1.ConfigMap{BinaryData: map[string][]byte{ConfigKey: []byte(validConfig)}}, v1.ReasonConfigKeyMissing,
			"ConfigMap ns/cm has key config.yaml under binaryData, but a scheduler configuration is text and is read only from data; move it to data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			data, err := FromConfigMap(tt.configMap, "ConfigMap ns/cm")
			if tt.wantReason == "" {
				if err != nil {
					t.Fatalf("want the text, got %v", err)
				}
				if string(data) != tt.configMap.Data[ConfigKey] {
					t.Errorf("got %d bytes, want the %d of key %s", len(data), len(tt.configMap.Data[ConfigKey]), ConfigKey)
				}
				return
			}
			expectProblem(t, err, tt.wantReason, tt.wantMessage)
			if data != nil {
				t.Errorf("got text with a problem: %d bytes", len(data))
			}
		})
	}
}

// FuzzParse checks that no input, however malformed or large, makes Parse panic or
// accept a configuration that claims a name it must not: with a required scheduler name
// and without one.
func FuzzParse(f *testing.F) {
	f.Add([]byte(validConfig))
	f.Add([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- {}\n"))
	f.Add([]byte("{"))
	f.Add([]byte("- - -"))
	f.Add([]byte(profilesConfig("packer", "spreader")))
	f.Add([]byte(profilesConfig("packer", "packer")))
	f.Add([]byte(profilesConfig(packerNames(65)...)))
	f.Add([]byte(validConfig + "leaderElection: &election\n  leaderElect: true\nclientConnection: *election\n"))
	f.Add([]byte(validConfig + "parallelism: *undefined\n"))
	f.Add([]byte(strings.Replace(validConfig, "- schedulerName: packer", "- &profile\n  schedulerName: packer", 1)))
	f.Add([]byte(laughs))
	f.Add([]byte(validConfig + "? " + strings.Repeat("x", 5000) + "\n: 1\n"))
	f.Add([]byte(padTo(validConfig, MaxConfigBytes)))
	f.Add([]byte(padTo(validConfig, MaxConfigBytes+1)))
	f.Add([]byte(strings.Repeat("[", 20000)))
	// Quantities that take minutes to parse (issue 39), which Parse leaves in the args.
	f.Add([]byte(strings.Replace(validConfig, "  pluginConfig:\n",
		"  pluginConfig:\n  - name: TargetLoadPacking\n    args:\n      defaultRequests: {cpu: '1e-99999999', memory: 1E+99999999}\n", 1)))
	f.Add([]byte(`{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration", "profiles": [{"schedulerName": "packer",
  "pluginConfig": [{"name": "TargetLoadPacking", "args": {"defaultRequests": {"cpu": 1e-99999999, "cpu": 1}}}]}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, schedulerName := range []string{"packer", ""} {
			config, err := Parse(data, schedulerName, "fuzz")
			if err != nil {
				problem, ok := refusal.As(err)
				if !ok {
					t.Fatalf("error is not a refusal: %v", err)
				}
				if len(problem.Message) > refusal.MaxMessageBytes+len(" ... (truncated)") {
					t.Fatalf("message of %d bytes", len(problem.Message))
				}
				continue
			}
			if len(data) > MaxConfigBytes {
				t.Fatalf("accepted %d bytes, more than MaxConfigBytes", len(data))
			}
			names := ProfileNames(config)
			if len(names) != len(config.Profiles) || len(names) > MaxProfiles {
				t.Fatalf("accepted %d profiles with %d distinct names: %q", len(config.Profiles), len(names), data)
			}
			for _, name := range names {
				if name == v1.DefaultSchedulerName || len(invalidName(name)) > 0 {
					t.Fatalf("accepted a profile named %q: %q", name, data)
				}
			}
			if schedulerName != "" && !slices.Contains(names, schedulerName) {
				t.Fatalf("accepted a configuration without a profile for %s: %q", schedulerName, data)
			}
		}
	})
}
