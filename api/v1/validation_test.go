package v1

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/crdschema"
)

const crdPath = "../../config/crd/bases/operator.secondary-scheduler.io_secondaryschedulers.yaml"

func loadCRD(t *testing.T) *apiextensions.CustomResourceDefinition {
	t.Helper()
	return loadCRDFile(t, crdPath)
}

// loadCRDFile reads the generated CRD at path.
func loadCRDFile(t *testing.T, path string) *apiextensions.CustomResourceDefinition {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read the CRD (make manifests writes it): %v", err)
	}
	crd, err := crdschema.Decode(data)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
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
		{"risk weight in exponent form", "type: LowRiskOverCommitment\nlowRiskOverCommitment:\n  riskLimitWeights:\n    cpu: '1e-99999999'", "should match"},

		// Quantities are parsed with big-number arithmetic on their exponent (issue 39).
		{"default requests", "type: TargetLoadPacking\ntargetLoadPacking:\n  defaultRequests: {cpu: 500m, memory: 1Gi, nvidia.com/gpu: 1}", ""},
		{"default request with an absurd exponent", "type: TargetLoadPacking\ntargetLoadPacking:\n  defaultRequests:\n    cpu: '1e-99999999'",
			"spec.profile.targetLoadPacking.defaultRequests: Invalid value: each quantity must be at most 32 characters long, with an exponent"},
		{"default request of 33 characters", "type: TargetLoadPacking\ntargetLoadPacking:\n  defaultRequests:\n    cpu: '" + strings.Repeat("1", 32) + "m'",
			"each quantity must be at most 32 characters long"},
		{"17 default requests", "type: TargetLoadPacking\ntargetLoadPacking:\n  defaultRequests: {" + manyRequests(17) + "}",
			"spec.profile.targetLoadPacking.defaultRequests: Too many: 17: must have at most 16 items"},
		{"margin in exponent form", "type: LoadVariationRiskBalancing\nloadVariationRiskBalancing:\n  safeVarianceMargin: '1e-99999999'", "should match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var profile map[string]any
			if err := yaml.Unmarshal([]byte(tt.profile), &profile); err != nil {
				t.Fatalf("test profile: %v", err)
			}
			expectValidation(t, validator, map[string]any{"profile": integers(profile)}, tt.wantError)
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

// manyRequests is a YAML flow mapping of n resources, each requesting 1.
func manyRequests(n int) string {
	requests := make([]string, n)
	for i := range requests {
		requests[i] = fmt.Sprintf("example.com/r%d: 1", i)
	}
	return strings.Join(requests, ", ")
}

// TestResourcesRules checks the names that resources may list: the API server checks
// each of their quantities, which a rule cannot afford for a map of any size.
func TestResourcesRules(t *testing.T) {
	validator, err := crdschema.NewValidator(loadCRD(t))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		spec      string // YAML of spec, besides profile
		wantError string
	}{
		{"requests and limits", "resources: {requests: {cpu: 100m, memory: 128Mi, ephemeral-storage: 1Gi}, limits: {memory: 1Gi}}", ""},
		{"integer quantities", "resources: {requests: {cpu: 2, memory: 1073741824}}", ""},
		{"hugepages", "resources: {limits: {hugepages-2Mi: 1Gi}}",
			`spec.resources.limits: Invalid value: limits may list only cpu, memory and ephemeral-storage`},
		{"an extended resource", "resources: {requests: {cpu: 1, example.com/gpu: 1}}",
			`spec.resources.requests: Invalid value: requests may list only cpu, memory and ephemeral-storage`},
		{"an absurd exponent", "resources: {requests: {memory: '1e-99999999'}}",
			`spec.resources.requests: Invalid value: each quantity in requests must be at most 32 characters long`},
		{"an absurd limit", "resources: {limits: {ephemeral-storage: '1E+99999999'}}", "each quantity in limits must be at most 32 characters long"},
		{"an extender's container", "extenders:\n- {name: a, filterVerb: f, container: {image: ext, port: 8888, resources: {requests: {cpu: 50m}, limits: {memory: 64Mi}}}}", ""},
		{"an extender's hugepages", "extenders:\n- {name: a, filterVerb: f, container: {image: ext, port: 8888, resources: {limits: {hugepages-1Gi: 1Gi}}}}",
			`spec.extenders[0].container.resources.limits: Invalid value: limits may list only cpu, memory and ephemeral-storage`},
		{"an extender's absurd request", "extenders:\n- {name: a, filterVerb: f, container: {image: ext, port: 8888, resources: {requests: {cpu: '1e99999999'}}}}",
			"spec.extenders[0].container.resources.requests: Invalid value: each quantity in requests must be at most 32 characters long"},
		{"an extender's absurd divisor", "extenders:\n- {name: a, filterVerb: f, container: {image: ext, port: 8888, env: [{name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu, divisor: '1e-1000'}}}]}}",
			"the divisor of a resourceFieldRef in an extender container's env must be a quantity of at most 32 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var spec map[string]any
			if err := yaml.Unmarshal([]byte(tt.spec), &spec); err != nil {
				t.Fatalf("test spec: %v", err)
			}
			spec["profile"] = map[string]any{"type": "BinPacking"}
			expectValidation(t, validator, integers(spec).(map[string]any), tt.wantError)
		})
	}
}

