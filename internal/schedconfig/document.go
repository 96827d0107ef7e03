package schedconfig

import (
	"bytes"
	"errors"
	"io"

	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// firstDocument parses the YAML of config.yaml into a node tree with the parser the
// operator later edits it with (kyaml), and refuses anchors and aliases. The node tree
// holds an alias as one node pointing at its anchor, so parsing costs memory in
// proportion to the text, which checkSize bounds; only decoding into values expands
// aliases. Only the first document counts: it is the one kube-scheduler and the
// renderer read.
func firstDocument(data []byte, source string) (*yaml.Node, error) {
	var document yaml.Node
	err := yaml.NewDecoder(bytes.NewReader(data)).Decode(&document)
	if errors.Is(err, io.EOF) {
		return nil, notAMapping(source)
	}
	if err != nil {
		return nil, refusal.New(v1.ReasonConfigNotYAML, "key %s of %s is not valid YAML: %v", ConfigKey, source, err)
	}
	if node := firstAnchorOrAlias(&document); node != nil {
		return nil, refusal.New(v1.ReasonInvalidConfig,
			"key %s of %s uses a YAML anchor or alias (&name or *name, first at line %d); write the values out instead: "+
				"aliases let a small text expand into a huge configuration, and the operator cannot edit a configuration that holds them",
			ConfigKey, source, node.Line)
	}
	if len(document.Content) != 1 || document.Content[0].Kind != yaml.MappingNode {
		return nil, notAMapping(source)
	}
	return document.Content[0], nil
}

func notAMapping(source string) *refusal.Error {
	return refusal.New(v1.ReasonNotKubeSchedulerConfiguration,
		"key %s of %s must be a YAML mapping with apiVersion %s and kind %s", ConfigKey, source, schedulerconfigv1.SchemeGroupVersion, Kind)
}

// firstAnchorOrAlias walks the tree without following aliases, with a stack instead of
// recursion so that deeply nested input cannot exhaust the goroutine stack.
func firstAnchorOrAlias(root *yaml.Node) *yaml.Node {
	stack := []*yaml.Node{root}
	for len(stack) > 0 {
		node := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if node.Kind == yaml.AliasNode || node.Anchor != "" {
			return node
		}
		// Push in reverse so that the first occurrence in the text is found first.
		for i := len(node.Content) - 1; i >= 0; i-- {
			stack = append(stack, node.Content[i])
		}
	}
	return nil
}

// typeMeta reads apiVersion and kind from the top-level mapping. A null value reads as
// empty, as it would decoded into a string.
func typeMeta(mapping *yaml.Node, source string) (apiVersion, kind string, err error) {
	for i := 0; i+1 < len(mapping.Content); i += 2 {
		key, value := mapping.Content[i], mapping.Content[i+1]
		var field *string
		switch key.Value {
		case "apiVersion":
			field = &apiVersion
		case "kind":
			field = &kind
		default:
			continue
		}
		if value.Kind != yaml.ScalarNode {
			return "", "", refusal.New(v1.ReasonNotKubeSchedulerConfiguration,
				"key %s of %s has a malformed apiVersion or kind: %s at line %d must be a string", ConfigKey, source, key.Value, value.Line)
		}
		if value.ShortTag() == yaml.NodeTagNull {
			*field = ""
		} else {
			*field = value.Value
		}
	}
	return apiVersion, kind, nil
}
