// Package catalog generates the operator's file-based catalog (FBC) from the generated
// bundle, as `opm render` and a hand-written channel would: one olm.package, one
// olm.channel and one olm.bundle, plus the catalog image's Dockerfile. Like the bundle,
// the output is a pure function of its inputs, so generating twice gives identical files.
package catalog

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/blang/semver/v4"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/imageref"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/bundle"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/csv"
)

// The schemas of file-based catalog objects, and the property types opm renders.
const (
	SchemaPackage      = "olm.package"
	SchemaChannel      = "olm.channel"
	SchemaBundle       = "olm.bundle"
	SchemaDeprecations = "olm.deprecations"

	PropertyPackage = "olm.package"
	PropertyGVK     = "olm.gvk"
)

// Paths of the catalog, relative to the repository root.
const (
	// Dir is the catalog's root, copied to /configs in the catalog image.
	Dir = "catalog"
	// File is our package's catalog.
	File = Dir + "/" + bundle.PackageName + "/catalog.yaml"
	// DockerfilePath is the catalog image's Dockerfile.
	DockerfilePath = "catalog.Dockerfile"
	// ConfigsLabel tells OLM where in the image the catalog lies.
	ConfigsLabel = "operators.operatorframework.io.index.configs.v1"
)

// Package is an olm.package object.
type Package struct {
	Schema         string `json:"schema"`
	Name           string `json:"name"`
	DefaultChannel string `json:"defaultChannel,omitempty"`
	Description    string `json:"description,omitempty"`
}

// Channel is an olm.channel object: an upgrade graph of bundles.
type Channel struct {
	Schema  string         `json:"schema"`
	Name    string         `json:"name"`
	Package string         `json:"package"`
	Entries []ChannelEntry `json:"entries"`
}

// ChannelEntry is one bundle of a channel and the bundles it upgrades from.
type ChannelEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

// Bundle is an olm.bundle object: a bundle image and what it provides.
type Bundle struct {
	Schema     string     `json:"schema"`
	Name       string     `json:"name"`
	Package    string     `json:"package"`
	Image      string     `json:"image"`
	Properties []Property `json:"properties,omitempty"`
}

// Property is one typed property of a bundle.
type Property struct {
	Type  string          `json:"type"`
	Value json.RawMessage `json:"value"`
}

// PackageProperty is the value of an olm.package property: the bundle's package and
// version. Release, when set, orders builds of one version.
type PackageProperty struct {
	PackageName string `json:"packageName"`
	Version     string `json:"version"`
	Release     string `json:"release,omitempty"`
}

