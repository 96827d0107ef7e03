package gather

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

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

// MetricsAccess is how the scheduler, and the operator's probe, reach the metrics provider.
type MetricsAccess struct {
	// Token is the bearer token of tokenSecretRef, empty for none; TokenVersion identifies
	// it without revealing it.
	Token, TokenVersion string
	// Auth is how the bound token of Identity is requested.
	Auth v1.ServiceAccountTokenAuth
	// Credentials says where the token comes from, for status; never the token.
	Credentials string
	// Identity is the ServiceAccount whose bound token the scheduler presents, nil for
	// none; its Token is the one kept in its token Secret, nil when none is kept or it is
	// due for renewal (the credentials stage then requests one).
	Identity *render.MetricsIdentity
	// TrustedCA and CAPEM are the CA bundle that verifies the provider, nil for the system roots.
	TrustedCA *render.TrustedCA
	CAPEM     []byte
	// InsecureSkipVerify is the user's choice not to verify the provider's certificate.
	InsecureSkipVerify bool
}

// BearerToken is the token the scheduler presents: the bound token of its identity, or
// the user's.
func (a *MetricsAccess) BearerToken() string {
	if a.Identity != nil && a.Identity.Token != nil {
		return a.Identity.Token.Token
	}
	return a.Token
}

// BoundToken is the bound token the scheduler presents, nil when it presents none (or a
// token of the user's, whose lifetime the operator does not know).
func (a *MetricsAccess) BoundToken() *render.BoundToken {
	if a == nil || a.Identity == nil {
		return nil
	}
	return a.Identity.Token
}

// metrics finds the Prometheus a load-aware scheduler reads, the recording rules to
// install for it, and the token and CA bundle that reach it.
func (g *Gatherer) metrics(ctx context.Context, cr *v1.SecondaryScheduler, found *Facts, references *References) error {
	var err error
	if cr.Spec.Profile.ReadsPrometheus() {
		if found.Prometheus, err = g.prometheus(ctx, cr); err != nil {
			return err
		}
		found.Render.PrometheusAddress = found.Prometheus.URL
		// As the failsafe last decided (status is its memory); the controller's verdict of
		// this reconcile, from the newest probe, may change it (Facts.WithScoreByRequests).
		found.Render.ScoreByRequests = cr.Spec.Profile.LoadMetrics().ScoresByRequestsWhenUnavailable() &&
			cr.Status.Metrics != nil && cr.Status.Metrics.Scoring == v1.ScoringByRequests
		if found.RecordingRules, err = g.recordingRules(ctx, cr, found.Prometheus); err != nil {
			return err
		}
		found.Render.RecordingRules = found.RecordingRules.Target
	}
	// How a Custom configuration's scheduler reaches its metrics, customMetrics found in it.
	customAccess := found.Access
	if found.Access, err = g.tokenAndCA(ctx, cr, found.Prometheus, references); err != nil {
		return err
	}
	if customAccess != nil {
		found.Access = customAccess
		return nil
	}
	found.Render.MetricsToken, found.Render.MetricsTokenVersion = found.Access.Token, found.Access.TokenVersion
	found.Render.MetricsIdentity, found.Render.TrustedCA = found.Access.Identity, found.Access.TrustedCA
	return nil
}

