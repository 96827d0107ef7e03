// Package rbacproxy is a TLS reverse proxy that guards an upstream the way kube-rbac-proxy
// guards OpenShift's thanos-querier and kube-prometheus' Prometheus: a request's bearer
// token is authenticated with a TokenReview and its user authorized with a
// SubjectAccessReview against a real API server before the request is forwarded. Tests
// use it to check that the operator presents a token the cluster accepts and that the
// RBAC it grants is enough.
//
// Nothing is cached: tests change tokens and RBAC and expect the next request to see it.
package rbacproxy

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// ThanosQuerierAccess is what OpenShift's kube-rbac-proxy in front of thanos-querier
// requires of a caller, and what its ClusterRole cluster-monitoring-view grants.
var ThanosQuerierAccess = authorizationv1.ResourceAttributes{
	Namespace: "openshift-monitoring", Verb: "get", Group: "monitoring.coreos.com", Resource: "prometheuses", Subresource: "api",
}

// ClusterRoleAllowing is a ClusterRole named name that grants exactly attributes' verb on
// its resource (and subresource), in every namespace.
func ClusterRoleAllowing(name string, attributes authorizationv1.ResourceAttributes) *rbacv1.ClusterRole {
	resource := attributes.Resource
	if attributes.Subresource != "" {
		resource += "/" + attributes.Subresource
	}
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{attributes.Verb}, APIGroups: []string{attributes.Group}, Resources: []string{resource}}}}
}

// Options configures a Proxy.
type Options struct {
	// ListenAddress is the host:port to serve TLS on; port 0 picks a free port.
	ListenAddress string
	// Upstream is where allowed requests go, for example http://10.213.7.2:9090.
	Upstream *url.URL
	// DNSNames are the names the serving certificate is valid for, such as
	// thanos-querier.openshift-monitoring.svc. The listen IP is added to its IP addresses
	// unless it is unspecified (0.0.0.0 or ::).
	DNSNames []string
	// IPAddresses are further IPs the serving certificate is valid for, such as a Service's
	// cluster IP.
	IPAddresses []net.IP
	// Authorization is what a caller must be allowed to do to be forwarded, for example
	// verb get on the api subresource of prometheuses.monitoring.coreos.com in
	// openshift-monitoring, as OpenShift's thanos-querier requires.
	Authorization authorizationv1.ResourceAttributes
	// Config reaches the API server that reviews tokens and access; its user needs to
	// create tokenreviews and subjectaccessreviews.
	Config *rest.Config
}

// Outcome is how the proxy answered a request.
type Outcome string

// Outcomes of a request.
const (
	// OutcomeUnauthenticated is a 401: no bearer token, or one the API server rejects.
	OutcomeUnauthenticated Outcome = "Unauthenticated"
	// OutcomeForbidden is a 403: the token's user may not do Options.Authorization.
	OutcomeForbidden Outcome = "Forbidden"
	// OutcomeForwarded is a request passed to the upstream, whatever it answered.
	OutcomeForwarded Outcome = "Forwarded"
	// OutcomeReviewFailed is a 500: a TokenReview or SubjectAccessReview could not be made.
	OutcomeReviewFailed Outcome = "ReviewFailed"
)

// Proxy is a running proxy. It serves until Close.
type Proxy struct {
	// URL is the proxy's root by its listen address, for example https://127.0.0.1:40123.
	// Clients that verify the certificate by name connect to this address under one of
	// Options.DNSNames.
	URL string
	// CAPEM is the PEM-encoded CA certificate that signed the serving certificate, for
	// clients to trust, as OpenShift's service CA ConfigMap openshift-service-ca.crt
	// carries it in service-ca.crt.
	CAPEM []byte

	attributes authorizationv1.ResourceAttributes
	clientset  kubernetes.Interface
	forward    *httputil.ReverseProxy
	server     *http.Server
	served     chan error

	mu       sync.Mutex
	outcomes map[Outcome]int
	// forwardedByToken counts the forwarded requests by the SHA-256 of their token, so
	// that a test can tell which credentials passed without the proxy keeping any.
	forwardedByToken map[[sha256.Size]byte]int
}

// Start listens on opts.ListenAddress and serves in the background with a serving
// certificate from a CA made for this proxy alone.
func Start(opts Options) (*Proxy, error) {
	if opts.Upstream == nil || opts.Config == nil {
		return nil, errors.New("start rbac proxy: Upstream and Config are required")
	}
	clientset, err := kubernetes.NewForConfig(opts.Config)
	if err != nil {
		return nil, fmt.Errorf("start rbac proxy: make API client: %w", err)
	}
	listener, err := net.Listen("tcp", opts.ListenAddress)
	if err != nil {
		return nil, fmt.Errorf("start rbac proxy: %w", err)
	}
	ips := append([]net.IP(nil), opts.IPAddresses...)
	if address, ok := listener.Addr().(*net.TCPAddr); ok && !address.IP.IsUnspecified() {
		ips = append(ips, address.IP)
	}
	caPEM, certificate, err := issueServingCertificate(opts.DNSNames, ips)
	if err != nil {
		_ = listener.Close()
		return nil, fmt.Errorf("start rbac proxy: %w", err)
	}
	upstream := opts.Upstream
	p := &Proxy{
		URL:        "https://" + listener.Addr().String(),
		CAPEM:      caPEM,
		attributes: opts.Authorization,
		clientset:  clientset,
		forward: &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(upstream)
			r.SetXForwarded()
			// The token is for the proxy; kube-rbac-proxy does not pass it on either.
			r.Out.Header.Del("Authorization")
		}},
		served:           make(chan error, 1),
		outcomes:         map[Outcome]int{},
		forwardedByToken: map[[sha256.Size]byte]int{},
	}
	p.server = &http.Server{
		Handler:           p,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{certificate}, MinVersion: tls.VersionTLS12},
	}
	go func() { p.served <- p.server.ServeTLS(listener, "", "") }()
	return p, nil
}

