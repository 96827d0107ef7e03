package v1

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// hostileQuantity takes minutes and hundreds of megabytes to parse (issue 39): no test may
// hand it to resource.ParseQuantity or decode it into a resource.Quantity.
const hostileQuantity = "1e-99999999"

func TestCheckQuantity(t *testing.T) {
	tests := []struct {
		value string
		// wantError is a part of the error expected; empty means within bounds.
		wantError string
	}{
		{"100m", ""},
		{"1", ""},
		{"1.5", ""},
		{"2Gi", ""},
		{"8E", ""},
		{"1Ei", ""},
		{"2e3", ""},
		{"5e-3", ""},
		{"1e-999", ""},
		{"1E+999", ""},
		{" 1e-999 ", ""},
		{"1e1.5", ""}, // not a quantity, but parsing says so cheaply
		{strings.Repeat("9", 31) + "m", ""},
		{hostileQuantity, `"1e-99999999" has an exponent of 8 digits, more than the 3 of a quantity; write one such as 100m, 1.5, 2Gi or 2e3`},
		{"1e99999999", "exponent of 8 digits"},
		{"1e1000", "exponent of 4 digits"},
		{"1E-1000", "exponent of 4 digits"},
		{"+1e+1000", "exponent of 4 digits"},
		{"1e1.555", "exponent of 5 digits"},
		{strings.Repeat("9", 32) + "m", "is 33 characters long, more than the 32 of a quantity"},
		{strings.Repeat("1", 3<<20), `"` + strings.Repeat("1", 40) + `..." is 3145728 characters long`},
	}
	for _, tt := range tests {
		t.Run(tt.value[:min(len(tt.value), 40)], func(t *testing.T) {
			err := CheckQuantity(tt.value)
			if tt.wantError == "" {
				if err != nil {
					t.Fatalf("want within bounds, got %v", err)
				}
				if _, err := resource.ParseQuantity(strings.TrimSpace(tt.value)); err != nil && tt.value != "1e1.5" {
					t.Errorf("a quantity within bounds does not parse: %v", err)
				}
				return
			}
			var problem *QuantityError
			if !errors.As(err, &problem) || !strings.Contains(err.Error(), tt.wantError) {
				t.Errorf("want a *QuantityError containing %q, got %v", tt.wantError, err)
			}
		})
	}
}

// TestCheckQuantityIsCheap shows that refusing the quantity of issue 39 costs one
// allocation, its error, and that refusing it in a decoder's input costs a few, against
// the hundreds of megabytes of parsing it.
func TestCheckQuantityIsCheap(t *testing.T) {
	if CheckQuantity(hostileQuantity) == nil {
		t.Fatalf("%s is within bounds", hostileQuantity)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = CheckQuantity(hostileQuantity) }); allocs > 1 {
		t.Errorf("refusing %s allocates %v times, want at most 1", hostileQuantity, allocs)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = CheckQuantity("100m") }); allocs != 0 {
		t.Errorf("checking 100m allocates %v times, want none", allocs)
	}
	data := []byte(`{"cpu": "` + hostileQuantity + `"}`)
	var requests map[string]resource.Quantity
	if CheckQuantitiesJSON(data, &requests) == nil {
		t.Fatalf("%s is within bounds", data)
	}
	if allocs := testing.AllocsPerRun(100, func() { _ = CheckQuantitiesJSON(data, &requests) }); allocs > 25 {
		t.Errorf("refusing %s allocates %v times, want at most 25", data, allocs)
	}
}

func BenchmarkCheckQuantity(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = CheckQuantity(hostileQuantity)
	}
}

func TestCheckQuantitiesJSON(t *testing.T) {
	type embedded struct {
		Limit resource.Quantity `json:"limit"`
	}
	type tree struct {
		embedded
		Requests map[string]resource.Quantity `json:"requests"`
		Steps    []*resource.Quantity         `json:"steps"`
		Children []tree                       `json:"children"`
		Ignored  resource.Quantity            `json:"-"`
		Name     string                       `json:"name"`
	}
	tests := []struct {
		name string
		data string
		into any
		// wantField is the field the error names, "" for a quantity alone; nil means no error.
		wantField *string
	}{
		{"quantities within bounds", `{"cpu": "100m", "memory": 2, "gpu": null, "other": "2e3"}`, &map[string]resource.Quantity{}, nil},
		{"a string", `{"cpu": "1e-99999999"}`, &map[string]resource.Quantity{}, ptr.To("cpu")},
		{"a number", `{"memory": 1e99999999}`, &map[string]resource.Quantity{}, ptr.To("memory")},
		{"spaces in the string", `{"cpu": "  1e-99999999  "}`, &map[string]resource.Quantity{}, ptr.To("cpu")},
		{"a name repeated: each is parsed", `{"cpu": "1e-99999999", "cpu": "1"}`, &map[string]resource.Quantity{}, ptr.To("cpu")},
		{"a quantity alone", `"1e-99999999"`, &resource.Quantity{}, ptr.To("")},
		{"a struct's field", `{"limit": "1e-99999999"}`, &tree{}, ptr.To("limit")},
		{"a field named in another case", `{"LIMIT": "1e-99999999"}`, &tree{}, ptr.To("LIMIT")},
		{"a field of a nested struct", `{"children": [{"name": "a"}, {"requests": {"cpu": "1e1000"}}]}`, &tree{}, ptr.To("children[1].requests.cpu")},
		{"a list of pointers", `{"steps": ["1", "1e1000"]}`, &tree{}, ptr.To("steps[1]")},
		{"a field not decoded", `{"ignored": "1e-99999999", "Ignored": "1e-99999999"}`, &tree{}, nil},
		{"a string field", `{"name": "1e-99999999"}`, &tree{}, nil},
		{"no quantity in the type: data is not read", `{"name": "1e-99999999"`, &struct{ Name string }{}, nil},
		{"not JSON", `{"cpu": `, &map[string]resource.Quantity{}, nil},
		{"a mapping where a quantity goes", `{"cpu": {"x": "1e1000"}}`, &map[string]resource.Quantity{}, nil},
		{"the spec's defaultRequests", `{"profile": {"type": "TargetLoadPacking", "targetLoadPacking": {"defaultRequests": {"cpu": "1e-99999999"}}}}`,
			&SecondarySchedulerSpec{}, ptr.To("profile.targetLoadPacking.defaultRequests.cpu")},
		{"an extender's divisor", `{"extenders": [{"name": "a", "container": {"env": [{"name": "X", "valueFrom": {"resourceFieldRef": {"divisor": "1e-99999999"}}}]}}]}`,
			&SecondarySchedulerSpec{}, ptr.To("extenders[0].container.env[0].valueFrom.resourceFieldRef.divisor")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckQuantitiesJSON([]byte(tt.data), tt.into)
			if tt.wantField == nil {
				if err != nil {
					t.Fatalf("want no error, got %v", err)
				}
				return
			}
			var problem *QuantityError
			if !errors.As(err, &problem) || problem.Field != *tt.wantField {
				t.Errorf("want a *QuantityError of field %q, got %v", *tt.wantField, err)
			}
		})
	}
}
