package rbacproxy

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

const (
	namespace   = "rbacproxy-test"
	bindingName = "rbacproxy-test-bound"
)

func TestProxy(t *testing.T) {
	ctx := t.Context()
	clientset, config := startAPIServer(t)
	boundToken, unboundToken := grantAccess(ctx, t, clientset)

	upstream := &recordingUpstream{}
	upstreamServer := httptest.NewServer(upstream)
	t.Cleanup(upstreamServer.Close)
	upstreamURL, err := url.Parse(upstreamServer.URL)
	if err != nil {
		t.Fatal(err)
	}
	dnsNames := []string{"thanos-querier.openshift-monitoring.svc", "thanos-querier.openshift-monitoring.svc.cluster.local"}
	proxy, err := Start(Options{
		ListenAddress: "127.0.0.1:0",
		Upstream:      upstreamURL,
		DNSNames:      dnsNames,
		Authorization: ThanosQuerierAccess,
		Config:        config,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := proxy.Close(); err != nil {
			t.Error(err)
		}
	})
	client := clientByName(t, proxy)
	_, port, err := net.SplitHostPort(strings.TrimPrefix(proxy.URL, "https://"))
	if err != nil {
		t.Fatal(err)
	}
	query := "https://" + net.JoinHostPort(dnsNames[0], port) + "/api/v1/query?query=up"

	// RBAC changes reach the API server's authorizer through its informers, a moment
	// after the write; wait for them so that what is tested is the proxy.
	waitForAccess(ctx, t, clientset, "bound", true)

	tests := []struct {
		name       string
		token      string
		wantStatus int
		wantBody   string
	}{
		{name: "no token", wantStatus: http.StatusUnauthorized},
		{name: "garbage token", token: "not-a-token", wantStatus: http.StatusUnauthorized},
		{
			name: "service account without binding", token: unboundToken, wantStatus: http.StatusForbidden,
			wantBody: "user=system:serviceaccount:" + namespace + ":unbound, verb=get, group=monitoring.coreos.com, resource=prometheuses, subresource=api",
		},
		{name: "bound service account", token: boundToken, wantStatus: http.StatusOK, wantBody: "upstream answered /api/v1/query"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			upstream.reset()
			status, body := get(t, client, query, tt.token)
			if status != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
				t.Fatalf("GET %s = %d %q, want %d containing %q", query, status, body, tt.wantStatus, tt.wantBody)
			}
			requests, sawAuthorization := upstream.seen()
			if wantRequests := map[bool]int{true: 1}[tt.wantStatus == http.StatusOK]; requests != wantRequests {
				t.Errorf("upstream got %d requests, want %d", requests, wantRequests)
			}
			if sawAuthorization {
				t.Error("upstream saw an Authorization header; the proxy must remove it")
			}
		})
	}

	t.Run("binding deleted", func(t *testing.T) {
		if err := clientset.RbacV1().ClusterRoleBindings().Delete(ctx, bindingName, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		waitForAccess(ctx, t, clientset, "bound", false)
		if status, body := get(t, client, query, boundToken); status != http.StatusForbidden {
			t.Fatalf("GET %s = %d %q, want 403 on the first request after the API server denies access", query, status, body)
		}
	})

	t.Run("name not in certificate", func(t *testing.T) {
		other := "https://" + net.JoinHostPort("prometheus-k8s.openshift-monitoring.svc", port) + "/-/ready"
		response, err := client.Get(other)
		if err == nil {
			_ = response.Body.Close()
		}
		var verificationErr *tls.CertificateVerificationError
		if !errors.As(err, &verificationErr) {
			t.Fatalf("GET %s error = %v, want a certificate verification error", other, err)
		}
	})

	for outcome, want := range map[Outcome]int{OutcomeUnauthenticated: 2, OutcomeForbidden: 2, OutcomeForwarded: 1, OutcomeReviewFailed: 0} {
		if got := proxy.Requests(outcome); got != want {
			t.Errorf("Requests(%s) = %d, want %d", outcome, got, want)
		}
	}
}

