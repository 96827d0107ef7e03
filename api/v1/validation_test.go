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
			expectValidation(t, validator, map[string]any{"profile": profile}, tt.wantError)
		})
	}
}

// TestExtenderRules checks the rules of spec.extenders that the API server applies.
func TestExtenderRules(t *testing.T) {
	validator, err := crdschema.NewValidator(loadCRD(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		extenders string // YAML of spec.extenders
		wantError string
	}{
		{"url", "- {name: a, url: 'https://placement:8443/x', filterVerb: filter, tls: {}}", ""},
		{"service", "- {name: a, service: {name: placement, port: 80}, filterVerb: filter}", ""},
		{"container", "- {name: a, container: {image: ext, port: 8888}, prioritizeVerb: prioritize, weight: 2}", ""},
		{"no address", "- {name: a, filterVerb: filter}", "set exactly one of url, service and container"},
		{"two addresses", "- {name: a, url: 'http://x', service: {name: s, port: 80}, filterVerb: filter}", "set exactly one of url, service and container"},
		{"no verb", "- {name: a, url: 'http://x'}", "set at least one of filterVerb"},
		{"prioritize without weight", "- {name: a, url: 'http://x', prioritizeVerb: p}", "weight must be positive"},
		{"credentials in the url", "- {name: a, url: 'http://user:pw@x', filterVerb: f}", "should match"},
		{"query in the url", "- {name: a, url: 'http://x/y?token=1', filterVerb: f}", "should match"},
		{"tls on http", "- {name: a, url: 'http://x', filterVerb: f, tls: {}}", "tls is only used with an https:// url"},
		{"verb with a query", "- {name: a, url: 'http://x', filterVerb: 'f?x'}", "should match"},
		{"the scheduler's port", "- {name: a, container: {image: ext, port: 10259}, filterVerb: f}", "port 10259 is the scheduler's own"},
		{"two binders", "- {name: a, url: 'http://x', bindVerb: b}\n- {name: b, url: 'http://y', bindVerb: b}", "one extender at most may set bindVerb"},
		{"insecure with a CA", "- {name: a, url: 'https://x', filterVerb: f, tls: {insecureSkipVerify: true, caBundle: {configMap: {name: ca}}}}", "insecureSkipVerify and caBundle exclude each other"},
		{"CA from both", "- {name: a, url: 'https://x', filterVerb: f, tls: {caBundle: {configMap: {name: ca}, secret: {name: ca}}}}", "set exactly one of configMap and secret"},
		{"timeout too long", "- {name: a, url: 'http://x', filterVerb: f, httpTimeout: 1h}", "httpTimeout must be between 100ms and 5m"},
		{"name with a dot", "- {name: a.b, url: 'http://x', filterVerb: f}", "should match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var extenders []any
			if err := yaml.Unmarshal([]byte(tt.extenders), &extenders); err != nil {
				t.Fatalf("test extenders: %v", err)
			}
			expectValidation(t, validator, map[string]any{"profile": map[string]any{"type": "BinPacking"}, "extenders": integers(extenders)}, tt.wantError)
		})
	}
}

// expectValidation checks a SecondaryScheduler of spec as the API server would: valid when
// wantError is empty, else refused with one error containing it (a value of the wrong
// format must not also fail a rule that cannot evaluate it).
func expectValidation(t *testing.T, validator *crdschema.Validator, spec map[string]any, wantError string) {
	t.Helper()
	errs := validator.Errors(map[string]any{
		"apiVersion": GroupVersion.String(),
		"kind":       "SecondaryScheduler",
		"metadata":   map[string]any{"name": "packer", "namespace": "ns"},
		"spec":       spec,
	})
	if wantError == "" {
		if len(errs) > 0 {
			t.Fatalf("want valid, got %q", errs)
		}
		return
	}
	if len(errs) != 1 || !strings.Contains(errs[0], wantError) {
		t.Errorf("want one error containing %q, got %q", wantError, errs)
	}
}

// integers turns the whole float64 numbers that YAML decoding gives into the int64 that the
// API server's JSON decoding gives, which CEL rules on integer fields expect.
func integers(value any) any {
	switch v := value.(type) {
	case float64:
		if v == float64(int64(v)) {
			return int64(v)
		}
	case []any:
		for i := range v {
			v[i] = integers(v[i])
		}
	case map[string]any:
		for key := range v {
			v[key] = integers(v[key])
		}
	}
	return value
}
