package extenders

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulerconfigv1 "k8s.io/kube-scheduler/config/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

func TestAddressAndConfig(t *testing.T) {
	tls := &v1.ExtenderTLS{
		CABundle:                   &v1.ExtenderCABundle{Secret: &v1.SecretKeyReference{Name: "ca", Key: "ca.crt"}},
		ClientCertificateSecretRef: &corev1.LocalObjectReference{Name: "client"},
		ServerName:                 "placement",
	}
	tests := []struct {
		name     string
		extender v1.Extender
		want     schedulerconfigv1.Extender
	}{
		{
			name:     "url, defaults",
			extender: v1.Extender{Name: "a", URL: "http://placement.example:8080/scheduler", FilterVerb: "filter"},
			want: schedulerconfigv1.Extender{URLPrefix: "http://placement.example:8080/scheduler", FilterVerb: "filter",
				HTTPTimeout: metav1.Duration{Duration: 5 * time.Second}},
		},
		{
			name: "service in another namespace, every verb, managed resources",
			extender: v1.Extender{Name: "b", Service: &v1.ExtenderService{Name: "placement", Namespace: "other", Port: 8443, PathPrefix: "/x"},
				FilterVerb: "filter", PrioritizeVerb: "prioritize", PreemptVerb: "preempt", BindVerb: "bind", Weight: 3,
				NodeCacheCapable: true, Ignorable: true, HTTPTimeout: &metav1.Duration{Duration: time.Second},
				ManagedResources: []v1.ExtenderManagedResource{{Name: "example.com/gpu", IgnoredByScheduler: true}}},
			want: schedulerconfigv1.Extender{URLPrefix: "http://placement.other.svc:8443/x", FilterVerb: "filter", PrioritizeVerb: "prioritize",
				PreemptVerb: "preempt", BindVerb: "bind", Weight: 3, NodeCacheCapable: true, Ignorable: true,
				HTTPTimeout:      metav1.Duration{Duration: time.Second},
				ManagedResources: []schedulerconfigv1.ExtenderManagedResource{{Name: "example.com/gpu", IgnoredByScheduler: true}}},
		},
		{
			name:     "service in the scheduler's namespace, with TLS",
			extender: v1.Extender{Name: "c", Service: &v1.ExtenderService{Name: "placement", Port: 443}, FilterVerb: "filter", TLS: tls},
			want: schedulerconfigv1.Extender{URLPrefix: "https://placement.team-a.svc:443", FilterVerb: "filter",
				HTTPTimeout: metav1.Duration{Duration: 5 * time.Second},
				TLSConfig: &schedulerconfigv1.ExtenderTLSConfig{ServerName: "placement", CAFile: "/etc/kubernetes/extenders/c/ca/ca.crt",
					CertFile: "/etc/kubernetes/extenders/c/client/tls.crt", KeyFile: "/etc/kubernetes/extenders/c/client/tls.key"}},
		},
		{
			name:     "container",
			extender: v1.Extender{Name: "d", Container: &v1.ExtenderContainer{Image: "x", Port: 8888, PathPrefix: "/ext"}, PrioritizeVerb: "score", Weight: 2},
			want: schedulerconfigv1.Extender{URLPrefix: "http://localhost:8888/ext", PrioritizeVerb: "score", Weight: 2,
				HTTPTimeout: metav1.Duration{Duration: 5 * time.Second}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Config("team-a", tt.extender)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Config (-want +got):\n%s", diff)
			}
			if err := Check([]Entry{{Field: "spec.extenders[" + tt.extender.Name + "]", Extender: got, Typed: true}}); err != nil {
				t.Errorf("a typed extender the API admits is refused: %v", err)
			}
		})
	}
}

