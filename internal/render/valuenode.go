package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"
)

// valueNode turns a Go value (a Kubernetes API struct, a map, a slice) into a YAML node:
// the node that yaml.Parse makes of sigs.k8s.io/yaml.Marshal's text for the value, which
// is what rendering did before, but built without writing and parsing that text. The
// value goes through JSON, so that API structs take their json field names and
// marshallers; strings, numbers and maps of strings are converted directly. A value with
// something the direct conversion does not reproduce exactly (see marshalledNode) still
// goes through the text.
func valueNode(value any) (*yaml.RNode, error) {
	node, ok, err := marshalledNode(value)
	if err != nil {
		return nil, err
	}
	if !ok {
		return valueNodeThroughText(value)
	}
	return yaml.NewRNode(node), nil
}

// valueNodeThroughText is valueNode by sigs.k8s.io/yaml's text, for the values that
// marshalledNode leaves to it.
func valueNodeThroughText(value any) (*yaml.RNode, error) {
	data, err := sigsyaml.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", value, err)
	}
	node, err := yaml.Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("parse %T as YAML: %w", value, err)
	}
	return node, nil
}

// marshalledNode builds the node of value as valueNode describes, or reports false when
// the value holds a string that is not isMarshallableDirectly, a mapping key that
// go.yaml.in/yaml/v2 may not read back, or a number that is not an integer: those
// change, or fail, on the way through JSON and YAML 1.1 text, which valueNode then takes.
// Any other type than those it converts directly goes through JSON first.
func marshalledNode(value any) (*yaml.Node, bool, error) {
	switch value := value.(type) {
	case nil:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: nullTag, Value: "null"}, true, nil
	case string:
		node, ok := marshalledString(value, false)
		return node, ok, nil
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: boolTag, Value: strconv.FormatBool(value)}, true, nil
	case int:
		return marshalledInteger(int64(value)), true, nil
	case int32:
		return marshalledInteger(int64(value)), true, nil
	case int64:
		return marshalledInteger(value), true, nil
	case json.Number:
		integer, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil {
			return nil, false, nil
		}
		return marshalledInteger(integer), true, nil
	case []string:
		if value == nil {
			return marshalledNode(nil)
		}
		return marshalledSequence(len(value), func(i int) any { return value[i] })
	case []any:
		if value == nil {
			return marshalledNode(nil)
		}
		return marshalledSequence(len(value), func(i int) any { return value[i] })
	case map[string]string:
		if value == nil {
			return marshalledNode(nil)
		}
		return marshalledMapping(value)
	case map[string]any:
		if value == nil {
			return marshalledNode(nil)
		}
		return marshalledMapping(value)
	}
	// What JSON decodes (maps, slices, strings, json.Number, bool, nil) is handled above.
	decoded, err := throughJSON(value)
	if err != nil {
		return nil, false, err
	}
	return marshalledNode(decoded)
}

// throughJSON is value as JSON decodes it back into maps, slices, strings, json.Number,
// bool and nil: what sigs.k8s.io/yaml sees of a Go value.
func throughJSON(value any) (any, error) {
	data, err := json.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", value, err)
	}
	decoder := json.NewDecoder(bytes.NewReader(data))
	decoder.UseNumber()
	var decoded any
	if err := decoder.Decode(&decoded); err != nil {
		return nil, fmt.Errorf("decode %T from its JSON: %w", value, err)
	}
	return decoded, nil
}

// marshalledString is the node of the string s as a mapping key or a value, with the
// style that sigs.k8s.io/yaml.Marshal writes it in (marshalledStyle). A plain node takes
// the tag yaml.Parse resolves its text to, as the parser does: go.yaml.in/yaml/v3 reads a
// few strings that YAML 1.1 leaves alone as other types ("<<" as a merge key, "0o-5" as an
// integer). False when s is not isMarshallableDirectly, or is a key long enough that
// go.yaml.in/yaml/v2 may not find the ':' after it in JSON (1024 characters with escapes;
// six characters at most for each byte that isMarshallableDirectly accepts).
func marshalledString(s string, isKey bool) (*yaml.Node, bool) {
	if !isMarshallableDirectly(s) || isKey && len(s) > 1022/6 {
		return nil, false
	}
	style := marshalledStyle(s)
	tag := strTag
	if style == 0 {
		tag = plainStringTagAsParsed(s)
	}
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Style: style, Value: s}, true
}

// plainStringTagAsParsed is plainTagAsParsed for the text of a string that YAML 1.1
// resolves as a string (marshalledStyle writes no other plain): a string for YAML 1.2 as
// well, but for the merge key "<<" and the octal spellings only YAML 1.2 has ("0o-5", an
// integer), which go.yaml.in/yaml/v3 alone resolves.
func plainStringTagAsParsed(text string) string {
	if text != "<<" && (!strings.Contains(text, "0") || !strings.Contains(text, "o")) {
		return strTag
	}
	return plainTagAsParsed(text)
}

// plainTagAsParsed is the tag go.yaml.in/yaml/v3's parser gives the plain scalar text.
func plainTagAsParsed(text string) string {
	if text == "<<" {
		return mergeTag
	}
	scalar := yaml.Node{Kind: yaml.ScalarNode, Value: text}
	return scalar.ShortTag()
}

// marshalledInteger is the node of an integer, as sigs.k8s.io/yaml.Marshal writes it.
func marshalledInteger(integer int64) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: intTag, Value: strconv.FormatInt(integer, 10)}
}

// marshalledSequence is the node of a sequence of length items; an empty one is written
// [] in flow style.
func marshalledSequence(length int, item func(int) any) (*yaml.Node, bool, error) {
	sequence := &yaml.Node{Kind: yaml.SequenceNode, Tag: seqTag, Content: make([]*yaml.Node, 0, length)}
	if length == 0 {
		sequence.Style = yaml.FlowStyle
	}
	for i := range length {
		node, ok, err := marshalledNode(item(i))
		if !ok || err != nil {
			return nil, ok, err
		}
		sequence.Content = append(sequence.Content, node)
	}
	return sequence, true, nil
}

// marshalledMapping is the node of a mapping, its keys in go.yaml.in/yaml/v2's order; an
// empty one is written {} in flow style.
func marshalledMapping[Value any](mapping map[string]Value) (*yaml.Node, bool, error) {
	keys := make([]string, 0, len(mapping))
	for key := range mapping {
		if !isMarshallableDirectly(key) {
			return nil, false, nil
		}
		keys = append(keys, key)
	}
	slices.SortFunc(keys, compareMarshalledKeys)
	node := &yaml.Node{Kind: yaml.MappingNode, Tag: mapTag, Content: make([]*yaml.Node, 0, 2*len(keys))}
	if len(keys) == 0 {
		node.Style = yaml.FlowStyle
	}
	for _, key := range keys {
		keyNode, ok := marshalledString(key, true)
		if !ok {
			return nil, false, nil
		}
		valueNode, ok, err := marshalledNode(mapping[key])
		if !ok || err != nil {
			return nil, ok, err
		}
		node.Content = append(node.Content, keyNode, valueNode)
	}
	return node, true, nil
}
