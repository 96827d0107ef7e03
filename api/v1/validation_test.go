package v1

import (
	"os"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/crdschema"
)

const crdPath = "../../config/crd/bases/operator.secondary-scheduler.io_secondaryschedulers.yaml"

func loadCRD(t *testing.T) *apiextensions.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatalf("read the CRD (make manifests writes it): %v", err)
	}
	crd, err := crdschema.Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", crdPath, err)
	}
	return crd
}

// TestCRDIsValid checks the generated CRD as the API server checks it on creation,
// including that every CEL rule compiles and stays within the cost limits.
func TestCRDIsValid(t *testing.T) {
	for _, err := range crdschema.CreationErrors(loadCRD(t)) {
		t.Errorf("the API server would refuse the CRD: %v", err)
	}
}

// TestHostileSpecs checks the rules that refuse credentials in addresses and numbers out
// of range in the decimal strings of profile arguments.
func TestHostileSpecs(t *testing.T) {
	validator, err := crdschema.NewValidator(loadCRD(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		profile string // YAML of spec.profile
		// wantError is a part of the only error expected; empty means valid.
		wantError string
	}{
		{"address", "type: TargetLoadPacking\nmetrics:\n  address: https://prometheus.monitoring.svc:9091", ""},
		{"address with user and password", "type: TargetLoadPacking\nmetrics:\n  address: https://user:secret@prometheus:9091", "address must not hold credentials"},
		{"address with user", "type: TargetLoadPacking\nmetrics:\n  address: http://user@prometheus", "address must not hold credentials"},
		{"address with empty userinfo", "type: TargetLoadPacking\nmetrics:\n  address: http://@prometheus", "address must not hold credentials"},
		{"address with @ in the path", "type: TargetLoadPacking\nmetrics:\n  address: https://prometheus/a@b", ""},
		{"address with @ in the query", "type: TargetLoadPacking\nmetrics:\n  address: https://prometheus:9091/api?user=a@b", ""},
		{"address with @ in the fragment", "type: TargetLoadPacking\nmetrics:\n  address: https://prometheus#a@b", ""},
		{"watcherAddress", "type: TargetLoadPacking\nmetrics:\n  watcherAddress: http://load-watcher:2020", ""},
		{"watcherAddress with credentials", "type: TargetLoadPacking\nmetrics:\n  watcherAddress: http://u:p@load-watcher:2020", "watcherAddress must not hold credentials"},

		{"multiplier default", "type: TargetLoadPacking\ntargetLoadPacking:\n  defaultRequestsMultiplier: '1.5'", ""},
		{"multiplier 1", "type: TargetLoadPacking\ntargetLoadPacking:\n  defaultRequestsMultiplier: '1'", ""},
		{"multiplier 100", "type: TargetLoadPacking\ntargetLoadPacking:\n  defaultRequestsMultiplier: '100.0'", ""},
		{"multiplier below 1", "type: TargetLoadPacking\ntargetLoadPacking:\n  defaultRequestsMultiplier: '0.99'", "defaultRequestsMultiplier must be from 1 to 100"},
		{"multiplier above 100", "type: TargetLoadPacking\ntargetLoadPacking:\n  defaultRequestsMultiplier: '100.01'", "defaultRequestsMultiplier must be from 1 to 100"},
		{"multiplier not a number", "type: TargetLoadPacking\ntargetLoadPacking:\n  defaultRequestsMultiplier: 'many'", "should match '^[0-9]+([.][0-9]+)?$'"},
		{"multiplier in exponent form", "type: TargetLoadPacking\ntargetLoadPacking:\n  defaultRequestsMultiplier: '1e300'", "should match"},
		{"multiplier too long", "type: TargetLoadPacking\ntargetLoadPacking:\n  defaultRequestsMultiplier: '1.00000000000000000'", "may not be more than 16 bytes"},

		{"margin 0", "type: LoadVariationRiskBalancing\nloadVariationRiskBalancing:\n  safeVarianceMargin: '0'", ""},
		{"margin 100", "type: LoadVariationRiskBalancing\nloadVariationRiskBalancing:\n  safeVarianceMargin: '100'", ""},
		{"margin above 100", "type: LoadVariationRiskBalancing\nloadVariationRiskBalancing:\n  safeVarianceMargin: '1000'", "safeVarianceMargin must be from 0 to 100"},
		{"margin negative", "type: LoadVariationRiskBalancing\nloadVariationRiskBalancing:\n  safeVarianceMargin: '-1'", "should match"},
		{"sensitivity 0.5", "type: LoadVariationRiskBalancing\nloadVariationRiskBalancing:\n  safeVarianceSensitivity: '0.5'", ""},
		{"sensitivity 0", "type: LoadVariationRiskBalancing\nloadVariationRiskBalancing:\n  safeVarianceSensitivity: '0.0'", "safeVarianceSensitivity must be above 0 and at most 100"},
		{"sensitivity above 100", "type: LoadVariationRiskBalancing\nloadVariationRiskBalancing:\n  safeVarianceSensitivity: '101'", "safeVarianceSensitivity must be above 0 and at most 100"},
		{"sensitivity too long", "type: LoadVariationRiskBalancing\nloadVariationRiskBalancing:\n  safeVarianceSensitivity: '00000000000000001'", "may not be more than 16 bytes"},

		{"risk weight 1", "type: LowRiskOverCommitment\nlowRiskOverCommitment:\n  riskLimitWeights:\n    cpu: '1.0'", ""},
		{"risk weight above 1", "type: LowRiskOverCommitment\nlowRiskOverCommitment:\n  riskLimitWeights:\n    cpu: '1.5'", "should match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var profile map[string]any
			if err := yaml.Unmarshal([]byte(tt.profile), &profile); err != nil {
				t.Fatalf("test profile: %v", err)
			}
			object := map[string]any{
				"apiVersion": GroupVersion.String(),
				"kind":       "SecondaryScheduler",
				"metadata":   map[string]any{"name": "packer", "namespace": "ns"},
				"spec":       map[string]any{"profile": profile},
			}
			errs := validator.Errors(object)
			if tt.wantError == "" {
				if len(errs) > 0 {
					t.Fatalf("want valid, got %q", errs)
				}
				return
			}
			// One error: a value of the wrong format must not also fail a range rule
			// that cannot evaluate it.
			if len(errs) != 1 || !strings.Contains(errs[0], tt.wantError) {
				t.Errorf("want one error containing %q, got %q", tt.wantError, errs)
			}
		})
	}
}
