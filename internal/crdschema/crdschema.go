// Package crdschema checks a CRD and objects of its kind the way the API server does: the
// CRD with apiextensions' own validation, objects with the OpenAPI schema (pattern,
// maxLength, ...) and then the CEL rules, within the API server's CEL cost limits.
package crdschema

import (
	"context"
	"fmt"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	crdvalidation "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/validation"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/schema/cel"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	"k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"sigs.k8s.io/yaml"
)

// The API server's CEL limits per rule call and per object (k8s.io/apiserver/pkg/apis/cel).
const (
	celPerCallLimit = 1_000_000
	celCostBudget   = 10_000_000
)

// Decode reads a v1 CRD from YAML, strictly, into the internal type that the API server's
// validation takes.
func Decode(data []byte) (*apiextensions.CustomResourceDefinition, error) {
	var external apiextensionsv1.CustomResourceDefinition
	if err := yaml.UnmarshalStrict(data, &external); err != nil {
		return nil, fmt.Errorf("decode the CRD: %w", err)
	}
	var crd apiextensions.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&external, &crd, nil); err != nil {
		return nil, fmt.Errorf("convert the CRD: %w", err)
	}
	return &crd, nil
}

// CreationErrors are the reasons the API server would refuse to create crd, including a
// CEL rule that does not compile or is too expensive.
func CreationErrors(crd *apiextensions.CustomResourceDefinition) []string {
	crd = crd.DeepCopy()
	// The API server records the stored versions on creation.
	for _, version := range crd.Spec.Versions {
		if version.Storage {
			crd.Status.StoredVersions = append(crd.Status.StoredVersions, version.Name)
		}
	}
	errs := crdvalidation.ValidateCustomResourceDefinition(context.Background(), crd)
	messages := make([]string, 0, len(errs))
	for _, err := range errs {
		messages = append(messages, err.Error())
	}
	return messages
}

// Validator validates objects against one CRD's schema, shared by its versions.
type Validator struct {
	schema validation.SchemaValidator
	cel    *cel.Validator
	root   *schema.Structural
}

// NewValidator builds the schema and CEL validators of crd.
func NewValidator(crd *apiextensions.CustomResourceDefinition) (*Validator, error) {
	// The internal type holds a schema shared by every version at the top.
	if crd.Spec.Validation == nil || crd.Spec.Validation.OpenAPIV3Schema == nil {
		return nil, fmt.Errorf("CRD %s has no schema", crd.Name)
	}
	props := crd.Spec.Validation.OpenAPIV3Schema
	schemaValidator, _, err := validation.NewSchemaValidator(props)
	if err != nil {
		return nil, fmt.Errorf("schema validator: %w", err)
	}
	structural, err := schema.NewStructural(props)
	if err != nil {
		return nil, fmt.Errorf("structural schema: %w", err)
	}
	return &Validator{schema: schemaValidator, cel: cel.NewValidator(structural, true, celPerCallLimit), root: structural}, nil
}

// Default applies the schema's defaults to object in place, as the API server does when
// it decodes a request, before validating it.
func (v *Validator) Default(object map[string]any) {
	structuraldefaulting.Default(object, v.root)
}

// Errors are the API server's reasons to refuse object, schema errors first.
func (v *Validator) Errors(object map[string]any) []string {
	errs := validation.ValidateCustomResource(nil, object, v.schema)
	celErrs, _ := v.cel.Validate(context.Background(), nil, v.root, object, nil, celCostBudget)
	errs = append(errs, celErrs...)
	messages := make([]string, 0, len(errs))
	for _, err := range errs {
		messages = append(messages, err.Error())
	}
	return messages
}
