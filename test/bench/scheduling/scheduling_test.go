package scheduling

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestNewClientSpeaksProtobuf checks what the benchmark's client sends an API server: a
// pod in protobuf, asking for protobuf or JSON back (and taking the JSON it gets), with
// no client-side rate limiter.
func TestNewClientSpeaksProtobuf(t *testing.T) {
	var mu sync.Mutex
	var contentTypes, accepts []string
	server := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		contentTypes, accepts = append(contentTypes, r.Header.Get("Content-Type")), append(accepts, r.Header.Get("Accept"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"scheduling-bench"}}`))
	}))
	defer server.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	config := "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: " + server.URL + "}\n" +
		"users:\n- name: u\n  user: {}\ncontexts:\n- name: c\n  context: {cluster: c, user: u}\ncurrent-context: c\n"
	if err := os.WriteFile(kubeconfig, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	client, err := newClient(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if limiter := client.CoreV1().RESTClient().GetRateLimiter(); limiter != nil {
		t.Errorf("the client has a rate limiter of %v QPS", limiter.QPS())
	}
	const requests = 20
	err = forEachConcurrently(context.Background(), requests, 4, func(ctx context.Context, i int) error {
		pod, err := client.CoreV1().Pods(benchNamespace).Create(ctx, benchPod("r", i, Options{}.withDefaults(), Ours), metav1.CreateOptions{})
		if err == nil && pod.Name != "p" {
			t.Errorf("decoded pod %q, want p", pod.Name)
		}
		return err
	})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if len(contentTypes) != requests {
		t.Fatalf("%d requests, want %d", len(contentTypes), requests)
	}
	for i := range contentTypes {
		if contentTypes[i] != "application/vnd.kubernetes.protobuf" {
			t.Errorf("request %d: Content-Type %q, want protobuf", i, contentTypes[i])
		}
		if !strings.HasPrefix(accepts[i], "application/vnd.kubernetes.protobuf,") || !strings.Contains(accepts[i], "application/json") {
			t.Errorf("request %d: Accept %q, want protobuf then JSON", i, accepts[i])
		}
	}
}
