package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/manifests"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/bundle"
)

// root is the repository root, relative to this package.
var root = filepath.Join("..", "..", "..")

const csvPath = "manifests/" + bundle.CSVFile

func readBundleFiles(t *testing.T) fstest.MapFS {
	t.Helper()
	files, err := bundle.ReadFiles(filepath.Join(root, bundle.Dir))
	if err != nil {
		t.Fatalf("read the bundle (make bundle writes it): %v", err)
	}
	return files
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(path)))
	if err != nil {
		t.Fatalf("%v (make catalog writes it)", err)
	}
	return data
}

// committedOptions are the images the committed catalog was generated with.
func committedOptions(t *testing.T) Options {
	t.Helper()
	documents, err := manifests.Split(readFile(t, File))
	if err != nil {
		t.Fatal(err)
	}
	var opts Options
	for _, document := range documents {
		var b Bundle
		if err := yaml.Unmarshal(document, &b); err != nil {
			t.Fatal(err)
		}
		if b.Schema == SchemaBundle {
			opts.BundleImage = b.Image
		}
	}
	for _, line := range strings.Split(string(readFile(t, DockerfilePath)), "\n") {
		if image, ok := strings.CutPrefix(line, "FROM "); ok {
			opts.OPMImage = image
		}
	}
	return opts
}

// TestCommittedCatalogIsFresh: the committed catalog is what the committed bundle
// generates, so a bundle regenerated without make catalog fails here.
func TestCommittedCatalogIsFresh(t *testing.T) {
	files, err := Generate(readBundleFiles(t), committedOptions(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{File, DockerfilePath} {
		if diff := cmp.Diff(string(readFile(t, path)), string(files[path])); diff != "" {
			t.Errorf("%s is stale; run make catalog (-committed +generated):\n%s", path, diff)
		}
	}
	if len(files) != 2 {
		t.Errorf("generated %d files, want %s and %s", len(files), File, DockerfilePath)
	}
}

func editCSV(t *testing.T, files fstest.MapFS, edit func(csv map[string]any)) {
	t.Helper()
	var object map[string]any
	if err := yaml.Unmarshal(files[csvPath].Data, &object); err != nil {
		t.Fatal(err)
	}
	edit(object)
	data, err := yaml.Marshal(object)
	if err != nil {
		t.Fatal(err)
	}
	files[csvPath] = &fstest.MapFile{Data: data}
}

// TestGenerateUpgradeEdges: the channel entry takes replaces, skips and skipRange from
// the CSV, as make bundle PREVIOUS_VERSION=... writes them.
func TestGenerateUpgradeEdges(t *testing.T) {
	files := readBundleFiles(t)
	editCSV(t, files, func(csv map[string]any) {
		spec := csv["spec"].(map[string]any)
		spec["version"] = "0.2.0"
		spec["replaces"] = bundle.CSVName("0.1.0")
		spec["skips"] = []any{bundle.CSVName("0.1.1")}
		csv["metadata"].(map[string]any)["name"] = bundle.CSVName("0.2.0")
		csv["metadata"].(map[string]any)["annotations"].(map[string]any)["olm.skipRange"] = "<0.2.0"
	})
	out, err := Generate(files, Options{BundleImage: "example.com/op-bundle:v0.2.0", OPMImage: "example.com/opm:v1"})
	if err != nil {
		t.Fatal(err)
	}
	documents, err := manifests.Split(out[File])
	if err != nil {
		t.Fatal(err)
	}
	if len(documents) != 3 {
		t.Fatalf("%d objects, want a package, a channel and a bundle", len(documents))
	}
	var channel Channel
	if err := yaml.UnmarshalStrict(documents[1], &channel); err != nil {
		t.Fatal(err)
	}
	want := []ChannelEntry{{Name: bundle.CSVName("0.2.0"), Replaces: bundle.CSVName("0.1.0"), Skips: []string{bundle.CSVName("0.1.1")}, SkipRange: "<0.2.0"}}
	if diff := cmp.Diff(want, channel.Entries); diff != "" {
		t.Errorf("channel entries (-want +got):\n%s", diff)
	}
	var b Bundle
	if err := yaml.UnmarshalStrict(documents[2], &b); err != nil {
		t.Fatal(err)
	}
	last := b.Properties[len(b.Properties)-1]
	if b.Image != "example.com/op-bundle:v0.2.0" || last.Type != PropertyPackage || !strings.Contains(string(last.Value), `"version":"0.2.0"`) {
		t.Errorf("bundle image %s, last property %s %s; want the given image and olm.package version 0.2.0", b.Image, last.Type, last.Value)
	}
	if !strings.Contains(string(out[DockerfilePath]), "FROM example.com/opm:v1\n") {
		t.Errorf("the Dockerfile does not start from the given opm image:\n%s", out[DockerfilePath])
	}
}

// TestGenerateRefuses: what would make a catalog opm refuses is an error here.
func TestGenerateRefuses(t *testing.T) {
	good := Options{BundleImage: "example.com/op-bundle:v0.1.0", OPMImage: "example.com/opm:v1"}
	tests := []struct {
		name   string
		opts   Options
		mutate func(t *testing.T, files fstest.MapFS)
		want   string
	}{
		{"an invalid bundle image", Options{BundleImage: "Example.com/Op Bundle", OPMImage: good.OPMImage}, nil, "bundle image"},
		{"no bundle image", Options{OPMImage: good.OPMImage}, nil, "bundle image"},
		{"no opm image", Options{BundleImage: good.BundleImage}, nil, "opm image"},
		{"no CSV", good, func(_ *testing.T, files fstest.MapFS) { delete(files, csvPath) }, "no ClusterServiceVersion"},
		{"a version that is not semver", good, func(t *testing.T, files fstest.MapFS) {
			editCSV(t, files, func(csv map[string]any) { csv["spec"].(map[string]any)["version"] = "one" })
		}, "spec.version"},
		{"a CRD the CSV does not own", good, func(t *testing.T, files fstest.MapFS) {
			editCSV(t, files, func(csv map[string]any) { delete(csv["spec"].(map[string]any), "customresourcedefinitions") })
		}, "not owned"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := readBundleFiles(t)
			if tt.mutate != nil {
				tt.mutate(t, files)
			}
			_, err := Generate(files, tt.opts)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one mentioning %q", err, tt.want)
			}
		})
	}
}
