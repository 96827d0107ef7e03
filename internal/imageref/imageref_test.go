package imageref

import (
	"strings"
	"testing"
)

var sha256Hex = strings.Repeat("0123456789abcdef", 4)

func TestValidate(t *testing.T) {
	tests := []struct {
		name  string
		image string
		// wantError is a part of the error text; empty means the reference is valid.
		wantError string
	}{
		{"scheduler-plugins release", "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7", ""},
		{"digest", "quay.io/x/y@sha256:" + sha256Hex, ""},
		{"tag and digest", "quay.io/x/y:v1@sha256:" + sha256Hex, ""},
		{"registry with port", "localhost:5000/a/b:tag", ""},
		{"IPv6 registry", "[::1]:5000/a/b", ""},
		{"familiar name", "busybox", ""},
		{"familiar name with tag", "busybox:1.36", ""},
		{"separators", "example.com/a.b/c__d/e---f:1_2.3-4", ""},
		{"upper-case registry", "Example.com/a/b", ""},
		{"empty", "", "image reference is empty"},
		{"upper case", "registry.k8s.io/Scheduler:v1", "repository name (Scheduler) must be lowercase"},
		{"upper-case familiar name", "BusyBox", "must be lowercase"},
		{"space", "busy box", `character ' ' at offset 4 is not allowed`},
		{"trailing newline", "busybox\n", `character '\n' at offset 7`},
		{"unicode", "büsybox", `character 'ü' at offset 1`},
		{"two tags", "busybox:tag:tag", `"busybox:tag:tag" has more than one ':'`},
		{"two tags with registry", "quay.io/x/y:tag:tag", `"y:tag:tag" has more than one ':'`},
		{"short digest", "quay.io/x/y@sha256:abc", `has 3 hex digits; it needs at least 32`},
		{"digest without hex", "quay.io/x/y@sha256:" + strings.Repeat("z", 64), "must hold only hex digits"},
		{"digest without algorithm", "quay.io/x/y@" + sha256Hex, "must be an algorithm, ':' and hex digits"},
		{"digest of the wrong length", "quay.io/x/y@sha256:" + sha256Hex[:40], "invalid checksum digest length"},
		{"two digests", "quay.io/x/y@sha256:" + sha256Hex + "@sha256:" + sha256Hex, "more than one '@'"},
		{"only a digest", "@sha256:" + sha256Hex, "the repository name before '@' is empty"},
		{"image ID", sha256Hex, "cannot specify 64-byte hexadecimal strings"},
		{"leading dash", "-busybox", `repository path component "-busybox" must be lowercase letters and digits`},
		{"leading dash in path", "quay.io/-x/y", `repository path component "-x"`},
		{"trailing dot", "quay.io/x./y", `repository path component "x."`},
		{"double slash", "quay.io/x//y", "the repository path has an empty component"},
		{"trailing slash", "quay.io/x/", "the repository path has an empty component"},
		{"empty tag", "busybox:", `tag "" must be 1 to 128`},
		{"tag starting with a dot", "busybox:.v1", `tag ".v1" must be 1 to 128`},
		{"long tag", "busybox:" + strings.Repeat("a", 129), "must be 1 to 128"},
		{"bad port", "localhost:50a0/a/b", `registry "localhost:50a0" must be a host name or IP address`},
		{"300-character name", "quay.io/" + strings.Repeat("a", 300), "repository name must not be more than 255 characters"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Validate(tt.image)
			if tt.wantError == "" {
				if err != nil {
					t.Fatalf("Validate(%q) = %v, want valid", tt.image, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%q) accepted it, want an error containing %q", tt.image, tt.wantError)
			}
			if !strings.Contains(err.Error(), tt.wantError) {
				t.Errorf("Validate(%q) = %q, want it to contain %q", tt.image, err, tt.wantError)
			}
		})
	}
}

// FuzzValidate checks that no string makes Validate panic, and that every refusal is
// explained: the error quotes the reference and says more than that it is invalid.
func FuzzValidate(f *testing.F) {
	for _, seed := range []string{
		"busybox", "registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7", "localhost:5000/a/b:tag",
		"quay.io/x/y@sha256:" + sha256Hex, "a:b:c", "@", "a@b@c", "[::1]:5000/a", "[::1/a", "A/B/C",
		"quay.io/x/y@sha256:abc", "-", "a//b", strings.Repeat("a/", 200),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, image string) {
		err := Validate(image)
		if err == nil {
			if image == "" || strings.ContainsAny(image, " \t\n") {
				t.Fatalf("accepted %q", image)
			}
			return
		}
		if image != "" && !strings.Contains(err.Error(), "image reference ") {
			t.Fatalf("error %q does not name the reference %q", err, image)
		}
		if strings.HasSuffix(err.Error(), "invalid reference format") {
			t.Fatalf("no precise reason for refusing %q: %v", image, err)
		}
	})
}
