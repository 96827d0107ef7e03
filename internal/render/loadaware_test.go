package render

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// The args of scheduler-plugins' kubescheduler.config.k8s.io/v1 Trimaran plugins, as
// its apis/config/v1 spells them. The plugins decode their args strictly: one unknown
// or misspelt field and the scheduler will not start, so rendered args are decoded here
// the same way.
type metricProviderSpec struct {
	Type               string  `json:"type,omitempty"`
	Address            *string `json:"address,omitempty"`
	Token              *string `json:"token,omitempty"`
	InsecureSkipVerify *bool   `json:"insecureSkipVerify,omitempty"`
}

type trimaranSpec struct {
	MetricProvider metricProviderSpec `json:"metricProvider,omitempty"`
	WatcherAddress *string            `json:"watcherAddress,omitempty"`
}

type targetLoadPackingArgs struct {
	trimaranSpec              `json:",inline"`
	DefaultRequests           corev1.ResourceList `json:"defaultRequests,omitempty"`
	DefaultRequestsMultiplier *string             `json:"defaultRequestsMultiplier,omitempty"`
	TargetUtilization         *int64              `json:"targetUtilization,omitempty"`
}

type loadVariationRiskBalancingArgs struct {
	trimaranSpec            `json:",inline"`
	SafeVarianceMargin      *float64 `json:"safeVarianceMargin,omitempty"`
	SafeVarianceSensitivity *float64 `json:"safeVarianceSensitivity,omitempty"`
}

type lowRiskOverCommitmentArgs struct {
	trimaranSpec        `json:",inline"`
	SmoothingWindowSize *int64                          `json:"smoothingWindowSize,omitempty"`
	RiskLimitWeights    map[corev1.ResourceName]float64 `json:"riskLimitWeights,omitempty"`
}

