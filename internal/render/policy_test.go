package render

import (
	"testing"
)

func TestAdmissionPoliciesGolden(t *testing.T) {
	tests := []struct {
		name          string
		allowedImages []string
	}{
		{"admission-any-image", nil},
		{"admission-allowed-images", []string{"registry.k8s.io/scheduler-plugins/kube-scheduler", "registry.example.com/scheduling/",
			"registry.example.com/sched@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objects, err := AdmissionPolicies(tt.allowedImages)
			if err != nil {
				t.Fatal(err)
			}
			expectGoldenObjects(t, tt.name, objects)
		})
	}
}

// TestAdmissionPoliciesRefuseOddImages: the allowed images become CEL string literals, so
// an entry that is not an image reference, a repository or a prefix is refused before it
// could change the expression.
func TestAdmissionPoliciesRefuseOddImages(t *testing.T) {
	for _, entry := range []string{"", "x' || true || '", "registry.example.com/a b", "-flag", "image\n", `quote"d`, "/leading-slash"} {
		if _, err := AdmissionPolicies([]string{entry}); err == nil {
			t.Errorf("allowed image %q was accepted", entry)
		}
	}
}
