package extenderprobe

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/testpki"
)

func TestProbe(t *testing.T) {
	serverCA, clientCA, otherCA := testpki.NewAuthority(t), testpki.NewAuthority(t), testpki.NewAuthority(t)
	// An extender that wants a client certificate of clientCA, and answers 405 to a GET as
	// a real one does: the probe counts any answer.
	extender := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusMethodNotAllowed)
	}))
	extender.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{serverCA.IssueTLS(t, "extender.test", x509.ExtKeyUsageServerAuth)},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCA.Pool}
	extender.StartTLS()
	defer extender.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	client := func(config *tls.Config) *http.Client {
		return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: config, DisableKeepAlives: true}}
	}
	good := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: serverCA.Pool, ServerName: "extender.test",
		Certificates: []tls.Certificate{clientCA.IssueTLS(t, "scheduler", x509.ExtKeyUsageClientAuth)}}
	tests := []struct {
		name    string
		client  *http.Client
		address string
		want    v1.ConditionReason // "" for reachable
		message string
	}{
		{"http, any answer", client(nil), plain.URL + "/scheduler/", "", "was answered"},
		{"https with the CA and a client certificate", client(good), extender.URL, "", "was answered"},
		{"nothing listening", client(nil), closedURL, v1.ReasonExtenderUnreachable, "connection refused"},
		{"a CA that does not sign the extender", client(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: otherCA.Pool, ServerName: "extender.test",
			Certificates: good.Certificates}), extender.URL, v1.ReasonExtenderTLSFailed, "not signed by the CA the scheduler trusts"},
		{"another server name", client(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: serverCA.Pool, ServerName: "elsewhere.test",
			Certificates: good.Certificates}), extender.URL, v1.ReasonExtenderTLSFailed, "not for the name it is called by"},
		{"no client certificate", client(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: serverCA.Pool, ServerName: "extender.test"}),
			extender.URL, v1.ReasonExtenderTLSFailed, "TLS handshake failed"},
		{"a client certificate of another CA", client(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: serverCA.Pool, ServerName: "extender.test",
			Certificates: []tls.Certificate{otherCA.IssueTLS(t, "scheduler", x509.ExtKeyUsageClientAuth)}}), extender.URL, v1.ReasonExtenderTLSFailed, "TLS handshake failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			result := Probe(context.Background(), tt.client, tt.address, "filter")
			if result.Reachable != (tt.want == "") || result.Reason != tt.want {
				t.Fatalf("Probe = %+v, want reachable %t, reason %q", result, tt.want == "", tt.want)
			}
			if !strings.Contains(result.Message, tt.message) || !strings.Contains(result.Message, "/filter") {
				t.Errorf("message %q lacks %q or the verb's URL", result.Message, tt.message)
			}
			// Status tells whether a host is there, never what it answered or the names
			// its certificate holds.
			for _, leak := range []string{"404", "405", "extender.test", "x509", "127.0.0.1:"} {
				if strings.Contains(strings.TrimPrefix(result.Message, "GET "+tt.address), leak) {
					t.Errorf("message %q tells %q", result.Message, leak)
				}
			}
		})
	}
}
