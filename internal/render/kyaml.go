package render

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/bindata"
)

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
	return yaml.NewRNode(copyNodeTree(parsed.(*yaml.RNode).YNode())), nil
}

// copyNodeTree deep-copies the nodes under root, as kyaml's yaml.CopyYNode does, in two
// allocations (the nodes, the content lists) rather than one for each node and list: the
// assets are copied on every rendering. Each content list has no room beyond its length,
// so that appending to it moves it rather than overwriting the next.
func copyNodeTree(root *yaml.Node) *yaml.Node {
	nodeCount := countNodeTree(root)
	nodes := make([]yaml.Node, 0, nodeCount)
	// Every node but the root is in exactly one content list.
	contents := make([]*yaml.Node, 0, nodeCount-1)
	var copyNode func(*yaml.Node) *yaml.Node
	copyNode = func(original *yaml.Node) *yaml.Node {
		nodes = append(nodes, *original)
		node := &nodes[len(nodes)-1]
		if len(original.Content) == 0 {
			node.Content = original.Content[:0:0] // nil stays nil
			return node
		}
		start, end := len(contents), len(contents)+len(original.Content)
		contents = contents[:end]
		node.Content = contents[start:end:end]
		for i, child := range original.Content {
			node.Content[i] = copyNode(child)
		}
		return node
	}
	return copyNode(root)
}

// countNodeTree counts root and the nodes under it.
func countNodeTree(root *yaml.Node) int {
	nodes := 1
	for _, child := range root.Content {
		nodes += countNodeTree(child)
	}
	return nodes
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

// setValue sets the field at path (the last element is the field) to a Go value.
func setValue(node *yaml.RNode, value any, path ...string) error {
	valueRNode, err := valueNode(value)
	if err != nil {
		return err
	}
	return setNode(node, valueRNode, path...)
}

// setNode sets the field at path (the last element is the field) to a node, creating
// the mappings on the way.
func setNode(node, value *yaml.RNode, path ...string) error {
	parentPath, field := path[:len(path)-1], path[len(path)-1]
	parent, err := lookupOrCreateMapping(node, parentPath)
	if err == nil && parent != nil {
		// Like kyaml's Pipe, a path through a null field sets nothing.
		err = setField(parent, field, value)
	}
	if err != nil {
		return fmt.Errorf("set %v: %w", path, err)
	}
	return nil
}

// lookupOrCreateMapping finds the mapping at path, creating the missing ones, exactly as
// kyaml's yaml.LookupCreate(yaml.MappingNode, path...) does for a path of field names,
// without the filters kyaml allocates for each step (nil when the path goes through a
// null field, as there). Another path, with an index, a "[name=value]" or blanks, is left
// to kyaml.
func lookupOrCreateMapping(node *yaml.RNode, path []string) (*yaml.RNode, error) {
	if slices.ContainsFunc(path, isSpecialPathElement) {
		return node.Pipe(yaml.LookupCreate(yaml.MappingNode, path...))
	}
	current := node.YNode()
	for _, name := range path {
		if current == nil || current.Tag == yaml.NodeTagNull {
			return nil, nil
		}
		if current.Kind != yaml.MappingNode || len(current.Content)%2 != 0 {
			return nil, yaml.ErrorIfInvalid(yaml.NewRNode(current), yaml.MappingNode)
		}
		next := mappingFieldValue(current, name)
		if next == nil {
			next = &yaml.Node{Kind: yaml.MappingNode}
			current.Content = append(current.Content, &yaml.Node{Kind: yaml.ScalarNode, Value: name}, next)
		}
		current = next
	}
	return yaml.NewRNode(current), nil
}

// isSpecialPathElement reports whether kyaml's path lookup takes the path element for
// something else than the name of a field: an index, "-", "*" or "[name=value]"; or
// trims it, when it has blanks around.
func isSpecialPathElement(element string) bool {
	if element == "" || element == "-" || element == "*" || strings.TrimSpace(element) != element || yaml.IsListIndex(element) {
		return true
	}
	if digits := strings.TrimLeft(element, "+-"); digits == "" || strings.Trim(digits, "0123456789") != "" {
		return false
	}
	_, err := strconv.Atoi(element)
	return err == nil
}

// setField sets field of the mapping parent to value exactly as kyaml's yaml.SetField
// does: a tagged null clears the field, a field that exists keeps its style, a new one is
// appended, and a string that a YAML 1.1 parser would read as another type is
// double-quoted. kyaml decides the last by parsing every string it sets, which made a
// good part of the garbage of a rendering; quotedByFieldSetter mostly does without.
func setField(parent *yaml.RNode, field string, value *yaml.RNode) error {
	node := value.YNode()
	if yaml.IsYNodeString(node) && node.Style == 0 && quotedByFieldSetter(node.Value) {
		node.Style = yaml.DoubleQuotedStyle
	}
	if yaml.IsYNodeTaggedNull(node) && !value.ShouldKeep {
		if err := parent.PipeE(yaml.Clear(field)); err != nil {
			return fmt.Errorf("clear %s: %w", field, err)
		}
		return nil
	}
	if !yaml.IsMissingOrNull(parent) {
		if err := yaml.ErrorIfInvalid(parent, yaml.MappingNode); err != nil {
			return fmt.Errorf("set %s: %w", field, err)
		}
		if existing := mappingFieldValue(parent.YNode(), field); existing != nil {
			node.Style = existing.Style
			*existing = *node
			return nil
		}
	}
	parent.YNode().Content = append(parent.YNode().Content, &yaml.Node{Kind: yaml.ScalarNode, Value: field}, node)
	return nil
}

// mappingFieldValue is the value of the first field of mapping named field, nil when it
// has none.
func mappingFieldValue(mapping *yaml.Node, field string) *yaml.Node {
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		if key := mapping.Content[i]; key != nil && key.Value == field {
			return mapping.Content[i+1]
		}
	}
	return nil
}