// TestCheckRefusesHostileExtenders is the hostile table: each configuration is refused
// with reason InvalidExtender and a message naming the field, and no message quotes a
// credential or a key.
func TestCheckRefusesHostileExtenders(t *testing.T) {
	valid := schedulerconfigv1.Extender{URLPrefix: "http://placement:8080", FilterVerb: "filter"}
	with := func(change func(*schedulerconfigv1.Extender)) schedulerconfigv1.Extender {
		e := valid
		change(&e)
		return e
	}
	custom := func(extenders ...schedulerconfigv1.Extender) []Entry {
		return FromConfig(&schedulerconfigv1.KubeSchedulerConfiguration{Extenders: extenders}, "ConfigMap team-a/custom")
	}
	many := make([]schedulerconfigv1.Extender, v1.MaxExtenders+1)
	for i := range many {
		many[i] = valid
	}
	tests := []struct {
		name    string
		entries []Entry
		// want are parts of the message.
		want []string
		// secret must not appear in the message.
		secret string
	}{
		{"no address", custom(with(func(e *schedulerconfigv1.Extender) { e.URLPrefix = "" })), []string{"extenders[0] of ConfigMap team-a/custom", "no urlPrefix"}, ""},
		{"credentials", custom(with(func(e *schedulerconfigv1.Extender) { e.URLPrefix = "https://admin:hunter2@placement/x" })), []string{"credentials"}, "hunter2"},
		{"credentials without password", custom(with(func(e *schedulerconfigv1.Extender) { e.URLPrefix = "http://token-abc@placement" })), []string{"credentials"}, "token-abc"},
		{"query", custom(with(func(e *schedulerconfigv1.Extender) { e.URLPrefix = "http://placement/x?key=s3cr3t" })), []string{"query or fragment"}, "s3cr3t"},
		{"fragment", custom(with(func(e *schedulerconfigv1.Extender) { e.URLPrefix = "http://placement/x#t0ken" })), []string{"query or fragment"}, "t0ken"},
		{"not a URL", custom(with(func(e *schedulerconfigv1.Extender) { e.URLPrefix = "placement:8080" })), []string{"not a URL"}, ""},
		{"scheme", custom(with(func(e *schedulerconfigv1.Extender) { e.URLPrefix = "ftp://placement" })), []string{"scheme is not http or https"}, ""},
		{"file", custom(with(func(e *schedulerconfigv1.Extender) { e.URLPrefix = "file:///etc/passwd" })), []string{"scheme is not http or https"}, ""},
		{"no host", custom(with(func(e *schedulerconfigv1.Extender) { e.URLPrefix = "http:///x" })), []string{"no host"}, ""},
		{"port", custom(with(func(e *schedulerconfigv1.Extender) { e.URLPrefix = "http://placement:70000" })), []string{"port"}, ""},
		{"line break", custom(with(func(e *schedulerconfigv1.Extender) { e.URLPrefix = "http://placement\n" })), []string{"spaces or line breaks"}, ""},
		{"no verb", custom(with(func(e *schedulerconfigv1.Extender) { e.FilterVerb = "" })), []string{"sets none of filterVerb"}, ""},
		{"verb with a query", custom(with(func(e *schedulerconfigv1.Extender) { e.FilterVerb = "filter?x=1" })), []string{`filterVerb "filter?x=1"`, "characters other than"}, ""},
		{"verb with a leading slash", custom(with(func(e *schedulerconfigv1.Extender) { e.BindVerb = "/bind" })), []string{"bindVerb", "at its start or end"}, ""},
		{"long verb", custom(with(func(e *schedulerconfigv1.Extender) { e.PreemptVerb = strings.Repeat("p", 200) })), []string{"longer than 128"}, ""},
		{"prioritize without weight", custom(with(func(e *schedulerconfigv1.Extender) { e.PrioritizeVerb = "prioritize" })), []string{"weight 0", "must be positive"}, ""},
		{"negative timeout", custom(with(func(e *schedulerconfigv1.Extender) { e.HTTPTimeout.Duration = -time.Second })), []string{"httpTimeout -1s"}, ""},
		{"not an extended resource", custom(with(func(e *schedulerconfigv1.Extender) {
			e.ManagedResources = []schedulerconfigv1.ExtenderManagedResource{{Name: "cpu"}}
		})), []string{`manages "cpu"`, "not an extended resource name"}, ""},
		{"kubernetes.io resource", custom(with(func(e *schedulerconfigv1.Extender) {
			e.ManagedResources = []schedulerconfigv1.ExtenderManagedResource{{Name: "kubernetes.io/gpu"}}
		})), []string{"not an extended resource name"}, ""},
		{"requests. resource", custom(with(func(e *schedulerconfigv1.Extender) {
			e.ManagedResources = []schedulerconfigv1.ExtenderManagedResource{{Name: "requests.example.com/gpu"}}
		})), []string{"may not start with requests."}, ""},
		{"resource not a qualified name", custom(with(func(e *schedulerconfigv1.Extender) {
			e.ManagedResources = []schedulerconfigv1.ExtenderManagedResource{{Name: "example.com/a b"}}
		})), []string{"not a qualified name"}, ""},
		{"too many resources", custom(with(func(e *schedulerconfigv1.Extender) {
			for i := range 17 {
				e.ManagedResources = append(e.ManagedResources, schedulerconfigv1.ExtenderManagedResource{Name: fmt.Sprintf("example.com/r%d", i)})
			}
		})), []string{"manages 17 resources"}, ""},
		{"resource managed twice", custom(
			with(func(e *schedulerconfigv1.Extender) {
				e.ManagedResources = []schedulerconfigv1.ExtenderManagedResource{{Name: "example.com/gpu"}}
			}),
			with(func(e *schedulerconfigv1.Extender) {
				e.ManagedResources = []schedulerconfigv1.ExtenderManagedResource{{Name: "example.com/gpu"}}
			}),
		), []string{"extenders[0]", "extenders[1]", `both manage "example.com/gpu"`}, ""},
		{"two binders", custom(with(func(e *schedulerconfigv1.Extender) { e.BindVerb = "bind" }), with(func(e *schedulerconfigv1.Extender) { e.BindVerb = "bind" })),
			[]string{"one extender at most may bind"}, ""},
		{"too many", custom(many...), []string{fmt.Sprintf("%d extenders", v1.MaxExtenders+1), fmt.Sprintf("at most %d", v1.MaxExtenders)}, ""},
		{"private key in a ConfigMap", custom(with(func(e *schedulerconfigv1.Extender) {
			e.URLPrefix = "https://placement"
			e.TLSConfig = &schedulerconfigv1.ExtenderTLSConfig{CertData: []byte("cert"), KeyData: []byte("-----BEGIN PRIVATE KEY-----\nMIIEv")}
		})), []string{"private key", "tls.clientCertificateSecretRef"}, "MIIEv"},
		{"certificate without its key", custom(with(func(e *schedulerconfigv1.Extender) {
			e.URLPrefix = "https://placement"
			e.TLSConfig = &schedulerconfigv1.ExtenderTLSConfig{CertData: []byte("cert")}
		})), []string{"certData without its key"}, ""},
		{"a file the pod does not have", custom(with(func(e *schedulerconfigv1.Extender) {
			e.URLPrefix = "https://placement"
			e.TLSConfig = &schedulerconfigv1.ExtenderTLSConfig{KeyFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"}
		})), []string{"tlsConfig.keyFile", "does not have"}, ""},
		{"insecure with a CA", custom(with(func(e *schedulerconfigv1.Extender) {
			e.URLPrefix = "https://placement"
			e.TLSConfig = &schedulerconfigv1.ExtenderTLSConfig{Insecure: true, CAData: []byte("ca")}
		})), []string{"insecure with a CA"}, ""},
		{"TLS on http", custom(with(func(e *schedulerconfigv1.Extender) {
			e.TLSConfig = &schedulerconfigv1.ExtenderTLSConfig{CAData: []byte("ca")}
		})), []string{"is not https://"}, ""},
		{"enableHTTPS without a CA", custom(with(func(e *schedulerconfigv1.Extender) {
			e.URLPrefix = "https://placement"
			e.EnableHTTPS = true
		})), []string{"enableHTTPS without tlsConfig", "skips verification"}, ""},
		{"enableHTTPS with a server name only", custom(with(func(e *schedulerconfigv1.Extender) {
			e.URLPrefix = "https://placement"
			e.EnableHTTPS = true
			e.TLSConfig = &schedulerconfigv1.ExtenderTLSConfig{ServerName: "placement"}
		})), []string{"enableHTTPS without a CA"}, ""},
		{"a typed extender and a Custom one both binding", append(
			[]Entry{{Field: "spec.extenders[gpu]", Extender: with(func(e *schedulerconfigv1.Extender) { e.BindVerb = "bind" }), Typed: true}},
			custom(with(func(e *schedulerconfigv1.Extender) { e.BindVerb = "bind" }))...),
			[]string{"spec.extenders[gpu] and extenders[0] of ConfigMap team-a/custom set bindVerb"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(tt.entries)
			refused, ok := refusal.As(err)
			if !ok || refused.Reason != v1.ReasonInvalidExtender {
				t.Fatalf("Check = %v, want a refusal with reason %s", err, v1.ReasonInvalidExtender)
			}
			for _, part := range tt.want {
				if !strings.Contains(refused.Message, part) {
					t.Errorf("message %q lacks %q", refused.Message, part)
				}
			}
			if tt.secret != "" && strings.Contains(refused.Message, tt.secret) {
				t.Errorf("message %q quotes %q", refused.Message, tt.secret)
			}
		})
	}
}

func TestCheckAcceptsWhatKubeSchedulerRunsSafely(t *testing.T) {
	tests := map[string]schedulerconfigv1.Extender{
		"https with a CA":               {URLPrefix: "https://placement:8443/x", FilterVerb: "filter", TLSConfig: &schedulerconfigv1.ExtenderTLSConfig{CAData: []byte("ca")}},
		"https with the system roots":   {URLPrefix: "https://placement.example.com", FilterVerb: "filter"},
		"explicitly insecure":           {URLPrefix: "https://placement", BindVerb: "bind", EnableHTTPS: true, TLSConfig: &schedulerconfigv1.ExtenderTLSConfig{Insecure: true}},
		"IPv6 with a nested verb":       {URLPrefix: "http://[fd00::1]:8080", FilterVerb: "v1/filter"},
		"prioritize with weight":        {URLPrefix: "http://placement", PrioritizeVerb: "prioritize", Weight: 5},
		"trailing slash, as kube does":  {URLPrefix: "http://placement/scheduler/", PreemptVerb: "preempt"},
		"an extended resource":          {URLPrefix: "http://placement", FilterVerb: "filter", ManagedResources: []schedulerconfigv1.ExtenderManagedResource{{Name: "example.com/gpu"}}},
		"default timeout (0) and a CA ": {URLPrefix: "https://placement", FilterVerb: "f", EnableHTTPS: true, TLSConfig: &schedulerconfigv1.ExtenderTLSConfig{CAData: []byte("ca")}},
	}
	for name, extender := range tests {
		if err := Check([]Entry{{Field: "extenders[0] of ConfigMap team-a/custom", Extender: extender}}); err != nil {
			t.Errorf("%s: refused: %v", name, err)
		}
	}
}
