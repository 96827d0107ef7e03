package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// crdPath is the CRD that `make docs` documents.
const crdPath = "../../config/crd/bases/operator.secondary-scheduler.io_secondaryschedulers.yaml"

func TestTypeText(t *testing.T) {
	object := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
		"name": {Type: "string"},
	}}
	quantity := apiextensionsv1.JSONSchemaProps{XIntOrString: true, Pattern: quantityPattern,
		AnyOf: []apiextensionsv1.JSONSchemaProps{{Type: "integer"}, {Type: "string"}}}
	tests := []struct {
		name   string
		schema apiextensionsv1.JSONSchemaProps
		want   string
	}{
		{name: "string", schema: apiextensionsv1.JSONSchemaProps{Type: "string"}, want: "string"},
		{name: "format", schema: apiextensionsv1.JSONSchemaProps{Type: "integer", Format: "int32"}, want: "integer (int32)"},
		{name: "time", schema: apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}, want: "string (date-time)"},
		{name: "boolean", schema: apiextensionsv1.JSONSchemaProps{Type: "boolean"}, want: "boolean"},
		{name: "quantity", schema: quantity, want: "quantity"},
		{name: "int or string", schema: apiextensionsv1.JSONSchemaProps{XIntOrString: true}, want: "int-or-string"},
		{name: "object with fields links to its section", schema: object, want: "[object](#spec-thing)"},
		{name: "object without fields", schema: apiextensionsv1.JSONSchemaProps{Type: "object"}, want: "object"},
		{name: "any fields", schema: apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)},
			want: "object (any fields)"},
		{name: "array of strings", schema: apiextensionsv1.JSONSchemaProps{Type: "array",
			Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
			want: "array of string"},
		{name: "array of objects links to the items' section", schema: apiextensionsv1.JSONSchemaProps{Type: "array",
			Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &object}}, want: "array of [object](#spec-thing)"},
		{name: "map of strings", schema: apiextensionsv1.JSONSchemaProps{Type: "object",
			AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string"}}},
			want: "map of string"},
		{name: "map of quantities", schema: apiextensionsv1.JSONSchemaProps{Type: "object",
			AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &quantity}},
			want: "map of quantity"},
		{name: "no type", schema: apiextensionsv1.JSONSchemaProps{}, want: "any"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"thing": tt.schema}},
			}}
			doc := newSchemaDoc("Thing", "", &root)
			if got := doc.typeText("spec.thing", &tt.schema); got != tt.want {
				t.Errorf("typeText = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestValidation(t *testing.T) {
	tests := []struct {
		name   string
		schema apiextensionsv1.JSONSchemaProps
		want   []string
	}{
		{name: "nothing", schema: apiextensionsv1.JSONSchemaProps{Type: "string"}, want: nil},
		{name: "enum, empty string included", schema: apiextensionsv1.JSONSchemaProps{Type: "string",
			Enum: []apiextensionsv1.JSON{{Raw: []byte(`""`)}, {Raw: []byte(`"Normal"`)}, {Raw: []byte(`"Debug"`)}}},
			want: []string{"one of `\"\"`, `Normal` or `Debug`"}},
		{name: "inclusive range", schema: apiextensionsv1.JSONSchemaProps{Type: "integer", Minimum: ptr.To(1.0), Maximum: ptr.To(100.0)},
			want: []string{"1 ≤ value ≤ 100"}},
		{name: "exclusive lower bound", schema: apiextensionsv1.JSONSchemaProps{Type: "number", Minimum: ptr.To(0.0),
			ExclusiveMinimum: true, Maximum: ptr.To(0.5)}, want: []string{"0 < value ≤ 0.5"}},
		{name: "upper bound only, large", schema: apiextensionsv1.JSONSchemaProps{Type: "integer", Maximum: ptr.To(31536000.0)},
			want: []string{"value ≤ 31536000"}},
		{name: "lengths", schema: apiextensionsv1.JSONSchemaProps{Type: "string", MinLength: ptr.To[int64](1), MaxLength: ptr.To[int64](63)},
			want: []string{"1 ≤ length ≤ 63"}},
		{name: "entries", schema: apiextensionsv1.JSONSchemaProps{Type: "object", MinProperties: ptr.To[int64](1)},
			want: []string{"1 ≤ entries"}},
		{name: "pattern with a pipe is escaped for a table", schema: apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: "^(a|b)$"},
			want: []string{"pattern `^(a\\|b)$`"}},
		{name: "quantity pattern left out", schema: apiextensionsv1.JSONSchemaProps{XIntOrString: true, Pattern: quantityPattern},
			want: nil},
		{name: "list map", schema: apiextensionsv1.JSONSchemaProps{Type: "array", MaxItems: ptr.To[int64](8), XListType: ptr.To("map"),
			XListMapKeys: []string{"name"}, Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{
				Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"name": {Type: "string"}}}}},
			want: []string{"items ≤ 8", "unique by `name`"}},
		{name: "set of limited strings", schema: apiextensionsv1.JSONSchemaProps{Type: "array", XListType: ptr.To("set"),
			Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr.To[int64](5)}}},
			want: []string{"unique items", "each item: length ≤ 5"}},
		{name: "map values", schema: apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{
			Allows: true, Schema: &apiextensionsv1.JSONSchemaProps{Type: "string", Pattern: "^[0-9]$"}}},
			want: []string{"each value: pattern `^[0-9]$`"}},
		{name: "short rule shown beside its message", schema: apiextensionsv1.JSONSchemaProps{Type: "string",
			XValidations: apiextensionsv1.ValidationRules{{Rule: "self != 'default-scheduler'", Message: "choose another name"}}},
			want: []string{"rule: choose another name (`self != 'default-scheduler'`)"}},
		{name: "long rule by its message only", schema: apiextensionsv1.JSONSchemaProps{Type: "string",
			XValidations: apiextensionsv1.ValidationRules{{Rule: "duration(self) >= duration('10s') && duration(self) <= duration('1h')",
				Message: "failoverAfter must be between 10s and 1h"}}},
			want: []string{"rule: failoverAfter must be between 10s and 1h"}},
		{name: "rule without a message", schema: apiextensionsv1.JSONSchemaProps{Type: "array",
			XValidations: apiextensionsv1.ValidationRules{{Rule: "self.all(x, x.a || x.b)"}}},
			want: []string{"rule: `self.all(x, x.a \\|\\| x.b)`"}},
		{name: "rule with a computed message", schema: apiextensionsv1.JSONSchemaProps{Type: "string",
			XValidations: apiextensionsv1.ValidationRules{{Rule: "self.size() < 3", MessageExpression: "'too long: ' + self"}}},
			want: []string{"rule: `self.size() < 3` (message: `'too long: ' + self`)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := apiextensionsv1.JSONSchemaProps{Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"field": tt.schema,
			}}
			doc := newSchemaDoc("Thing", "", &root)
			if diff := cmp.Diff(tt.want, doc.validation("field", &tt.schema)); diff != "" {
				t.Errorf("validation (-want +got):\n%s", diff)
			}
		})
	}
}

