// Package csv holds the part of OLM's ClusterServiceVersion (operators.coreos.com/v1alpha1)
// that this project writes and checks. The operator-framework API module is not available
// here, so the types mirror its JSON field names and omitempty markers; decoding strictly
// into them turns a misspelled field of the hand-written base into an error.
package csv

import (
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// APIVersion and Kind identify a ClusterServiceVersion.
const (
	APIVersion = "operators.coreos.com/v1alpha1"
	Kind       = "ClusterServiceVersion"
)

// ClusterServiceVersion describes one version of an operator to OLM.
type ClusterServiceVersion struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              Spec `json:"spec"`
}

// Spec is a ClusterServiceVersion's spec. Fields without omitempty are required upstream.
type Spec struct {
	InstallStrategy           NamedInstallStrategy      `json:"install"`
	Version                   string                    `json:"version,omitempty"`
	Maturity                  string                    `json:"maturity,omitempty"`
	CustomResourceDefinitions CustomResourceDefinitions `json:"customresourcedefinitions,omitempty"`
	MinKubeVersion            string                    `json:"minKubeVersion,omitempty"`
	DisplayName               string                    `json:"displayName"`
	Description               string                    `json:"description,omitempty"`
	Keywords                  []string                  `json:"keywords,omitempty"`
	Maintainers               []Maintainer              `json:"maintainers,omitempty"`
	Provider                  AppLink                   `json:"provider,omitempty"`
	Links                     []AppLink                 `json:"links,omitempty"`
	Icon                      []Icon                    `json:"icon,omitempty"`
	InstallModes              []InstallMode             `json:"installModes,omitempty"`
	Replaces                  string                    `json:"replaces,omitempty"`
	Skips                     []string                  `json:"skips,omitempty"`
	RelatedImages             []RelatedImage            `json:"relatedImages,omitempty"`
	WebhookDefinitions        []WebhookDescription      `json:"webhookdefinitions,omitempty"`
}

// NamedInstallStrategy is how OLM installs the operator; this project uses "deployment".
type NamedInstallStrategy struct {
	StrategyName string                    `json:"strategy"`
	StrategySpec StrategyDetailsDeployment `json:"spec,omitempty"`
}

// StrategyDetailsDeployment lists the Deployments OLM creates and the RBAC of their
// ServiceAccounts.
type StrategyDetailsDeployment struct {
	DeploymentSpecs    []StrategyDeploymentSpec        `json:"deployments"`
	Permissions        []StrategyDeploymentPermissions `json:"permissions,omitempty"`
	ClusterPermissions []StrategyDeploymentPermissions `json:"clusterPermissions,omitempty"`
}

// StrategyDeploymentSpec is one Deployment OLM creates in the operator's namespace.
type StrategyDeploymentSpec struct {
	Name  string                `json:"name"`
	Spec  appsv1.DeploymentSpec `json:"spec"`
	Label map[string]string     `json:"label,omitempty"`
}

// StrategyDeploymentPermissions are rules OLM grants a ServiceAccount: in the operator's
// (and target) namespaces for permissions, cluster-wide for clusterPermissions.
type StrategyDeploymentPermissions struct {
	ServiceAccountName string              `json:"serviceAccountName"`
	Rules              []rbacv1.PolicyRule `json:"rules"`
}

// CustomResourceDefinitions lists the CRDs the operator owns and those it requires.
type CustomResourceDefinitions struct {
	Owned    []CRDDescription `json:"owned,omitempty"`
	Required []CRDDescription `json:"required,omitempty"`
}

// CRDDescription describes one version of a CRD for OLM and the console.
type CRDDescription struct {
	Name              string           `json:"name"`
	Version           string           `json:"version"`
	Kind              string           `json:"kind"`
	DisplayName       string           `json:"displayName,omitempty"`
	Description       string           `json:"description,omitempty"`
	Resources         []APIResourceRef `json:"resources,omitempty"`
	SpecDescriptors   []Descriptor     `json:"specDescriptors,omitempty"`
	StatusDescriptors []Descriptor     `json:"statusDescriptors,omitempty"`
}

// APIResourceRef names a kind of object the operator creates for a resource.
type APIResourceRef struct {
	Name    string `json:"name,omitempty"`
	Kind    string `json:"kind"`
	Version string `json:"version"`
}

// Descriptor tells the console how to show one field of a resource's spec or status.
type Descriptor struct {
	Path         string   `json:"path"`
	DisplayName  string   `json:"displayName,omitempty"`
	Description  string   `json:"description,omitempty"`
	XDescriptors []string `json:"x-descriptors,omitempty"`
}

// Maintainer is a person or group to contact about the operator.
type Maintainer struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
}

// AppLink is a named URL.
type AppLink struct {
	Name string `json:"name,omitempty"`
	URL  string `json:"url,omitempty"`
}

// Icon is an image shown for the operator.
type Icon struct {
	Data      string `json:"base64data"`
	MediaType string `json:"mediatype"`
}

// InstallMode says whether the operator supports one kind of OperatorGroup.
type InstallMode struct {
	Type      string `json:"type"`
	Supported bool   `json:"supported"`
}

// The install mode types.
const (
	InstallModeOwnNamespace    = "OwnNamespace"
	InstallModeSingleNamespace = "SingleNamespace"
	InstallModeMultiNamespace  = "MultiNamespace"
	InstallModeAllNamespaces   = "AllNamespaces"
)

// RelatedImage is an image the operator or its operands use, for mirroring.
type RelatedImage struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

// WebhookDescription is a webhook OLM installs for the operator; only its type matters here
// (a ConversionWebhook restricts the install modes).
type WebhookDescription struct {
	Type                    string   `json:"type"`
	ConversionCRDs          []string `json:"conversionCRDs,omitempty"`
	GenerateName            string   `json:"generateName"`
	DeploymentName          string   `json:"deploymentName,omitempty"`
	ContainerPort           int32    `json:"containerPort,omitempty"`
	AdmissionReviewVersions []string `json:"admissionReviewVersions"`
	SideEffects             *string  `json:"sideEffects"`
}
