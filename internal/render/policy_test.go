package render

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestAuthorityAdmissionGolden(t *testing.T) {
	objects, err := AuthorityAdmission("secondary-scheduler-operator")
	if err != nil {
		t.Fatal(err)
	}
	expectGoldenObjects(t, "admission-authority", objects)
}

func TestAuthorityParametersGolden(t *testing.T) {
	tests := []struct {
		name          string
		allowedImages []string
	}{
		{"admission-parameters-any-image", nil},
		{"admission-parameters-allowed-images", []string{"registry.k8s.io/scheduler-plugins/kube-scheduler", "registry.example.com/scheduling/",
			"registry.example.com/sched@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parameters, err := AuthorityParameters("secondary-scheduler-operator", tt.allowedImages)
			if err != nil {
				t.Fatal(err)
			}
			expectGoldenObjects(t, tt.name, []*unstructured.Unstructured{parameters})
		})
	}
}

// TestAuthorityParametersRefuseOddImages: the allowed images are joined by commas, so an
// entry that is not an image reference, a repository or a prefix (a comma would make two)
// is refused, and so is an empty one, which would allow nothing said.
func TestAuthorityParametersRefuseOddImages(t *testing.T) {
	for _, entry := range []string{"", "a,b", "x' || true || '", "registry.example.com/a b", "-flag", "image\n", `quote"d`, "/leading-slash"} {
		if _, err := AuthorityParameters("secondary-scheduler-operator", []string{entry}); err == nil {
			t.Errorf("allowed image %q was accepted", entry)
		}
	}
}

// TestImageAllowedAsThePolicy: the operator's own image check (ImageAllowed) and the
// admission policy's (imageAllowed, evaluated here with CEL) say the same of every image.
func TestImageAllowedAsThePolicy(t *testing.T) {
	env, err := cel.NewEnv(cel.Variable("variables", cel.MapType(cel.StringType, cel.ListType(cel.StringType))), cel.Variable("value", cel.StringType))
	if err != nil {
		t.Fatal(err)
	}
	ast, issues := env.Compile(imageAllowed)
	if issues.Err() != nil {
		t.Fatal(issues.Err())
	}
	program, err := env.Program(ast)
	if err != nil {
		t.Fatal(err)
	}
	digest := "@sha256:" + strings.Repeat("a", 64)
	lists := [][]string{nil, {"registry.k8s.io/scheduler-plugins/kube-scheduler", "example.com/team/", "example.com/pinned" + digest}}
	images := []string{"registry.k8s.io/scheduler-plugins/kube-scheduler:v0.35.7", "registry.k8s.io/scheduler-plugins/kube-scheduler" + digest,
		"registry.k8s.io/scheduler-plugins/kube-scheduler-evil:v1", "registry.k8s.io/scheduler-plugins/kube-scheduler", "example.com/team/scheduler:v2",
		"example.com/teamx/scheduler:v2", "example.com/pinned" + digest, "example.com/pinned@sha256:" + strings.Repeat("c", 64), "example.com/pinned:v1",
		"example.com/elsewhere:v1"}
	allowedSomewhere, refusedSomewhere := 0, 0
	for _, allowed := range lists {
		for _, image := range images {
			out, _, err := program.Eval(map[string]any{"variables": map[string]any{"allowedImages": allowed}, "value": image})
			if err != nil {
				t.Fatal(err)
			}
			policy := out.Value().(bool)
			if got := ImageAllowed(allowed, image); got != policy {
				t.Errorf("ImageAllowed(%v, %s) = %t, the policy says %t", allowed, image, got, policy)
			}
			if policy {
				allowedSomewhere++
			} else {
				refusedSomewhere++
			}
		}
	}
	if allowedSomewhere == 0 || refusedSomewhere == 0 {
		t.Errorf("the table allows %d and refuses %d: it tests one side only", allowedSomewhere, refusedSomewhere)
	}
}
