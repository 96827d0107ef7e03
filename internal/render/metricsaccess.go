package render

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/kustomize/kyaml/yaml"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// How the scheduler reaches a metrics provider that authenticates callers or serves a
// certificate of a private CA: a dedicated ServiceAccount and its bound token, and a CA
// bundle mounted into the pod.

// Annotations of the metrics token Secret, which let the operator decide whether the
// token it holds is still good without decoding it.
const (
	// TokenRenewAtAnnotation is when the token is due for renewal (RFC 3339).
	TokenRenewAtAnnotation = "operator.secondary-scheduler.io/token-renew-at"
	// TokenExpiresAtAnnotation is when the API server stops accepting the token (RFC 3339).
	TokenExpiresAtAnnotation = "operator.secondary-scheduler.io/token-expires-at"
	// TokenServiceAccountUIDAnnotation is the UID of the ServiceAccount the token belongs
	// to: a token of a deleted and recreated ServiceAccount is refused.
	TokenServiceAccountUIDAnnotation = "operator.secondary-scheduler.io/token-service-account-uid"
	// TrustedCAHashAnnotation, on the pod template, restarts the scheduler when the CA
	// bundle changes: Go reads SSL_CERT_FILE once.
	TrustedCAHashAnnotation = "operator.secondary-scheduler.io/metrics-ca-hash"
)

// DefaultMetricsClusterRole is the ClusterRole bound to the metrics ServiceAccount when the
// resource names none (the OpenShift path, where serviceAccountToken is not set): OpenShift's
// role for reading cluster metrics.
const DefaultMetricsClusterRole = "cluster-monitoring-view"

// trustedCADir is where the CA bundle is mounted in the scheduler container.
const trustedCADir = "/etc/secondary-scheduler/metrics-ca"

// TrustedCAFile is the path of the mounted CA bundle, which SSL_CERT_FILE names.
const TrustedCAFile = trustedCADir + "/ca.crt"

// MetricsServiceAccountName is the name of the ServiceAccount whose tokens the scheduler
// presents to its metrics provider.
func MetricsServiceAccountName(cr *v1.SecondaryScheduler) string {
	return cr.Name + "-scheduler-metrics"
}

// MetricsTokenSecretName is the name of the Secret holding that ServiceAccount's token.
func MetricsTokenSecretName(cr *v1.SecondaryScheduler) string {
	return cr.Name + "-scheduler-metrics-token"
}

// MetricsIdentity is the ServiceAccount the scheduler authenticates to its metrics
// provider as, and the token it currently holds.
type MetricsIdentity struct {
	// ClusterRole is bound to the ServiceAccount.
	ClusterRole string
	// Token is the current token; nil before the first one is requested.
	Token *BoundToken
}

// BoundToken is a token of the metrics ServiceAccount from the TokenRequest API.
type BoundToken struct {
	Token             string
	ServiceAccountUID string
	ExpiresAt         time.Time
	RenewAt           time.Time
	// ResourceVersion is the token Secret's, when the token was read back from it. The
	// Secret is then applied with it as a precondition, so that a token changed meanwhile
	// (revoked and overwritten, or renewed) is never written back over.
	ResourceVersion string
}

// TrustedCA is a CA bundle in a ConfigMap of the scheduler's namespace, which the
// scheduler trusts alone for its metrics provider.
type TrustedCA struct {
	ConfigMap, Key string
	// Hash identifies the bundle's content.
	Hash string
}

// IsMetricsIdentityObject reports whether object is the metrics ServiceAccount or its
// ClusterRoleBinding, which must exist before a token can be requested for it.
func IsMetricsIdentityObject(cr *v1.SecondaryScheduler, object *unstructured.Unstructured) bool {
	switch object.GetKind() {
	case "ServiceAccount":
		return object.GetName() == MetricsServiceAccountName(cr)
	case "ClusterRoleBinding":
		return object.GetName() == ClusterBindingName(cr, "metrics-token")
	}
	return false
}

// IsMetricsTokenSecret reports whether object is the Secret that keeps the metrics token.
func IsMetricsTokenSecret(cr *v1.SecondaryScheduler, object *unstructured.Unstructured) bool {
	return object.GetKind() == "Secret" && object.GetName() == MetricsTokenSecretName(cr)
}

// metricsIdentityBuilders render the identity and, once it has one, its token Secret.
func metricsIdentityBuilders(identity *MetricsIdentity) []func(*v1.SecondaryScheduler, *Result) (*yaml.RNode, error) {
	if identity == nil {
		return nil
	}
	return []func(*v1.SecondaryScheduler, *Result) (*yaml.RNode, error){
		func(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
			return metricsServiceAccount(cr, *identity)
		},
		func(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
			return metricsTokenBinding(cr, *identity)
		},
		// Rendered before a token exists too (empty), so that its name is checked with the rest.
		func(cr *v1.SecondaryScheduler, _ *Result) (*yaml.RNode, error) {
			return metricsTokenSecret(cr, ptr.Deref(identity.Token, BoundToken{}))
		},
	}
}

