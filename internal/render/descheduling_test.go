package render

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// deschedulingScheduler is a load-aware scheduler of profile with spec.descheduling.
func deschedulingScheduler(profile v1.Profile, descheduling v1.Descheduling) *v1.SecondaryScheduler {
	return &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "load-aware"},
		Spec: v1.SecondarySchedulerSpec{Profile: &profile, Descheduling: &descheduling}}
}

// TestDeschedulerGolden renders the descheduler of each load-aware profile: its policy
// (the thresholds around TargetLoadPacking's target, or around the mean for
// LoadVariationRiskBalancing, the scheduler's Prometheus, token and node pool) and its
// objects.
func TestDeschedulerGolden(t *testing.T) {
	facts := Facts{PrometheusAddress: "http://prometheus-k8s.monitoring.svc:9090", KubernetesMinor: 37, PlacementNodes: 3,
		NeverEvicted: []string{"platform", "kube-system", "secondary-scheduler-operator", "kube-system"}, OperatorNamespace: "secondary-scheduler-operator"}
	withToken := facts
	withToken.MetricsToken = "a-token-for-the-test"
	withToken.TrustedCA = &TrustedCA{ConfigMap: "prometheus-ca", Key: "service-ca.crt", Hash: "0123abcd"}
	withToken.PriorityClassName = v1.DefaultPriorityClassName
	tests := []struct {
		name         string
		profile      v1.Profile
		nodePool     *metav1.LabelSelector
		descheduling v1.Descheduling
		facts        Facts
	}{
		{"descheduler-targetloadpacking", v1.Profile{Type: v1.TargetLoadPackingProfile}, nil, v1.Descheduling{}, facts},
		{"descheduler-targetloadpacking-band-token", v1.Profile{Type: v1.TargetLoadPackingProfile,
			TargetLoadPacking: &v1.TargetLoadPackingArgs{TargetUtilization: ptr.To[int32](70)},
			Metrics: &v1.LoadMetrics{Address: "https://prometheus-k8s.monitoring.svc", StaleAfter: &metav1.Duration{Duration: 5 * time.Minute},
				TokenSecretRef: &corev1.LocalObjectReference{Name: "prometheus-token"}}},
			&metav1.LabelSelector{MatchLabels: map[string]string{"pool": "batch"}},
			v1.Descheduling{Mode: v1.DeschedulingDryRun, Band: &v1.DeschedulingBand{BelowPercent: ptr.To[int32](20), AbovePercent: ptr.To[int32](15)},
				Interval: &metav1.Duration{Duration: time.Hour}, MaxEvictionsPerNode: ptr.To[int32](2), MaxEvictionsPerCycle: ptr.To[int32](10)},
			withToken},
		{"descheduler-loadvariationriskbalancing", v1.Profile{Type: v1.LoadVariationRiskBalancingProfile}, nil, v1.Descheduling{}, facts},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := deschedulingScheduler(tt.profile, tt.descheduling)
			cr.Spec.NodePool = tt.nodePool
			policy, err := deschedulerPolicy(cr, tt.facts)
			if err != nil {
				t.Fatal(err)
			}
			expectGolden(t, tt.name+"-policy", string(policy))
			// Rendered as it runs: the scheduler of this very configuration serves.
			paused, err := Render(cr, tt.facts)
			if err != nil {
				t.Fatal(err)
			}
			if paused.DeschedulerPause != PausedSchedulerRollingOut {
				t.Errorf("with no scheduler seen serving, the descheduler's pause is %q, want %q", paused.DeschedulerPause, PausedSchedulerRollingOut)
			}
			serving := tt.facts
			serving.ServedConfigHash = paused.ConfigHash
			result, err := Render(cr, serving)
			if err != nil {
				t.Fatal(err)
			}
			if result.DeschedulerPause != DeschedulerRuns {
				t.Errorf("the descheduler is paused (%s) while its scheduler serves", result.DeschedulerPause)
			}
			expectNetworkPolicies(t, cr, serving, result.Objects)
			var objects []*unstructured.Unstructured
			for _, object := range result.Objects {
				if strings.Contains(object.GetName(), "descheduler") {
					objects = append(objects, object)
				}
			}
			expectGoldenObjects(t, tt.name, objects)
		})
	}
}

// TestDeschedulerPausesWhileAnotherSchedulerPlaces checks that the descheduler runs no pod
// while the scheduler scores by requests, or while the one serving is not of the
// configuration rendered: what it evicted could come back to the node it left.
func TestDeschedulerPausesWhileAnotherSchedulerPlaces(t *testing.T) {
	cr := deschedulingScheduler(v1.Profile{Type: v1.TargetLoadPackingProfile}, v1.Descheduling{})
	facts := Facts{PrometheusAddress: "http://prometheus-k8s.monitoring.svc:9090", KubernetesMinor: 37, PlacementNodes: 3}
	first, err := Render(cr, facts)
	if err != nil {
		t.Fatal(err)
	}
	byRequests := facts
	byRequests.ScoreByRequests = true
	byRequestsResult, err := Render(cr, byRequests)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		served string
		facts  Facts
		want   DeschedulerPause
	}{
		{"the scheduler rendered serves", first.ConfigHash, facts, DeschedulerRuns},
		{"none seen serving", "", facts, PausedSchedulerRollingOut},
		{"an earlier configuration serves", "0123456789abcdef", facts, PausedSchedulerRollingOut},
		{"scoring by requests, even once it serves", byRequestsResult.ConfigHash, byRequests, PausedScoringByRequests},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.facts.ServedConfigHash = tc.served
			result, err := Render(cr, tc.facts)
			if err != nil {
				t.Fatal(err)
			}
			if result.DeschedulerPause != tc.want {
				t.Errorf("pause %q, want %q", result.DeschedulerPause, tc.want)
			}
			for _, object := range result.Objects {
				if object.GetKind() != "Deployment" || object.GetName() != DeschedulerName(cr) {
					continue
				}
				replicas, _, _ := unstructured.NestedInt64(object.Object, "spec", "replicas")
				if paused := tc.want != DeschedulerRuns; paused != (replicas == 0) {
					t.Errorf("the descheduler's Deployment has %d replicas, paused %t", replicas, paused)
				}
			}
		})
	}
}

