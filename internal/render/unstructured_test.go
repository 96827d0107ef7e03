package render

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// unstructuredByText is how rendering converted an object before toUnstructured: kyaml
// writes it as YAML and reads that back as JSON, which Unstructured decodes. It is the
// reference toUnstructured must match.
func unstructuredByText(node *yaml.RNode) (*unstructured.Unstructured, error) {
	data, err := node.MarshalJSON()
	if err != nil {
		return nil, err
	}
	object := &unstructured.Unstructured{}
	return object, object.UnmarshalJSON(data)
}

// expectSameUnstructured checks that toUnstructured gives what the text gave, with the
// same Go types (int64, float64, string...), or fails where the text failed.
func expectSameUnstructured(t *testing.T, node *yaml.RNode) {
	t.Helper()
	want, wantErr := unstructuredByText(node.Copy())
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
}

// objectHeader makes a document an object that Unstructured accepts.
const objectHeader = "apiVersion: v1\nkind: ConfigMap\n"

func TestToUnstructured(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		// direct says that toUnstructured converts the nodes itself, not through the text.
		direct bool
	}{
		{name: "integers become int64", direct: true, yaml: "a: 3\nb: -5\nc: 0\nd: +7\ne: 9223372036854775807\nf: -9223372036854775808"},
		{name: "an integer beyond int64 becomes float64", yaml: "a: 9223372036854775808"},
		{name: "other spellings of integers", yaml: "octal: 010\nhex: 0x1F\nunderscores: 1_000\nyaml12octal: 0o17"},
		{name: "integral floats become int64", yaml: "a: 1.0\nb: 1e3\nc: -2.0\nd: 1e20"},
		{name: "floats", yaml: "a: 2.5\nb: 1e21\nc: .5\nd: 1.7976931348623157e308"},
		{name: "infinity", yaml: "a: .inf"},
		{name: "not a number", yaml: "a: .nan"},
		{name: "booleans", direct: true, yaml: "a: true\nb: True\nc: FALSE\nd: false"},
		{name: "YAML 1.1 booleans are strings", direct: true, yaml: "a: yes\nb: on\nc: n\nd: Off"},
		{name: "nulls", direct: true, yaml: "a: null\nb: ~\nc:\nd: Null"},
		{name: "strings that look like other types", direct: true,
			yaml: "a: \"true\"\nb: '123'\nc: \"null\"\nd: '~'\ne: \"2001-12-14\"\ng: \"\"\nh: '1e3'"},
		{name: "timestamps", yaml: "a: 2001-12-14\nb: 2001-12-14T21:59:43.10Z\nc: 2001-12-14 21:59:43.10"},
		{name: "quoted timestamps", direct: true, yaml: "a: \"2001-12-14\"\nb: '2001-12-14T21:59:43.10Z'"},
		{name: "text", direct: true, yaml: "a: plain text\nb: |\n  literal\n  block\nc: >\n  folded\n  block\nd: 'single # quoted'\ne: \"tab\\there\""},
		{name: "nested", direct: true, yaml: "m:\n  l:\n  - 1\n  - x: [a, 2, true, null]\n  - [[]]\n  n: {k: {v: w}}"},
		{name: "empty collections", direct: true, yaml: "m: {}\nl: []\nn: {a: {}, b: []}"},
		{name: "empty null in a flow mapping", yaml: "m: {a: , b: ~}"},
		{name: "explicit tags", yaml: "a: !!str 1.5\nb: !!int \"5\"\nc: !!float 1\nd: !custom x\ne: !!binary aGVsbG8="},
		{name: "a wrong explicit tag", yaml: "a: !!int abc"},
		{name: "anchors and aliases", yaml: "base: &base {x: 1, y: [a]}\ncopy: *base"},
		{name: "a merge key", yaml: "base: &base {x: 1}\nmerged: {<<: *base, y: 2}"},
		{name: "a top-level key that is no string", yaml: "1: a\ntrue: b\n2001-12-14: c"},
		{name: "a nested key that is no string", yaml: "m: {1: a}"},
		{name: "a nested null key", yaml: "m: {~: a}"},
		{name: "a repeated key", yaml: "m: {a: 1, a: 2}"},
		{name: "a key that looks like a number, quoted", direct: true, yaml: "m: {\"1\": a, 'true': b}"},
		{name: "merge key text as a value", yaml: "a: <<"},
		{name: "quoted merge key text", yaml: "m: {\"<<\": a}"},
		{name: "a sequence of mappings", direct: true, yaml: "l:\n- name: a\n  value: 1\n- name: b\n  value: \"2\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, err := yaml.Parse(objectHeader + tt.yaml)
			if err != nil {
				t.Fatal(err)
			}
			if _, direct := unstructuredContent(node.YNode()); direct != tt.direct {
				t.Errorf("converted directly: %t, want %t", direct, tt.direct)
			}
			expectSameUnstructured(t, node)
		})
	}
}