// quantityRuleMessage is a part of the message of every rule that bounds quantities.
const quantityRuleMessage = "at most 32 characters"

// TestQuantityRulesAgreeWithCheckQuantity puts quantities within and out of bounds at
// every place of the spec that holds one, found by reflection over the Go type, so that a
// new field holding quantities fails it until a rule bounds them: the API server refuses
// exactly those that CheckQuantity and CheckQuantitiesJSON refuse.
func TestQuantityRulesAgreeWithCheckQuantity(t *testing.T) {
	validator, err := crdschema.NewValidator(loadCRD(t))
	if err != nil {
		t.Fatal(err)
	}
	// Every quantity below is in the format the schema's pattern accepts, so that the
	// bounds alone decide.
	values := []any{
		"100m", "1", "1.5", "2Gi", "8E", "1Ei", "2e3", "5e-3", "1e-999", "1E+999", "+.5e99", "1e1.5", int64(4),
		strings.Repeat("9", 31) + "m", strings.Repeat("1", 32),
		hostileQuantity, "1e99999999", "1e1000", "1E-1000", "-1e+1000", "1e1.555", "1e-00000000000001",
		strings.Repeat("9", 32) + "m", strings.Repeat("1", 33), "0." + strings.Repeat("0", 40) + "1",
	}
	// base is a valid spec with the objects around each place: an extender's container
	// with an environment variable read from a resource.
	const base = `{"profile": {"type": "TargetLoadPacking"}, "extenders": [{"name": "a", "filterVerb": "filter",
		"container": {"image": "ext", "port": 8888, "env": [{"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}}]}}]}`
	paths := quantityPaths(reflect.TypeFor[SecondarySchedulerSpec]())
	if len(paths) < 6 {
		t.Fatalf("found %d places of quantities in the spec, want at least 6: %q", len(paths), paths)
	}
	for _, path := range paths {
		field := fieldOf(path)
		t.Run(field, func(t *testing.T) {
			for _, value := range values {
				var spec map[string]any
				if err := json.Unmarshal([]byte(base), &spec); err != nil {
					t.Fatal(err)
				}
				spec = integers(setAt(spec, path, value)).(map[string]any)
				text := fmt.Sprint(value)
				wantRefused := CheckQuantity(text) != nil

				errs := validator.Errors(map[string]any{"apiVersion": GroupVersion.String(), "kind": "SecondaryScheduler",
					"metadata": map[string]any{"name": "packer", "namespace": "ns"}, "spec": spec})
				refused := len(errs) == 1 && strings.Contains(errs[0], quantityRuleMessage) &&
					strings.HasPrefix("spec."+field, strings.SplitN(errs[0], ":", 2)[0])
				if refused != wantRefused || (!refused && len(errs) > 0) {
					t.Errorf("%.40s: CheckQuantity refuses it: %v; the API server: %q", text, wantRefused, errs)
				}

				data, err := json.Marshal(spec)
				if err != nil {
					t.Fatal(err)
				}
				var problem *QuantityError
				if err := CheckQuantitiesJSON(data, &SecondarySchedulerSpec{}); (err != nil) != wantRefused ||
					wantRefused && (!errors.As(err, &problem) || problem.Field != field) {
					t.Errorf("%.40s: CheckQuantity refuses it: %v; CheckQuantitiesJSON: %v", text, wantRefused, err)
				}
			}
		})
	}
}

