package render

import (
	"fmt"
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reach"
)

// The admission policy that decides who may run a scheduler (bindata/assets/admission):
// who may create or change a SecondaryScheduler, naming what, with which image. It is a
// cluster object, one for the whole cluster, not a scheduler's. The installer ships the
// policy and its binding (make manifests writes them to config/admission); the operator
// writes only their parameters, and checks that all three are as rendered here.
const (
	// AuthorityPolicyName names the ValidatingAdmissionPolicy, its binding and its
	// parameters (a ConfigMap in the operator's namespace): only holders of
	// RunSubresource may create or change a SecondaryScheduler, naming only ConfigMaps and
	// Secrets they may read, and images the admin allows.
	AuthorityPolicyName = "secondary-scheduler-operator-authority"
	// RunSubresource is the virtual subresource of secondaryschedulers whose create (for a
	// new SecondaryScheduler) and update (for a change of spec) verbs the policy asks the
	// requester's authorizer about. Nothing serves it: RBAC matches subresources exactly,
	// so only a role naming it (or a wildcard) grants it.
	RunSubresource = "run"
	// AllowedImagesKey is the key of the parameters that lists the allowed images,
	// comma-separated.
	AllowedImagesKey = "allowedImages"
)

// authorityAssets are the policies and their bindings, in the order they are applied: the
// authority policy, and the policy that lets the operator create pods in dry run only.
var authorityAssets = []string{"admission/authority-policy.yaml", "admission/authority-binding.yaml",
	"admission/dry-run-only-policy.yaml", "admission/dry-run-only-binding.yaml"}

// The assets whose content varies: the authority policy's checks, and where its binding
// reads the parameters.
const (
	authorityPolicyAsset  = "admission/authority-policy.yaml"
	authorityBindingAsset = "admission/authority-binding.yaml"
)

// allowedImageEntry is what an entry of the allowed images may hold: the characters of an
// image reference (registry, path, tag, digest), so no comma, which separates entries.
var allowedImageEntry = regexp.MustCompile(`^[a-zA-Z0-9][a-zA-Z0-9._:/@-]*$`)

// AuthorityAdmission renders the authority policy and its binding as the installer ships
// them, the binding reading its parameters in operatorNamespace, and the policy and
// binding that let the operator create pods in dry run only. Nothing in them varies by
// flag or by resource: the checks of every image and reference come from the API's types
// (internal/reach). They carry the operator's managed-by label, which the operator's cache
// selects them by.
func AuthorityAdmission(operatorNamespace string) ([]*unstructured.Unstructured, error) {
	sinks, err := reach.Sinks()
	if err != nil {
		return nil, err
	}
	return renderAssets(authorityAssets, ownLabels(), func(asset string, node *yaml.RNode) error {
		switch asset {
		case authorityBindingAsset:
			return setJSONValue(node, operatorNamespace, "spec", "paramRef", "namespace")
		case authorityPolicyAsset:
			return appendSinkChecks(node, sinks)
		}
		return nil
	})
}

// AuthorityParameters renders the authority policy's parameters, which the operator
// writes in its namespace: allowedImages are the scheduler images a cluster admin allows
// (an entry ending with '/' allows every image under it, one with '@' exactly that image,
// any other a repository with any tag or digest); none allows any.
func AuthorityParameters(operatorNamespace string, allowedImages []string) (*unstructured.Unstructured, error) {
	for _, entry := range allowedImages {
		if !allowedImageEntry.MatchString(entry) {
			return nil, fmt.Errorf("allowed scheduler image %q: want an image reference, a repository, or a prefix ending with '/'", entry)
		}
	}
	objects, err := renderAssets([]string{"admission/authority-parameters.yaml"}, ownLabels(), func(_ string, node *yaml.RNode) error {
		if err := setJSONValue(node, operatorNamespace, "metadata", "namespace"); err != nil {
			return err
		}
		return setJSONValue(node, strings.Join(allowedImages, ","), "data", AllowedImagesKey)
	})
	if err != nil {
		return nil, err
	}
	return objects[0], nil
}

// ownLabels are the labels of the cluster objects the operator checks or writes for the
// whole installation.
func ownLabels() map[string]string {
	return map[string]string{LabelManagedBy: ManagedByValue, LabelName: NameValue}
}

// A variable of the policy and a validation, as the API server's types name their fields.
type (
	policyVariable struct {
		Name       string `json:"name"`
		Expression string `json:"expression"`
	}
	policyValidation struct {
		Expression        string `json:"expression"`
		Reason            string `json:"reason"`
		MessageExpression string `json:"messageExpression"`
	}
)

