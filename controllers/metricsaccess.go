package controllers

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/promdiscovery"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// OpenShift publishes its service CA, which signs thanos-querier's certificate, in a
// ConfigMap of this name in every namespace.
const (
	openShiftServiceCAConfigMap = "openshift-service-ca.crt"
	openShiftServiceCAKey       = "service-ca.crt"
)

// defaultTokenExpiration is the lifetime asked for a metrics token when the resource
// gives none (the API default also says so).
const defaultTokenExpiration = 24 * time.Hour

// metricsAccess is how the scheduler, and the operator's probe, reach the metrics provider.
type metricsAccess struct {
	// token is the bearer token of tokenSecretRef, empty for none; tokenVersion identifies
	// it without revealing it.
	token, tokenVersion string
	// auth is how the bound token of identity is requested.
	auth v1.ServiceAccountTokenAuth
	// credentials says where the token comes from, for status; never the token.
	credentials string
	// identity is the ServiceAccount whose bound token the scheduler presents, nil for
	// none; its Token is nil until the credentials step has one.
	identity *render.MetricsIdentity
	// trustedCA and caPEM are the CA bundle that verifies the provider, nil for the system roots.
	trustedCA *render.TrustedCA
	caPEM     []byte
	// insecureSkipVerify is the user's choice not to verify the provider's certificate.
	insecureSkipVerify bool
}

// bearerToken is the token the scheduler presents: the bound token of its identity, or
// the user's.
func (a *metricsAccess) bearerToken() string {
	if a.identity != nil && a.identity.Token != nil {
		return a.identity.Token.Token
	}
	return a.token
}

// gatherMetricsAccess gathers the token and CA bundle cr's scheduler uses for its metrics
// provider, watching the user's Secret and ConfigMap. endpoint is the Prometheus found,
// nil when the scheduler reads no Prometheus.
func (r *SecondarySchedulerReconciler) gatherMetricsAccess(ctx context.Context, cr *v1.SecondaryScheduler,
	endpoint *promdiscovery.Endpoint) (*metricsAccess, error) {
	access := &metricsAccess{credentials: "none"}
	owner := client.ObjectKeyFromObject(cr)
	metrics := cr.Spec.Profile.LoadMetrics()
	if metrics == nil || metrics.WatcherAddress != "" || metrics.Provider == v1.KubernetesMetricsServerProvider {
		r.SecretWatches.Reference(owner, nil)
		r.CABundleWatches.Reference(owner, nil)
		return access, nil
	}
	access.insecureSkipVerify = ptr.Deref(metrics.InsecureSkipVerify, false)
	// OpenShift's thanos-querier sits behind kube-rbac-proxy and serves a certificate of
	// the service CA: both are needed without the user asking.
	onOpenShift := endpoint != nil && endpoint.NeedsToken && metrics.Address == ""

	// The CA first: a token requested while the CA bundle is missing would go unused.
	caRef := metrics.CABundle
	if caRef == nil && onOpenShift {
		caRef = &v1.ConfigMapKeyReference{Name: openShiftServiceCAConfigMap, Key: openShiftServiceCAKey}
	}
	var err error
	if access.trustedCA, access.caPEM, err = r.trustedCA(ctx, cr, caRef); err != nil {
		return nil, err
	}
	if metrics.TokenSecretRef == nil {
		r.SecretWatches.Reference(owner, nil)
	}
	switch {
	case metrics.TokenSecretRef != nil:
		access.token, access.tokenVersion, err = r.secretToken(ctx, cr)
		access.credentials = fmt.Sprintf("Secret %s/%s, key token", cr.Namespace, metrics.TokenSecretRef.Name)
	case metrics.ServiceAccountToken != nil || onOpenShift:
		access.auth = ptr.Deref(metrics.ServiceAccountToken, v1.ServiceAccountTokenAuth{})
		access.identity, err = r.boundTokenIdentity(ctx, cr, access.auth)
		if access.identity != nil {
			access.credentials = fmt.Sprintf("bound token of ServiceAccount %s/%s (ClusterRole %s)",
				cr.Namespace, render.MetricsServiceAccountName(cr), access.identity.ClusterRole)
		}
	}
	if err != nil {
		return nil, err
	}
	return access, nil
}

