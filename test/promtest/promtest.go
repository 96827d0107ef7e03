// Package promtest runs a real Prometheus (Debian's prometheus package) on loopback for
// tests, scraping an in-process exporter whose series the test sets, such as the
// recording-rule series that scheduler-plugins' load-watcher reads.
package promtest

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"
)

// Binary is the Prometheus server to run: $PROMETHEUS, or prometheus on PATH.
func Binary() (string, error) {
	if path := os.Getenv("PROMETHEUS"); path != "" {
		return path, nil
	}
	path, err := exec.LookPath("prometheus")
	if err != nil {
		return "", fmt.Errorf("prometheus is not installed (apt-get install prometheus, or set PROMETHEUS): %w", err)
	}
	return path, nil
}

// Server is a running Prometheus and the exporter it scrapes every second.
type Server struct {
	// URL is the Prometheus HTTP API root, for example http://127.0.0.1:40123.
	URL string

	t        testing.TB
	command  *exec.Cmd
	exited   chan struct{}
	exporter *httptest.Server
	logPath  string

	mu     sync.Mutex
	series map[string]map[string]float64 // series name -> instance -> value
}

// Start runs Prometheus until the test ends; a missing binary fails the test.
func Start(t testing.TB) *Server {
	t.Helper()
	binary, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, series: map[string]map[string]float64{}}
	s.exporter = httptest.NewServer(http.HandlerFunc(s.serveMetrics))
	t.Cleanup(s.exporter.Close)

	dir := t.TempDir()
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
scrape_configs:
- job_name: exporter
  honor_labels: true
  static_configs:
  - targets: [%q]
`, strings.TrimPrefix(s.exporter.URL, "http://"))
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := listener.Addr().String()
	_ = listener.Close()
	s.URL = "http://" + address
	s.logPath = filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	s.command = exec.Command(binary, "--config.file="+configPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+address)
	s.command.Stdout, s.command.Stderr = logFile, logFile
	if err := s.command.Start(); err != nil {
		t.Fatal(err)
	}
	s.exited = make(chan struct{})
	go func() { _ = s.command.Wait(); _ = logFile.Close(); close(s.exited) }()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			data, _ := os.ReadFile(s.logPath)
			t.Logf("prometheus log:\n%s", data)
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		response, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			_ = response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return s
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus did not become ready at %s", s.URL)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// SetSeries makes the exporter serve series with one sample per instance; nil removes it
// (Prometheus then marks it stale at the next scrape).
func (s *Server) SetSeries(name string, valueByInstance map[string]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if valueByInstance == nil {
		delete(s.series, name)
		return
	}
	s.series[name] = valueByInstance
}

// Stop ends Prometheus, as an outage would.
func (s *Server) Stop() {
	if s.command == nil || s.command.Process == nil {
		return
	}
	_ = s.command.Process.Kill()
	<-s.exited
}

func (s *Server) serveMetrics(w http.ResponseWriter, _ *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	names := make([]string, 0, len(s.series))
	for name := range s.series {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(w, "# TYPE %s gauge\n", name)
		for instance, value := range s.series[name] {
			fmt.Fprintf(w, "%s{instance=%q} %g\n", name, instance, value)
		}
	}
}

// TokenProxy serves s's API to callers presenting token as a bearer token, and answers
// 401 to others, as kube-rbac-proxy does in front of OpenShift's and kube-prometheus'
// Prometheus. It stops with the test.
func (s *Server) TokenProxy(token string) *httptest.Server {
	target, err := url.Parse(s.URL)
	if err != nil {
		s.t.Fatal(err)
	}
	forward := httputil.NewSingleHostReverseProxy(target)
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		forward.ServeHTTP(w, r)
	}))
	s.t.Cleanup(proxy.Close)
	return proxy
}
