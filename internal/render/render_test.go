package render

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata from the current rendering")

func secondaryScheduler(name string, mutate func(*v1.SecondaryScheduler)) *v1.SecondaryScheduler {
	cr := &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "platform", UID: "4f1f5a8e-0000-4000-8000-000000000001"},
		Spec:       v1.SecondarySchedulerSpec{Profile: &v1.Profile{Type: v1.BinPackingProfile}},
	}
	if mutate != nil {
		mutate(cr)
	}
	return cr
}

const customConfig = `# Our own scoring: prefer nodes that already have the image.
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  qps: 80
profiles:
- schedulerName: image-locality
  plugins:
    multiPoint:
      enabled:
      - name: ImageLocality
        weight: 10
`

// nodeAffinityProfile is a second profile of customConfig that adds an affinity of its own.
const nodeAffinityProfile = `- schedulerName: gpu-locality
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - key: nvidia.com/gpu.present
              operator: Exists
          - matchExpressions:
            - key: amd.com/gpu.present
              operator: Exists
`

func TestRenderGolden(t *testing.T) {
	tests := []struct {
		name  string
		cr    *v1.SecondaryScheduler
		facts Facts
	}{
		{
			name:  "binpacking-defaults",
			cr:    secondaryScheduler("packer", nil),
			facts: Facts{KubernetesMinor: 34},
		},
		{
			name: "binpacking-highly-available",
			cr: secondaryScheduler("gpu-packer", func(cr *v1.SecondaryScheduler) {
				cr.Spec.SchedulerName = "gpu-packing"
				cr.Spec.LogLevel = v1.Trace
				cr.Spec.SchedulerImage = "registry.example.com/scheduler:v1"
				cr.Spec.Profile.BinPacking = &v1.BinPackingArgs{ResourceWeights: map[corev1.ResourceName]int64{
					"nvidia.com/gpu": 10, corev1.ResourceCPU: 2, corev1.ResourceMemory: 1,
				}}
				cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable, HighlyAvailableTopology: &v1.HighlyAvailableTopology{
					NodeSelector: map[string]string{"node-role.kubernetes.io/infra": ""},
					Tolerations:  []corev1.Toleration{{Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
					MaxReplicas:  ptr.To[int32](3),
				}}
			}),
			facts: Facts{KubernetesMinor: 33, PlacementNodes: 3},
		},
		{
			// The placement fields, in place of the deprecated ones; fewer nodes than
			// maxReplicas, so one replica a node.
			name: "highly-available-placement",
			cr: secondaryScheduler("placed", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable,
					HighlyAvailableTopology: &v1.HighlyAvailableTopology{MaxReplicas: ptr.To[int32](5)}}
				cr.Spec.NodeSelector = map[string]string{"node-role.kubernetes.io/infra": ""}
				cr.Spec.Tolerations = []corev1.Toleration{{Key: "node-role.kubernetes.io/infra", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
				cr.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
					RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
						MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}}},
					}}},
				}}
				cr.Spec.Resources = &corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")},
				}
				cr.Spec.PriorityClassName = "infra-critical"
			}),
			facts: Facts{KubernetesMinor: 34, PlacementNodes: 2, PriorityClassName: "infra-critical"},
		},
		{
			name: "binpacking-node-pool",
			cr: secondaryScheduler("pool-packer", func(cr *v1.SecondaryScheduler) {
				cr.Spec.NodePool = &metav1.LabelSelector{
					MatchLabels:      map[string]string{"pool.example.com/name": "batch"},
					MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "node.example.com/retiring", Operator: metav1.LabelSelectorOpDoesNotExist}},
				}
			}),
			facts: Facts{KubernetesMinor: 34, PriorityClassName: v1.DefaultPriorityClassName},
		},
		{
			name: "target-load-packing-prometheus",
			cr: secondaryScheduler("load-packer", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile,
					TargetLoadPacking: &v1.TargetLoadPackingArgs{TargetUtilization: ptr.To[int32](60),
						DefaultRequests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}, DefaultRequestsMultiplier: "2"},
					Metrics: &v1.LoadMetrics{Provider: v1.PrometheusProvider, Address: "http://prometheus-k8s.monitoring.svc:9090"}}
			}),
			facts: Facts{KubernetesMinor: 34},
		},
		{
			name: "target-load-packing-token",
			cr: secondaryScheduler("tokened", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile,
					Metrics: &v1.LoadMetrics{Address: "https://thanos-querier.openshift-monitoring.svc:9091",
						TokenSecretRef: &corev1.LocalObjectReference{Name: "prometheus-token"}}}
			}),
			facts: Facts{KubernetesMinor: 34, MetricsToken: "golden-test-token"},
		},
		{
			name: "target-load-packing-openshift-monitoring",
			cr: secondaryScheduler("openshift", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile,
					TargetLoadPacking: &v1.TargetLoadPackingArgs{TargetUtilization: ptr.To[int32](60)}}
			}),
			facts: Facts{KubernetesMinor: 34, PrometheusAddress: "https://thanos-querier.openshift-monitoring.svc:9091",
				MetricsToken: "golden-bound-token",
				MetricsIdentity: &MetricsIdentity{ClusterRole: DefaultMetricsClusterRole, Token: &BoundToken{
					Token: "golden-bound-token", ServiceAccountUID: "0b6b8c1e-4f1a-4d0e-9a57-3c2f1d0e9a11",
					ExpiresAt: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC), RenewAt: time.Date(2026, 11, 23, 7, 12, 0, 0, time.UTC)}},
				TrustedCA: &TrustedCA{ConfigMap: "openshift-service-ca.crt", Key: "service-ca.crt", Hash: "3f2a"}},
		},
		{
			name: "load-variation-risk-balancing-watcher",
			cr: secondaryScheduler("risk-balancer", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = &v1.Profile{Type: v1.LoadVariationRiskBalancingProfile,
					LoadVariationRiskBalancing: &v1.LoadVariationRiskBalancingArgs{SafeVarianceMargin: "1.5", SafeVarianceSensitivity: "2"},
					Metrics:                    &v1.LoadMetrics{WatcherAddress: "http://load-watcher.monitoring.svc:2020"}}
			}),
			facts: Facts{KubernetesMinor: 34},
		},
		{
			name: "low-risk-over-commitment-metrics-server",
			cr: secondaryScheduler("over-committer", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = &v1.Profile{Type: v1.LowRiskOverCommitmentProfile,
					LowRiskOverCommitment: &v1.LowRiskOverCommitmentArgs{SmoothingWindowSize: ptr.To[int32](3),
						RiskLimitWeights: map[corev1.ResourceName]v1.RiskWeight{"cpu": "0.7", "memory": "0.25"}},
					Metrics: &v1.LoadMetrics{Provider: v1.KubernetesMetricsServerProvider}}
			}),
			facts: Facts{KubernetesMinor: 34},
		},
		{
			name: "custom",
			cr: secondaryScheduler("image-locality", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = nil
				cr.Spec.SchedulerConfig = "image-locality-config"
			}),
			facts: Facts{KubernetesMinor: 37, CustomConfig: []byte(customConfig)},
		},
		{
			name: "custom-node-pool",
			cr: secondaryScheduler("image-locality", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = nil
				cr.Spec.SchedulerConfig = "image-locality-config"
				cr.Spec.NodePool = &metav1.LabelSelector{MatchLabels: map[string]string{"pool.example.com/name": "images"}}
			}),
			facts: Facts{KubernetesMinor: 37, CustomConfig: []byte(customConfig + nodeAffinityProfile)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result, err := Render(tt.cr, tt.facts)
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			// What the operator renders must pass the same checks as a user's config.
			if _, err := schedconfig.Parse([]byte(result.SchedulerConfig), tt.cr.EffectiveSchedulerName(), "rendered config"); err != nil {
				t.Fatalf("rendered config does not pass schedconfig.Parse: %v\n%s", err, result.SchedulerConfig)
			}
			var documents []string
			for _, object := range result.Objects {
				data, err := yaml.Marshal(object.Object)
				if err != nil {
					t.Fatal(err)
				}
				documents = append(documents, string(data))
			}
			expectGolden(t, tt.name, strings.Join(documents, "---\n"))
		})
	}
}

