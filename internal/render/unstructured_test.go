package render

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// objectHeader makes a document an object that Unstructured accepts.
const objectHeader = "apiVersion: v1\nkind: ConfigMap\n"

// unstructuredByText is kyaml's own way to JSON, decoded by Unstructured: RNode.MarshalJSON
// writes the object as YAML text and reads it back. toUnstructured must give the same,
// but where kyaml's writer loses a null (spelledNulls).
func unstructuredByText(node *yaml.RNode) (*unstructured.Unstructured, error) {
	data, err := spelledNulls(node).MarshalJSON()
	if err != nil {
		return nil, err
	}
	object := &unstructured.Unstructured{}
	return object, object.UnmarshalJSON(data)
}

// spelledNulls is a copy of node whose empty nulls are spelled null: kyaml writes an empty
// null inside a flow collection as "", which reads back as a string.
func spelledNulls(node *yaml.RNode) *yaml.RNode {
	spelled := node.Copy()
	var spell func(*yaml.Node)
	spell = func(node *yaml.Node) {
		if node.Kind == yaml.ScalarNode && node.Value == "" && node.ShortTag() == yaml.NodeTagNull {
			node.Value = "null"
		}
		for _, child := range node.Content {
			spell(child)
		}
	}
	spell(spelled.YNode())
	return spelled
}

// expectSameUnstructured checks that toUnstructured gives what kyaml's text gives, with
// the same Go types (int64, float64, string...), or fails where the text fails; and that
// its content is as Unstructured holds decoded JSON.
func expectSameUnstructured(t *testing.T, node *yaml.RNode) {
	t.Helper()
	want, wantErr := unstructuredByText(node)
	got, err := toUnstructured(node)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("toUnstructured error %v, through the text %v", err, wantErr)
	}
	if err != nil {
		return
	}
	if diff := cmp.Diff(want.Object, got.Object); diff != "" {
		t.Errorf("toUnstructured differs from the text (-text +toUnstructured):\n%s", diff)
	}
	data, err := json.Marshal(got.Object)
	if err != nil {
		t.Fatalf("the content does not marshal as JSON: %v", err)
	}
	decoded := &unstructured.Unstructured{}
	if err := decoded.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(decoded.Object, got.Object); diff != "" {
		t.Errorf("the content is not typed as decoded JSON (-JSON +toUnstructured):\n%s", diff)
	}
}

func TestToUnstructuredMatchesText(t *testing.T) {
	tests := []struct {
		name string
		yaml string
	}{
		{name: "integers", yaml: "a: 3\nb: -5\nc: 0\nd: +7\ne: 9223372036854775807\nf: -9223372036854775808"},
		{name: "an integer beyond int64", yaml: "a: 9223372036854775808"},
		{name: "other spellings of integers", yaml: "octal: 010\nhex: 0x1F\nunderscores: 1_000\nyaml12octal: 0o17"},
		{name: "integral floats", yaml: "a: 1.0\nb: 1e3\nc: -2.0\nd: 1e20\ne: -0.0"},
		{name: "floats", yaml: "a: 2.5\nb: 1e21\nc: .5\nd: 1.7976931348623157e308\ne: 9223372036854775807.0"},
		{name: "infinity", yaml: "a: .inf"},
		{name: "not a number", yaml: "a: .nan"},
		{name: "booleans", yaml: "a: true\nb: True\nc: FALSE\nd: false"},
		{name: "YAML 1.1 booleans", yaml: "a: yes\nb: on\nc: n\nd: Off"},
		{name: "nulls", yaml: "a: null\nb: ~\nc:\nd: Null"},
		{name: "strings that look like other types",
			yaml: "a: \"true\"\nb: '123'\nc: \"null\"\nd: '~'\ne: \"2001-12-14\"\ng: \"\"\nh: '1e3'\ni: '010'\nj: \"on\""},
		{name: "timestamps", yaml: "a: 2001-12-14\nb: 2001-12-14T21:59:43.10Z\nc: 2001-12-14 21:59:43.10"},
		{name: "text", yaml: "a: plain text\nb: |\n  literal\n  block\nc: >\n  folded\n  block\nd: 'single # quoted'\ne: \"tab\\there\""},
		{name: "nested", yaml: "m:\n  l:\n  - 1\n  - x: [a, 2, true, null]\n  - [[]]\n  n: {k: {v: w}}"},
		{name: "empty collections", yaml: "m: {}\nl: []\nn: {a: {}, b: []}"},
		{name: "empty nulls in flow collections", yaml: "m: {a: , b: ~}\nl: [a, ~, {b: }]"},
		{name: "explicit tags", yaml: "a: !!str 1.5\nb: !!int \"5\"\nc: !!float 1\nd: !custom x\ne: !!binary aGVsbG8="},
		{name: "a wrong explicit tag", yaml: "a: !!int abc"},
		{name: "anchors and aliases", yaml: "base: &base {x: 1, y: [a]}\ncopy: *base"},
		{name: "a merge key", yaml: "base: &base {x: 1}\nmerged: {<<: *base, y: 2}"},
		{name: "a top-level key that is no string", yaml: "1: a\ntrue: b\n2001-12-14: c"},
		{name: "a nested key that is no string", yaml: "m: {1: a}"},
		{name: "a nested null key", yaml: "m: {~: a}"},
		{name: "a repeated key", yaml: "m: {a: 1, a: 2}"},
		{name: "a key that looks like a number, quoted", yaml: "m: {\"1\": a, 'true': b}"},
		{name: "merge key text as a value", yaml: "a: <<"},
		{name: "a sequence of mappings", yaml: "l:\n- name: a\n  value: 1\n- name: b\n  value: \"2\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, err := yaml.Parse(objectHeader + tt.yaml)
			if err != nil {
				t.Fatal(err)
			}
			expectSameUnstructured(t, node)
		})
	}
}

