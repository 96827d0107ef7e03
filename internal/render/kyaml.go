package render

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/bindata"
)

// Rendering edits YAML with kyaml only: each asset is parsed once, each rendering edits a
// copy (loadAsset) and converts it once (toUnstructured). Two parts of what it renders are
// YAML text: the scheduler configuration, which kube-scheduler reads with sigs.k8s.io/yaml,
// a YAML 1.1 reader, and the Deployment's pod template, whose text is hashed
// (setPodTemplateHash). Their fields are set with setNode, setStrings and setValue, which
// write what a YAML 1.1 reader reads back as it was meant, and what earlier versions
// hashed. Every other field reaches the API server as JSON only: it is set with
// setJSONValue (typed nodes, with neither sigs.k8s.io/yaml's text nor a YAML 1.1 check of
// each string, which JSON does not need), or on the converted object (ownObject).
//
// Cost, BenchmarkRender/BinPacking: every field set with kyaml's setters and
// sigs.k8s.io/yaml took 10,750 allocations (1.5 MB) and about 3.9 times the CPU time of
// the hand-made YAML layer this replaced (2,270 allocations, 0.46 MB). As now, 3,613
// allocations (0.47 MB) and the time of that layer: 0.83 against 0.86 ms, runs of the two
// alternating on an idle 2-core machine. Of what remains, writing the pod template as
// text for its hash and the scheduler configuration as text are half the garbage.

// parsedAssets holds each bindata asset parsed once, by path (*yaml.RNode). Renderings
// run on several goroutines at once and each changes its own copy (loadAsset): what is
// stored here is never changed.
var parsedAssets sync.Map

// loadAsset returns a copy of one YAML document of bindata, parsed once and copied for
// each rendering: parsing it again on every rendering was a good part of the garbage.
func loadAsset(path string) (*yaml.RNode, error) {
	parsed, ok := parsedAssets.Load(path)
	if !ok {
		asset, err := parseAsset(path)
		if err != nil {
			return nil, err
		}
		parsed, _ = parsedAssets.LoadOrStore(path, asset)
	}
	return parsed.(*yaml.RNode).Copy(), nil
}

// parseAsset parses one YAML document of bindata. It refuses anchors and aliases: a copy
// of the document would still point into the shared one through an alias.
func parseAsset(path string) (*yaml.RNode, error) {
	data, err := bindata.Asset(path)
	if err != nil {
		return nil, err
	}
	node, err := yaml.Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("parse asset %s: %w", path, err)
	}
	if hasAnchorOrAlias(node.YNode()) {
		return nil, fmt.Errorf("asset %s uses a YAML anchor or alias, which renderings would share", path)
	}
	return node, nil
}

// hasAnchorOrAlias reports whether node or a node under it is anchored or an alias.
func hasAnchorOrAlias(node *yaml.Node) bool {
	if node.Anchor != "" || node.Kind == yaml.AliasNode {
		return true
	}
	return slices.ContainsFunc(node.Content, hasAnchorOrAlias)
}

// lookup finds the node at path, which an asset must have.
func lookup(node *yaml.RNode, path ...string) (*yaml.RNode, error) {
	found, err := node.Pipe(yaml.Lookup(path...))
	if err != nil {
		return nil, fmt.Errorf("look up %v in %s asset: %w", path, node.GetKind(), err)
	}
	if found == nil {
		return nil, fmt.Errorf("%s asset has no %v", node.GetKind(), path)
	}
	return found, nil
}

// setValue sets the field at path (the last element is the field) to a Go value, in the
// scheduler configuration or the pod template (see setJSONValue for the other fields).
func setValue(node *yaml.RNode, value any, path ...string) error {
	valueRNode, err := valueNode(value)
	if err != nil {
		return err
	}
	return setNode(node, valueRNode, path...)
}

