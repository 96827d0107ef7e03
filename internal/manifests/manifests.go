// Package manifests reads the YAML the project ships (config/, bundle/): for the bundle
// generator and validator, and for tests that check it or install it as an installation
// would.
package manifests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Documents returns the non-empty YAML documents of the file at path, in order.
func Documents(path string) ([][]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	documents, err := Split(data)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return documents, nil
}

// Split returns the non-empty documents of a multi-document YAML text, in order.
func Split(data []byte) ([][]byte, error) {
	var documents [][]byte
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		document, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return documents, nil
		}
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(document)) > 0 {
			documents = append(documents, document)
		}
	}
}