// TestToUnstructuredTypes pins the types that the API server's JSON gives, for the nodes
// rendering builds: a string stays a string whatever it looks like, an integer is an
// int64.
func TestToUnstructuredTypes(t *testing.T) {
	scalar := func(tag, value string, style yaml.Style) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value, Style: style}
	}
	tests := []struct {
		name  string
		value *yaml.Node
		want  any
	}{
		{name: "a string node of a boolean's text", value: yaml.NewStringRNode("true").YNode(), want: "true"},
		{name: "a string node of a YAML 1.1 boolean's text", value: yaml.NewStringRNode("on").YNode(), want: "on"},
		{name: "a string node of an integer's text", value: yaml.NewStringRNode("123").YNode(), want: "123"},
		{name: "a string node of an octal's text", value: yaml.NewStringRNode("010").YNode(), want: "010"},
		{name: "a string node of a float's text", value: yaml.NewStringRNode("1e3").YNode(), want: "1e3"},
		{name: "a string node of null's text", value: yaml.NewStringRNode("null").YNode(), want: "null"},
		{name: "an empty string node", value: yaml.NewStringRNode("").YNode(), want: ""},
		{name: "an integer", value: typedScalar(yaml.NodeTagInt, "42").YNode(), want: int64(42)},
		{name: "a negative int64", value: typedScalar(yaml.NodeTagInt, "-9223372036854775808").YNode(), want: int64(-9223372036854775808)},
		{name: "a boolean", value: typedScalar(yaml.NodeTagBool, "false").YNode(), want: false},
		{name: "an untagged plain number", value: scalar("", "42", 0), want: int64(42)},
		{name: "an untagged quoted number", value: scalar("", "42", yaml.DoubleQuotedStyle), want: "42"},
		{name: "an untagged plain YAML 1.1 boolean", value: scalar("", "yes", 0), want: "yes"},
		{name: "an integral float", value: scalar(yaml.NodeTagFloat, "2.0", 0), want: int64(2)},
		{name: "a float", value: scalar(yaml.NodeTagFloat, "0.25", 0), want: 0.25},
		{name: "a string that is not UTF-8, as JSON writes it", value: yaml.NewStringRNode("bad\xff").YNode(), want: "bad\ufffd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := yaml.MustParse(objectHeader + "data: {}\n")
			data, err := node.Pipe(yaml.Lookup("data"))
			if err != nil {
				t.Fatal(err)
			}
			data.YNode().Content = append(data.YNode().Content, scalar("", "field", 0), tt.value)
			object, err := toUnstructured(node)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(map[string]any{"field": tt.want}, object.Object["data"]); diff != "" {
				t.Errorf("converted data (-want +got):\n%s", diff)
			}
		})
	}
}

// TestJSONNode checks that what setJSONValue sets converts to the value's JSON, as the API
// server would decode it.
func TestJSONNode(t *testing.T) {
	for name, value := range map[string]any{
		"strings that look like other types": []string{"123", "on", "010", "true", "null", "", "1e3", "multi\nline"},
		"a map of strings":                   map[string]string{"b": "2", "a": "yes", "c": ""},
		"secret data":                        map[string][]byte{"config.yaml": []byte("a: b\n")},
		"numbers":                            map[string]any{"int": 3, "int64": int64(1) << 40, "float": 0.25, "integral float": 2.0, "big": uint64(1) << 63},
		"a struct": struct {
			A *bool
			B []int
		}{B: []int{1}},
		"nested nulls": map[string]any{"m": nil, "l": []any{nil}},
	} {
		t.Run(name, func(t *testing.T) {
			node := yaml.MustParse(objectHeader)
			if err := setJSONValue(node, value, "data", "field"); err != nil {
				t.Fatal(err)
			}
			object, err := toUnstructured(node)
			if err != nil {
				t.Fatal(err)
			}
			data, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"field": value}})
			if err != nil {
				t.Fatal(err)
			}
			want := &unstructured.Unstructured{}
			if err := want.UnmarshalJSON(data); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Object, object.Object); diff != "" {
				t.Errorf("converted (-JSON +got):\n%s", diff)
			}
		})
	}
}

func TestToUnstructuredNeedsAKind(t *testing.T) {
	for _, document := range []string{"apiVersion: v1\nmetadata: {name: a}\n", "apiVersion: a/b/c\nkind: K\n", "kind: 5\n"} {
		node, err := yaml.Parse(document)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := toUnstructured(node); err == nil {
			t.Errorf("toUnstructured(%q) converted an object Unstructured refuses", document)
		}
		expectSameUnstructured(t, node)
	}
}

// FuzzToUnstructured checks toUnstructured against kyaml's text with any YAML document.
func FuzzToUnstructured(f *testing.F) {
	for _, seed := range []string{"a: 1", "a: 1.0\nb: [x, {y: ~}]", "a: \"true\"\nb: 2001-12-14", "a: &x {b: 1}\nc: *x", "m: {1: a}",
		"a: !!int \"5\"", "a: |\n  text\n", "l: [a, , b]", "a: 0x10\nb: 010\nc: 1_0", "m: {A: }"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, document string) {
		node, err := yaml.Parse(objectHeader + document)
		if err != nil || node.YNode().Kind != yaml.MappingNode {
			return
		}
		expectSameUnstructured(t, node)
	})
}
