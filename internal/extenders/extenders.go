// Package extenders is where spec.extenders becomes the extenders of a
// KubeSchedulerConfiguration, and where every extender a scheduler would call, typed or
// written in a Custom configuration, is checked before it rolls out: by kube-scheduler's own
// validation rules, which the scheduler would otherwise apply at start and crash on, and by
// what kube-scheduler lets through but should not run (an address with credentials, a
// private key in a ConfigMap, a certificate file the pod does not have, TLS that silently
// skips verification).
package extenders

import (
	"cmp"
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/validate/content"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// TLSDir is where the scheduler container finds the TLS files of its extenders, one
// directory per extender.
const TLSDir = "/etc/kubernetes/extenders"

// File names of an extender's TLS material under TLSDir/NAME, as mounted from Secrets and
// ConfigMaps (the Secret's keys tls.crt and tls.key keep their names).
const (
	CAFileName   = "ca.crt"
	CertFileName = "tls.crt"
	KeyFileName  = "tls.key"
)

// CAKey is the key of a CA bundle's ConfigMap or Secret: key, or ca.crt when the API
// server did not default it (a resource built in code, as in tests).
func CAKey(key string) string {
	if key == "" {
		return CAFileName
	}
	return key
}

// CAFile is the path of extender name's CA bundle in the scheduler container. The CA and
// the client certificate are mounted from different objects, so they live in different
// directories.
func CAFile(name string) string { return path.Join(TLSDir, name, "ca", CAFileName) }

// CertFile is the path of extender name's client certificate in the scheduler container.
func CertFile(name string) string { return path.Join(TLSDir, name, "client", CertFileName) }

// KeyFile is the path of extender name's client key in the scheduler container.
func KeyFile(name string) string { return path.Join(TLSDir, name, "client", KeyFileName) }

// Address is where the scheduler reaches extender e of a SecondaryScheduler in namespace:
// the prefix the verbs are appended to.
func Address(namespace string, e v1.Extender) string {
	scheme := "http"
	if e.TLS != nil {
		scheme = "https"
	}
	switch {
	case e.Service != nil:
		return fmt.Sprintf("%s://%s.%s.svc:%d%s", scheme, e.Service.Name, cmp.Or(e.Service.Namespace, namespace),
			e.Service.Port, e.Service.PathPrefix)
	case e.Container != nil:
		return fmt.Sprintf("%s://localhost:%d%s", scheme, e.Container.Port, e.Container.PathPrefix)
	default:
		return e.URL
	}
}

// Config is extender e as the KubeSchedulerConfiguration carries it. enableHTTPS is never
// set: the scheme of the address says https, and kube-scheduler's enableHTTPS only turns
// verification off when no CA is given.
func Config(namespace string, e v1.Extender) schedulerconfigv1.Extender {
	config := schedulerconfigv1.Extender{
		URLPrefix:        Address(namespace, e),
		FilterVerb:       e.FilterVerb,
		PrioritizeVerb:   e.PrioritizeVerb,
		PreemptVerb:      e.PreemptVerb,
		BindVerb:         e.BindVerb,
		Weight:           e.Weight,
		NodeCacheCapable: e.NodeCacheCapable,
		Ignorable:        e.Ignorable,
		HTTPTimeout:      metav1.Duration{Duration: e.EffectiveHTTPTimeout()},
	}
	for _, resource := range e.ManagedResources {
		config.ManagedResources = append(config.ManagedResources, schedulerconfigv1.ExtenderManagedResource{
			Name: resource.Name, IgnoredByScheduler: resource.IgnoredByScheduler})
	}
	if tls := e.TLS; tls != nil {
		config.TLSConfig = &schedulerconfigv1.ExtenderTLSConfig{Insecure: tls.InsecureSkipVerify, ServerName: tls.ServerName}
		if tls.CABundle != nil {
			config.TLSConfig.CAFile = CAFile(e.Name)
		}
		if tls.ClientCertificateSecretRef != nil {
			config.TLSConfig.CertFile = CertFile(e.Name)
			config.TLSConfig.KeyFile = KeyFile(e.Name)
		}
	}
	return config
}

// Entry is one extender of a scheduler's configuration, with where it comes from.
type Entry struct {
	// Field names the extender in messages, for example spec.extenders[gpu] or
	// extenders[1] of ConfigMap team-a/custom.
	Field string
	// Extender is the extender as the configuration carries it.
	Extender schedulerconfigv1.Extender
	// Typed says the extender comes from spec.extenders: its TLS files are the operator's
	// mounts, not paths a configuration's author chose.
	Typed bool
}

// Typed lists the extenders of spec.extenders as entries.
func Typed(cr *v1.SecondaryScheduler) []Entry {
	entries := make([]Entry, 0, len(cr.Spec.Extenders))
	for _, e := range cr.Spec.Extenders {
		entries = append(entries, Entry{Field: "spec.extenders[" + e.Name + "]", Extender: Config(cr.Namespace, e), Typed: true})
	}
	return entries
}

// FromConfig lists the extenders a Custom configuration holds as entries; source names
// the configuration, as in "ConfigMap team-a/custom".
func FromConfig(config *schedulerconfigv1.KubeSchedulerConfiguration, source string) []Entry {
	if config == nil {
		return nil
	}
	entries := make([]Entry, 0, len(config.Extenders))
	for i, e := range config.Extenders {
		entries = append(entries, Entry{Field: fmt.Sprintf("extenders[%d] of %s", i, source), Extender: e})
	}
	return entries
}

// Check refuses (reason InvalidExtender) the first extender that kube-scheduler would
// refuse at start or that should not run, checking all of a scheduler's extenders
// together: at most v1.MaxExtenders, one binder, and managed resources named once.
func Check(entries []Entry) error {
	if len(entries) > v1.MaxExtenders {
		return invalid("the scheduler would call %d extenders for each pod (%s); at most %d are allowed, since each adds a round trip to every scheduling decision",
			len(entries), fields(entries), v1.MaxExtenders)
	}
	var binders []string
	resources := map[string]string{}
	for _, entry := range entries {
		if err := checkOne(entry); err != nil {
			return err
		}
		if entry.Extender.BindVerb != "" {
			binders = append(binders, entry.Field)
		}
		for _, resource := range entry.Extender.ManagedResources {
			if other, taken := resources[resource.Name]; taken {
				return invalid("%s and %s both manage %q; a managed resource may belong to one extender only (kube-scheduler refuses the configuration)",
					other, entry.Field, usertext.Cut(resource.Name, 100))
			}
			resources[resource.Name] = entry.Field
		}
	}
	if len(binders) > 1 {
		return invalid("%s set bindVerb; one extender at most may bind pods (kube-scheduler refuses the configuration): remove bindVerb from all but one",
			strings.Join(binders, " and "))
	}
	return nil
}

func checkOne(entry Entry) error {
	e := entry.Extender
	if err := checkAddress(entry.Field, e.URLPrefix); err != nil {
		return err
	}
	verbs := []struct{ field, value string }{
		{"filterVerb", e.FilterVerb}, {"prioritizeVerb", e.PrioritizeVerb}, {"preemptVerb", e.PreemptVerb}, {"bindVerb", e.BindVerb},
	}
	set := 0
	for _, verb := range verbs {
		if verb.value == "" {
			continue
		}
		set++
		if problem := verbProblem(verb.value); problem != "" {
			return invalid("%s has %s %q, which %s; a verb is the path after the address, such as filter or v1/filter",
				entry.Field, verb.field, usertext.Cut(verb.value, 100), problem)
		}
	}
	if set == 0 {
		return invalid("%s sets none of filterVerb, prioritizeVerb, preemptVerb and bindVerb, so the scheduler would never call it; set the verbs it serves",
			entry.Field)
	}
	if e.PrioritizeVerb != "" && e.Weight <= 0 {
		return invalid("%s sets prioritizeVerb with weight %d; its scores are multiplied by the weight, which must be positive (kube-scheduler refuses the configuration)",
			entry.Field, e.Weight)
	}
	if e.HTTPTimeout.Duration < 0 {
		return invalid("%s has httpTimeout %v; it must be positive (0 means kube-scheduler's default of %v)",
			entry.Field, e.HTTPTimeout.Duration, v1.DefaultExtenderHTTPTimeout)
	}
	if len(e.ManagedResources) > 16 {
		return invalid("%s manages %d resources; at most 16 are allowed", entry.Field, len(e.ManagedResources))
	}
	for _, resource := range e.ManagedResources {
		if problem := extendedResourceProblem(resource.Name); problem != "" {
			return invalid("%s manages %q, which %s (kube-scheduler refuses the configuration); name an extended resource such as example.com/gpu-memory",
				entry.Field, usertext.Cut(resource.Name, 100), problem)
		}
	}
	return checkTLS(entry)
}

// checkTLS refuses the TLS settings that kube-scheduler refuses at start, or that would
// put a private key where it does not belong or skip verification without saying so.
func checkTLS(entry Entry) error {
	e := entry.Extender
	tls := e.TLSConfig
	https := strings.HasPrefix(strings.ToLower(e.URLPrefix), "https://")
	if tls == nil {
		if e.EnableHTTPS && https {
			return invalid("%s sets enableHTTPS without tlsConfig: kube-scheduler then skips verification of the extender's certificate, so anyone on the path could read and change what it sends; "+
				"give the CA in tlsConfig.caData (or use spec.extenders with tls.caBundle), or set tlsConfig.insecure: true to say so", entry.Field)
		}
		return nil
	}
	if !entry.Typed {
		for _, file := range []struct{ field, value string }{{"certFile", tls.CertFile}, {"keyFile", tls.KeyFile}, {"caFile", tls.CAFile}} {
			if file.value != "" {
				return invalid("%s sets tlsConfig.%s (%q), a file the scheduler's pod does not have; give the certificates in spec.extenders[].tls, from Secrets the operator mounts",
					entry.Field, file.field, usertext.Cut(file.value, 100))
			}
		}
		if len(tls.KeyData) > 0 {
			return invalid("%s holds a private key in tlsConfig.keyData, in a ConfigMap that anyone who may read ConfigMaps in the namespace can read; "+
				"remove it from the ConfigMap, and move the extender to spec.extenders with tls.clientCertificateSecretRef naming a Secret of type kubernetes.io/tls", entry.Field)
		}
		if len(tls.CertData) > 0 {
			return invalid("%s sets tlsConfig.certData without its key, which must not be in a ConfigMap; move the extender to spec.extenders with tls.clientCertificateSecretRef",
				entry.Field)
		}
	}
	hasCA := tls.CAFile != "" || len(tls.CAData) > 0
	if tls.Insecure && hasCA {
		return invalid("%s sets tlsConfig.insecure with a CA; kube-scheduler refuses both at once: keep the CA and remove insecure", entry.Field)
	}
	if !https && (hasCA || tls.CertFile != "" || len(tls.CertData) > 0 || tls.Insecure || tls.ServerName != "") {
		return invalid("%s has tlsConfig but its address %s is not https://, so the TLS settings would be unused; make the address https:// or remove tlsConfig",
			entry.Field, quotable(e.URLPrefix))
	}
	if e.EnableHTTPS && !hasCA && !tls.Insecure {
		return invalid("%s sets enableHTTPS without a CA: kube-scheduler then skips verification of the extender's certificate; "+
			"give the CA in tlsConfig.caData, or set tlsConfig.insecure: true to say so", entry.Field)
	}
	return nil
}

// checkAddress refuses an urlPrefix that is not an http or https URL with a host, or that
// holds credentials, a query or a fragment (the scheduler appends /VERB to it).
func checkAddress(field, address string) error {
	example := "https://placement.example.svc:8443/scheduler"
	if strings.TrimSpace(address) == "" {
		return invalid("%s has no urlPrefix; set the extender's address, for example %s", field, example)
	}
	// Credentials are looked for first, in the text rather than the parsed URL, so that
	// no other message can quote them.
	if schedconfig.HasUserinfo(address) {
		return invalid("%s has an address holding credentials (user:password@ before the host), which would show in the configuration, status and logs; "+
			"remove them and authenticate with a client certificate (spec.extenders[].tls.clientCertificateSecretRef)", field)
	}
	if strings.ContainsAny(address, "?#") {
		return invalid("%s has address %s with a query or fragment; the scheduler appends /VERB to the address, so it must end with a path, for example %s",
			field, quotable(address), example)
	}
	if strings.TrimSpace(address) != address || strings.ContainsAny(address, " \t\r\n") {
		return invalid("%s has address %s, which holds spaces or line breaks; remove them", field, quotable(address))
	}
	parsed, err := url.Parse(address)
	if err != nil || !strings.Contains(address, "://") {
		return invalid("%s has address %s, which is not a URL; write one such as %s", field, quotable(address), example)
	}
	if parsed.Scheme != "http" && parsed.Scheme != "https" {
		return invalid("%s has address %s, whose scheme is not http or https; write one such as %s", field, quotable(address), example)
	}
	if parsed.Hostname() == "" {
		return invalid("%s has address %s, which has no host; write one such as %s", field, quotable(address), example)
	}
	if port := parsed.Port(); port != "" {
		if number, err := strconv.Atoi(port); err != nil || number < 1 || number > 65535 {
			return invalid("%s has address %s, whose port is not between 1 and 65535", field, quotable(address))
		}
	}
	return nil
}

// verbProblem says what is wrong with a verb, or "".
func verbProblem(verb string) string {
	switch {
	case len(verb) > 128:
		return "is longer than 128 characters"
	case strings.HasPrefix(verb, "/") || strings.HasSuffix(verb, "/") || strings.Contains(verb, "//"):
		return "has a / at its start or end, or an empty segment"
	}
	for _, r := range verb {
		if (r < 'a' || r > 'z') && (r < 'A' || r > 'Z') && (r < '0' || r > '9') && !strings.ContainsRune("._~-/", r) {
			return "holds characters other than letters, digits, / and ._~-"
		}
	}
	return ""
}

// extendedResourceProblem applies kube-scheduler's rules for a managed resource's name:
// a qualified name (the grammar of a label key), with a domain other than kubernetes.io, not prefixed requests.
func extendedResourceProblem(name string) string {
	if problems := content.IsLabelKey(name); len(problems) > 0 {
		return "is not a qualified name: " + problems[0]
	}
	if !strings.Contains(name, "/") || strings.Contains(name, corev1.ResourceDefaultNamespacePrefix) {
		return "is not an extended resource name (DOMAIN/NAME, with a domain other than kubernetes.io)"
	}
	if strings.HasPrefix(name, corev1.DefaultResourceRequestsPrefix) || len(content.IsLabelKey(corev1.DefaultResourceRequestsPrefix+name)) > 0 {
		return "is not an extended resource name (it may not start with requests., and requests.NAME must be a qualified name)"
	}
	return ""
}

// quotable is address as a message may show it, cut short and quoted; it is only called
// once schedconfig.HasUserinfo has ruled credentials out, and without what follows a ? or #.
func quotable(address string) string {
	shown, _, _ := strings.Cut(address, "?")
	shown, _, _ = strings.Cut(shown, "#")
	return strconv.Quote(usertext.Cut(shown, 120))
}

func fields(entries []Entry) string {
	names := make([]string, 0, len(entries))
	for _, entry := range entries {
		names = append(names, entry.Field)
	}
	return usertext.Cut(strings.Join(names, ", "), 400)
}

func invalid(format string, args ...any) error {
	return refusal.New(v1.ReasonInvalidExtender, format, args...)
}
