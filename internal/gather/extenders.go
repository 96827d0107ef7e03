package gather

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/extenders"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// Extender is an extender the scheduler will call, as the operator probes it.
type Extender struct {
	// Name is its name in status: spec.extenders[].name, or extenders[INDEX] for one of a
	// Custom configuration.
	Name string
	// Config is the extender as the scheduler's configuration carries it.
	Config extenders.Entry
	// InPod says it runs in the scheduler's pod (spec.extenders[].container): only the
	// scheduler reaches it, on localhost, and its container's readiness tells.
	InPod bool
	// TLS is the client configuration the scheduler uses for it, nil for http. It holds
	// the client key: never print it.
	TLS *tls.Config
	// TLSVersion identifies what TLS is built from (the versions of its Secrets and
	// ConfigMaps, or a Custom configuration's), without its content, so that a probe is
	// repeated when it changes.
	TLSVersion string
}

// String names the extender without its TLS material.
func (e Extender) String() string { return e.Name + " at " + e.Config.Extender.URLPrefix }

// gatherExtenders checks every extender of cr's scheduler (a Custom configuration's own,
// then spec.extenders), reads the Secrets and ConfigMaps that their TLS names, and notes
// those objects' versions, so that a new certificate rolls the scheduler.
func (g *Gatherer) gatherExtenders(ctx context.Context, cr *v1.SecondaryScheduler, custom *customConfiguration, found *Facts, references *References) error {
	var secrets, configMaps []types.NamespacedName
	// Watched even when reading one refuses: creating or labelling it fixes the refusal.
	defer func() {
		references.ExtenderSecrets, references.ExtenderConfigMaps = knownAll(secrets), knownAll(configMaps)
	}()
	var entries []extenders.Entry
	if custom != nil {
		entries = extenders.FromConfig(custom.config, custom.source)
	}
	fromConfig := len(entries)
	entries = append(entries, extenders.Typed(cr)...)
	if err := extenders.Check(entries); err != nil {
		return err
	}
	var versions []string
	for i, entry := range entries {
		extender := Extender{Name: fmt.Sprintf("extenders[%d]", i), Config: entry}
		if i >= fromConfig {
			spec := cr.Spec.Extenders[i-fromConfig]
			extender.Name, extender.InPod = spec.Name, spec.Container != nil
			before := len(versions)
			material, err := g.extenderTLS(ctx, cr, spec, &secrets, &configMaps, &versions)
			if err != nil {
				return err
			}
			extender.TLS, extender.TLSVersion = material, strings.Join(versions[before:], " ")
		} else if config := entry.Extender.TLSConfig; config != nil && strings.HasPrefix(strings.ToLower(entry.Extender.URLPrefix), "https://") {
			extender.TLS = &tls.Config{InsecureSkipVerify: config.Insecure, ServerName: config.ServerName, MinVersion: tls.VersionTLS12} //nolint:gosec // as the configuration says
			extender.TLSVersion = fmt.Sprintf("%s/%d", custom.version, i)
			if len(config.CAData) > 0 {
				extender.TLS.RootCAs = x509.NewCertPool()
				if !extender.TLS.RootCAs.AppendCertsFromPEM(config.CAData) {
					return refusal.New(v1.ReasonExtenderCertificateInvalid, "%s has tlsConfig.caData that holds no PEM certificate; give the CA bundle as PEM, base64-encoded", entry.Field)
				}
			}
		} else if strings.HasPrefix(strings.ToLower(entry.Extender.URLPrefix), "https://") {
			extender.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		found.Extenders = append(found.Extenders, extender)
	}
	found.Render.ExtenderTLSVersion = strings.Join(versions, " ")
	return nil
}

// extenderTLS reads the CA bundle and client certificate of a typed extender and builds
// the TLS configuration the scheduler will use with them.
func (g *Gatherer) extenderTLS(ctx context.Context, cr *v1.SecondaryScheduler, spec v1.Extender,
	secrets, configMaps *[]types.NamespacedName, versions *[]string) (*tls.Config, error) {
	field := "spec.extenders[" + spec.Name + "].tls"
	if spec.TLS == nil {
		return nil, nil
	}
	config := &tls.Config{InsecureSkipVerify: spec.TLS.InsecureSkipVerify, ServerName: spec.TLS.ServerName, MinVersion: tls.VersionTLS12} //nolint:gosec // as spec says
	if ca := spec.TLS.CABundle; ca != nil {
		var pem []byte
		if ca.ConfigMap != nil {
			key := types.NamespacedName{Namespace: cr.Namespace, Name: ca.ConfigMap.Name}
			*configMaps = append(*configMaps, key)
			configMap, err := g.extenderConfigMap(ctx, cr, ca.ConfigMap.Name, field+".caBundle.configMap")
			if err != nil {
				return nil, err
			}
			dataKey := extenders.CAKey(ca.ConfigMap.Key)
			pem = []byte(configMap.Data[dataKey])
			if len(pem) == 0 {
				pem = configMap.BinaryData[dataKey]
			}
			if len(pem) == 0 {
				return nil, refusal.New(v1.ReasonExtenderSecretNotFound, "ConfigMap %s, named by %s.caBundle.configMap, has no key %s (its keys: %s)",
					key, field, dataKey, schedconfig.ListKeys(configMap))
			}
			*versions = append(*versions, "ConfigMap/"+key.Name+"="+string(configMap.UID)+"/"+configMap.ResourceVersion)
		} else {
			*secrets = append(*secrets, types.NamespacedName{Namespace: cr.Namespace, Name: ca.Secret.Name})
			secret, err := g.extenderSecret(ctx, cr, ca.Secret.Name, field+".caBundle.secret")
			if err != nil {
				return nil, err
			}
			dataKey := extenders.CAKey(ca.Secret.Key)
			if pem = secret.Data[dataKey]; len(pem) == 0 {
				return nil, refusal.New(v1.ReasonExtenderSecretNotFound, "Secret %s/%s, named by %s.caBundle.secret, has no key %s", cr.Namespace, secret.Name, field, dataKey)
			}
			*versions = append(*versions, "Secret/"+secret.Name+"="+string(secret.UID)+"/"+secret.ResourceVersion)
		}
		config.RootCAs = x509.NewCertPool()
		if !config.RootCAs.AppendCertsFromPEM(pem) {
			return nil, refusal.New(v1.ReasonExtenderCertificateInvalid, "the CA bundle of %s.caBundle holds no PEM certificate; put the CA certificates there as PEM", field)
		}
	}
	if ref := spec.TLS.ClientCertificateSecretRef; ref != nil {
		*secrets = append(*secrets, types.NamespacedName{Namespace: cr.Namespace, Name: ref.Name})
		secret, err := g.extenderSecret(ctx, cr, ref.Name, field+".clientCertificateSecretRef")
		if err != nil {
			return nil, err
		}
		if len(secret.Data[corev1.TLSCertKey]) == 0 || len(secret.Data[corev1.TLSPrivateKeyKey]) == 0 {
			return nil, refusal.New(v1.ReasonExtenderSecretNotFound,
				"Secret %s/%s, named by %s.clientCertificateSecretRef, lacks key %s or %s; make it a Secret of type kubernetes.io/tls holding the client certificate and its key",
				cr.Namespace, secret.Name, field, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
		}
		certificate, err := tls.X509KeyPair(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey])
		if err != nil {
			// The error of X509KeyPair names what failed, never the key's bytes.
			return nil, refusal.New(v1.ReasonExtenderCertificateInvalid,
				"Secret %s/%s, named by %s.clientCertificateSecretRef, does not hold a usable certificate and key: %v", cr.Namespace, secret.Name, field, err)
		}
		config.Certificates = []tls.Certificate{certificate}
		*versions = append(*versions, "Secret/"+secret.Name+"="+string(secret.UID)+"/"+secret.ResourceVersion)
	}
	return config, nil
}

// extenderSecret reads Secret name of cr's namespace when it carries the consent label of
// the extenders' TLS (see consentedObject).
func (g *Gatherer) extenderSecret(ctx context.Context, cr *v1.SecondaryScheduler, name, field string) (*corev1.Secret, error) {
	secrets := &corev1.SecretList{}
	if err := g.consentedObject(ctx, cr, secrets, "Secret", name, field); err != nil {
		return nil, err
	}
	return &secrets.Items[0], nil
}

// extenderConfigMap reads ConfigMap name of cr's namespace when it carries the consent
// label of the extenders' TLS (see consentedObject).
func (g *Gatherer) extenderConfigMap(ctx context.Context, cr *v1.SecondaryScheduler, name, field string) (*corev1.ConfigMap, error) {
	configMaps := &corev1.ConfigMapList{}
	if err := g.consentedObject(ctx, cr, configMaps, "ConfigMap", name, field); err != nil {
		return nil, err
	}
	return &configMaps.Items[0], nil
}

// consentedObject lists into list the object of kind and name in cr's namespace when it
// carries the label that says it is meant for cr's extenders (the consent label of
// v1.ExtenderTLS, which admission leaves to the operator): the API server selects it by
// name and label, so the operator never receives another object, and an unlabelled one
// is reported exactly as a missing one, so that the reason tells nobody which exist.
func (g *Gatherer) consentedObject(ctx context.Context, cr *v1.SecondaryScheduler, list client.ObjectList, kind, name, field string) error {
	label := v1.ExtenderTLS{}.ReferencesConsentLabel()
	if err := g.api.List(ctx, list, client.InNamespace(cr.Namespace),
		client.MatchingFields{"metadata.name": name}, client.MatchingLabels{label: cr.Name}); err != nil {
		return fmt.Errorf("read %s %s/%s: %w", kind, cr.Namespace, name, err)
	}
	if meta.LenList(list) != 1 {
		return refusal.New(v1.ReasonExtenderSecretNotFound,
			"%s %s/%s, named by %s, does not exist or is not labelled %s=%s; the operator mounts only a %s so labelled into the scheduler, "+
				"which says its certificates are meant for this scheduler's extenders. Have someone who may read and change it label it: kubectl -n %s label %s %s %s=%s",
			kind, cr.Namespace, name, field, label, cr.Name, kind, cr.Namespace, strings.ToLower(kind), name, label, cr.Name)
	}
	return nil
}