func TestLoadAwareArgsDecodeStrictlyAsSchedulerPluginsTypes(t *testing.T) {
	tests := []struct {
		name    string
		profile *v1.Profile
		args    any
		check   func(t *testing.T, args any)
	}{
		{
			name: "TargetLoadPacking with Prometheus",
			profile: &v1.Profile{Type: v1.TargetLoadPackingProfile,
				TargetLoadPacking: &v1.TargetLoadPackingArgs{TargetUtilization: ptr.To[int32](70), DefaultRequestsMultiplier: "1.5"},
				Metrics:           &v1.LoadMetrics{Address: "https://thanos-querier.openshift-monitoring.svc:9091"}},
			args: &targetLoadPackingArgs{},
			check: func(t *testing.T, decoded any) {
				args := decoded.(*targetLoadPackingArgs)
				if ptr.Deref(args.TargetUtilization, 0) != 70 || ptr.Deref(args.DefaultRequestsMultiplier, "") != "1.5" {
					t.Errorf("own args: %+v", args)
				}
				provider := args.MetricProvider
				if provider.Type != "Prometheus" || ptr.Deref(provider.Address, "") != "https://thanos-querier.openshift-monitoring.svc:9091" {
					t.Errorf("metricProvider: %+v", provider)
				}
				if provider.InsecureSkipVerify == nil || *provider.InsecureSkipVerify {
					t.Errorf("insecureSkipVerify must be rendered explicitly false (load-watcher defaults to true), got %v", provider.InsecureSkipVerify)
				}
			},
		},
		{
			name: "LoadVariationRiskBalancing with an external load-watcher",
			profile: &v1.Profile{Type: v1.LoadVariationRiskBalancingProfile,
				LoadVariationRiskBalancing: &v1.LoadVariationRiskBalancingArgs{SafeVarianceMargin: "1.5"},
				Metrics:                    &v1.LoadMetrics{WatcherAddress: "http://load-watcher:2020"}},
			args: &loadVariationRiskBalancingArgs{},
			check: func(t *testing.T, decoded any) {
				args := decoded.(*loadVariationRiskBalancingArgs)
				if ptr.Deref(args.SafeVarianceMargin, 0) != 1.5 || args.SafeVarianceSensitivity != nil {
					t.Errorf("own args: %+v", args)
				}
				if ptr.Deref(args.WatcherAddress, "") != "http://load-watcher:2020" || args.MetricProvider.Type != "" {
					t.Errorf("a watcher address replaces the metric provider: %+v", args.trimaranSpec)
				}
			},
		},
		{
			name: "LowRiskOverCommitment with metrics-server",
			profile: &v1.Profile{Type: v1.LowRiskOverCommitmentProfile,
				LowRiskOverCommitment: &v1.LowRiskOverCommitmentArgs{RiskLimitWeights: map[corev1.ResourceName]v1.RiskWeight{"cpu": "0.5", "memory": "1"}},
				Metrics:               &v1.LoadMetrics{Provider: v1.KubernetesMetricsServerProvider}},
			args: &lowRiskOverCommitmentArgs{},
			check: func(t *testing.T, decoded any) {
				args := decoded.(*lowRiskOverCommitmentArgs)
				if args.RiskLimitWeights["cpu"] != 0.5 || args.RiskLimitWeights["memory"] != 1 {
					t.Errorf("riskLimitWeights: %v", args.RiskLimitWeights)
				}
				if args.MetricProvider.Type != "KubernetesMetricsServer" || args.MetricProvider.Address != nil {
					t.Errorf("metricProvider: %+v", args.MetricProvider)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := secondaryScheduler("load", func(cr *v1.SecondaryScheduler) { cr.Spec.Profile = tt.profile })
			config, err := SchedulerConfig(cr, Facts{})
			if err != nil {
				t.Fatal(err)
			}
			parsed, err := schedconfig.Parse([]byte(config), "load", "rendered")
			if err != nil {
				t.Fatalf("rendered config does not pass schedconfig.Parse: %v\n%s", err, config)
			}
			plugins := parsed.Profiles[0].Plugins
			plugin := string(tt.profile.Type)
			if len(plugins.Score.Enabled) != 1 || plugins.Score.Enabled[0].Name != plugin {
				t.Errorf("score enabled: %+v", plugins.Score.Enabled)
			}
			wantPreScore := tt.profile.Type == v1.LowRiskOverCommitmentProfile
			if gotPreScore := len(plugins.PreScore.Enabled) == 1 && plugins.PreScore.Enabled[0].Name == plugin; gotPreScore != wantPreScore {
				t.Errorf("preScore enabled: %+v", plugins.PreScore.Enabled)
			}
			for _, point := range []string{"score", "preScore"} {
				disabled := plugins.Score.Disabled
				if point == "preScore" {
					disabled = plugins.PreScore.Disabled
				}
				names := []string{}
				for _, p := range disabled {
					names = append(names, p.Name)
				}
				if strings.Join(names, ",") != "NodeResourcesBalancedAllocation,NodeResourcesFit" {
					t.Errorf("%s disabled: %v", point, names)
				}
			}
			pluginConfig := parsed.Profiles[0].PluginConfig
			if len(pluginConfig) != 1 || pluginConfig[0].Name != plugin {
				t.Fatalf("pluginConfig: %+v", pluginConfig)
			}
			decoder := json.NewDecoder(bytes.NewReader(pluginConfig[0].Args.Raw))
			decoder.DisallowUnknownFields()
			if err := decoder.Decode(tt.args); err != nil {
				t.Fatalf("args do not decode strictly as scheduler-plugins' %sArgs: %v\n%s", plugin, err, pluginConfig[0].Args.Raw)
			}
			tt.check(t, tt.args)
		})
	}
}

func TestMetricsServerReaderOnlyWhenNeeded(t *testing.T) {
	kinds := func(profile *v1.Profile) string {
		cr := secondaryScheduler("load", func(cr *v1.SecondaryScheduler) { cr.Spec.Profile = profile })
		result, err := Render(cr, Facts{KubernetesMinor: 34})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, object := range result.Objects {
			if strings.Contains(object.GetName(), "metrics-reader") {
				names = append(names, object.GetKind())
			}
		}
		return strings.Join(names, ",")
	}
	// Only a binding: the ClusterRole is shipped with the operator, which creates none.
	if got := kinds(&v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{Provider: v1.KubernetesMetricsServerProvider}}); got != "ClusterRoleBinding" {
		t.Errorf("metrics-server provider: got %q", got)
	}
	if got := kinds(&v1.Profile{Type: v1.TargetLoadPackingProfile, Metrics: &v1.LoadMetrics{Address: "http://p:9090"}}); got != "" {
		t.Errorf("Prometheus provider: got %q", got)
	}
	if got := kinds(&v1.Profile{Type: v1.BinPackingProfile}); got != "" {
		t.Errorf("BinPacking: got %q", got)
	}
}

