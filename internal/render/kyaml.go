package render

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/yaml"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/bindata"
)

// loadAsset parses one YAML document of bindata.
func loadAsset(path string) (*yaml.RNode, error) {
	data, err := bindata.Asset(path)
	if err != nil {
		return nil, err
	}
	node, err := yaml.Parse(string(data))
	if err != nil {
		return nil, fmt.Errorf("parse asset %s: %w", path, err)
	}
	return node, nil
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

// valueNode turns a Go value (a Kubernetes API struct, a map, a slice) into a YAML node.
func valueNode(value any) (*yaml.RNode, error) {
	// Through JSON, so that API structs take their json field names, then as block YAML.
	data, err := sigsyaml.Marshal(value)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", value, err)
	}
	return yaml.Parse(string(data))
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
	parent, field := path[:len(path)-1], path[len(path)-1]
	if err := node.PipeE(yaml.LookupCreate(yaml.MappingNode, parent...), yaml.SetField(field, value)); err != nil {
		return fmt.Errorf("set %v: %w", path, err)
	}
	return nil
}

// toUnstructured converts a rendered object for server-side apply.
func toUnstructured(node *yaml.RNode) (*unstructured.Unstructured, error) {
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
