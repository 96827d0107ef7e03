package metricsauth_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsauth"
)

const envtestNamespace = "metricsauth-test"

// TestFilterAgainstAPIServer checks the filter with a real kube-apiserver reviewing
// real ServiceAccount tokens against real RBAC, in client-go's default encoding.
func TestFilterAgainstAPIServer(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		t.Skip("KUBEBUILDER_ASSETS is not set: no kube-apiserver to test against (make test-integration sets it)")
	}
	ctx := t.Context()
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
	boundToken, unboundToken := grantMetricsAccess(ctx, t, clientset)

	httpClient, err := rest.HTTPClientFor(config)
	if err != nil {
		t.Fatal(err)
	}
	filter, err := metricsauth.FilterProvider(config, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	handler, err := filter(testr.New(t), http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}))
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(handler)
	t.Cleanup(server.Close)

	tests := []struct {
		name       string
		path       string
		token      string
		wantStatus int
		wantBody   string
	}{
		{name: "bound ServiceAccount", path: "/metrics", token: boundToken, wantStatus: http.StatusOK, wantBody: "ok"},
		{
			name: "unbound ServiceAccount", path: "/metrics", token: unboundToken, wantStatus: http.StatusForbidden,
			wantBody: "Forbidden (user=system:serviceaccount:" + envtestNamespace + ":unbound, verb=get, path=/metrics)\n",
		},
		{name: "garbage token", path: "/metrics", token: "not-a-token", wantStatus: http.StatusUnauthorized, wantBody: "Unauthorized\n"},
		{name: "no token", path: "/metrics", wantStatus: http.StatusUnauthorized, wantBody: "Unauthorized\n"},
		{
			name: "bound ServiceAccount on another path", path: "/other", token: boundToken, wantStatus: http.StatusForbidden,
			wantBody: "Forbidden (user=system:serviceaccount:" + envtestNamespace + ":bound, verb=get, path=/other)\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, body := get(t, server.URL+tt.path, tt.token)
			if status != tt.wantStatus || body != tt.wantBody {
				t.Errorf("GET %s = %d %q, want %d %q", tt.path, status, body, tt.wantStatus, tt.wantBody)
			}
		})
	}
}

// grantMetricsAccess creates the ServiceAccounts bound, allowed get on /metrics, and
// unbound, and returns a token of each.
func grantMetricsAccess(ctx context.Context, t *testing.T, clientset kubernetes.Interface) (boundToken, unboundToken string) {
	t.Helper()
	if _, err := clientset.CoreV1().Namespaces().Create(ctx,
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: envtestNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: "metricsauth-test-metrics-reader"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/metrics"}}},
	}
	if _, err := clientset.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "metricsauth-test-bound"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: envtestNamespace, Name: "bound"}},
	}
	if _, err := clientset.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tokens := map[string]string{}
	accounts := clientset.CoreV1().ServiceAccounts(envtestNamespace)
	for _, name := range []string{"bound", "unbound"} {
		if _, err := accounts.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		request := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)}}
		request, err := accounts.CreateToken(ctx, name, request, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("request a token of %s: %v", name, err)
		}
		tokens[name] = request.Status.Token
	}
	// RBAC changes reach the API server's authorizer through its informers, a moment
	// after the write. Wait for them, so that the filter does not cache a 403 from
	// before and what is tested is the filter.
	waitForMetricsAccess(ctx, t, clientset, "bound")
	return tokens["bound"], tokens["unbound"]
}

// waitForMetricsAccess waits until the API server allows ServiceAccount account get on /metrics.
func waitForMetricsAccess(ctx context.Context, t *testing.T, clientset kubernetes.Interface, account string) {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:                  "system:serviceaccount:" + envtestNamespace + ":" + account,
		Groups:                []string{"system:serviceaccounts", "system:serviceaccounts:" + envtestNamespace, "system:authenticated"},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
	}}
	deadline := time.Now().Add(10 * time.Second)
	for {
		answer, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if answer.Status.Allowed {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("API server still does not allow %s get on /metrics", account)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// get returns the status and body of GET address with token as bearer token, if any.
func get(t *testing.T, address, token string) (int, string) {
	t.Helper()
	request, err := http.NewRequestWithContext(t.Context(), http.MethodGet, address, nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		request.Header.Set("Authorization", "Bearer "+token)
	}
	response, err := http.DefaultClient.Do(request)
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