// TestThresholds checks the band arithmetic, and that a setting that would fight the
// scheduler or never act is refused with its reason.
func TestThresholds(t *testing.T) {
	target := func(percent int32) v1.Profile {
		return v1.Profile{Type: v1.TargetLoadPackingProfile, TargetLoadPacking: &v1.TargetLoadPackingArgs{TargetUtilization: ptr.To(percent)}}
	}
	band := func(below, above int32) *v1.DeschedulingBand {
		return &v1.DeschedulingBand{BelowPercent: ptr.To(below), AbovePercent: ptr.To(above)}
	}
	tests := []struct {
		name         string
		profile      v1.Profile
		descheduling v1.Descheduling
		want         DeschedulingThresholds
		refused      string
	}{
		{"the default target and band", v1.Profile{Type: v1.TargetLoadPackingProfile}, v1.Descheduling{}, DeschedulingThresholds{ReceiveBelow: 30, EvictAbove: 50}, ""},
		{"a band of its own", target(60), v1.Descheduling{Band: band(25, 5)}, DeschedulingThresholds{ReceiveBelow: 35, EvictAbove: 65}, ""},
		{"the narrowest band at the edges", target(2), v1.Descheduling{Band: band(1, 97)}, DeschedulingThresholds{ReceiveBelow: 1, EvictAbove: 99}, ""},
		{"no node can be below", target(10), v1.Descheduling{}, DeschedulingThresholds{}, "reaches 0 % to 20 %"},
		{"no node can be above", target(90), v1.Descheduling{}, DeschedulingThresholds{}, "reaches 80 % to 100 %"},
		{"around the mean", v1.Profile{Type: v1.LoadVariationRiskBalancingProfile}, v1.Descheduling{Band: band(5, 20)},
			DeschedulingThresholds{Deviation: true, ReceiveBelow: 5, EvictAbove: 20}, ""},
		{"a cycle inside the window", target(60), v1.Descheduling{Interval: &metav1.Duration{Duration: 14 * time.Minute}}, DeschedulingThresholds{},
			"interval 14m0s is shorter than the 15m0s window"},
		{"the window itself", target(60), v1.Descheduling{Interval: &metav1.Duration{Duration: 15 * time.Minute}},
			DeschedulingThresholds{ReceiveBelow: 50, EvictAbove: 70}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Thresholds(deschedulingScheduler(tt.profile, tt.descheduling))
			if tt.refused != "" {
				var refused *refusal.Error
				if !errors.As(err, &refused) || refused.Reason != v1.ReasonDeschedulingFightsScheduler || !strings.Contains(refused.Message, tt.refused) {
					t.Fatalf("Thresholds = %+v, %v; want a refusal DeschedulingFightsScheduler saying %q", got, err, tt.refused)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("Thresholds = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestDeschedulingTurnsOffDefaultSpreading checks that the scheduler of a descheduling
// resource has no default topology spreading, which would place an evicted pod back on the
// node it left (the one with the fewest pods of its workload), and that without
// descheduling the scheduler keeps it.
func TestDeschedulingTurnsOffDefaultSpreading(t *testing.T) {
	facts := Facts{PrometheusAddress: "http://prometheus-k8s.monitoring.svc:9090", KubernetesMinor: 37, PlacementNodes: 3}
	for _, profileType := range []v1.ProfileType{v1.TargetLoadPackingProfile, v1.LoadVariationRiskBalancingProfile} {
		descheduling := deschedulingScheduler(v1.Profile{Type: profileType}, v1.Descheduling{})
		plain := descheduling.DeepCopy()
		plain.Spec.Descheduling = nil
		for _, tc := range []struct {
			cr       *v1.SecondaryScheduler
			spreads  bool
			scenario string
		}{{descheduling, false, "with descheduling"}, {plain, true, "without"}} {
			result, err := Render(tc.cr, facts)
			if err != nil {
				t.Fatal(err)
			}
			spreads := true
			for _, profile := range result.Config.Profiles {
				for _, plugin := range profile.PluginConfig {
					if plugin.Name == "PodTopologySpread" && strings.Contains(string(plugin.Args.Raw), `"defaultConstraints":[]`) {
						spreads = false
					}
				}
			}
			if spreads != tc.spreads {
				t.Errorf("%s %s: default spreading %t, want %t", profileType, tc.scenario, spreads, tc.spreads)
			}
		}
	}
}