// tokenAndCA gathers the token and CA bundle cr's scheduler uses for its metrics
// provider, noting the user's Secret and ConfigMap in references. endpoint is the
// Prometheus found, nil when the scheduler reads no Prometheus.
func (g *Gatherer) tokenAndCA(ctx context.Context, cr *v1.SecondaryScheduler,
	endpoint *promdiscovery.Endpoint, references *References) (*MetricsAccess, error) {
	access := &MetricsAccess{Credentials: "none"}
	metrics := cr.Spec.Profile.LoadMetrics()
	if metrics == nil || metrics.WatcherAddress != "" || metrics.Provider == v1.KubernetesMetricsServerProvider {
		references.TokenSecret, references.CABundle = known(nil), known(nil)
		return access, nil
	}
	insecureSkipVerify := ptr.Deref(metrics.InsecureSkipVerify, false)
	// OpenShift's thanos-querier sits behind kube-rbac-proxy and serves a certificate of
	// the service CA: both are needed without the user asking.
	onOpenShift := endpoint != nil && endpoint.NeedsToken && metrics.Address == ""

	caRef := metrics.CABundle
	if caRef == nil && onOpenShift {
		caRef = &v1.ConfigMapKeyReference{Name: openShiftServiceCAConfigMap, Key: openShiftServiceCAKey}
	}
	// The CA and the token are independent: a refusal of one does not hide the other's.
	var caErr, err error
	access.TrustedCA, access.CAPEM, caErr = g.trustedCA(ctx, cr, caRef, references)
	if metrics.TokenSecretRef == nil {
		references.TokenSecret = known(nil)
	}
	switch {
	case metrics.TokenSecretRef != nil:
		access.Token, access.TokenVersion, err = g.secretToken(ctx, cr, references)
		access.Credentials = fmt.Sprintf("Secret %s/%s, key token", cr.Namespace, metrics.TokenSecretRef.Name)
	case metrics.ServiceAccountToken != nil || onOpenShift:
		access.Auth = ptr.Deref(metrics.ServiceAccountToken, v1.ServiceAccountTokenAuth{})
		access.Identity, err = g.boundTokenIdentity(ctx, cr, access.Auth)
		if access.Identity != nil {
			access.Credentials = fmt.Sprintf("bound token of ServiceAccount %s/%s (ClusterRole %s)",
				cr.Namespace, render.MetricsServiceAccountName(cr), access.Identity.ClusterRole)
		}
	}
	if err := refusal.Join(caErr, err); err != nil {
		return nil, err
	}
	access.InsecureSkipVerify = loadWatcherSkipsVerify(insecureSkipVerify, access.Token != "" || access.Identity != nil)
	return access, nil
}

// loadWatcherSkipsVerify is whether load-watcher skips the verification of Prometheus'
// certificate, asked to by insecureSkipVerify: only when it presents a token. Without one,
// load-watcher v0.2.4 (its Prometheus provider's NewProvider) uses Go's default transport,
// which verifies against the system roots or SSL_CERT_FILE whatever the args say, so the
// probe, which asks as the scheduler does, verifies too.
func loadWatcherSkipsVerify(insecureSkipVerify, presentsToken bool) bool {
	return insecureSkipVerify && presentsToken
}