// A configuration that holds a token goes into a Secret; no ConfigMap ever holds it.
func TestTokenNeverInAConfigMap(t *testing.T) {
	const token = "s3cr3t-bearer-token"
	cr := secondaryScheduler("tokened", func(cr *v1.SecondaryScheduler) {
		cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Address: "https://prometheus:9091", TokenSecretRef: &corev1.LocalObjectReference{Name: "t"}}}
	})
	result, err := Render(cr, Facts{KubernetesMinor: 34, MetricsToken: token, MetricsTokenVersion: "uid-1/7"})
	if err != nil {
		t.Fatal(err)
	}
	inSecret := false
	for _, object := range result.Objects {
		data, err := object.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		switch object.GetKind() {
		case "Secret":
			inSecret = strings.Contains(string(data), base64.StdEncoding.EncodeToString([]byte(result.SchedulerConfig)))
		default:
			if strings.Contains(string(data), token) {
				t.Errorf("%s %s holds the token", object.GetKind(), object.GetName())
			}
		}
	}
	if !inSecret {
		t.Error("the rendered configuration is not in a Secret")
	}
	if !strings.Contains(result.SchedulerConfig, "token: "+token) {
		t.Errorf("the scheduler's configuration should carry the token for load-watcher:\n%s", result.SchedulerConfig)
	}
	rotated, err := Render(cr, Facts{KubernetesMinor: 34, MetricsToken: "rotated", MetricsTokenVersion: "uid-1/8"})
	if err != nil {
		t.Fatal(err)
	}
	if rotated.ConfigHash == result.ConfigHash {
		t.Error("a new token must change the config hash: load-watcher reads it only at start")
	}
	// The hash is shown in status and on pods, to anyone with view: it must not be a
	// function of the token's bytes, or it would let them test guesses offline.
	guessed, err := Render(cr, Facts{KubernetesMinor: 34, MetricsToken: "a guess", MetricsTokenVersion: "uid-1/7"})
	if err != nil {
		t.Fatal(err)
	}
	if guessed.ConfigHash != result.ConfigHash {
		t.Error("the config hash depends on the token's bytes: it must depend only on the token's version")
	}
}

// A scheduler whose configuration holds a token runs below the verbosity from which
// kube-scheduler logs its whole configuration, whatever logLevel asks: the token never
// reaches its log. Without a token, logLevel decides.
func TestTokenNeverInTheSchedulersLog(t *testing.T) {
	for _, level := range []v1.LogLevel{"", v1.Normal, v1.Debug, v1.Trace, v1.TraceAll} {
		for _, token := range []string{"", "s3cr3t-bearer-token"} {
			cr := secondaryScheduler("tokened", func(cr *v1.SecondaryScheduler) {
				cr.Spec.LogLevel = level
				cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile,
					Metrics: &v1.LoadMetrics{Address: "https://prometheus:9091", TokenSecretRef: &corev1.LocalObjectReference{Name: "t"}}}
			})
			result, err := Render(cr, Facts{KubernetesMinor: 34, MetricsToken: token, MetricsTokenVersion: "uid-1/7"})
			if err != nil {
				t.Fatal(err)
			}
			want := level.Verbosity()
			if strings.Contains(result.SchedulerConfig, token) && token != "" {
				want = verbosityLoggingConfig - 1
			}
			var command []string
			for _, object := range result.Objects {
				if object.GetKind() == "Deployment" {
					containers, _, _ := unstructured.NestedSlice(object.Object, "spec", "template", "spec", "containers")
					command, _, _ = unstructured.NestedStringSlice(containers[0].(map[string]any), "command")
				}
			}
			if flag := fmt.Sprintf("--v=%d", want); !slices.Contains(command, flag) {
				t.Errorf("logLevel %q, token %q: command %v, want %s", level, token, command, flag)
			}
		}
	}
}
