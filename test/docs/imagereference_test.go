package docs

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestImageReference holds what the README says of IMG: the Makefile's split of an image
// reference (hack/image-reference.sh) keeps a registry's port and takes a tag and a
// digest apart.
func TestImageReference(t *testing.T) {
	digest := "sha256:" + strings.Repeat("a", 64)
	tests := []struct {
		image, repository, kustomize string
	}{
		{"registry.example.com:5000/team/operator:v1", "registry.example.com:5000/team/operator", "  newTag: v1"},
		{"registry.example.com:5000/team/operator@" + digest, "registry.example.com:5000/team/operator", "  digest: " + digest},
		{"registry.example.com:5000/team/operator:v1@" + digest, "registry.example.com:5000/team/operator", "  newTag: v1\n  digest: " + digest},
		{"operator", "operator", "  newTag: latest"},
	}
	script := filepath.Join("..", "..", "hack", "image-reference.sh")
	for _, tt := range tests {
		t.Run(tt.image, func(t *testing.T) {
			for mode, want := range map[string]string{"repository": tt.repository, "kustomize": tt.kustomize} {
				out, err := exec.Command("bash", script, mode, tt.image).Output()
				if err != nil {
					t.Fatalf("%s %s: %v", mode, tt.image, err)
				}
				if got := strings.TrimRight(string(out), "\n"); got != want {
					t.Errorf("%s %s = %q, want %q", mode, tt.image, got, want)
				}
			}
		})
	}
}