// quantityPaths are the places of every resource.Quantity that a value of type t holds,
// as JSON field names, "[]" for an item of a list and "*" for a value of a map.
func quantityPaths(t reflect.Type) [][]string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == quantityType {
		return [][]string{nil}
	}
	if !holdsQuantity(t) {
		return nil
	}
	var paths [][]string
	under := func(segment string, tails [][]string) {
		for _, tail := range tails {
			paths = append(paths, append([]string{segment}, tail...))
		}
	}
	switch t.Kind() {
	case reflect.Struct:
		for _, field := range jsonFields(t) {
			under(field.name, quantityPaths(field.typ))
		}
	case reflect.Map:
		under("*", quantityPaths(t.Elem()))
	case reflect.Slice, reflect.Array:
		under("[]", quantityPaths(t.Elem()))
	}
	return paths
}

// setAt sets value at path in node, the first item of a list and the key cpu of a map,
// making the objects and lists on the way.
func setAt(node any, path []string, value any) any {
	if len(path) == 0 {
		return value
	}
	if path[0] == "[]" {
		list, _ := node.([]any)
		if len(list) == 0 {
			list = []any{nil}
		}
		list[0] = setAt(list[0], path[1:], value)
		return list
	}
	object, _ := node.(map[string]any)
	if object == nil {
		object = map[string]any{}
	}
	key := path[0]
	if key == "*" {
		key = "cpu"
	}
	object[key] = setAt(object[key], path[1:], value)
	return object
}

// fieldOf is the field that setAt sets at path, as CheckQuantitiesJSON names it.
func fieldOf(path []string) string {
	var field strings.Builder
	for _, segment := range path {
		switch segment {
		case "[]":
			field.WriteString("[0]")
			continue
		case "*":
			segment = "cpu"
		}
		if field.Len() > 0 {
			field.WriteString(".")
		}
		field.WriteString(segment)
	}
	return field.String()
}

// spec.gang, spec.quota and spec.numa add plugins to a typed profile; a Custom
// configuration enables them itself.
func TestGangQuotaAndNUMARules(t *testing.T) {
	validator, err := crdschema.NewValidator(loadCRD(t))
	if err != nil {
		t.Fatal(err)
	}
	const onlyTyped = "spec.gang, spec.quota and spec.numa add Coscheduling, CapacityScheduling and NodeResourceTopologyMatch to a typed profile"
	tests := []specCase{
		{"gangs beside BinPacking", "profile: {type: BinPacking}\ngang: {permitWaitingTimeSeconds: 120, podGroupBackoffSeconds: 0}", ""},
		{"gangs and quotas beside TargetLoadPacking", "profile: {type: TargetLoadPacking, metrics: {provider: KubernetesMetricsServer}}\ngang: {}\nquota: {}", ""},
		{"gangs with Custom", "profile: {type: Custom}\nschedulerConfig: config\ngang: {}", onlyTyped},
		{"quotas with a configuration and no profile", "schedulerConfig: config\nquota: {}", onlyTyped},
		{"NUMA beside LoadVariationRiskBalancing", "profile: {type: LoadVariationRiskBalancing, metrics: {provider: KubernetesMetricsServer}}\nnuma: {}", ""},
		{"Kubernetes' gangs beside BinPacking", "profile: {type: BinPacking}\ngang: {implementation: Workload}", ""},
		{"Kubernetes' gangs with Coscheduling's settings", "profile: {type: BinPacking}\ngang: {implementation: Workload, permitWaitingTimeSeconds: 30}",
			"permitWaitingTimeSeconds and podGroupBackoffSeconds are Coscheduling's settings"},
		{"an implementation of one's own", "profile: {type: BinPacking}\ngang: {implementation: Volcano}", "spec.gang.implementation: Unsupported value"},
		{"NUMA with Custom", "profile: {type: Custom}\nschedulerConfig: config\nnuma: {}", onlyTyped},
		{"no permit wait", "profile: {type: BinPacking}\ngang: {permitWaitingTimeSeconds: 0}", "spec.gang.permitWaitingTimeSeconds: Invalid value: 0"},
		{"a backoff of hours", "profile: {type: BinPacking}\ngang: {podGroupBackoffSeconds: 7200}", "spec.gang.podGroupBackoffSeconds: Invalid value: 7200"},
	}
	expectSpecCases(t, validator, tests)
}

