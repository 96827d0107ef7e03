package extenderprobe

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// authority is a test CA that signs server and client certificates.
type authority struct {
	certificate *x509.Certificate
	key         *ecdsa.PrivateKey
	pool        *x509.CertPool
}

func newAuthority(t *testing.T) *authority {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, template, template, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certificate, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(certificate)
	return &authority{certificate: certificate, key: key, pool: pool}
}

func (a *authority) issue(t *testing.T, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	template := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{name}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, template, a.certificate, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestProbe(t *testing.T) {
	serverCA, clientCA, otherCA := newAuthority(t), newAuthority(t), newAuthority(t)
	// An extender that wants a client certificate of clientCA, and answers 405 to a GET as
	// a real one does: the probe counts any answer.
	extender := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusMethodNotAllowed)
	}))
	extender.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{serverCA.issue(t, "extender.test", x509.ExtKeyUsageServerAuth)},
		ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCA.pool}
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
	good := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: serverCA.pool, ServerName: "extender.test",
		Certificates: []tls.Certificate{clientCA.issue(t, "scheduler", x509.ExtKeyUsageClientAuth)}}
	tests := []struct {
		name    string
		client  *http.Client
		address string
		want    v1.ConditionReason // "" for reachable
		message string
	}{
		{"http, any answer", client(nil), plain.URL + "/scheduler/", "", "answered HTTP 404"},
		{"https with the CA and a client certificate", client(good), extender.URL, "", "answered HTTP 405"},
		{"nothing listening", client(nil), closedURL, v1.ReasonExtenderUnreachable, "connection refused"},
		{"a CA that does not sign the extender", client(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: otherCA.pool, ServerName: "extender.test",
			Certificates: good.Certificates}), extender.URL, v1.ReasonExtenderTLSFailed, "certificate"},
		{"another server name", client(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: serverCA.pool, ServerName: "elsewhere.test",
			Certificates: good.Certificates}), extender.URL, v1.ReasonExtenderTLSFailed, "elsewhere.test"},
		{"no client certificate", client(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: serverCA.pool, ServerName: "extender.test"}),
			extender.URL, v1.ReasonExtenderTLSFailed, "tls"},
		{"a client certificate of another CA", client(&tls.Config{MinVersion: tls.VersionTLS12, RootCAs: serverCA.pool, ServerName: "extender.test",
			Certificates: []tls.Certificate{otherCA.issue(t, "scheduler", x509.ExtKeyUsageClientAuth)}}), extender.URL, v1.ReasonExtenderTLSFailed, "tls"},
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
		})
	}
}
