package render

import (
	"encoding/json"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// FuzzRender renders any spec that decodes as a SecondaryScheduler's, with the facts
// the operator may have gathered: rendering never panics, whatever passed the API
// server's validation or not (the operator also sees resources created before a
// validation rule existed). A spec it renders yields a Deployment, and a configuration
// that kube-scheduler reads (as YAML 1.1: a string of the spec that it would take for
// another type is quoted).
func FuzzRender(f *testing.F) {
	for _, seed := range []string{
		`{"profile":{"type":"BinPacking"}}`,
		`{"profile":{"type":"BinPacking","binPacking":{"resourceWeights":{"cpu":3}}},"topology":{"mode":"HighlyAvailable","highlyAvailableTopology":{"maxReplicas":5}},"nodePool":{"matchLabels":{"pool":"a"}}}`,
		`{"profile":{"type":"TargetLoadPacking","targetLoadPacking":{"targetUtilization":60},"metrics":{"provider":"Prometheus","address":"https://prometheus:9090"}}}`,
		`{"profile":{"type":"LowRiskOverCommitment","metrics":{"provider":"KubernetesMetricsServer"}},"resources":{"requests":{"cpu":"2","memory":"4Gi"}},"nodeSelector":{"infra":""},"tolerations":[{"operator":"Exists"}]}`,
		`{"schedulerConfig":"cm","schedulerImage":"registry.k8s.io/kube-scheduler:v1.35.1","affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"a","operator":"Exists"}]}]}}}}`,
		`{"nodePool":{"matchExpressions":[{"key":"pool","operator":"NotIn","values":["b"]}]},"profile":{"type":"Custom"},"schedulerConfig":"cm"}`,
		// Quantities that take minutes to parse (issue 39), in each kind of place.
		`{"profile":{"type":"TargetLoadPacking","targetLoadPacking":{"defaultRequests":{"cpu":"1e-99999999"}}}}`,
		`{"profile":{"type":"BinPacking"},"resources":{"requests":{"memory":1e99999999},"limits":{"cpu":"` + strings.Repeat("9", 40) + `"}}}`,
		`{"profile":{"type":"BinPacking"},"extenders":[{"name":"a","filterVerb":"f","container":{"image":"ext","port":8888,` +
			`"env":[{"name":"CPU","valueFrom":{"resourceFieldRef":{"resource":"limits.cpu","divisor":"1E-99999999"}}}]}}]}`,
	} {
		f.Add([]byte(seed), int32(3), 34, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: fuzzed\n")
	}
	f.Add([]byte(`{"schedulerConfig":"cm"}`), int32(1), 34, "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"+
		"- schedulerName: fuzzed\n  pluginConfig:\n  - name: TargetLoadPacking\n    args:\n      defaultRequests: {cpu: '1e-99999999'}\n")
	f.Fuzz(func(t *testing.T, spec []byte, placementNodes int32, minor int, customConfig string) {
		cr := secondaryScheduler("fuzzed", nil)
		cr.Spec = v1.SecondarySchedulerSpec{}
		// The API server refuses a quantity out of these bounds (the CRD's rules), and
		// decoding one would spend minutes in resource.ParseQuantity, before rendering.
		if v1.CheckQuantitiesJSON(spec, &cr.Spec) != nil {
			return
		}
		if err := json.Unmarshal(spec, &cr.Spec); err != nil {
			return
		}
		facts := Facts{KubernetesMinor: minor, PlacementNodes: placementNodes, CustomConfig: []byte(customConfig),
			PrometheusAddress: "https://prometheus.monitoring.svc:9090", PriorityClassName: v1.DefaultPriorityClassName}
		result, err := Render(cr, facts)
		if err != nil {
			return
		}
		if cr.EffectiveProfile() != v1.CustomProfile {
			if _, err := schedconfig.Parse([]byte(result.SchedulerConfig), cr.EffectiveSchedulerName(), "rendered"); err != nil {
				t.Fatalf("kube-scheduler would not read the configuration: %v\n%s", err, result.SchedulerConfig)
			}
		}
		for _, object := range result.Objects {
			if object.GetKind() != "Deployment" {
				continue
			}
			if _, err := yaml.Marshal(object.Object); err != nil {
				t.Fatalf("the Deployment does not serialize: %v", err)
			}
			return
		}
		t.Fatalf("rendered without a Deployment: %v", result.Objects)
	})
}