// expectGolden compares a rendering with testdata/name.golden.yaml, or rewrites the file
// with -update.
func expectGolden(t *testing.T, name, got string) {
	t.Helper()
	golden := filepath.Join("testdata", name+".golden.yaml")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("read golden file (run go test ./internal/render -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("rendering differs from %s (-want +got); if the change is intended, run go test ./internal/render -update:\n%s", golden, diff)
	}
}

func TestSchedulerConfigOperatorOwnedFields(t *testing.T) {
	cr := secondaryScheduler("image-locality", func(cr *v1.SecondaryScheduler) {
		cr.Spec.Profile = nil
		cr.Spec.SchedulerConfig = "cm"
	})
	userConfig := customConfig + `leaderElection:
  leaderElect: false
  resourceName: kube-scheduler
  resourceNamespace: kube-system
`
	config, err := SchedulerConfig(cr, Facts{CustomConfig: []byte(userConfig)})
	if err != nil {
		t.Fatal(err)
	}
	parsed, err := schedconfig.Parse([]byte(config), "image-locality", "rendered")
	if err != nil {
		t.Fatal(err)
	}
	le := parsed.LeaderElection
	if !ptr.Deref(le.LeaderElect, false) || le.ResourceName != "image-locality-scheduler-lease" || le.ResourceNamespace != "platform" || le.ResourceLock != "leases" {
		t.Errorf("leader election must always use the scheduler's own Lease, got %+v", le)
	}
	if parsed.ClientConnection.QPS != 80 || parsed.ClientConnection.Burst != 1000 {
		t.Errorf("clientConnection: want the user's qps 80 kept and burst filled with 1000, got qps %v burst %v",
			parsed.ClientConnection.QPS, parsed.ClientConnection.Burst)
	}
	if !strings.Contains(config, "# Our own scoring") {
		t.Errorf("the user's comments should survive rendering:\n%s", config)
	}
}

