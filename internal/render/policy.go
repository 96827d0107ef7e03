package render

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/yaml"
)

// The admission policy the operator keeps in place (bindata/assets/admission): who may
// create or change a SecondaryScheduler, naming what, with which image. It is a cluster
// object, one for the whole cluster, not a scheduler's.
const (
	// AuthorityPolicyName names the ValidatingAdmissionPolicy, and its binding, that lets
	// only holders of RunSubresource create or change a SecondaryScheduler, naming only
	// ConfigMaps and Secrets they may read, and images the admin allows.
	AuthorityPolicyName = "secondary-scheduler-operator-authority"
	// RunSubresource is the virtual subresource of secondaryschedulers whose create (for a
	// new SecondaryScheduler) and update (for a change of spec) verbs the policy asks the
	// requester's authorizer about. Nothing serves it: RBAC matches subresources exactly,
	// so only a role naming it (or a wildcard) grants it.
	RunSubresource = "run"
)

// admissionAssets are the policy and its binding, in the order they are applied.
var admissionAssets = []string{"admission/authority-policy.yaml", "admission/authority-binding.yaml"}

// allowedImageEntry is what an entry of the allowed images may hold: the characters of an
// image reference (registry, path, tag, digest). Entries become CEL string literals, and
// these characters need no escaping there.
var allowedImageEntry = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._:/@-]*$`)

// AdmissionPolicies renders the admission policy and its binding. allowedImages are the
// scheduler images a cluster admin allows (an entry ending with '/' allows every image
// under it, one with '@' exactly that image, any other a repository with any tag or
// digest); none allows any. They carry the operator's managed-by label, which the
// operator's cache selects them by.
func AdmissionPolicies(allowedImages []string) ([]*unstructured.Unstructured, error) {
	literals := make([]string, 0, len(allowedImages))
	for _, entry := range allowedImages {
		if !allowedImageEntry.MatchString(entry) {
			return nil, fmt.Errorf("allowed scheduler image %q: want an image reference, a repository, or a prefix ending with '/'", entry)
		}
		literals = append(literals, "'"+entry+"'")
	}
	return renderAssets(admissionAssets, map[string]string{LabelManagedBy: ManagedByValue, LabelName: NameValue}, func(asset string, node *yaml.RNode) error {
		if node.GetKind() != "ValidatingAdmissionPolicy" {
			return nil
		}
		allowed, err := lookup(node, "spec", "variables", "[name=allowedImages]")
		if err != nil {
			return err
		}
		return setValue(allowed, "["+strings.Join(literals, ", ")+"]", "expression")
	})
}