// appendSinkChecks adds to the policy a variable and a validation for each place of the
// spec that brings an image or a reference into the scheduler's pod or the operator's
// reads (internal/reach), but those consented to by a label, which the operator checks.
// The variable holds the values the check rejects, so that the message can name them.
func appendSinkChecks(policy *yaml.RNode, sinks []reach.Sink) error {
	variables, err := lookup(policy, "spec", "variables")
	if err != nil {
		return err
	}
	validations, err := lookup(policy, "spec", "validations")
	if err != nil {
		return err
	}
	for _, sink := range sinks {
		acceptable, validation, ok := sinkCheck(sink)
		if !ok {
			continue
		}
		variable := policyVariable{Name: sink.VariableName(), Expression: sink.Offending(acceptable)}
		// A change that leaves the spec as it was (the finalizer's removal) names nothing new.
		validation.Expression = "!variables.specChanged || variables." + variable.Name + " == ''"
		if err := appendValue(variables, variable); err != nil {
			return err
		}
		if err := appendValue(validations, validation); err != nil {
			return err
		}
	}
	return nil
}

// imageAllowed is true when the string value is among variables.allowedImages (or that is
// empty): an entry ending with '/' allows every image under it, one with '@' exactly that
// image, any other the repository it names, with any tag or digest. ImageAllowed says the
// same in Go; TestImageAllowedAsThePolicy holds them together.
const imageAllowed = "variables.allowedImages.size() == 0 || variables.allowedImages.exists(entry, " +
	"entry.endsWith('/') ? value.startsWith(entry) : entry.contains('@') ? value == entry : " +
	"value == entry || value.startsWith(entry + ':') || value.startsWith(entry + '@'))"

// ImageAllowed is imageAllowed in Go, for the operator's own check before it renders: true
// when image is among allowed (or that is empty).
func ImageAllowed(allowed []string, image string) bool {
	if len(allowed) == 0 {
		return true
	}
	for _, entry := range allowed {
		switch {
		case strings.HasSuffix(entry, "/"):
			if strings.HasPrefix(image, entry) {
				return true
			}
		case strings.Contains(entry, "@"):
			if image == entry {
				return true
			}
		case image == entry || strings.HasPrefix(image, entry+":") || strings.HasPrefix(image, entry+"@"):
			return true
		}
	}
	return false
}

// sinkCheck is what the policy accepts at sink (a CEL expression over value) and the
// validation that says why it refuses the rest (without its expression); false for a
// place the policy does not check.
func sinkCheck(sink reach.Sink) (string, policyValidation, bool) {
	path := sink.String()
	offending := "variables." + sink.VariableName()
	resource := map[reach.Kind]string{reach.Secret: "secrets", reach.ConfigMap: "configmaps"}[sink.Kind]
	switch sink.Check {
	case reach.AllowedImage:
		hint := ""
		if path == "spec.schedulerImage" {
			hint = ", or leave schedulerImage empty for the default image"
		}
		return imageAllowed, policyValidation{Reason: "Invalid", MessageExpression: "'ImageNotAllowed: " + path + " ' + " + offending +
			" + ' is not among the images a cluster admin allows (' + variables.allowedImages.join(', ') + '); choose one of them" + hint + "'"}, true
	case reach.AuthorMayGet:
		// A message expression has no authorizer, so it cannot read the variable that
		// asks it: it names what the path holds, one name, since the place is in no list.
		return "authorizer.group('').resource('" + resource + "').namespace(object.metadata.namespace).name(value).check('get').allowed()",
			policyValidation{Reason: "Forbidden", MessageExpression: "'ReferenceNotReadable: ' + request.userInfo.username + ' may not get " + string(sink.Kind) +
				" ' + object.metadata.namespace + '/' + " + sink.Offending("false") + " + ', named by " + path +
				": a SecondaryScheduler may name only what its author may read'"}, true
	case reach.Refused:
		return "false", policyValidation{Reason: "Invalid", MessageExpression: "'ReferenceNotAllowed: " + path + " names " + string(sink.Kind) + " ' + " + offending +
			" + ': a container of the scheduler\\'s pod may not read a " + string(sink.Kind) +
			" (nothing checks that the author may read it, and the container runs code of the author\\'s choice); give the value itself'"}, true
	}
	return "", policyValidation{}, false
}
