// Package imageref checks container image references the way container runtimes parse
// them, so that a reference a kubelet could never pull is refused with a precise reason
// before a Deployment is rolled out with it.
package imageref

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/distribution/reference"
)

var (
	// pathComponent is one slash-separated component of a repository path in the
	// distribution reference grammar.
	pathComponent = regexp.MustCompile(`^[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*$`)
	tag           = anchored(reference.TagRegexp)
	domain        = anchored(reference.DomainRegexp)
	digestAlgo    = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*$`)
	hexDigits     = regexp.MustCompile(`^[0-9a-fA-F]*$`)
)

func anchored(re *regexp.Regexp) *regexp.Regexp {
	return regexp.MustCompile(`^(?:` + re.String() + `)$`)
}

// Validate reports whether image is a reference a container runtime can pull, such as
// busybox, registry.k8s.io/scheduler-plugins/kube-scheduler:v0.34.7,
// localhost:5000/a/b:tag or quay.io/x/y@sha256:<64 hex digits>. The error names the
// part of the reference that is wrong.
func Validate(image string) error {
	if image == "" {
		return errors.New("image reference is empty")
	}
	if _, err := reference.ParseNormalizedNamed(image); err != nil {
		// The library says only "invalid reference format" for most mistakes; find the
		// part at fault so the user need not guess.
		if errors.Is(err, reference.ErrReferenceInvalidFormat) {
			if detail := diagnose(image); detail != "" {
				return fmt.Errorf("image reference %q: %w: %s", image, err, detail)
			}
		}
		return fmt.Errorf("image reference %q: %w", image, err)
	}
	return nil
}

// diagnose names the first part of a reference that does not follow the grammar
// [domain[:port]/]path[:tag][@algorithm:hex], or returns "" when it finds none.
func diagnose(image string) string {
	for i, r := range image {
		if !isReferenceRune(r) {
			return fmt.Sprintf("character %q at offset %d is not allowed in an image reference", r, i)
		}
	}
	name, digest, hasDigest := strings.Cut(image, "@")
	if hasDigest {
		if detail := diagnoseDigest(digest); detail != "" {
			return detail
		}
	}
	if name == "" {
		return "the repository name before '@' is empty"
	}
	components := strings.Split(name, "/")
	last := components[len(components)-1]
	repoLast, tagValue, hasTag := strings.Cut(last, ":")
	if hasTag {
		if strings.Contains(tagValue, ":") {
			return fmt.Sprintf("%q has more than one ':'; a single ':' separates the tag from the name", last)
		}
		if !tag.MatchString(tagValue) {
			return fmt.Sprintf("tag %q must be 1 to 128 letters, digits, '_', '.' or '-', and must not start with '.' or '-'", tagValue)
		}
	}
	components[len(components)-1] = repoLast
	if len(components) > 1 && looksLikeDomain(components[0]) {
		if !domain.MatchString(components[0]) {
			return fmt.Sprintf("registry %q must be a host name or IP address, optionally followed by ':' and a port number", components[0])
		}
		components = components[1:]
	}
	for _, component := range components {
		if component == "" {
			return "the repository path has an empty component (a leading, trailing or doubled '/')"
		}
		if !pathComponent.MatchString(component) {
			return fmt.Sprintf("repository path component %q must be lowercase letters and digits, separated by '.', '_', '__' or dashes, starting and ending with a letter or digit", component)
		}
	}
	return ""
}

func diagnoseDigest(digest string) string {
	if strings.Contains(digest, "@") {
		return "the reference has more than one '@'"
	}
	algorithm, encoded, ok := strings.Cut(digest, ":")
	if !ok || !digestAlgo.MatchString(algorithm) {
		return fmt.Sprintf("digest %q must be an algorithm, ':' and hex digits, such as sha256:<64 hex digits>", digest)
	}
	if !hexDigits.MatchString(encoded) {
		return fmt.Sprintf("digest %q must hold only hex digits after %s:", digest, algorithm)
	}
	if len(encoded) < 32 {
		return fmt.Sprintf("digest %q has %d hex digits; it needs at least 32 (64 for sha256)", digest, len(encoded))
	}
	return ""
}

// looksLikeDomain applies the container runtimes' rule for whether the first component
// of a name is a registry: it contains '.' or ':', is localhost, or has upper case.
func looksLikeDomain(component string) bool {
	return component == "localhost" || strings.ContainsAny(component, ".:") || strings.ToLower(component) != component
}

func isReferenceRune(r rune) bool {
	switch {
	case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		return true
	case strings.ContainsRune("._-:/@[]", r):
		return true
	}
	return false
}