// secretToken reads the bearer token of profile.metrics.tokenSecretRef, noting the
// Secret in references. Only a Secret labelled as meant for cr (v1.MetricsTokenForLabel)
// is read: the API server selects it by name and label, so the operator never receives
// another Secret's data, and an unlabelled Secret is reported exactly as a missing one,
// so that the reason tells nobody which Secrets exist.
func (g *Gatherer) secretToken(ctx context.Context, cr *v1.SecondaryScheduler, references *References) (token, version string, err error) {
	key := types.NamespacedName{Namespace: cr.Namespace, Name: cr.Spec.Profile.LoadMetrics().TokenSecretRef.Name}
	references.TokenSecret = known(&key)
	secrets := &corev1.SecretList{}
	if err := g.api.List(ctx, secrets, client.InNamespace(key.Namespace),
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
// the identity's objects and a new token are made by the credentials stage, after the
// ownership check.
func (g *Gatherer) boundTokenIdentity(ctx context.Context, cr *v1.SecondaryScheduler,
	auth v1.ServiceAccountTokenAuth) (*render.MetricsIdentity, error) {
	identity := &render.MetricsIdentity{ClusterRole: auth.ClusterRole}
	if identity.ClusterRole == "" {
		identity.ClusterRole = render.DefaultMetricsClusterRole
	}
	if !slices.Contains(g.allowedMetricsClusterRoles(), identity.ClusterRole) {
		return nil, refusal.New(v1.ReasonClusterRoleNotAllowed,
			"profile.metrics.serviceAccountToken.clusterRole is %s, but a cluster admin allows metrics tokens to be bound only to %s "+
				"(the operator's --metrics-token-cluster-roles flag; the operator also needs the bind verb on each); use one of those, "+
				"or ask a cluster admin to allow %s", identity.ClusterRole, strings.Join(g.allowedMetricsClusterRoles(), ", "), identity.ClusterRole)
	}
	identity.Token = g.keptToken(ctx, cr, g.cache)
	if identity.Token == nil {
		// The cache may not hold a token written a moment ago; asking again costs a read,
		// where a needless new token would restart the scheduler.
		identity.Token = g.keptToken(ctx, cr, g.api)
	}
	return identity, nil
}

// allowedMetricsClusterRoles is the admin's allow-list of ClusterRoles for metrics tokens.
func (g *Gatherer) allowedMetricsClusterRoles() []string {
	if len(g.metricsTokenClusterRoles) == 0 {
		return []string{render.DefaultMetricsClusterRole}
	}
	return g.metricsTokenClusterRoles
}

// keptToken is the token in cr's token Secret, read through reader, when it belongs to
// the current ServiceAccount and is not yet due for renewal.
func (g *Gatherer) keptToken(ctx context.Context, cr *v1.SecondaryScheduler, reader client.Reader) *render.BoundToken {
	secret := &corev1.Secret{}
	account := &corev1.ServiceAccount{}
	if reader.Get(ctx, types.NamespacedName{Namespace: cr.Namespace, Name: render.MetricsTokenSecretName(cr)}, secret) != nil ||
		reader.Get(ctx, types.NamespacedName{Namespace: cr.Namespace, Name: render.MetricsServiceAccountName(cr)}, account) != nil {
		return nil
	}
	token, ok := render.ParseBoundToken(secret)
	if !ok || token.ServiceAccountUID != string(account.UID) || !g.now().Before(token.RenewAt) {
		return nil
	}
	return token
}

// trustedCA reads the CA bundle of ref, noting its ConfigMap in references; nil ref
// means the system roots.
func (g *Gatherer) trustedCA(ctx context.Context, cr *v1.SecondaryScheduler,
	ref *v1.ConfigMapKeyReference, references *References) (*render.TrustedCA, []byte, error) {
	if ref == nil {
		references.CABundle = known(nil)
		return nil, nil, nil
	}
	key := types.NamespacedName{Namespace: cr.Namespace, Name: ref.Name}
	references.CABundle = known(&key)
	dataKey := ref.Key
	if dataKey == "" {
		dataKey = "ca.crt"
	}
	configMap := &corev1.ConfigMap{}
	if err := g.api.Get(ctx, key, configMap); err != nil {
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

// WithBoundToken is a copy of f in which the scheduler's metrics identity presents
// token, for rendering once the credentials stage has requested one; f is unchanged.
func (f *Facts) WithBoundToken(token *render.BoundToken) *Facts {
	copied := *f
	access := *f.Access
	identity := *f.Access.Identity
	identity.Token = token
	access.Identity = &identity
	copied.Access = &access
	copied.Render.MetricsIdentity = &identity
	return &copied
}

// WithServedConfigHash is f with the configuration hash of the scheduler last seen
// serving; f itself when that is already so.
func (f *Facts) WithServedConfigHash(hash string) *Facts {
	if f.Render.ServedConfigHash == hash {
		return f
	}
	copied := *f
	copied.Render.ServedConfigHash = hash
	return &copied
}

// WithScoreByRequests is f with the scheduler to be rendered by requests (the failsafe's
// stand-in configuration) or by load; f itself when that is already so.
func (f *Facts) WithScoreByRequests(byRequests bool) *Facts {
	if f.Render.ScoreByRequests == byRequests {
		return f
	}
	copied := *f
	copied.Render.ScoreByRequests = byRequests
	return &copied
}