// startAPIServer runs a kube-apiserver and etcd until the test ends and returns an
// administrator's clientset and configuration. It skips the test without the binaries.
func startAPIServer(t *testing.T) (*kubernetes.Clientset, *rest.Config) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		// The Makefile sets KUBEBUILDER_ASSETS; a plain go test finds what it downloaded.
		assets, err := filepath.Abs(filepath.Join("..", "..", "bin", "k8s", "v1.37.2"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(assets, "kube-apiserver")); err != nil {
			t.Skipf("no kube-apiserver: set KUBEBUILDER_ASSETS or run make test (%v)", err)
		}
		t.Setenv("KUBEBUILDER_ASSETS", assets)
	}
	environment := &envtest.Environment{}
	config, err := environment.Start()
	if err != nil {
		t.Fatalf("start kube-apiserver: %v", err)
	}
	t.Cleanup(func() {
		if err := environment.Stop(); err != nil {
			t.Errorf("stop kube-apiserver: %v", err)
		}
	})
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		t.Fatal(err)
	}
	return clientset, config
}

// grantAccess creates the ServiceAccounts bound and unbound, lets bound do what
// ThanosQuerierAccess requires, and returns a token of each.
func grantAccess(ctx context.Context, t *testing.T, clientset kubernetes.Interface) (boundToken, unboundToken string) {
	t.Helper()
	if _, err := clientset.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := ClusterRoleAllowing("rbacproxy-test", ThanosQuerierAccess)
	if _, err := clientset.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: bindingName},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: "bound"}},
	}
	if _, err := clientset.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	for _, name := range []string{"bound", "unbound"} {
		accounts := clientset.CoreV1().ServiceAccounts(namespace)
		if _, err := accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
		request, err := accounts.CreateToken(ctx, name, request, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("request token of %s: %v", name, err)
		}
		tokens[name] = request.Status.Token
	}
	return tokens["bound"], tokens["unbound"]
}

// waitForAccess waits until the API server answers allowed when asked whether
// ServiceAccount account may do what ThanosQuerierAccess requires.
func waitForAccess(ctx context.Context, t *testing.T, clientset kubernetes.Interface, account string, allowed bool) {
	t.Helper()
	attributes := ThanosQuerierAccess
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               "system:serviceaccount:" + namespace + ":" + account,
		Groups:             []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
		ResourceAttributes: &attributes,
	}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		answer, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if answer.Status.Allowed == allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("API server still answers allowed=%t for %s", answer.Status.Allowed, account)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// clientByName returns a client that trusts only proxy's CA and connects to proxy
// whatever host a URL names, as a pod resolving a Service name would, so that the
// certificate is verified against the name in the URL.
func clientByName(t *testing.T, proxy *Proxy) *http.Client {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(proxy.CAPEM) {
		t.Fatal("CAPEM holds no certificate")
	}
	address := strings.TrimPrefix(proxy.URL, "https://")
	var dialer net.Dialer
	return &http.Client{
		Timeout: 10 * time.Second,
		Transport: &http.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
			DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
				return dialer.DialContext(ctx, network, address)
			},
		},
	}
}

// get returns the status and body of GET address with token as bearer token, if any.
func get(t *testing.T, client *http.Client, address, token string) (int, string) {
	t.Helper()
	request, err := http.NewRequestWithContext(t.Context(), http.MethodGet, address, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		request.Header.Set("Authorization", "Bearer "+token)
	}
	response, err := client.Do(request)
	if err != nil {
		t.Fatalf("GET %s: %v", address, err)
	}
	defer func() { _ = response.Body.Close() }()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response.StatusCode, string(body)
}

// recordingUpstream answers every request and remembers whether it carried credentials.
type recordingUpstream struct {
	mu               sync.Mutex
	requests         int
	sawAuthorization bool
}

func (u *recordingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	u.requests++
	u.sawAuthorization = u.sawAuthorization || r.Header.Get("Authorization") != ""
	u.mu.Unlock()
	_, _ = io.WriteString(w, "upstream answered "+r.URL.Path)
}

func (u *recordingUpstream) reset() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.requests, u.sawAuthorization = 0, false
}

func (u *recordingUpstream) seen() (requests int, sawAuthorization bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests, u.sawAuthorization
}
