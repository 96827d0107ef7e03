package v1

import (
	"context"
	"os"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"sigs.k8s.io/yaml"
)

const crdPath = "../../config/crd/bases/operator.secondary-scheduler.io_secondaryschedulers.yaml"

// The API server's CEL limits per rule call and per object (k8s.io/apiserver/pkg/apis/cel).
const (
	celPerCallLimit = 1_000_000
	celCostBudget   = 10_000_000
)

// crdValidator validates objects against the generated CRD the way the API server does:
// the OpenAPI schema (pattern, maxLength, ...) and then the CEL rules.
type crdValidator struct {
	schema *validation.SchemaValidator
	cel    *cel.Validator
	root   *schema.Structural
}

func loadCRD(t *testing.T) *apiextensions.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatalf("read the CRD (make manifests writes it): %v", err)
	}
	var external apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &external); err != nil {
		t.Fatalf("decode %s: %v", crdPath, err)
	}
	var crd apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&external, &crd, nil); err != nil {
		t.Fatalf("convert %s: %v", crdPath, err)
	}
	return &crd
}

func newCRDValidator(t *testing.T) *crdValidator {
	t.Helper()
	crd := loadCRD(t)
	// The internal type holds a schema shared by every version at the top.
	if crd.Spec.Validation == nil || crd.Spec.Validation.OpenAPIV3Schema == nil {
		t.Fatalf("the CRD has no schema")
	}
	props := crd.Spec.Validation.OpenAPIV3Schema
	schemaValidator, _, err := validation.NewSchemaValidator(props)
	if err != nil {
		t.Fatalf("schema validator: %v", err)
	}
	structural, err := schema.NewStructural(props)
	if err != nil {
		t.Fatalf("structural schema: %v", err)
	}
	return &crdValidator{schema: &schemaValidator, cel: cel.NewValidator(structural, true, celPerCallLimit), root: structural}
}

func (v *crdValidator) errors(t *testing.T, object map[string]any) []string {
	t.Helper()
	errs := validation.ValidateCustomResource(nil, object, *v.schema)
	celErrs, _ := v.cel.Validate(context.Background(), nil, v.root, object, nil, celCostBudget)
	errs = append(errs, celErrs...)
	messages := make([]string, 0, len(errs))
	for _, err := range errs {
		messages = append(messages, err.Error())
	}
	return messages
}

// TestCRDIsValid checks the generated CRD as the API server checks it on creation,
// including that every CEL rule compiles and stays within the cost limits.
func TestCRDIsValid(t *testing.T) {
	crd := loadCRD(t)
	// The API server records the stored versions on creation.
	for _, version := range crd.Spec.Versions {
		if version.Storage {
			crd.Status.StoredVersions = append(crd.Status.StoredVersions, version.Name)
		}
	}
	for _, err := range crdvalidation.ValidateCustomResourceDefinition(context.Background(), crd) {
		t.Errorf("the API server would refuse the CRD: %v", err)
	}
}

// TestHostileSpecs checks the rules that refuse credentials in addresses and numbers out
// of range in the decimal strings of profile arguments.
func TestHostileSpecs(t *testing.T) {
	validator := newCRDValidator(t)
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
			errs := validator.errors(t, object)
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