// spec.descheduling holds a load-aware scheduler that reads Prometheus near its aim; its
// band, limits and mode are bounded.
func TestDeschedulingRules(t *testing.T) {
	validator, err := crdschema.NewValidator(loadCRD(t))
	if err != nil {
		t.Fatal(err)
	}
	const loadAware = "spec.descheduling keeps nodes near a load-aware scheduler's aim"
	const prometheus = "spec.descheduling reads node use from the scheduler's Prometheus"
	tests := []specCase{
		{"beside TargetLoadPacking", "profile: {type: TargetLoadPacking}\ndescheduling: {}", ""},
		{"every setting", "profile: {type: LoadVariationRiskBalancing, metrics: {address: 'http://prometheus:9090'}}\n" +
			"descheduling: {mode: DryRun, band: {belowPercent: 5, abovePercent: 20}, interval: 30m, maxEvictionsPerNode: 2, maxEvictionsPerCycle: 10}", ""},
		{"beside BinPacking", "profile: {type: BinPacking}\ndescheduling: {}", loadAware},
		{"beside LowRiskOverCommitment", "profile: {type: LowRiskOverCommitment}\ndescheduling: {}", loadAware},
		{"with a configuration of one's own", "schedulerConfig: config\ndescheduling: {}", loadAware},
		{"reading metrics-server", "profile: {type: TargetLoadPacking, metrics: {provider: KubernetesMetricsServer}}\ndescheduling: {}", prometheus},
		{"reading a load-watcher", "profile: {type: TargetLoadPacking, metrics: {watcherAddress: 'http://load-watcher:2020'}}\ndescheduling: {}", prometheus},
		{"a mode of one's own", "profile: {type: TargetLoadPacking}\ndescheduling: {mode: Aggressive}", "spec.descheduling.mode: Unsupported value"},
		{"no band", "profile: {type: TargetLoadPacking}\ndescheduling: {band: {abovePercent: 0}}", "spec.descheduling.band.abovePercent: Invalid value: 0"},
		{"evictions without a bound", "profile: {type: TargetLoadPacking}\ndescheduling: {maxEvictionsPerCycle: 1000}",
			"spec.descheduling.maxEvictionsPerCycle: Invalid value: 1000"},
	}
	expectSpecCases(t, validator, tests)
}

// specCase is a spec, written in YAML, and the error validation gives it ("" for none).
type specCase struct {
	name      string
	spec      string
	wantError string
}

// expectSpecCases validates each case's spec with validator.
func expectSpecCases(t *testing.T, validator *crdschema.Validator, cases []specCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			var spec map[string]any
			if err := yaml.Unmarshal([]byte(tt.spec), &spec); err != nil {
				t.Fatalf("test spec: %v", err)
			}
			expectValidation(t, validator, integers(spec).(map[string]any), tt.wantError)
		})
	}
}