// TestObjectRulesInTheirSection: a rule on an object with fields is listed in the object's section,
// not in the row of the field that holds the object.
func TestObjectRulesInTheirSection(t *testing.T) {
	page := renderTestCRD(t, `
spec:
  type: object
  properties:
    topology:
      type: object
      x-kubernetes-validations:
      - rule: "!has(self.highlyAvailableTopology) || self.mode == 'HighlyAvailable'"
        message: highlyAvailableTopology is only allowed with mode HighlyAvailable
      properties:
        mode: {type: string}
`)
	row := lineWith(t, page, "| `spec.topology` |")
	if strings.Contains(row, "highlyAvailableTopology is only allowed") {
		t.Errorf("the rule is in the row of spec.topology: %s", row)
	}
	section := page[strings.Index(page, "### `spec.topology`"):]
	if !strings.Contains(section, "- highlyAvailableTopology is only allowed with mode HighlyAvailable\n") {
		t.Errorf("the rule is not listed in the section of spec.topology:\n%s", section)
	}
}

func TestMarkdown(t *testing.T) {
	tests := []struct {
		name        string
		description string
		style       textStyle
		want        string
	}{
		{name: "lines of a paragraph joined", description: "LogLevel is the\nscheduler's verbosity.", style: prose,
			want: "LogLevel is the scheduler's verbosity."},
		{name: "paragraphs kept", description: "One.\n\nTwo.", style: prose, want: "One.\n\nTwo."},
		{name: "paragraphs in a table cell", description: "One.\n\nTwo.", style: tableCell, want: "One.<br><br>Two."},
		{name: "list items keep their lines", description: "Either:\n- one\n- two", style: tableCell,
			want: "Either:<br>- one<br>- two"},
		{name: "pipes, angle brackets and stars escaped", description: "a|b <key,value> NAME-scheduler*", style: tableCell,
			want: `a\|b &lt;key,value&gt; NAME-scheduler\*`},
		{name: "code spans kept as they are", description: "`metadata.labels['<KEY>']` or <KEY>", style: prose,
			want: "`metadata.labels['<KEY>']` or &lt;KEY&gt;"},
		{name: "pipes escaped in a code span of a table cell", description: "`a || b`", style: tableCell,
			want: "`a \\|\\| b`"},
		{name: "pipes kept in a code span of prose", description: "`a || b`", style: prose, want: "`a || b`"},
		{name: "an unpaired backtick opens no span", description: "it`s", style: prose, want: "it\\`s"},
		{name: "empty", description: "", style: tableCell, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := markdown(tt.description, tt.style); got != tt.want {
				t.Errorf("markdown = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestFieldNames(t *testing.T) {
	props := func(names ...string) *apiextensionsv1.JSONSchemaProps {
		s := &apiextensionsv1.JSONSchemaProps{Properties: map[string]apiextensionsv1.JSONSchemaProps{}}
		for _, name := range names {
			s.Properties[name] = apiextensionsv1.JSONSchemaProps{Type: "string"}
		}
		return s
	}
	tests := []struct {
		name     string
		schema   *apiextensionsv1.JSONSchemaProps
		topLevel bool
		want     []string
	}{
		{name: "sorted", schema: props("zeta", "alpha", "mode"), want: []string{"alpha", "mode", "zeta"}},
		{name: "spec before status at the top", schema: props("status", "spec", "kind", "apiVersion", "metadata", "zzz"),
			topLevel: true, want: []string{"apiVersion", "kind", "metadata", "zzz", "spec", "status"}},
		{name: "spec is a field like any other below the top", schema: props("status", "spec", "zzz"),
			want: []string{"spec", "status", "zzz"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, fieldNames(tt.schema, tt.topLevel)); diff != "" {
				t.Errorf("fieldNames (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAnchorOf(t *testing.T) {
	tests := []struct{ path, want string }{
		{path: "spec", want: "spec"},
		{path: "spec.profile.targetLoadPacking", want: "spec-profile-targetloadpacking"},
		{path: "spec.extenders[].tls", want: "spec-extenders-tls"},
		{path: "status.conditions[]", want: "status-conditions"},
		{path: "spec.things.*.value", want: "spec-things-value"},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			if got := anchorOf(tt.path); got != tt.want {
				t.Errorf("anchorOf(%q) = %q, want %q", tt.path, got, tt.want)
			}
		})
	}
}

// TestPageOfTheCRD renders the real CRD: deterministic, every link to a section resolves, every field
// of spec and status is documented by its path, and the generated notice is there.
func TestPageOfTheCRD(t *testing.T) {
	data, err := os.ReadFile(crdPath)
	if err != nil {
		t.Fatal(err)
	}
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &crd); err != nil {
		t.Fatal(err)
	}
	first, err := renderPage(&crd, "../config/crd/bases/x.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		again, err := renderPage(&crd, "../config/crd/bases/x.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if string(again) != string(first) {
			t.Fatal("two renderings of the same CRD differ")
		}
	}
	page := string(first)
	if !strings.Contains(page, "Generated by `make docs` from the CRD") || !strings.Contains(page, "do not edit") {
		t.Error("the page does not say it is generated")
	}
	anchors := map[string]bool{}
	for _, match := range regexp.MustCompile(`<a id="([^"]+)"></a>`).FindAllStringSubmatch(page, -1) {
		if anchors[match[1]] {
			t.Errorf("anchor %q is not unique", match[1])
		}
		anchors[match[1]] = true
	}
	for _, match := range regexp.MustCompile(`\]\(#([^)]+)\)`).FindAllStringSubmatch(page, -1) {
		if !anchors[match[1]] {
			t.Errorf("link to #%s, which no section has", match[1])
		}
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, path := range fieldPaths("", root) {
		if !strings.HasPrefix(path, "spec") && !strings.HasPrefix(path, "status") {
			continue
		}
		if !strings.Contains(page, "| `"+path+"` |") {
			t.Errorf("field %s has no row", path)
		}
	}
	if strings.Index(page, "### `spec`") > strings.Index(page, "### `status`") {
		t.Error("status comes before spec")
	}
	row := lineWith(t, page, "| `spec.profile.targetLoadPacking.targetUtilization` |")
	for _, want := range []string{"integer (int32)", "1 ≤ value ≤ 100", "TargetUtilization is the CPU utilization"} {
		if !strings.Contains(row, want) {
			t.Errorf("the row of targetUtilization lacks %q: %s", want, row)
		}
	}
}

// TestRun writes the page where -out says, linking to the CRD relative to it.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	crd := filepath.Join(dir, "config", "crd.yaml")
	if err := os.MkdirAll(filepath.Dir(crd), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(crd, []byte(testCRD(`
spec:
  type: object
  properties:
    mode: {type: string, default: SingleReplica}
`)), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "docs", "api.md")
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := run(crd, out); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(../config/crd.yaml)", "| `spec.mode` | string |  | `SingleReplica` |  |  |"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("the page lacks %q:\n%s", want, page)
		}
	}
	if err := run(filepath.Join(dir, "missing.yaml"), out); err == nil {
		t.Error("run of a missing CRD returned no error")
	}
}

// fieldPaths are the paths of every field under s, as the page names them.
func fieldPaths(path string, s *apiextensionsv1.JSONSchemaProps) []string {
	var paths []string
	for name, field := range s.Properties {
		fieldPath := joinPath(path, name)
		paths = append(paths, fieldPath)
		paths = append(paths, fieldPaths(fieldPath, &field)...)
	}
	if s.Items != nil && s.Items.Schema != nil {
		paths = append(paths, fieldPaths(path+"[]", s.Items.Schema)...)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		paths = append(paths, fieldPaths(path+".*", s.AdditionalProperties.Schema)...)
	}
	return paths
}

// testCRD is a CRD of kind Thing whose schema has the properties given as YAML.
func testCRD(properties string) string {
	indented := strings.ReplaceAll(strings.TrimPrefix(properties, "\n"), "\n", "\n          ")
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  group: example.com
  names: {kind: Thing, plural: things, listKind: ThingList, singular: thing}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          ` + indented + `
`
}

// renderTestCRD renders the page of a testCRD.
func renderTestCRD(t *testing.T, properties string) string {
	t.Helper()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict([]byte(testCRD(properties)), &crd); err != nil {
		t.Fatal(err)
	}
	page, err := renderPage(&crd, "crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return string(page)
}

// lineWith is the line of page that contains text.
func lineWith(t *testing.T, page, text string) string {
	t.Helper()
	for _, line := range strings.Split(page, "\n") {
		if strings.Contains(line, text) {
			return line
		}
	}
	t.Fatalf("no line has %q", text)
	return ""
}