func metricsServiceAccount(cr *v1.SecondaryScheduler, _ MetricsIdentity) (*yaml.RNode, error) {
	return newObject("serviceaccount-metrics.yaml", MetricsServiceAccountName(cr), cr.Namespace)
}

func metricsTokenBinding(cr *v1.SecondaryScheduler, identity MetricsIdentity) (*yaml.RNode, error) {
	node, err := newObject("clusterrolebinding-metrics-token.yaml", ClusterBindingName(cr, "metrics-token"), "")
	if err != nil {
		return nil, err
	}
	if err := setJSONValue(node, identity.ClusterRole, "roleRef", "name"); err != nil {
		return nil, err
	}
	subject, err := lookup(node, "subjects", "[kind=ServiceAccount]")
	if err != nil {
		return nil, err
	}
	if err := setJSONValue(subject, MetricsServiceAccountName(cr), "name"); err != nil {
		return nil, err
	}
	return node, setJSONValue(subject, cr.Namespace, "namespace")
}

func metricsTokenSecret(cr *v1.SecondaryScheduler, token BoundToken) (*yaml.RNode, error) {
	node, err := newObject("secret-metrics-token.yaml", MetricsTokenSecretName(cr), cr.Namespace)
	if err != nil || token.Token == "" {
		return node, err
	}
	annotations := map[string]string{
		TokenRenewAtAnnotation:           token.RenewAt.UTC().Format(time.RFC3339),
		TokenExpiresAtAnnotation:         token.ExpiresAt.UTC().Format(time.RFC3339),
		TokenServiceAccountUIDAnnotation: token.ServiceAccountUID,
	}
	if err := setJSONValue(node, annotations, "metadata", "annotations"); err != nil {
		return nil, err
	}
	if token.ResourceVersion != "" {
		if err := setJSONValue(node, token.ResourceVersion, "metadata", "resourceVersion"); err != nil {
			return nil, err
		}
	}
	return node, setJSONValue(node, map[string][]byte{"token": []byte(token.Token)}, "data")
}

// ParseBoundToken reads back a token Secret that metricsTokenSecret rendered; false when
// the Secret is not one, or is incomplete.
func ParseBoundToken(secret *corev1.Secret) (*BoundToken, bool) {
	token := &BoundToken{Token: string(secret.Data["token"]), ServiceAccountUID: secret.Annotations[TokenServiceAccountUIDAnnotation],
		ResourceVersion: secret.ResourceVersion}
	var errRenew, errExpires error
	token.RenewAt, errRenew = time.Parse(time.RFC3339, secret.Annotations[TokenRenewAtAnnotation])
	token.ExpiresAt, errExpires = time.Parse(time.RFC3339, secret.Annotations[TokenExpiresAtAnnotation])
	if token.Token == "" || token.ServiceAccountUID == "" || errRenew != nil || errExpires != nil {
		return nil, false
	}
	return token, true
}

// RenewTime is when a token issued at issued and expiring at expires is renewed: at 80%
// of its lifetime, so that a failing renewal has a fifth of it left to succeed.
func RenewTime(issued, expires time.Time) time.Time {
	return issued.Add(expires.Sub(issued) * 4 / 5)
}

// mountTrustedCA mounts the CA bundle into the scheduler container and makes it the only
// roots the scheduler trusts for HTTPS (load-watcher's Prometheus client uses Go's
// system roots, which SSL_CERT_FILE replaces; the API server connection keeps its own CA).
func mountTrustedCA(deployment *yaml.RNode, ca *TrustedCA) error {
	if ca == nil {
		return nil
	}
	volume := corev1.Volume{Name: "metrics-ca", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
		LocalObjectReference: corev1.LocalObjectReference{Name: ca.ConfigMap},
		Items:                []corev1.KeyToPath{{Key: ca.Key, Path: "ca.crt"}},
	}}}
	mount := corev1.VolumeMount{Name: "metrics-ca", MountPath: trustedCADir, ReadOnly: true}
	if err := appendVolumes(deployment, []corev1.Volume{volume}, schedulerContainer, []corev1.VolumeMount{mount}); err != nil {
		return err
	}
	container, err := lookup(deployment, "spec", "template", "spec", "containers", "[name="+schedulerContainer+"]")
	if err != nil {
		return err
	}
	if err := setValue(container, []corev1.EnvVar{{Name: "SSL_CERT_FILE", Value: TrustedCAFile}}, "env"); err != nil {
		return err
	}
	return setNode(deployment, yaml.NewStringRNode(ca.Hash), "spec", "template", "metadata", "annotations", TrustedCAHashAnnotation)
}

// appendValue appends value, converted to YAML, to the sequence list.
func appendValue(list *yaml.RNode, value any) error {
	item, err := valueNode(value)
	if err != nil {
		return err
	}
	if err := list.PipeE(yaml.Append(item.YNode())); err != nil {
		return fmt.Errorf("append to %s: %w", list.GetKind(), err)
	}
	return nil
}
