// Package bindata holds the YAML assets that internal/render turns into a scheduler's
// objects. They are plain manifests a reviewer can read and diff; everything that varies
// by SecondaryScheduler is set on them in code, with kyaml, in internal/render. It also
// holds a copy of the CRD (crd/, written by make manifests), with which the offline
// renderer validates a resource as the API server would.
package bindata

import (
	"embed"
	"fmt"
)

//go:embed assets
var assets embed.FS

// Asset returns the content of the asset at path, relative to bindata/assets.
func Asset(path string) ([]byte, error) {
	data, err := assets.ReadFile("assets/" + path)
	if err != nil {
		return nil, fmt.Errorf("read embedded asset %s: %w", path, err)
	}
	return data, nil
}