// secretToken reads the bearer token of profile.metrics.tokenSecretRef, watching the
// Secret. Only a Secret labelled as meant for cr (v1.MetricsTokenForLabel) is read: the
// API server selects it by name and label, so the operator never receives another
// Secret's data, and an unlabelled Secret is reported exactly as a missing one, so that
// the reason tells nobody which Secrets exist.
func (r *SecondarySchedulerReconciler) secretToken(ctx context.Context, cr *v1.SecondaryScheduler) (token, version string, err error) {
	key := types.NamespacedName{Namespace: cr.Namespace, Name: cr.Spec.Profile.LoadMetrics().TokenSecretRef.Name}
	r.SecretWatches.Reference(client.ObjectKeyFromObject(cr), &key)
	secrets := &corev1.SecretList{}
	if err := r.APIReader.List(ctx, secrets, client.InNamespace(key.Namespace),
		client.MatchingFields{"metadata.name": key.Name}, client.MatchingLabels{v1.MetricsTokenForLabel: cr.Name}); err != nil {
		return "", "", fmt.Errorf("read Secret %s: %w", key, err)
	}
	if len(secrets.Items) != 1 {
		return "", "", refusal.New(v1.ReasonTokenSecretNotFound,
			"Secret %s, named by profile.metrics.tokenSecretRef, does not exist or is not labelled %s=%s; the operator reads only a Secret so labelled, "+
				"which says its token may be sent to this scheduler's metrics provider. Create it with key token holding a bearer token for the provider, "+
				"and have someone who may read and change it label it: kubectl -n %s label secret %s %s=%s",
			key, v1.MetricsTokenForLabel, cr.Name, key.Namespace, key.Name, v1.MetricsTokenForLabel, cr.Name)
	}
	secret := &secrets.Items[0]
	token = strings.TrimSpace(string(secret.Data["token"]))
	if token == "" {
		return "", "", refusal.New(v1.ReasonTokenKeyMissing,
			"Secret %s has no non-empty key token; put the metrics provider's bearer token there", key)
	}
	return token, string(secret.UID) + "/" + secret.ResourceVersion, nil
}

// boundTokenIdentity is the metrics ServiceAccount cr's scheduler authenticates as, with
// the token kept in its token Secret while that is not due for renewal. It only reads:
// the identity's objects and a new token are made by the credentials step, after the
// ownership check.
func (r *SecondarySchedulerReconciler) boundTokenIdentity(ctx context.Context, cr *v1.SecondaryScheduler,
	auth v1.ServiceAccountTokenAuth) (*render.MetricsIdentity, error) {
	identity := &render.MetricsIdentity{ClusterRole: auth.ClusterRole}
	if identity.ClusterRole == "" {
		identity.ClusterRole = render.DefaultMetricsClusterRole
	}
	if !slices.Contains(r.metricsTokenClusterRoles(), identity.ClusterRole) {
		return nil, refusal.New(v1.ReasonClusterRoleNotAllowed,
			"profile.metrics.serviceAccountToken.clusterRole is %s, but a cluster admin allows metrics tokens to be bound only to %s "+
				"(the operator's --metrics-token-cluster-roles flag; the operator also needs the bind verb on each); use one of those, "+
				"or ask a cluster admin to allow %s", identity.ClusterRole, strings.Join(r.metricsTokenClusterRoles(), ", "), identity.ClusterRole)
	}
	identity.Token = r.keptToken(ctx, cr, r.Client)
	if identity.Token == nil {
		// The cache may not hold a token written a moment ago; asking again costs a read,
		// where a needless new token would restart the scheduler.
		identity.Token = r.keptToken(ctx, cr, r.APIReader)
	}
	return identity, nil
}

// metricsTokenClusterRoles is the admin's allow-list of ClusterRoles for metrics tokens.
func (r *SecondarySchedulerReconciler) metricsTokenClusterRoles() []string {
	if len(r.MetricsTokenClusterRoles) == 0 {
		return []string{render.DefaultMetricsClusterRole}
	}
	return r.MetricsTokenClusterRoles
}

// requestToken asks the TokenRequest API for a token of cr's metrics ServiceAccount,
// which must exist (the credentials step applied it).
func (r *SecondarySchedulerReconciler) requestToken(ctx context.Context, cr *v1.SecondaryScheduler,
	auth v1.ServiceAccountTokenAuth) (*render.BoundToken, error) {
	account := &corev1.ServiceAccount{}
	accountKey := types.NamespacedName{Namespace: cr.Namespace, Name: render.MetricsServiceAccountName(cr)}
	if err := r.APIReader.Get(ctx, accountKey, account); err != nil {
		return nil, fmt.Errorf("read ServiceAccount %s: %w", accountKey, err)
	}
	if !ownedBy(account, cr) {
		return nil, fmt.Errorf("ServiceAccount %s was replaced by someone else's: %w", accountKey, errWaiting)
	}
	expiration := ptr.Deref(auth.ExpirationSeconds, int64(defaultTokenExpiration/time.Second))
	request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiration}}
	issued := r.now()
	if err := r.SubResource("token").Create(ctx, account, request); err != nil {
		if apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return nil, refusal.New(v1.ReasonTokenRequestFailed,
				"the API server refused a token for ServiceAccount %s: %s", accountKey, apiErrorSummary(err))
		}
		return nil, fmt.Errorf("request a token for ServiceAccount %s: %w", accountKey, err)
	}
	expires := request.Status.ExpirationTimestamp.Time
	token := &render.BoundToken{Token: request.Status.Token, ServiceAccountUID: string(account.UID),
		ExpiresAt: expires, RenewAt: render.RenewTime(issued, expires)}
	logf.FromContext(ctx).Info("requested a new metrics token", "serviceAccount", accountKey,
		"expiresAt", expires.UTC().Format(time.RFC3339), "renewAt", token.RenewAt.UTC().Format(time.RFC3339))
	return token, nil
}

