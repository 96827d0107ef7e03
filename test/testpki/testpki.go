// Package testpki makes the certificates tests need: a CA of the test's own, and server
// and client certificates it signs, for 127.0.0.1 and a name, valid for a day.
package testpki

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"time"
)

// T is what the helpers need of a test: a *testing.T, or ginkgo's GinkgoT().
type T interface {
	Helper()
	Fatal(args ...any)
}

// Authority is a CA.
type Authority struct {
	Certificate *x509.Certificate
	// PEM is the CA's certificate, as a CA bundle holds it.
	PEM []byte
	// Pool holds the CA's certificate, to verify what it signs.
	Pool *x509.CertPool
	key  *ecdsa.PrivateKey
}

// NewAuthority is a new CA.
func NewAuthority(t T) *Authority {
	t.Helper()
	key := newKey(t)
	template := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
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
	return &Authority{Certificate: certificate, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), Pool: pool, key: key}
}

// Issue is a certificate for name and 127.0.0.1, for usage (server or client
// authentication), signed by a, with its key, as PEM.
func (a *Authority) Issue(t T, name string, usage x509.ExtKeyUsage) (certPEM, keyPEM []byte) {
	t.Helper()
	key := newKey(t)
	template := &x509.Certificate{SerialNumber: serial(), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{name}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}}
	der, err := x509.CreateCertificate(rand.Reader, template, a.Certificate, &key.PublicKey, a.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
}

// IssueTLS is Issue as a tls.Certificate.
func (a *Authority) IssueTLS(t T, name string, usage x509.ExtKeyUsage) tls.Certificate {
	t.Helper()
	certPEM, keyPEM := a.Issue(t, name, usage)
	certificate, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	return certificate
}

func newKey(t T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func serial() *big.Int { return big.NewInt(time.Now().UnixNano()) }