// valueNode turns a Go value (a Kubernetes API struct, a map, a slice) into a YAML node.
// A string, an integer or a boolean is one node of kyaml's (setNode quotes a string where
// YAML 1.1 needs it). Any other value is the node of sigs.k8s.io/yaml's text for it: it
// goes through JSON, so that API structs take their json field names and marshallers, and
// each string in it is quoted where YAML 1.1 needs it.
func valueNode(value any) (*yaml.RNode, error) {
	switch value := value.(type) {
	case string:
		return yaml.NewStringRNode(value), nil
	case bool:
		return typedScalar(yaml.NodeTagBool, strconv.FormatBool(value)), nil
	case int:
		return typedScalar(yaml.NodeTagInt, strconv.Itoa(value)), nil
	case int32:
		return typedScalar(yaml.NodeTagInt, strconv.FormatInt(int64(value), 10)), nil
	case int64:
		return typedScalar(yaml.NodeTagInt, strconv.FormatInt(value, 10)), nil
	}
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

// typedScalar is a plain scalar node of tag, as kyaml parses one: the tag keeps it from
// being taken for a string.
func typedScalar(tag, value string) *yaml.RNode {
	return yaml.NewRNode(&yaml.Node{Kind: yaml.ScalarNode, Tag: tag, Value: value})
}

// setNode sets the field at path (the last element is the field) to a node, creating
// the mappings on the way; like kyaml's Pipe, a path through a null field sets nothing.
// The field keeps its style, but a string that a YAML 1.1 reader takes for another type
// ("on", "no", "1:20") is double-quoted. kyaml's field setter quotes such a string only
// in a field it adds: a field it overwrites keeps the old style, plain in the assets, and
// a scheduler named "on" had schedulerName: on in its configuration, which kube-scheduler
// read as the boolean true.
func setNode(node, value *yaml.RNode, path ...string) error {
	parentPath, field := path[:len(path)-1], path[len(path)-1]
	parent, err := node.Pipe(yaml.LookupCreate(yaml.MappingNode, parentPath...))
	if err != nil {
		return fmt.Errorf("set %v: %w", path, err)
	}
	if parent == nil {
		return nil
	}
	style := value.YNode().Style
	if existing := parent.Field(field); existing != nil && !existing.Value.IsNil() {
		style = existing.Value.YNode().Style
	}
	if style == 0 && value.IsStringValue() && isYAML11NonString(value.YNode()) {
		style = yaml.DoubleQuotedStyle
	}
	// OverrideStyle spares the setter a second YAML 1.1 check of the string; whatever
	// style it leaves is replaced below.
	set, err := parent.Pipe(yaml.FieldSetter{Name: field, Value: value, OverrideStyle: true})
	if err != nil {
		return fmt.Errorf("set %v: %w", path, err)
	}
	if set != nil {
		set.YNode().Style = style
	}
	return nil
}

// yaml11Answers remembers kyaml's answer to whether a YAML 1.1 reader takes a string for
// another type: kyaml finds out by parsing the string with a YAML 1.1 parser, which was a
// tenth of a rendering's time, and the strings a rendering sets (labels, names, images,
// flags) are mostly the same from one rendering to the next. Bounded, so that no input
// makes it grow without end: strings beyond the bound are asked anew each time.
var yaml11Answers struct {
	sync.Map
	size atomic.Int32
}

const (
	yaml11AnswersMax     = 4096
	yaml11AnswerMaxBytes = 256
)

// isYAML11NonString is kyaml's IsYaml1_1NonString, remembered (yaml11Answers).
func isYAML11NonString(node *yaml.Node) bool {
	if node.Kind != yaml.ScalarNode {
		return false
	}
	if answer, ok := yaml11Answers.Load(node.Value); ok {
		return answer.(bool)
	}
	answer := yaml.IsYaml1_1NonString(node)
	// Load first: past the bound, Add alone would count on until it wrapped round.
	if len(node.Value) <= yaml11AnswerMaxBytes && yaml11Answers.size.Load() < yaml11AnswersMax && yaml11Answers.size.Add(1) <= yaml11AnswersMax {
		yaml11Answers.Store(node.Value, answer)
	}
	return answer
}

// setStrings sets one field of the mapping at path for each entry of values, in the
// order of their keys, with setNode: kyaml's RNode.SetLabels for a mapping anywhere, which
// keeps its other fields and its style (SetLabels makes the mapping anew, in block style,
// after its siblings). Where the keys are made of letters, '.', '-' and '/' only, as the
// operator's label and annotation keys are, they sort alike in Go and in sigs.k8s.io/yaml,
// and setStrings writes what setValue writes of the map, without sigs.k8s.io/yaml's text.
func setStrings(node *yaml.RNode, values map[string]string, path ...string) error {
	for _, key := range slices.Sorted(maps.Keys(values)) {
		if err := setNode(node, yaml.NewStringRNode(values[key]), append(slices.Clip(path), key)...); err != nil {
			return err
		}
	}
	return nil
}

// setJSONValue sets the field at path (the last element is the field) to a Go value, for
// a field that reaches the API server as JSON only: anywhere but in the scheduler
// configuration and the pod template (see the top of this file). A nil value clears the
// field, as in setValue.
func setJSONValue(node *yaml.RNode, value any, path ...string) error {
	valueRNode, err := jsonNode(value)
	if err != nil {
		return err
	}
	parentPath, field := path[:len(path)-1], path[len(path)-1]
	// OverrideStyle spares the setter its YAML 1.1 check of a string, which JSON does not
	// need: the string's tag keeps it a string when it is converted.
	setter := yaml.FieldSetter{Name: field, Value: valueRNode, OverrideStyle: true}
	if err := node.PipeE(yaml.LookupCreate(yaml.MappingNode, parentPath...), setter); err != nil {
		return fmt.Errorf("set %v: %w", path, err)
	}
	return nil
}

// jsonNode is the node of a Go value as JSON has it, API structs with their json field
// names and marshallers: each scalar is tagged with the type that toUnstructured decodes
// it as, and has no style (JSON has none). Strings, and lists and maps of them, are
// converted directly; any other value through its JSON.
func jsonNode(value any) (*yaml.RNode, error) {
	switch value := value.(type) {
	case string:
		return yaml.NewRNode(stringNode(value)), nil
	case []string:
		return yaml.NewRNode(jsonValueNode(stringsAsJSON(value))), nil
	case map[string]string:
		return yaml.NewRNode(jsonValueNode(stringMapAsJSON(value))), nil
	}
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
	return yaml.NewRNode(jsonValueNode(decoded)), nil
}

// stringsAsJSON is a list of strings as encoding/json decodes it: nil for null.
func stringsAsJSON(list []string) any {
	if list == nil {
		return nil
	}
	items := make([]any, len(list))
	for i, item := range list {
		items[i] = item
	}
	return items
}

// stringMapAsJSON is a map of strings as encoding/json decodes it: nil for null.
func stringMapAsJSON(mapping map[string]string) any {
	if mapping == nil {
		return nil
	}
	object := make(map[string]any, len(mapping))
	for key, value := range mapping {
		object[key] = value
	}
	return object
}

// jsonValueNode is the node of a value as encoding/json decodes it with UseNumber.
func jsonValueNode(value any) *yaml.Node {
	switch value := value.(type) {
	case map[string]any:
		mapping := &yaml.Node{Kind: yaml.MappingNode, Tag: yaml.NodeTagMap, Content: make([]*yaml.Node, 0, 2*len(value))}
		for _, key := range slices.Sorted(maps.Keys(value)) {
			mapping.Content = append(mapping.Content, stringNode(key), jsonValueNode(value[key]))
		}
		return mapping
	case []any:
		sequence := &yaml.Node{Kind: yaml.SequenceNode, Tag: yaml.NodeTagSeq, Content: make([]*yaml.Node, 0, len(value))}
		for _, item := range value {
			sequence.Content = append(sequence.Content, jsonValueNode(item))
		}
		return sequence
	case string:
		return stringNode(value)
	case json.Number:
		// A JSON number is a YAML integer or float; tagged as YAML resolves it.
		number := &yaml.Node{Kind: yaml.ScalarNode, Value: value.String()}
		number.Tag = number.ShortTag()
		return number
	case bool:
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagBool, Value: strconv.FormatBool(value)}
	default: // nil, the only other value encoding/json decodes
		return &yaml.Node{Kind: yaml.ScalarNode, Tag: yaml.NodeTagNull, Value: "null"}
	}
}

// stringNode is the node of a string, tagged as one (kyaml's NewStringRNode).
func stringNode(s string) *yaml.Node {
	return yaml.NewStringRNode(s).YNode()
}

// renderAssets loads assets, in order, lets edit change each (nil: no change), converts
// it and labels it with labels: the operator's objects that are not a scheduler's.
func renderAssets(assets []string, labels map[string]string, edit func(asset string, node *yaml.RNode) error) ([]*unstructured.Unstructured, error) {
	objects := make([]*unstructured.Unstructured, 0, len(assets))
	for _, asset := range assets {
		node, err := loadAsset(asset)
		if err != nil {
			return nil, err
		}
		if edit != nil {
			if err := edit(asset, node); err != nil {
				return nil, fmt.Errorf("%s: %w", asset, err)
			}
		}
		object, err := toUnstructured(node)
		if err != nil {
			return nil, fmt.Errorf("convert %s: %w", asset, err)
		}
		object.SetLabels(labels)
		objects = append(objects, object)
	}
	return objects, nil
}