// apiErrorSummary is an API error's reason and message, which the API server writes (no
// echo of anything a third party sent).
func apiErrorSummary(err error) string {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return fmt.Sprintf("%s: %s", status.Status().Reason, status.Status().Message)
	}
	return err.Error()
}

// keptToken is the token in cr's token Secret, read through reader, when it belongs to
// the current ServiceAccount and is not yet due for renewal.
func (r *SecondarySchedulerReconciler) keptToken(ctx context.Context, cr *v1.SecondaryScheduler, reader client.Reader) *render.BoundToken {
	secret := &corev1.Secret{}
	account := &corev1.ServiceAccount{}
	if reader.Get(ctx, types.NamespacedName{Namespace: cr.Namespace, Name: render.MetricsTokenSecretName(cr)}, secret) != nil ||
		reader.Get(ctx, types.NamespacedName{Namespace: cr.Namespace, Name: render.MetricsServiceAccountName(cr)}, account) != nil {
		return nil
	}
	token, ok := render.ParseBoundToken(secret)
	if !ok || token.ServiceAccountUID != string(account.UID) || !r.now().Before(token.RenewAt) {
		return nil
	}
	return token
}

// reportedUnauthorized reports whether cr's status says the metrics endpoint refused the
// token: status, not the prober, so that a refusal is reported before the token is
// replaced (and so seen, as an Event too), not replaced unseen.
func reportedUnauthorized(cr *v1.SecondaryScheduler) bool {
	condition := meta.FindStatusCondition(cr.Status.Conditions, string(v1.ConditionMetricsAvailable))
	return condition != nil && condition.Reason == string(v1.ReasonUnauthorized)
}

// tokenStillValid reports whether the API server still accepts token as the metrics
// ServiceAccount's. It asks only after the endpoint refused the token, so that a token
// revoked or overwritten is replaced, while a refusal for want of permissions (the token
// is fine, the ClusterRole is not) does not churn tokens and restart the scheduler.
func (r *SecondarySchedulerReconciler) tokenStillValid(ctx context.Context, cr *v1.SecondaryScheduler, token *render.BoundToken) (bool, error) {
	if !reportedUnauthorized(cr) {
		return true, nil
	}
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token.Token}}
	if err := r.Create(ctx, review); err != nil {
		return false, fmt.Errorf("review the metrics token: %w", err)
	}
	want := "system:serviceaccount:" + cr.Namespace + ":" + render.MetricsServiceAccountName(cr)
	if !review.Status.Authenticated || review.Status.User.Username != want {
		logf.FromContext(ctx).Info("the metrics token is no longer valid; requesting a new one", "serviceAccount", want)
		return false, nil
	}
	return true, nil
}

// trustedCA reads the CA bundle of ref, watching its ConfigMap; nil ref means the
// system roots.
func (r *SecondarySchedulerReconciler) trustedCA(ctx context.Context, cr *v1.SecondaryScheduler,
	ref *v1.ConfigMapKeyReference) (*render.TrustedCA, []byte, error) {
	owner := client.ObjectKeyFromObject(cr)
	if ref == nil {
		r.CABundleWatches.Reference(owner, nil)
		return nil, nil, nil
	}
	key := types.NamespacedName{Namespace: cr.Namespace, Name: ref.Name}
	r.CABundleWatches.Reference(owner, &key)
	dataKey := ref.Key
	if dataKey == "" {
		dataKey = "ca.crt"
	}
	configMap := &corev1.ConfigMap{}
	if err := r.APIReader.Get(ctx, key, configMap); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil, refusal.New(v1.ReasonCABundleNotFound,
				"ConfigMap %s, which should hold the CA bundle that signs the metrics provider's certificate, does not exist; "+
					"create it with key %s, or set profile.metrics.caBundle", key, dataKey)
		}
		return nil, nil, fmt.Errorf("read ConfigMap %s: %w", key, err)
	}
	pem := []byte(configMap.Data[dataKey])
	if len(pem) == 0 {
		pem = configMap.BinaryData[dataKey]
	}
	if !x509.NewCertPool().AppendCertsFromPEM(pem) {
		return nil, nil, refusal.New(v1.ReasonCABundleInvalid,
			"key %s of ConfigMap %s holds no PEM certificate (its keys: %s); put the CA bundle there as PEM", dataKey, key, schedconfig.ListKeys(configMap))
	}
	hash := sha256.Sum256(pem)
	return &render.TrustedCA{ConfigMap: ref.Name, Key: dataKey, Hash: hex.EncodeToString(hash[:8])}, pem, nil
}
