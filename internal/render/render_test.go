package render

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
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

// customExtender is an extenders list of customConfig's own, after its profiles.
const customExtender = `extenders:
- urlPrefix: http://legacy-extender.kube-system.svc:8080/scheduler
  filterVerb: filter
  ignorable: true
`

const customTrimaranConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: custom-packer
  plugins:
    score:
      enabled:
      - name: TargetLoadPacking
  pluginConfig:
  - name: TargetLoadPacking
    args:
      targetUtilization: 70
      metricProvider:
        type: Prometheus
        address: https://prometheus.monitoring.svc:9091
        token: golden-custom-token
        insecureSkipVerify: false
`

// The hash of a Custom configuration holding a token changes with the ConfigMap's
// version, which changes with the token, and is not the hash of the text with the token.
func TestCustomConfigTokenIsNotHashed(t *testing.T) {
	cr := secondaryScheduler("custom-packer", func(cr *v1.SecondaryScheduler) {
		cr.Spec.Profile = nil
		cr.Spec.SchedulerConfig = "trimaran-config"
	})
	facts := Facts{KubernetesMinor: 35, CustomConfig: []byte(customTrimaranConfig),
		CustomConfigTokens: []string{"golden-custom-token"}, MetricsTokenVersion: "ConfigMap 6f1c/812"}
	first, err := Render(cr, facts)
	if err != nil {
		t.Fatal(err)
	}
	if first.ConfigHash == ConfigHash(first.SchedulerConfig) {
		t.Errorf("the hash is the hash of the text holding the token")
	}
	facts.MetricsTokenVersion = "ConfigMap 6f1c/813"
	second, err := Render(cr, facts)
	if err != nil {
		t.Fatal(err)
	}
	if first.ConfigHash == second.ConfigHash {
		t.Errorf("a new version of the ConfigMap keeps the hash %s: a new token would not roll the scheduler", first.ConfigHash)
	}
}

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
			// A team's batch scheduler: gangs and elastic quotas beside TargetLoadPacking.
			name: "target-load-packing-gangs-and-quotas",
			cr: secondaryScheduler("batch", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile,
					Metrics: &v1.LoadMetrics{Provider: v1.PrometheusProvider, Address: "http://prometheus-k8s.monitoring.svc:9090"}}
				cr.Spec.Gang = &v1.Gang{PermitWaitingTimeSeconds: ptr.To[int32](120), PodGroupBackoffSeconds: ptr.To[int32](10)}
				cr.Spec.Quota = &v1.Quota{}
			}),
			facts: Facts{KubernetesMinor: 35},
		},
		{
			// Gangs by Kubernetes' own GangScheduling and Workload API, with Kubernetes'
			// kube-scheduler started with the feature gate.
			name: "binpacking-workload-gangs",
			cr: secondaryScheduler("workload-gangs", func(cr *v1.SecondaryScheduler) {
				cr.Spec.SchedulerImage = "registry.k8s.io/kube-scheduler:v1.37.2"
				cr.Spec.Gang = &v1.Gang{Implementation: v1.WorkloadGangs}
			}),
			facts: Facts{KubernetesMinor: 37},
		},
		{
			// NUMA-aware filtering beside BinPacking: a node whose NUMA zones cannot hold a
			// pod is filtered out, and BinPacking scores the rest.
			name: "binpacking-numa",
			cr: secondaryScheduler("numa-packer", func(cr *v1.SecondaryScheduler) {
				cr.Spec.NUMA = &v1.NUMA{}
			}),
			facts: Facts{KubernetesMinor: 35},
		},
		{
			// Gangs alone, at the plugin's defaults, beside BinPacking.
			name: "binpacking-gangs",
			cr: secondaryScheduler("gang-packer", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Gang = &v1.Gang{}
			}),
			facts: Facts{KubernetesMinor: 35},
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
			// The failsafe: the same scheduler while its metrics are unavailable scores by
			// requests (MostAllocated), keeps its token Secret, and reads no metrics.
			name: "target-load-packing-scoring-by-requests",
			cr: secondaryScheduler("tokened", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = &v1.Profile{Type: v1.TargetLoadPackingProfile,
					Metrics: &v1.LoadMetrics{Address: "https://thanos-querier.openshift-monitoring.svc:9091",
						TokenSecretRef: &corev1.LocalObjectReference{Name: "prometheus-token"}, WhenUnavailable: v1.ScoreByRequests}}
			}),
			facts: Facts{KubernetesMinor: 34, MetricsToken: "golden-test-token", ScoreByRequests: true},
		},
		{
			name: "load-variation-risk-balancing-scoring-by-requests",
			cr: secondaryScheduler("risk-balancer", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = &v1.Profile{Type: v1.LoadVariationRiskBalancingProfile,
					LoadVariationRiskBalancing: &v1.LoadVariationRiskBalancingArgs{SafeVarianceMargin: "1.5"},
					Metrics:                    &v1.LoadMetrics{Address: "http://prometheus-k8s.monitoring.svc:9090", WhenUnavailable: v1.ScoreByRequests}}
			}),
			facts: Facts{KubernetesMinor: 34, ScoreByRequests: true},
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
			// Kubernetes' own kube-scheduler, from a mirror: its binary is elsewhere and its
			// image runs as root, so the pod gives a user that is not.
			name: "custom-kube-scheduler-image",
			cr: secondaryScheduler("image-locality", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = nil
				cr.Spec.SchedulerConfig = "image-locality-config"
				cr.Spec.SchedulerImage = "my.mirror/k8s/kube-scheduler:v1.36.2"
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
		{
			// A Custom configuration whose Trimaran args hold a token goes into a Secret.
			name: "custom-trimaran-token",
			cr: secondaryScheduler("custom-packer", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = nil
				cr.Spec.SchedulerConfig = "trimaran-config"
			}),
			facts: Facts{KubernetesMinor: 35, CustomConfig: []byte(customTrimaranConfig),
				CustomConfigTokens: []string{"golden-custom-token"}, MetricsTokenVersion: "ConfigMap 6f1c/812"},
		},
		{
			// An extender of each kind: at a URL with a CA from a ConfigMap, at a Service
			// with a CA and a client certificate from Secrets, and beside the scheduler in
			// its pod, which then gets the token only where it is wanted.
			name: "extenders",
			cr: secondaryScheduler("extended", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Extenders = []v1.Extender{
					{Name: "quota", URL: "https://quota.example.com:8443/scheduler", FilterVerb: "filter", Ignorable: true,
						TLS: &v1.ExtenderTLS{CABundle: &v1.ExtenderCABundle{ConfigMap: &v1.ConfigMapKeyReference{Name: "quota-ca", Key: "bundle.pem"}}}},
					{Name: "gpu", Service: &v1.ExtenderService{Name: "gpu-extender", Namespace: "gpu-system", Port: 443, PathPrefix: "/v1"},
						FilterVerb: "filter", PrioritizeVerb: "prioritize", BindVerb: "bind", Weight: 5, NodeCacheCapable: true,
						HTTPTimeout:      &metav1.Duration{Duration: 2 * time.Second},
						ManagedResources: []v1.ExtenderManagedResource{{Name: "example.com/gpu-memory", IgnoredByScheduler: true}},
						TLS: &v1.ExtenderTLS{ServerName: "gpu-extender.gpu-system.svc",
							CABundle:                   &v1.ExtenderCABundle{Secret: &v1.SecretKeyReference{Name: "gpu-extender-tls", Key: "ca.crt"}},
							ClientCertificateSecretRef: &corev1.LocalObjectReference{Name: "scheduler-client-tls"}}},
					{Name: "local", Container: &v1.ExtenderContainer{Image: "registry.example.com/local-extender:v2", Port: 8888,
						PathPrefix: "/ext", Args: []string{"--listen=:8888"}}, PrioritizeVerb: "prioritize", Weight: 1},
				}
			}),
			facts: Facts{KubernetesMinor: 37, ExtenderTLSVersion: "quota-ca 81c2/4411 gpu-extender-tls 77aa/102 scheduler-client-tls 9e01/7"},
		},
		{
			// A Custom configuration's own extender comes first; spec.extenders follow. An
			// extender container that may have the token leaves the pod's automatic mount.
			name: "custom-extenders",
			cr: secondaryScheduler("image-locality", func(cr *v1.SecondaryScheduler) {
				cr.Spec.Profile = nil
				cr.Spec.SchedulerConfig = "image-locality-config"
				cr.Spec.Extenders = []v1.Extender{{Name: "trusted", Container: &v1.ExtenderContainer{Image: "registry.example.com/trusted:v1",
					Port: 9443, MountServiceAccountToken: true}, FilterVerb: "filter"}}
			}),
			facts: Facts{KubernetesMinor: 37, CustomConfig: []byte(customConfig + customExtender)},
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
			expectNetworkPolicies(t, tt.cr, tt.facts, result.Objects)
			expectGoldenObjects(t, tt.name, result.Objects)
		})
	}
}

// expectGoldenObjects compares objects, as YAML documents, with testdata/<name>.golden.yaml.
func expectGoldenObjects(t *testing.T, name string, objects []*unstructured.Unstructured) {
	t.Helper()
	documents := make([]string, 0, len(objects))
	for _, object := range objects {
		data, err := yaml.Marshal(object.Object)
		if err != nil {
			t.Fatal(err)
		}
		documents = append(documents, string(data))
	}
	expectGolden(t, name, strings.Join(documents, "---\n"))
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
	const pluginsRepository = "registry.k8s.io/scheduler-plugins/kube-scheduler"
	tests := []struct {
		name         string
		image        string
		clusterMinor int
		want         Image
		// wantSource and wantSkew are parts of Source and Skew; an empty wantSkew means none.
		wantSource, wantSkew string
	}{
		{name: "matching release", clusterMinor: 35,
			want:       Image{Reference: pluginsRepository + ":v0.35.7", Kind: SchedulerPluginsImage, KubernetesMinor: 35},
			wantSource: "release for Kubernetes 1.35"},
		{name: "older matching release", clusterMinor: 30,
			want:       Image{Reference: pluginsRepository + ":v0.30.12", Kind: SchedulerPluginsImage, KubernetesMinor: 30},
			wantSource: "release for Kubernetes 1.30"},
		{name: "one minor newer cluster gets the newest, within the policy", clusterMinor: 36,
			want:       Image{Reference: pluginsRepository + ":v0.35.7", Kind: SchedulerPluginsImage, KubernetesMinor: 35},
			wantSource: "no scheduler-plugins release is known for Kubernetes 1.36, so the one for 1.35"},
		{name: "two minors newer cluster gets the newest, outside the policy", clusterMinor: 37,
			want:       Image{Reference: pluginsRepository + ":v0.35.7", Kind: SchedulerPluginsImage, KubernetesMinor: 35},
			wantSource: "no scheduler-plugins release is known for Kubernetes 1.37",
			wantSkew:   "The image is built for Kubernetes 1.35, 2 minor versions older than the cluster's 1.37: Kubernetes' version-skew policy"},
		{name: "older cluster gets the oldest, newer than its API server", clusterMinor: 28,
			want:       Image{Reference: pluginsRepository + ":v0.30.12", Kind: SchedulerPluginsImage, KubernetesMinor: 30},
			wantSource: "so the one for 1.30",
			wantSkew:   "The image is built for Kubernetes 1.30, newer than the cluster's 1.28"},
		{name: "unknown cluster version gets the newest, nothing said of skew", clusterMinor: 0,
			want: Image{Reference: pluginsRepository + ":v0.35.7", Kind: SchedulerPluginsImage, KubernetesMinor: 35}, wantSource: "so the one for 1.35"},

		{name: "explicit scheduler-plugins release", image: pluginsRepository + ":v0.34.7", clusterMinor: 35,
			want:       Image{Reference: pluginsRepository + ":v0.34.7", Kind: SchedulerPluginsImage, KubernetesMinor: 34},
			wantSource: "spec.schedulerImage: a scheduler-plugins image, started as /bin/kube-scheduler"},
		{name: "explicit scheduler-plugins release too old", image: pluginsRepository + ":v0.33.5", clusterMinor: 35,
			want:       Image{Reference: pluginsRepository + ":v0.33.5", Kind: SchedulerPluginsImage, KubernetesMinor: 33},
			wantSource: "spec.schedulerImage", wantSkew: "built for Kubernetes 1.33, 2 minor versions older than the cluster's 1.35"},
		{name: "scheduler-plugins mirrored under its own path", image: "mirror.example:5000/scheduler-plugins/kube-scheduler:v0.35.7-amd64", clusterMinor: 35,
			want: Image{Reference: "mirror.example:5000/scheduler-plugins/kube-scheduler:v0.35.7-amd64", Kind: SchedulerPluginsImage, KubernetesMinor: 35}},
		{name: "scheduler-plugins mirrored flat, told by its v0 tag", image: "my.mirror/k8s/kube-scheduler:v0.32.7", clusterMinor: 35,
			want:     Image{Reference: "my.mirror/k8s/kube-scheduler:v0.32.7", Kind: SchedulerPluginsImage, KubernetesMinor: 32},
			wantSkew: "built for Kubernetes 1.32, 3 minor versions older"},
		{name: "scheduler-plugins by digest: version unknown", image: pluginsRepository + "@sha256:" + strings.Repeat("ab", 32), clusterMinor: 37,
			want: Image{Reference: pluginsRepository + "@sha256:" + strings.Repeat("ab", 32), Kind: SchedulerPluginsImage}},
		{name: "scheduler-plugins path with a tag of its own", image: pluginsRepository + ":latest", clusterMinor: 37,
			want: Image{Reference: pluginsRepository + ":latest", Kind: SchedulerPluginsImage}},

		{name: "Kubernetes' own kube-scheduler", image: "registry.k8s.io/kube-scheduler:v1.37.1", clusterMinor: 37,
			want:       Image{Reference: "registry.k8s.io/kube-scheduler:v1.37.1", Kind: KubeSchedulerImage, KubernetesMinor: 37},
			wantSource: "Kubernetes' own kube-scheduler, which has the in-tree plugins only; started as /usr/local/bin/kube-scheduler, as user 65532"},
		{name: "Kubernetes' own kube-scheduler, one minor older", image: "registry.k8s.io/kube-scheduler:v1.36.4", clusterMinor: 37,
			want: Image{Reference: "registry.k8s.io/kube-scheduler:v1.36.4", Kind: KubeSchedulerImage, KubernetesMinor: 36}},
		{name: "Kubernetes' own kube-scheduler, newer than the API server", image: "registry.k8s.io/kube-scheduler:v1.38.0-rc.1", clusterMinor: 37,
			want:     Image{Reference: "registry.k8s.io/kube-scheduler:v1.38.0-rc.1", Kind: KubeSchedulerImage, KubernetesMinor: 38},
			wantSkew: "built for Kubernetes 1.38, newer than the cluster's 1.37"},
		{name: "Kubernetes' own kube-scheduler from a mirror", image: "my.mirror/k8s/kube-scheduler:v1.35.2", clusterMinor: 37,
			want:     Image{Reference: "my.mirror/k8s/kube-scheduler:v1.35.2", Kind: KubeSchedulerImage, KubernetesMinor: 35},
			wantSkew: "2 minor versions older than the cluster's 1.37"},
		{name: "kube-scheduler of Docker Hub's library", image: "kube-scheduler:v1.37.0", clusterMinor: 37,
			want: Image{Reference: "kube-scheduler:v1.37.0", Kind: KubeSchedulerImage, KubernetesMinor: 37}},
		{name: "kube-scheduler without a release tag: version unknown", image: "registry.k8s.io/kube-scheduler:latest", clusterMinor: 37,
			want: Image{Reference: "registry.k8s.io/kube-scheduler:latest", Kind: KubeSchedulerImage}},
		{name: "a mirror's kube-scheduler by digest could be either: run as before, said so", image: "my.mirror/k8s/kube-scheduler@sha256:" + strings.Repeat("cd", 32), clusterMinor: 37,
			want: Image{Reference: "my.mirror/k8s/kube-scheduler@sha256:" + strings.Repeat("cd", 32), Kind: OtherImage}},
		{name: "a mirror's kube-scheduler with a tag of its own could be either", image: "my.mirror/k8s/kube-scheduler:prod", clusterMinor: 37,
			want: Image{Reference: "my.mirror/k8s/kube-scheduler:prod", Kind: OtherImage}},
		{name: "kube-scheduler with the cluster version unknown", image: "registry.k8s.io/kube-scheduler:v1.30.0", clusterMinor: 0,
			want: Image{Reference: "registry.k8s.io/kube-scheduler:v1.30.0", Kind: KubeSchedulerImage, KubernetesMinor: 30}},

		{name: "another image keeps scheduler-plugins' binary path and says so", image: "example.com/s:1", clusterMinor: 34,
			want:       Image{Reference: "example.com/s:1", Kind: OtherImage},
			wantSource: "so its binary is assumed to be /bin/kube-scheduler"},
		{name: "another image with a release-like tag: version unknown", image: "example.com/my-scheduler:v1.20.0", clusterMinor: 37,
			want: Image{Reference: "example.com/my-scheduler:v1.20.0", Kind: OtherImage}},
		{name: "a name ending in kube-scheduler is not kube-scheduler", image: "example.com/custom-kube-scheduler:v1.37.0", clusterMinor: 37,
			want: Image{Reference: "example.com/custom-kube-scheduler:v1.37.0", Kind: OtherImage}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := secondaryScheduler("s", func(cr *v1.SecondaryScheduler) { cr.Spec.SchedulerImage = tt.image })
			got := SchedulerImage(cr, tt.clusterMinor)
			if diff := cmp.Diff(tt.want, got, cmpopts.IgnoreFields(Image{}, "Source", "Skew")); diff != "" {
				t.Errorf("SchedulerImage (-want +got):\n%s", diff)
			}
			if !strings.Contains(got.Source, tt.wantSource) {
				t.Errorf("Source %q does not say %q", got.Source, tt.wantSource)
			}
			switch {
			case tt.wantSkew == "" && got.Skew != "":
				t.Errorf("Skew %q, want none", got.Skew)
			case tt.wantSkew != "" && !strings.Contains(got.Skew, tt.wantSkew):
				t.Errorf("Skew %q does not say %q", got.Skew, tt.wantSkew)
			case got.Skew != "" && !strings.Contains(got.Source, got.Skew):
				t.Errorf("Source %q does not say the skew %q", got.Source, got.Skew)
			}
			wantBinary := "/bin/kube-scheduler"
			if tt.want.Kind == KubeSchedulerImage {
				wantBinary = "/usr/local/bin/kube-scheduler"
			}
			if got.Binary() != wantBinary {
				t.Errorf("Binary %q, want %q", got.Binary(), wantBinary)
			}
		})
	}
}

// The container is started as the image needs: Kubernetes' own kube-scheduler from its
// path and as a user that is not root; any other image as before.
func TestSchedulerContainerFollowsTheImage(t *testing.T) {
	tests := []struct {
		image       string
		wantCommand string
		wantUser    *int64
	}{
		{"", "/bin/kube-scheduler", nil},
		{"registry.k8s.io/scheduler-plugins/kube-scheduler:v0.35.7", "/bin/kube-scheduler", nil},
		{"registry.k8s.io/kube-scheduler:v1.37.1", "/usr/local/bin/kube-scheduler", ptr.To[int64](65532)},
		{"my.mirror/k8s/kube-scheduler:v1.35.2", "/usr/local/bin/kube-scheduler", ptr.To[int64](65532)},
		{"example.com/my-scheduler:v3", "/bin/kube-scheduler", nil},
	}
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			cr := secondaryScheduler("s", func(cr *v1.SecondaryScheduler) { cr.Spec.SchedulerImage = tt.image })
			result, err := Render(cr, Facts{KubernetesMinor: 37})
			if err != nil {
				t.Fatal(err)
			}
			container := renderedContainer(t, result)
			if container.Command[0] != tt.wantCommand || !slices.Contains(container.Command, "--config=/etc/kubernetes/scheduler/config.yaml") {
				t.Errorf("command %q, want %s --config=...", container.Command, tt.wantCommand)
			}
			if diff := cmp.Diff(tt.wantUser, container.SecurityContext.RunAsUser); diff != "" {
				t.Errorf("runAsUser (-want +got):\n%s", diff)
			}
			if container.SecurityContext.RunAsUser != nil && ptr.Deref(container.SecurityContext.RunAsGroup, 0) != *tt.wantUser {
				t.Errorf("runAsGroup %v, want %d", container.SecurityContext.RunAsGroup, *tt.wantUser)
			}
			if container.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
				t.Errorf("terminationMessagePolicy %q: a crash would not tell why", container.TerminationMessagePolicy)
			}
		})
	}
}

// renderedContainer is the scheduler container of a rendering.
func renderedContainer(t *testing.T, result *Result) corev1.Container {
	t.Helper()
	for _, object := range result.Objects {
		if object.GetKind() != "Deployment" {
			continue
		}
		deployment := &appsv1.Deployment{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(object.Object, deployment); err != nil {
			t.Fatal(err)
		}
		return deployment.Spec.Template.Spec.Containers[0]
	}
	t.Fatal("no Deployment rendered")
	return corev1.Container{}
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

// TestExtenderTLSVersionRollsTheScheduler: the scheduler reads its extenders' certificates
// once, at start, so a new version of a Secret they come from must change the
// configuration hash, and so the pod template.
func TestExtenderTLSVersionRollsTheScheduler(t *testing.T) {
	cr := secondaryScheduler("extended", func(cr *v1.SecondaryScheduler) {
		cr.Spec.Extenders = []v1.Extender{{Name: "gpu", URL: "https://gpu.example.com", FilterVerb: "filter",
			TLS: &v1.ExtenderTLS{ClientCertificateSecretRef: &corev1.LocalObjectReference{Name: "client-tls"}}}}
	})
	first, err := Render(cr, Facts{KubernetesMinor: 37, ExtenderTLSVersion: "client-tls 9e01/7"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := Render(cr, Facts{KubernetesMinor: 37, ExtenderTLSVersion: "client-tls 9e01/8"})
	if err != nil {
		t.Fatal(err)
	}
	if first.ConfigHash == second.ConfigHash {
		t.Errorf("a new version of the client certificate's Secret keeps the hash %s", first.ConfigHash)
	}
	if first.SchedulerConfig != second.SchedulerConfig {
		t.Errorf("the configuration text changed with the Secret's version; it must name files, not versions")
	}
}