func TestRenderRollsPodsOnlyOnConfigChange(t *testing.T) {
	base := secondaryScheduler("packer", nil)
	hashOf := func(cr *v1.SecondaryScheduler) string {
		result, err := Render(cr, Facts{KubernetesMinor: 34})
		if err != nil {
			t.Fatal(err)
		}
		return result.ConfigHash
	}
	same := base.DeepCopy()
	same.Spec.LogLevel = v1.Debug // a flag, not the config
	if hashOf(base) != hashOf(same) {
		t.Error("changing the log level changed the config hash")
	}
	changed := base.DeepCopy()
	changed.Spec.Profile.BinPacking = &v1.BinPackingArgs{ResourceWeights: map[corev1.ResourceName]int64{corev1.ResourceCPU: 5}}
	if hashOf(base) == hashOf(changed) {
		t.Error("changing resource weights did not change the config hash")
	}
}

func TestSchedulerImage(t *testing.T) {
	tests := []struct {
		name            string
		image           string
		kubernetesMinor int
		wantImage       string
		wantSource      string
	}{
		{"explicit image wins", "example.com/s:1", 34, "example.com/s:1", "spec.schedulerImage"},
		{"matching release", "", 34, "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7", "release for Kubernetes 1.34"},
		{"older matching release", "", 30, "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.30.12", "release for Kubernetes 1.30"},
		{"newer cluster gets the newest and says so", "", 37, "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7", "no scheduler-plugins release is known for Kubernetes 1.37"},
		{"older cluster gets the oldest and says so", "", 28, "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.30.12", "so the one for 1.30"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := secondaryScheduler("s", func(cr *v1.SecondaryScheduler) { cr.Spec.SchedulerImage = tt.image })
			image, source := SchedulerImage(cr, tt.kubernetesMinor)
			if image != tt.wantImage || !strings.Contains(source, tt.wantSource) {
				t.Errorf("got %q (%q), want %q (containing %q)", image, source, tt.wantImage, tt.wantSource)
			}
		})
	}
}

// The pod template hash covers every setting of the template, not only the configuration:
// Available trusts a pod only when it carries the current one.
func TestPodTemplateHashCoversTheWholeTemplate(t *testing.T) {
	hashOf := func(mutate func(*v1.SecondaryScheduler)) string {
		t.Helper()
		result, err := Render(secondaryScheduler("packer", mutate), Facts{KubernetesMinor: 34})
		if err != nil {
			t.Fatal(err)
		}
		for _, object := range result.Objects {
			if object.GetKind() == "Deployment" {
				hash, _, _ := unstructured.NestedString(object.Object, "spec", "template", "metadata", "annotations", PodTemplateHashAnnotation)
				return hash
			}
		}
		t.Fatal("no Deployment rendered")
		return ""
	}
	base := hashOf(func(*v1.SecondaryScheduler) {})
	if base == "" || base != hashOf(func(*v1.SecondaryScheduler) {}) {
		t.Fatalf("the hash must be set and stable, got %q", base)
	}
	for name, mutate := range map[string]func(*v1.SecondaryScheduler){
		"log level": func(cr *v1.SecondaryScheduler) { cr.Spec.LogLevel = v1.Debug },
		"image":     func(cr *v1.SecondaryScheduler) { cr.Spec.SchedulerImage = "registry.example/kube-scheduler:v2" },
		"topology":  func(cr *v1.SecondaryScheduler) { cr.Spec.Topology = &v1.Topology{Mode: v1.HighlyAvailable} },
		"resources": func(cr *v1.SecondaryScheduler) {
			cr.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
		},
		"node selector": func(cr *v1.SecondaryScheduler) { cr.Spec.NodeSelector = map[string]string{"infra": "true"} },
		"tolerations": func(cr *v1.SecondaryScheduler) {
			cr.Spec.Tolerations = []corev1.Toleration{{Key: "infra", Operator: corev1.TolerationOpExists}}
		},
		"affinity": func(cr *v1.SecondaryScheduler) {
			cr.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{}}
		},
	} {
		if hashOf(mutate) == base {
			t.Errorf("changing the %s keeps the pod template hash", name)
		}
	}
}