// TestToUnstructuredOfBuiltNodes converts nodes the way rendering builds them rather
// than parses them: with tags and styles no parser gives, which kyaml writes differently.
func TestToUnstructuredOfBuiltNodes(t *testing.T) {
	scalar := func(tag, value string, style yaml.Style) *yaml.Node {
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value, Style: style}
	}
	tests := []struct {
		name   string
		key    *yaml.Node
		value  *yaml.Node
		flow   bool
		direct bool
	}{
		{name: "a string node that reads as a boolean", value: yaml.NewStringRNode("true").YNode(), direct: true},
		{name: "a string node that reads as null", value: yaml.NewStringRNode("").YNode(), direct: true},
		{name: "an untagged plain number", value: scalar("", "42", 0), direct: true},
		{name: "an untagged plain boolean", value: scalar("", "false", 0), direct: true},
		{name: "an untagged quoted number", value: scalar("", "42", yaml.DoubleQuotedStyle), direct: true},
		{name: "an integer given a quoted style", value: scalar(intTag, "5", yaml.DoubleQuotedStyle), direct: true},
		{name: "an integer given a literal style", value: scalar(intTag, "5", yaml.LiteralStyle), direct: true},
		{name: "a tag the value does not read as", value: scalar(intTag, "five", 0)},
		{name: "a long tag", value: scalar("tag:yaml.org,2002:str", "x", 0)},
		{name: "the non-specific tag", value: scalar("!", "5", 0)},
		{name: "a string node of the merge key text", value: yaml.NewStringRNode("<<").YNode()},
		{name: "a multi-line untagged plain scalar", value: scalar("", "a\nb", 0), direct: true},
		{name: "an untagged key that reads as a number", key: scalar("", "123", 0), value: scalar(strTag, "v", 0)},
		{name: "an untagged key that reads as a string", key: scalar("", "app.kubernetes.io/name", 0), value: scalar(strTag, "v", 0), direct: true},
		{name: "a string key that reads as a number", key: scalar(strTag, "123", 0), value: scalar(strTag, "v", 0), direct: true},
		{name: "an untagged empty key", key: scalar("", "", 0), value: scalar(strTag, "v", 0)},
		{name: "an empty null in flow", value: scalar(nullTag, "", 0), flow: true},
		{name: "an empty null in a block", value: scalar(nullTag, "", 0), direct: true},
		{name: "a string that is not UTF-8", value: scalar("", "bad\xff", 0)},
		{name: "a tagged string that is not UTF-8", value: scalar(strTag, "bad\xff", 0)},
		{name: "binary from kyaml", value: yaml.NewStringRNode("bad\xff").YNode()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, err := yaml.Parse(objectHeader + "data: {}\n")
			if err != nil {
				t.Fatal(err)
			}
			data, err := node.Pipe(yaml.Lookup("data"))
			if err != nil {
				t.Fatal(err)
			}
			if !tt.flow {
				data.YNode().Style = 0
			}
			key := tt.key
			if key == nil {
				key = scalar("", "field", 0)
			}
			data.YNode().Content = append(data.YNode().Content, key, tt.value)
			if _, direct := unstructuredContent(node.YNode()); direct != tt.direct {
				t.Errorf("converted directly: %t, want %t", direct, tt.direct)
			}
			expectSameUnstructured(t, node)
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

// FuzzToUnstructured checks toUnstructured against the text with any YAML document.
func FuzzToUnstructured(f *testing.F) {
	for _, seed := range []string{"a: 1", "a: 1.0\nb: [x, {y: ~}]", "a: \"true\"\nb: 2001-12-14", "a: &x {b: 1}\nc: *x", "m: {1: a}",
		"a: !!int \"5\"", "a: |\n  text\n", "l: [a, , b]", "a: 0x10\nb: 010\nc: 1_0"} {
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