// GVKProperty is the value of an olm.gvk property: one API the bundle provides.
type GVKProperty struct {
	Group   string `json:"group"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// Deprecations is an olm.deprecations object: messages about a package, its channels
// or its bundles.
type Deprecations struct {
	Schema  string             `json:"schema"`
	Package string             `json:"package"`
	Entries []DeprecationEntry `json:"entries"`
}

// DeprecationEntry deprecates what Reference names.
type DeprecationEntry struct {
	Reference Reference `json:"reference"`
	Message   string    `json:"message"`
}

// Reference names an object of the package: the package itself (no name), a channel or
// a bundle.
type Reference struct {
	Schema string `json:"schema"`
	Name   string `json:"name,omitempty"`
}

// Options are the inputs of Generate that do not come from the bundle.
type Options struct {
	// BundleImage is the pull spec of the bundle image built from bundle.Dockerfile.
	BundleImage string
	// OPMImage is the catalog image's base, which serves the catalog.
	OPMImage string
}

// Generate builds the catalog and its Dockerfile from the bundle in bundleFS, whose
// root holds manifests/. The result maps paths relative to the repository root to
// their content.
func Generate(bundleFS fs.FS, opts Options) (map[string][]byte, error) {
	if err := imageref.Validate(opts.BundleImage); err != nil {
		return nil, fmt.Errorf("bundle image: %w", err)
	}
	if err := imageref.Validate(opts.OPMImage); err != nil {
		return nil, fmt.Errorf("opm image: %w", err)
	}
	manifest, crds, err := readBundle(bundleFS)
	if err != nil {
		return nil, err
	}
	if _, err := semver.Parse(manifest.Spec.Version); err != nil {
		return nil, fmt.Errorf("CSV %s: spec.version %q: %w", manifest.Name, manifest.Spec.Version, err)
	}
	properties, err := bundleProperties(manifest, crds)
	if err != nil {
		return nil, err
	}
	objects := []any{
		Package{Schema: SchemaPackage, Name: bundle.PackageName, DefaultChannel: bundle.Channel},
		Channel{Schema: SchemaChannel, Name: bundle.Channel, Package: bundle.PackageName, Entries: []ChannelEntry{{
			Name:      manifest.Name,
			Replaces:  manifest.Spec.Replaces,
			Skips:     manifest.Spec.Skips,
			SkipRange: manifest.Annotations["olm.skipRange"],
		}}},
		Bundle{Schema: SchemaBundle, Name: manifest.Name, Package: bundle.PackageName, Image: opts.BundleImage, Properties: properties},
	}
	var out strings.Builder
	for i, object := range objects {
		data, err := yaml.Marshal(object)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			out.WriteString("---\n")
		}
		out.Write(data)
	}
	return map[string][]byte{File: []byte(out.String()), DockerfilePath: dockerfile(opts.OPMImage)}, nil
}

// readBundle returns the bundle's CSV and CRDs.
func readBundle(bundleFS fs.FS) (*csv.ClusterServiceVersion, []apiextensionsv1.CustomResourceDefinition, error) {
	var manifest *csv.ClusterServiceVersion
	var crds []apiextensionsv1.CustomResourceDefinition
	paths, err := fs.Glob(bundleFS, "manifests/*")
	if err != nil {
		return nil, nil, err
	}
	for _, path := range paths {
		data, err := fs.ReadFile(bundleFS, path)
		if err != nil {
			return nil, nil, err
		}
		documents, err := manifests.Split(data)
		if err != nil {
			return nil, nil, fmt.Errorf("bundle %s: %w", path, err)
		}
		for _, document := range documents {
			var kind struct {
				Kind string `json:"kind"`
			}
			if err := yaml.Unmarshal(document, &kind); err != nil {
				return nil, nil, fmt.Errorf("bundle %s: %w", path, err)
			}
			switch kind.Kind {
			case csv.Kind:
				if manifest != nil {
					return nil, nil, fmt.Errorf("bundle %s: a second ClusterServiceVersion", path)
				}
				manifest = &csv.ClusterServiceVersion{}
				if err := yaml.Unmarshal(document, manifest); err != nil {
					return nil, nil, fmt.Errorf("bundle %s: %w", path, err)
				}
			case "CustomResourceDefinition":
				var crd apiextensionsv1.CustomResourceDefinition
				if err := yaml.Unmarshal(document, &crd); err != nil {
					return nil, nil, fmt.Errorf("bundle %s: %w", path, err)
				}
				crds = append(crds, crd)
			}
		}
	}
	if manifest == nil {
		return nil, nil, fmt.Errorf("the bundle has no ClusterServiceVersion in manifests/; run make bundle")
	}
	return manifest, crds, nil
}

// bundleProperties are the properties opm render gives a registry+v1 bundle that we
// rely on: one olm.gvk per version of each CRD the bundle carries (its provided APIs),
// sorted, then olm.package.
func bundleProperties(manifest *csv.ClusterServiceVersion, crds []apiextensionsv1.CustomResourceDefinition) ([]Property, error) {
	var gvks []GVKProperty
	for _, crd := range crds {
		if !slices.ContainsFunc(manifest.Spec.CustomResourceDefinitions.Owned, func(d csv.CRDDescription) bool { return d.Name == crd.Name }) {
			return nil, fmt.Errorf("the bundle's CRD %s is not owned by CSV %s", crd.Name, manifest.Name)
		}
		for _, version := range crd.Spec.Versions {
			gvks = append(gvks, GVKProperty{Group: crd.Spec.Group, Kind: crd.Spec.Names.Kind, Version: version.Name})
		}
	}
	slices.SortFunc(gvks, func(a, b GVKProperty) int {
		return strings.Compare(a.Group+"/"+a.Kind+"/"+a.Version, b.Group+"/"+b.Kind+"/"+b.Version)
	})
	properties := make([]Property, 0, len(gvks)+1)
	for _, gvk := range gvks {
		property, err := NewProperty(PropertyGVK, gvk)
		if err != nil {
			return nil, err
		}
		properties = append(properties, property)
	}
	property, err := NewProperty(PropertyPackage, PackageProperty{PackageName: bundle.PackageName, Version: manifest.Spec.Version})
	if err != nil {
		return nil, err
	}
	return append(properties, property), nil
}

// NewProperty encodes value as a property of type kind.
func NewProperty(kind string, value any) (Property, error) {
	data, err := json.Marshal(value)
	if err != nil {
		return Property{}, fmt.Errorf("property %s: %w", kind, err)
	}
	return Property{Type: kind, Value: data}, nil
}

// dockerfile is the catalog image, as `opm generate dockerfile` writes it: opm serves
// the catalog copied to /configs, with its cache built at image build time.
func dockerfile(opmImage string) []byte {
	return []byte(`# Generated by make catalog (hack/cataloggen); do not edit.
# The base image holds /bin/opm, which serves the catalog.
FROM ` + opmImage + `

ENTRYPOINT ["/bin/opm"]
CMD ["serve", "/configs", "--cache-dir=/tmp/cache"]

COPY ` + Dir + ` /configs
RUN ["/bin/opm", "serve", "/configs", "--cache-dir=/tmp/cache", "--cache-only"]

LABEL ` + ConfigsLabel + `=/configs
`)
}

// Write replaces our package's catalog and the Dockerfile under root with files: a file
// no longer generated disappears.
func Write(root string, files map[string][]byte) error {
	if err := os.RemoveAll(filepath.Join(root, filepath.Dir(File))); err != nil {
		return err
	}
	for _, path := range slices.Sorted(maps.Keys(files)) {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(full, files[path], 0o644); err != nil {
			return fmt.Errorf("write %s: %w", path, err)
		}
	}
	return nil
}
