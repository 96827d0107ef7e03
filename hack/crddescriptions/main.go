// Command crddescriptions joins the lines of each paragraph of the descriptions in CRD
// files, in place. controller-gen copies a field's Go doc comment with its line breaks,
// and `kubectl explain` prints them as they are, breaking sentences mid-line. A paragraph
// (text between blank lines) becomes one line; a line that starts a list item ("- ",
// "* ", "1. ") or is indented keeps its break. `make manifests` runs it after
// controller-gen; kyaml edits the files, so nothing else in them changes.
package main

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/kio"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

func main() {
	for _, path := range os.Args[1:] {
		if err := reflowFile(path); err != nil {
			fmt.Fprintln(os.Stderr, "crddescriptions:", err)
			os.Exit(1)
		}
	}
}

func reflowFile(path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	nodes, err := kio.FromBytes(data)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	for _, node := range nodes {
		reflowNode(node.YNode())
	}
	out, err := kio.StringAll(nodes)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if strings.HasPrefix(string(data), "---\n") && !strings.HasPrefix(out, "---\n") {
		out = "---\n" + out
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// reflowNode reflows every value of a key "description" under node.
func reflowNode(node *yaml.Node) {
	if node.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(node.Content); i += 2 {
			key, value := node.Content[i], node.Content[i+1]
			if key.Value == "description" && value.Kind == yaml.ScalarNode {
				reflowed := Reflow(value.Value)
				if reflowed != value.Value {
					value.Value = reflowed
					value.Style = 0
					if strings.Contains(reflowed, "\n") {
						value.Style = yaml.LiteralStyle
					}
				}
				continue
			}
			reflowNode(value)
		}
		return
	}
	for _, child := range node.Content {
		reflowNode(child)
	}
}

// keepsBreak matches a line that starts a list item or is indented: the line before it
// ends there.
var keepsBreak = regexp.MustCompile(`^(\s+|[-*] |\d+[.)] )`)

// Reflow joins the lines of each paragraph of text, but before a line keepsBreak matches.
func Reflow(text string) string {
	paragraphs := strings.Split(text, "\n\n")
	for i, paragraph := range paragraphs {
		lines := strings.Split(paragraph, "\n")
		var joined strings.Builder
		for j, line := range lines {
			switch {
			case j == 0:
			case keepsBreak.MatchString(line):
				joined.WriteString("\n")
			default:
				joined.WriteString(" ")
			}
			joined.WriteString(line)
		}
		paragraphs[i] = joined.String()
	}
	return strings.Join(paragraphs, "\n\n")
}
