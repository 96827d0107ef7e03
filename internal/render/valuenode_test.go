package render

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// valueNodeByText is how rendering made a node of a Go value before valueNode: the
// reference valueNode must match.
func valueNodeByText(value any) (*yaml.RNode, error) {
	data, err := sigsyaml.Marshal(value)
	if err != nil {
		return nil, err
	}
	return yaml.Parse(string(data))
}

// nodeShape is what of a node shows in YAML text and in kyaml's decisions: everything but
// its position in the text it was parsed from.
type nodeShape struct {
	Kind                                  yaml.Kind
	Style                                 yaml.Style
	Tag, Value, Anchor                    string
	HeadComment, LineComment, FootComment string
	Content                               []nodeShape
}

func shapeOf(node *yaml.Node) nodeShape {
	shape := nodeShape{Kind: node.Kind, Style: node.Style, Tag: node.Tag, Value: node.Value, Anchor: node.Anchor,
		HeadComment: node.HeadComment, LineComment: node.LineComment, FootComment: node.FootComment}
	for _, child := range node.Content {
		shape.Content = append(shape.Content, shapeOf(child))
	}
	return shape
}

// expectSameValueNode checks that valueNode gives the node of value that the text did, or
// fails where the text failed.
func expectSameValueNode(t *testing.T, value any) {
	t.Helper()
	if keys, ok := value.(map[string]string); ok && !isMarshalledKeyOrderTotal(slices.Collect(maps.Keys(keys))) {
		// go.yaml.in/yaml/v2's order is no order for these keys ("0123" < "1231" < "123a"
		// < "0123"): the text lists them as Go's map happens to, which nothing can match.
		return
	}
	want, wantErr := valueNodeByText(value)
	got, err := valueNode(value)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("valueNode(%#v) error %v, through the text %v", value, err, wantErr)
	}
	if err != nil {
		return
	}
	if diff := cmp.Diff(shapeOf(want.YNode()), shapeOf(got.YNode())); diff != "" {
		t.Errorf("valueNode(%#v) differs from the node of its text (-text +valueNode):\n%s", value, diff)
	}
	// As kyaml writes it in a document, which is what rendering hashes.
	wantText, wantErr := yaml.NewMapRNode(nil).Pipe(yaml.SetField("field", want))
	gotText, err := yaml.NewMapRNode(nil).Pipe(yaml.SetField("field", got))
	if err != nil || wantErr != nil {
		t.Fatalf("set field: %v, %v", err, wantErr)
	}
	if diff := cmp.Diff(wantText.MustString(), gotText.MustString()); diff != "" {
		t.Errorf("valueNode(%#v) writes differently (-text +valueNode):\n%s", value, diff)
	}
}

// isMarshalledKeyOrderTotal reports whether go.yaml.in/yaml/v2's key order sorts keys in
// one way only: it is transitive on them.
func isMarshalledKeyOrderTotal(keys []string) bool {
	for _, a := range keys {
		for _, b := range keys {
			for _, c := range keys {
				if marshalledKeyLess(a, b) && marshalledKeyLess(b, c) && !marshalledKeyLess(a, c) {
					return false
				}
			}
		}
	}
	return true
}

// lookalikeStrings are strings that YAML might read as another type, quote, fold or
// refuse.
var lookalikeStrings = []string{
	"plain", "true", "True", "yes", "Yes", "no", "on", "off", "y", "n", "null", "Null", "~", "", "123", "-5", "+5", "0", "-0", "010",
	"0x1F", "0o17", "0o-5", "0b101", "0b-101", "1_000", "1.5", ".5", "1e3", "1e400", ".inf", "-.inf", ".nan", "1:20", "1:20:30.5",
	"2001-12-14", "2001-12-14T21:59:43.10Z", "2001-12-14 21:59:43.10", "<<", "- item", "-item", "-", "---", "...", "--- x",
	"key: value", "key:value", "key:", ":x", "? x", "?x", "#comment", "a #comment", "a#b", "@at", "`tick", "'single'", `"double"`,
	"%percent", "!tag", "&anchor", "*alias", "|pipe", ">fold", "{}", "[a]", "a,b", " lead", "trail ", "  ", "multi\nline",
	"multi\nline\n", "trail\n\n", "\nlead", "sp \nbreak", "break\n space", "tab\there", "tab\n\tline", "back\\slash",
	"<script>&amp;", "registry.k8s.io/kube-scheduler:v1.35.1", "4f1f5a8e-0000-4000-8000-000000000001",
	strings.Repeat("word ", 30), strings.Repeat("x", 200), strings.Repeat("long key ", 20),
	"é", "naïve", "日本", "\U0001F600", "a\u0085b", "a\u2028b", "nb\u00a0sp", "\ufeffbom", "del\x7f", "c1\u0080", "cr\rlf",
	"nul\x00", "esc\x1b", "bad\xff", "\ufffe",
}