// Close stops serving at once, closing open connections.
func (p *Proxy) Close() error {
	if err := p.server.Close(); err != nil {
		return fmt.Errorf("close rbac proxy: %w", err)
	}
	if err := <-p.served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("rbac proxy stopped serving: %w", err)
	}
	return nil
}

// Requests returns how many requests so far had outcome.
func (p *Proxy) Requests(outcome Outcome) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.outcomes[outcome]
}

// ForwardedWith returns how many requests bearing token were forwarded so far.
func (p *Proxy) ForwardedWith(token string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.forwardedByToken[sha256.Sum256([]byte(token))]
}

// ServeHTTP authenticates and authorizes r, then forwards it to the upstream.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || token == "" {
		p.deny(w, OutcomeUnauthenticated, "Unauthorized: no bearer token")
		return
	}
	user, err := p.authenticate(r.Context(), token)
	if err != nil {
		p.deny(w, OutcomeReviewFailed, err.Error())
		return
	}
	if user == nil {
		p.deny(w, OutcomeUnauthenticated, "Unauthorized")
		return
	}
	allowed, err := p.authorize(r.Context(), user)
	if err != nil {
		p.deny(w, OutcomeReviewFailed, err.Error())
		return
	}
	if !allowed {
		p.deny(w, OutcomeForbidden, p.forbiddenMessage(user))
		return
	}
	p.count(OutcomeForwarded)
	p.mu.Lock()
	p.forwardedByToken[sha256.Sum256([]byte(token))]++
	p.mu.Unlock()
	p.forward.ServeHTTP(w, r)
}

// authenticate returns the user token belongs to, or nil when the API server does not
// accept token.
func (p *Proxy) authenticate(ctx context.Context, token string) (*authenticationv1.UserInfo, error) {
	review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
	review, err := p.clientset.AuthenticationV1().TokenReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("review token: %w", err)
	}
	if !review.Status.Authenticated {
		return nil, nil
	}
	return &review.Status.User, nil
}

// authorize reports whether user may do what the proxy's attributes describe.
func (p *Proxy) authorize(ctx context.Context, user *authenticationv1.UserInfo) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for key, values := range user.Extra {
		extra[key] = authorizationv1.ExtraValue(values)
	}
	attributes := p.attributes
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               user.Username,
		UID:                user.UID,
		Groups:             user.Groups,
		Extra:              extra,
		ResourceAttributes: &attributes,
	}}
	review, err := p.clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("review access of %s: %w", user.Username, err)
	}
	return review.Status.Allowed, nil
}

// forbiddenMessage names user and what it may not do, in kube-rbac-proxy's words.
func (p *Proxy) forbiddenMessage(user *authenticationv1.UserInfo) string {
	a := p.attributes
	return fmt.Sprintf("Forbidden (user=%s, verb=%s, group=%s, resource=%s, subresource=%s, namespace=%s, name=%s)",
		user.Username, a.Verb, a.Group, a.Resource, a.Subresource, a.Namespace, a.Name)
}

// deny answers w with outcome's status and message.
func (p *Proxy) deny(w http.ResponseWriter, outcome Outcome, message string) {
	p.count(outcome)
	status := map[Outcome]int{
		OutcomeUnauthenticated: http.StatusUnauthorized,
		OutcomeForbidden:       http.StatusForbidden,
		OutcomeReviewFailed:    http.StatusInternalServerError,
	}[outcome]
	http.Error(w, message, status)
}

// count records a request's outcome.
func (p *Proxy) count(outcome Outcome) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.outcomes[outcome]++
}

// issueServingCertificate makes a CA and a serving certificate it signs for dnsNames and
// ips, and returns the CA in PEM and the serving certificate with its key. The CA is new
// each time so that no test trusts another's proxy.
func issueServingCertificate(dnsNames []string, ips []net.IP) ([]byte, tls.Certificate, error) {
	// Backdated, so that a client whose clock is a little behind still accepts them.
	notBefore := time.Now().Add(-time.Hour)
	notAfter := notBefore.Add(48 * time.Hour)
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("generate CA key: %w", err)
	}
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "rbacproxy-ca"},
		NotBefore:             notBefore,
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTemplate, caTemplate, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("sign CA certificate: %w", err)
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("parse CA certificate: %w", err)
	}

	servingKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("generate serving key: %w", err)
	}
	commonName := "rbacproxy"
	if len(dnsNames) > 0 {
		commonName = dnsNames[0]
	}
	servingTemplate := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     dnsNames,
		IPAddresses:  ips,
	}
	servingDER, err := x509.CreateCertificate(rand.Reader, servingTemplate, ca, &servingKey.PublicKey, caKey)
	if err != nil {
		return nil, tls.Certificate{}, fmt.Errorf("sign serving certificate: %w", err)
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return caPEM, tls.Certificate{Certificate: [][]byte{servingDER}, PrivateKey: servingKey}, nil
}
