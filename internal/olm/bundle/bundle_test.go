package bundle

import (
	"bytes"
	"path/filepath"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/olm/csv"
)

var testOptions = Options{Root: filepath.Join("..", "..", ".."), Version: "1.2.3", PreviousVersion: "1.2.2", Image: "example.com/operator:v1.2.3"}

func generateCSV(t *testing.T) (*Bundle, *csv.ClusterServiceVersion) {
	t.Helper()
	generated, err := Generate(testOptions)
	if err != nil {
		t.Fatal(err)
	}
	var out csv.ClusterServiceVersion
	if err := yaml.UnmarshalStrict(generated.Files[ManifestsDir+"/"+CSVFile], &out); err != nil {
		t.Fatal(err)
	}
	return generated, &out
}

func TestGenerateIsDeterministic(t *testing.T) {
	first, _ := generateCSV(t)
	second, _ := generateCSV(t)
	for path, data := range first.Files {
		if !bytes.Equal(data, second.Files[path]) {
			t.Errorf("%s differs between two runs", path)
		}
	}
	if len(first.Files) != len(second.Files) {
		t.Errorf("%d files, then %d", len(first.Files), len(second.Files))
	}
}

func TestVersionsAndImages(t *testing.T) {
	_, out := generateCSV(t)
	if out.Name != "secondary-scheduler-operator.v1.2.3" || out.Spec.Version != "1.2.3" || out.Spec.Replaces != "secondary-scheduler-operator.v1.2.2" {
		t.Errorf("name %q, version %q, replaces %q", out.Name, out.Spec.Version, out.Spec.Replaces)
	}
	if got := out.Annotations["olm.skipRange"]; got != "<1.2.3" {
		t.Errorf("olm.skipRange %q", got)
	}
	if _, ok := out.Annotations["createdAt"]; ok {
		t.Errorf("createdAt would change on every run")
	}
	images := make([]string, 0, len(out.Spec.RelatedImages))
	for _, image := range out.Spec.RelatedImages {
		images = append(images, image.Image)
	}
	if !slices.Contains(images, testOptions.Image) || !slices.Contains(images, "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7") {
		t.Errorf("relatedImages %v lack the operator or a default scheduler image", images)
	}
	container := out.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0]
	if container.Image != testOptions.Image {
		t.Errorf("the operator's image is %q", container.Image)
	}
}

// TestWatchNamespaceFromTargetNamespaces: OLM's target namespaces reach the operator.
func TestWatchNamespaceFromTargetNamespaces(t *testing.T) {
	_, out := generateCSV(t)
	container := out.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0]
	i := slices.IndexFunc(container.Env, func(e corev1.EnvVar) bool { return e.Name == "WATCH_NAMESPACE" })
	if i < 0 {
		t.Fatal("no WATCH_NAMESPACE")
	}
	env := container.Env[i]
	if env.Value != "" || env.ValueFrom == nil || env.ValueFrom.FieldRef == nil ||
		env.ValueFrom.FieldRef.FieldPath != "metadata.annotations['olm.targetNamespaces']" {
		t.Errorf("WATCH_NAMESPACE is %+v", env)
	}
}

// TestDescriptorsCoverTheSchema: every field of the CRD's spec and status has a
// descriptor, and no descriptor names a field that does not exist.
func TestDescriptorsCoverTheSchema(t *testing.T) {
	generated, out := generateCSV(t)
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema schemaNode `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(generated.Files[ManifestsDir+"/operator.secondary-scheduler.io_secondaryschedulers.yaml"], &crd); err != nil {
		t.Fatal(err)
	}
	root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	owned := out.Spec.CustomResourceDefinitions.Owned[0]
	for part, descriptors := range map[string][]csv.Descriptor{"spec": owned.SpecDescriptors, "status": owned.StatusDescriptors} {
		var paths, described []string
		whole := func(path string) bool {
			return slices.ContainsFunc(descriptors, func(d csv.Descriptor) bool {
				return d.Path == path && slices.ContainsFunc(d.XDescriptors, func(x string) bool { return slices.Contains(wholeObjectDescriptors, x) })
			})
		}
		root.Properties[part].paths("", &paths, whole)
		for _, d := range descriptors {
			described = append(described, d.Path)
		}
		for _, p := range paths {
			if !slices.Contains(described, p) {
				t.Errorf("%s.%s has no descriptor in %s", part, p, CSVBasePath)
			}
		}
		for _, d := range described {
			if !slices.Contains(paths, d) {
				t.Errorf("the %s descriptor %s names no field of the CRD", part, d)
			}
		}
	}
}

type schemaNode struct {
	Type       string                `json:"type"`
	Properties map[string]schemaNode `json:"properties"`
}

// paths lists the object fields under n, without descending into lists, maps, or the
// Kubernetes types the console edits whole (resource requirements, affinities, label
// selectors): their own fields need no descriptors.
func (n schemaNode) paths(prefix string, out *[]string, whole func(path string) bool) {
	for name, child := range n.Properties {
		p := name
		if prefix != "" {
			p = prefix + "." + name
		}
		*out = append(*out, p)
		if child.Type == "object" && !whole(p) {
			child.paths(p, out, whole)
		}
	}
}

// wholeObjectDescriptors are the x-descriptors of fields the console edits as one value.
var wholeObjectDescriptors = []string{
	"urn:alm:descriptor:com.tectonic.ui:resourceRequirements", "urn:alm:descriptor:com.tectonic.ui:nodeAffinity",
	"urn:alm:descriptor:com.tectonic.ui:podAffinity", "urn:alm:descriptor:com.tectonic.ui:podAntiAffinity",
	"urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Node", "urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Namespace",
	"urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Pod",
}