func TestValueNodeStrings(t *testing.T) {
	for _, s := range lookalikeStrings {
		t.Run(strings.ToValidUTF8(s, "?"), func(t *testing.T) {
			expectSameValueNode(t, s)
			expectSameValueNode(t, map[string]string{s: s, "other": s})
			expectSameValueNode(t, []string{s})
		})
	}
}

func TestValueNode(t *testing.T) {
	tests := []struct {
		name  string
		value any
		// direct says that valueNode builds the node itself, not through the text.
		direct bool
	}{
		{name: "int", value: 3, direct: true},
		{name: "negative int32", value: int32(-7), direct: true},
		{name: "int64 beyond int32", value: int64(1) << 40, direct: true},
		{name: "zero", value: 0, direct: true},
		{name: "bool", value: true, direct: true},
		{name: "nil", value: nil, direct: true},
		{name: "nil map", value: map[string]string(nil), direct: true},
		{name: "empty map", value: map[string]string{}, direct: true},
		{name: "nil list", value: []string(nil), direct: true},
		{name: "empty list", value: []string{}, direct: true},
		{name: "keys in YAML 1.1's natural order", direct: true, value: map[string]string{
			"a10": "", "a9": "", "a_b": "", "aB": "", "a-b": "", "a01": "", "a1": "", "a001": "", "a0": "", "a00": "", "b": "", "B": "", "1": "", "10": "",
			"2": "", "x10y": "", "x9z": "", "x.y": "", "x/y": "", "app.kubernetes.io/name": "", "app.kubernetes.io/instance": "",
		}},
		{name: "owner reference", direct: true, value: []metav1.OwnerReference{{APIVersion: "v1", Kind: "K", Name: "n", UID: "u",
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
		{name: "tolerations", direct: true, value: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists,
			Effect: corev1.TaintEffectNoSchedule, TolerationSeconds: ptr.To[int64](30)}}},
		{name: "quantities", direct: true, value: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			Limits:   corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")},
		}},
		{name: "weights", direct: true, value: []map[string]any{{"name": corev1.ResourceCPU, "weight": int64(2)}}},
		{name: "nested empty collections", direct: true, value: map[string]any{"m": map[string]any{}, "l": []any{}, "n": nil}},
		{name: "secret data", direct: true, value: map[string][]byte{"config.yaml": []byte("a: b\n")}},
		{name: "integral float", value: map[string]any{"f": 1.0}, direct: true},
		{name: "float", value: map[string]any{"f": 0.25}},
		{name: "large float", value: 1e21},
		{name: "uint64 beyond int64", value: uint64(1) << 63},
		{name: "json number", value: json.Number("12"), direct: true},
		// YAML 1.1's natural order compares "19" and "105" by their numbers, not their text.
		{name: "a zero inside a number", value: map[string]string{"105": "", "19": ""}, direct: true},
		{name: "key of 170 characters", value: map[string]int{strings.Repeat("k", 170): 1}, direct: true},
		{name: "key of 1023 characters", value: map[string]int{strings.Repeat("k", 1023): 1}},
		{name: "non-ASCII", value: map[string]string{"k": "é"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if keys, ok := tt.value.(map[string]string); ok && !isMarshalledKeyOrderTotal(slices.Collect(maps.Keys(keys))) {
				t.Fatal("the keys have no order to compare")
			}
			expectSameValueNode(t, tt.value)
			if _, direct, err := marshalledNode(tt.value); err != nil || direct != tt.direct {
				t.Errorf("marshalledNode(%#v) direct = %t, %v; want %t", tt.value, direct, err, tt.direct)
			}
		})
	}
}

// FuzzValueNode checks valueNode against sigs.k8s.io/yaml's text with any string, as a
// value, a key and an item.
func FuzzValueNode(f *testing.F) {
	for _, s := range lookalikeStrings {
		f.Add(s, int64(len(s)))
	}
	f.Fuzz(func(t *testing.T, s string, number int64) {
		expectSameValueNode(t, s)
		expectSameValueNode(t, map[string]any{s: number, "k": []string{s, s + "\n"}})
		expectSameValueNode(t, map[string]string{s: s, s + "1": s, s + "a": s, "0" + s: s})
	})
}

// FuzzQuotedByFieldSetter checks quotedByFieldSetter against kyaml with any string.
func FuzzQuotedByFieldSetter(f *testing.F) {
	for _, s := range lookalikeStrings {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := quotedByFieldSetter(s), yaml.IsValueNonString(s); got != want {
			t.Errorf("quotedByFieldSetter(%q) = %t, kyaml says %t", s, got, want)
		}
	})
}