// setName sets metadata.name, as kyaml's RNode.SetName does.
func setName(node *yaml.RNode, name string) error {
	return setNode(node, yaml.NewScalarRNode(name), yaml.MetadataField, yaml.NameField)
}

// setNamespace sets metadata.namespace, as kyaml's RNode.SetNamespace does with a
// namespace that is not empty.
func setNamespace(node *yaml.RNode, namespace string) error {
	return setNode(node, yaml.NewScalarRNode(namespace), yaml.MetadataField, yaml.NamespaceField)
}

// setLabels replaces metadata.labels, as kyaml's RNode.SetLabels does: sorted by key,
// each value a string node.
func setLabels(node *yaml.RNode, labels map[string]string) error {
	metadata, err := lookupOrCreateMapping(node, []string{yaml.MetadataField})
	if err != nil {
		return fmt.Errorf("look up metadata: %w", err)
	}
	if metadata == nil {
		return nil // kyaml does nothing either where metadata is null
	}
	if err := metadata.PipeE(yaml.Clear(yaml.LabelsField)); err != nil {
		return fmt.Errorf("clear labels: %w", err)
	}
	if len(labels) == 0 {
		return nil
	}
	labelsNode, err := lookupOrCreateMapping(metadata, []string{yaml.LabelsField})
	if err != nil || labelsNode == nil {
		return err
	}
	for _, key := range slices.Sorted(maps.Keys(labels)) {
		if err := setField(labelsNode, key, yaml.NewStringRNode(labels[key])); err != nil {
			return fmt.Errorf("set label %s: %w", key, err)
		}
	}
	return nil
}

// renderAssets loads assets, in order, labels each with labels, lets edit change it
// (nil: no change) and converts it: the operator's objects that are not a scheduler's.
func renderAssets(assets []string, labels map[string]string, edit func(asset string, node *yaml.RNode) error) ([]*unstructured.Unstructured, error) {
	objects := make([]*unstructured.Unstructured, 0, len(assets))
	for _, asset := range assets {
		node, err := loadAsset(asset)
		if err != nil {
			return nil, err
		}
		if err := setLabels(node, labels); err != nil {
			return nil, fmt.Errorf("%s: %w", asset, err)
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
		objects = append(objects, object)
	}
	return objects, nil
}
