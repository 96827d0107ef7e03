package render

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// toUnstructured converts a rendered object for server-side apply. kyaml's MarshalJSON
// writes the object as YAML text, reads the text back and marshals that as JSON, which
// Unstructured then decodes: that made most of a rendering's garbage. unstructuredContent
// builds the same content from the nodes directly; an object it does not handle still
// takes the text.
func toUnstructured(node *yaml.RNode) (*unstructured.Unstructured, error) {
	if content, ok := unstructuredContent(node.YNode()); ok {
		object := &unstructured.Unstructured{Object: content}
		// Decoding refuses an object without a kind; the text says why.
		if object.GroupVersionKind().Kind != "" {
			return object, nil
		}
	}
	return toUnstructuredThroughText(node)
}

// toUnstructuredThroughText is toUnstructured by way of YAML and JSON text, for the
// objects that unstructuredContent leaves to it.
func toUnstructuredThroughText(node *yaml.RNode) (*unstructured.Unstructured, error) {
	data, err := node.MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("marshal %s %s: %w", node.GetKind(), node.GetName(), err)
	}
	object := &unstructured.Unstructured{}
	if err := object.UnmarshalJSON(data); err != nil {
		return nil, fmt.Errorf("convert %s %s: %w", node.GetKind(), node.GetName(), err)
	}
	return object, nil
}

// unstructuredContent is the content of an Unstructured for the mapping node: exactly
// what kyaml's MarshalJSON and Unstructured.UnmarshalJSON make of it, where YAML text
// decodes a scalar by the tag and quotes the writer gave it and JSON turns integers into
// int64. It handles strings, nulls, booleans, decimal integers, sequences, and mappings
// with string keys; it reports false for anything else (floats, timestamps, other spellings of
// integers, explicit tags, merge keys, aliases, keys of another type or repeated, text
// that is not UTF-8), which toUnstructured leaves to the text.
func unstructuredContent(node *yaml.Node) (map[string]any, bool) {
	if node == nil || node.Kind != yaml.MappingNode {
		return nil, false
	}
	return jsonMapping(node, false)
}

// jsonValue is the JSON value of node; inFlow says whether it is written inside a
// collection in flow style.
func jsonValue(node *yaml.Node, inFlow bool) (any, bool) {
	switch node.Kind {
	case yaml.ScalarNode:
		return jsonScalar(node, inFlow)
	case yaml.MappingNode:
		return jsonMapping(node, inFlow)
	case yaml.SequenceNode:
		return jsonSequence(node, inFlow)
	default:
		return nil, false
	}
}

// jsonMapping is the JSON object of a mapping node whose keys all decode as strings.
func jsonMapping(node *yaml.Node, inFlow bool) (map[string]any, bool) {
	if !isPlainCollectionTag(node.Tag, mapTag) || len(node.Content)%2 != 0 {
		return nil, false
	}
	inFlow = inFlow || node.Style&yaml.FlowStyle != 0
	object := make(map[string]any, len(node.Content)/2)
	for i := 0; i < len(node.Content); i += 2 {
		key := node.Content[i]
		if key.Kind != yaml.ScalarNode {
			return nil, false
		}
		if tag, ok := decodedScalarTag(key); !ok || tag != strTag {
			return nil, false
		}
		if _, repeated := object[key.Value]; repeated {
			return nil, false
		}
		value, ok := jsonValue(node.Content[i+1], inFlow)
		if !ok {
			return nil, false
		}
		object[key.Value] = value
	}
	return object, true
}

// jsonSequence is the JSON array of a sequence node.
func jsonSequence(node *yaml.Node, inFlow bool) ([]any, bool) {
	if !isPlainCollectionTag(node.Tag, seqTag) {
		return nil, false
	}
	inFlow = inFlow || node.Style&yaml.FlowStyle != 0
	array := make([]any, 0, len(node.Content))
	for _, item := range node.Content {
		value, ok := jsonValue(item, inFlow)
		if !ok {
			return nil, false
		}
		array = append(array, value)
	}
	return array, true
}

// isPlainCollectionTag reports whether a collection's tag is its default one, which
// kyaml does not write.
func isPlainCollectionTag(tag, defaultTag string) bool {
	return tag == "" || tag == defaultTag
}

// jsonScalar is the JSON value of a scalar value node: a string, nil, a bool or an
// int64. An empty null inside a flow collection is written quoted, so read as a string:
// that is left to the text like everything jsonScalar does not handle.
func jsonScalar(node *yaml.Node, inFlow bool) (any, bool) {
	tag, ok := decodedScalarTag(node)
	if !ok {
		return nil, false
	}
	switch tag {
	case strTag:
		return node.Value, true
	case nullTag:
		return nil, !inFlow || node.Value != ""
	case boolTag:
		// The only booleans YAML 1.2 resolves: true, True, TRUE, false, False, FALSE.
		return node.Value[0] == 't' || node.Value[0] == 'T', true
	case intTag:
		if !isDecimalInteger(node.Value) {
			return nil, false
		}
		integer, err := strconv.ParseInt(node.Value, 10, 64)
		return integer, err == nil
	default:
		return nil, false
	}
}

// isDecimalInteger reports whether text is an integer in decimal without leading zeros,
// which go.yaml.in/yaml/v3 reads as such (it reads 010 as octal).
func isDecimalInteger(text string) bool {
	digits := strings.TrimLeft(text, "+-")
	if len(text)-len(digits) > 1 || digits == "" || digits[0] == '0' && len(digits) > 1 {
		return false
	}
	for i := 0; i < len(digits); i++ {
		if !isASCIIDigit(digits[i]) {
			return false
		}
	}
	return true
}

// decodedScalarTag is the tag with which go.yaml.in/yaml/v3 decodes the scalar node from
// the text kyaml writes for it. The writer (yaml.v3's encoder) leaves out a tag the value
// resolves to anyway, writes a string that would resolve to another type in quotes, and
// writes any other tag explicitly; the reader takes quoted text and literal blocks for
// strings and resolves plain text. False when the text holds an explicit tag, when node
// is the merge key "<<", or is not UTF-8: those are left to the text.
func decodedScalarTag(node *yaml.Node) (string, bool) {
	if node.Value == "<<" || !utf8.ValidString(node.Value) || node.Style&yaml.TaggedStyle != 0 {
		return "", false
	}
	quoted := node.Style&(yaml.SingleQuotedStyle|yaml.DoubleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0 ||
		strings.Contains(node.Value, "\n")
	switch node.Tag {
	case strTag:
		return strTag, true
	case "":
		if quoted {
			return strTag, true
		}
		return plainTagAsParsed(node.Value), true
	}
	if plainTagAsParsed(node.Value) != node.Tag {
		return "", false
	}
	if quoted {
		return strTag, true
	}
	return node.Tag, true
}
