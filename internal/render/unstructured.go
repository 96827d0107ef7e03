package render

import (
	"fmt"
	"math"
	"time"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// toUnstructured converts a rendered object for server-side apply: kyaml decodes its
// nodes (RNode.Map, go.yaml.in/yaml/v3), with no text on the way, and jsonTyped gives
// each value the type Unstructured holds. That is what kyaml's MarshalJSON and
// Unstructured.UnmarshalJSON make of the object, without writing it as YAML and JSON
// text and reading both back, which was most of a rendering's garbage.
func toUnstructured(node *yaml.RNode) (*unstructured.Unstructured, error) {
	content, err := node.Map()
	if err != nil {
		return nil, fmt.Errorf("decode %s %s: %w", node.GetKind(), node.GetName(), err)
	}
	typed, err := jsonTyped(content)
	if err != nil {
		return nil, fmt.Errorf("convert %s %s: %w", node.GetKind(), node.GetName(), err)
	}
	object := &unstructured.Unstructured{Object: typed.(map[string]any)}
	// Like Unstructured.UnmarshalJSON: an object needs a kind and a valid apiVersion.
	if object.GroupVersionKind().Kind == "" {
		return nil, fmt.Errorf("convert %s %s: no kind, or apiVersion %q is not valid", node.GetKind(), node.GetName(), object.GetAPIVersion())
	}
	return object, nil
}

// jsonTyped gives a value decoded from YAML the type that JSON gives it in Unstructured:
// an integer is an int64, a float that JSON writes as an integer too, any other number a
// float64, a timestamp a string; a mapping must have string keys. It changes maps and
// slices in place, and returns value itself where it keeps its type.
func jsonTyped(value any) (any, error) {
	switch typed := value.(type) {
	case map[string]any:
		for key, item := range typed {
			item, err := jsonTyped(item)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			typed[key] = item
		}
	case []any:
		for i, item := range typed {
			item, err := jsonTyped(item)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			typed[i] = item
		}
	case string:
		if !utf8.ValidString(typed) {
			return string([]rune(typed)), nil // as encoding/json writes it
		}
	case nil, bool, int64:
	case int:
		return int64(typed), nil
	case uint64: // beyond int64: JSON's integer does not fit Unstructured's int64
		return float64(typed), nil
	case float64:
		return jsonNumber(typed)
	case time.Time: // a plain timestamp, which encoding/json writes as a string
		return typed.Format(time.RFC3339Nano), nil
	default:
		// map[any]any: a mapping with a key that is no string.
		return nil, fmt.Errorf("a %T has no JSON value", value)
	}
	return value, nil
}

// jsonNumber is a float as Unstructured reads it from JSON: encoding/json writes a
// float with no fraction below 1e21 as an integer, which is read back as an int64 when
// it fits one.
func jsonNumber(f float64) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, fmt.Errorf("%v has no JSON value", f)
	}
	if f == math.Trunc(f) && f >= math.MinInt64 && f < math.MaxInt64 {
		return int64(f), nil
	}
	return f, nil
}
