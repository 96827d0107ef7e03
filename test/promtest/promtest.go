// Package promtest runs a real Prometheus (Debian's prometheus package) on loopback for
// tests, scraping an in-process exporter whose series the test sets, such as the
// recording-rule series that scheduler-plugins' load-watcher reads.
package promtest

import (
	"context"
	"encoding/json"
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
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/netnshost"
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

// TB is what Start needs of a test: testing.TB, or Ginkgo's GinkgoT().
type TB interface {
	Helper()
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	TempDir() string
	Failed() bool
}

// Promtool is the promtool of Debian's prometheus package, on PATH. Without it, t is
// skipped, unless $CI is set (CI installs it): then t fails.
func Promtool(t interface {
	Helper()
	Fatalf(format string, args ...any)
	Skipf(format string, args ...any)
}) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("promtool is not installed (Debian's prometheus package): %v", err)
		}
		t.Skipf("promtool is not installed (apt-get install prometheus): %v", err)
	}
	return path
}

// Options say where Prometheus runs and what more it scrapes.
type Options struct {
	// Host runs Prometheus in a network namespace, on the host's own address, the way a
	// pod runs: reachable from the cluster through a Service and an EndpointSlice. Nil
	// runs it on loopback.
	Host *netnshost.Host
	// ScrapeConfigs are more jobs to scrape, as items of a Prometheus configuration's
	// scrape_configs list (YAML, each starting with "- job_name:").
	ScrapeConfigs string
}

// Server is a running Prometheus and the exporter it scrapes every second.
type Server struct {
	// URL is the Prometheus HTTP API root, for example http://127.0.0.1:40123.
	URL string

	t         TB
	binary    string
	arguments []string
	host      *netnshost.Host
	command   *exec.Cmd
	exited    chan struct{}
	exporter  *httptest.Server
	logPath   string
	rulesPath string

	mu         sync.Mutex
	series     map[string]map[string]float64 // series name -> instance -> value
	frozenAt   map[string]int64              // series name -> the timestamp its samples carry, in milliseconds; 0 until the next scrape
	collectors map[string]func() string
}

// Start runs Prometheus on loopback until the test ends; a missing binary fails the test.
func Start(t TB) *Server {
	t.Helper()
	return StartWith(t, Options{})
}

// StartWith runs Prometheus as opts say until the test ends.
func StartWith(t TB, opts Options) *Server {
	t.Helper()
	binary, err := Binary()
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{t: t, binary: binary, host: opts.Host, series: map[string]map[string]float64{}, frozenAt: map[string]int64{}, collectors: map[string]func() string{}}
	exporterAddress, listenHost := "127.0.0.1:0", "127.0.0.1"
	if opts.Host != nil {
		// Prometheus, in the namespace, scrapes the exporter on the host's side of the link.
		exporterAddress, listenHost = net.JoinHostPort(opts.Host.HostAddress, "0"), opts.Host.Address
	}
	exporterListener, err := net.Listen("tcp", exporterAddress)
	if err != nil {
		t.Fatal(err)
	}
	s.exporter = httptest.NewUnstartedServer(http.HandlerFunc(s.serveMetrics))
	_ = s.exporter.Listener.Close()
	s.exporter.Listener = exporterListener
	s.exporter.Start()
	t.Cleanup(s.exporter.Close)

	dir := t.TempDir()
	s.rulesPath = filepath.Join(dir, "rules.yml")
	if err := os.WriteFile(s.rulesPath, []byte("groups: []\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [%q]
scrape_configs:
- job_name: exporter
  honor_labels: true
  static_configs:
  - targets: [%q]
%s`, s.rulesPath, strings.TrimPrefix(s.exporter.URL, "http://"), opts.ScrapeConfigs)
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	port := "9090"
	if opts.Host == nil {
		listener, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, port, _ = net.SplitHostPort(listener.Addr().String())
		_ = listener.Close()
	}
	address := net.JoinHostPort(listenHost, port)
	s.URL = "http://" + address
	s.logPath = filepath.Join(dir, "prometheus.log")
	s.arguments = []string{"--config.file=" + configPath, "--storage.tsdb.path=" + filepath.Join(dir, "data"), "--web.listen-address=" + address}
	s.start()
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			data, _ := os.ReadFile(s.logPath)
			t.Logf("prometheus log:\n%s", data)
		}
	})
	return s
}

// start runs the Prometheus process and waits until it is ready.
func (s *Server) start() {
	s.t.Helper()
	logFile, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		s.t.Fatal(err)
	}
	if s.host != nil {
		s.command = s.host.Command(context.Background(), s.binary, s.arguments...)
	} else {
		s.command = exec.Command(s.binary, s.arguments...)
	}
	s.command.Stdout, s.command.Stderr = logFile, logFile
	if err := s.command.Start(); err != nil {
		s.t.Fatal(err)
	}
	exited := make(chan struct{})
	s.exited = exited
	command := s.command
	go func() { _ = command.Wait(); _ = logFile.Close(); close(exited) }()
	if err := WaitReady(context.Background(), s.URL, 30*time.Second); err != nil {
		s.t.Fatal(err)
	}
}

// WaitReady waits until the Prometheus at root (its API root URL) says it is ready, for
// at most timeout.
func WaitReady(ctx context.Context, root string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		request, err := http.NewRequestWithContext(ctx, http.MethodGet, root+"/-/ready", nil)
		if err != nil {
			return err
		}
		response, err := http.DefaultClient.Do(request)
		if err == nil {
			_ = response.Body.Close()
			if response.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("prometheus did not become ready at %s within %s", root, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Restart starts Prometheus again after Stop, at the same address and with its data.
func (s *Server) Restart() {
	s.t.Helper()
	s.start()
}

// LoadRules makes Prometheus evaluate the rule groups in groups (a rule file's YAML, as
// the Prometheus Operator writes one for each PrometheusRule) from now on.
func (s *Server) LoadRules(groups []byte) error {
	if err := os.WriteFile(s.rulesPath, groups, 0o644); err != nil {
		return err
	}
	// Prometheus reloads its configuration and rule files on SIGHUP.
	return s.command.Process.Signal(syscall.SIGHUP)
}

// Query evaluates expr now and returns its samples, as label sets with the value under
// "__value__".
func (s *Server) Query(expr string) ([]map[string]string, error) {
	var answer struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := s.getJSON("/api/v1/query?query="+url.QueryEscape(expr), &answer); err != nil {
		return nil, err
	}
	if answer.Status != "success" {
		return nil, fmt.Errorf("query %s: %s", expr, answer.Error)
	}
	samples := make([]map[string]string, 0, len(answer.Data.Result))
	for _, result := range answer.Data.Result {
		sample := result.Metric
		if sample == nil {
			sample = map[string]string{}
		}
		sample["__value__"], _ = result.Value[1].(string)
		samples = append(samples, sample)
	}
	return samples, nil
}

// Alert is an alert Prometheus evaluates, as its /api/v1/alerts lists it.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	// State is pending or firing.
	State string `json:"state"`
}

// Alerts lists the alerts that are pending or firing now.
func (s *Server) Alerts() ([]Alert, error) {
	var answer struct {
		Data struct {
			Alerts []Alert `json:"alerts"`
		} `json:"data"`
	}
	return answer.Data.Alerts, s.getJSON("/api/v1/alerts", &answer)
}

// MetricNames lists the names of every series Prometheus holds.
func (s *Server) MetricNames() ([]string, error) {
	var answer struct {
		Data []string `json:"data"`
	}
	return answer.Data, s.getJSON("/api/v1/label/__name__/values", &answer)
}

func (s *Server) getJSON(path string, into any) error {
	response, err := http.Get(s.URL + path)
	if err != nil {
		return err
	}
	defer func() { _ = response.Body.Close() }()
	if response.StatusCode != http.StatusOK && response.StatusCode != http.StatusBadRequest {
		return fmt.Errorf("GET %s: %s", path, response.Status)
	}
	return json.NewDecoder(response.Body).Decode(into)
}

// SetCollector makes the exporter serve the exposition-format lines collect returns at
// each scrape, for series with more labels than SetSeries gives, or counters; nil removes it.
func (s *Server) SetCollector(name string, collect func() string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if collect == nil {
		delete(s.collectors, name)
		return
	}
	s.collectors[name] = collect
}

// SetSeries makes the exporter serve series with one sample per instance; nil removes it
// (Prometheus then marks it stale at the next scrape). It ends a FreezeSeries of name.
func (s *Server) SetSeries(name string, valueByInstance map[string]float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.frozenAt, name)
	if valueByInstance == nil {
		delete(s.series, name)
		return
	}
	s.series[name] = valueByInstance
}

// FreezeSeries makes the exporter serve name's samples, until the next SetSeries of
// name, with one fixed timestamp: that of the first scrape after the call (in the
// exposition format's last field, `name{instance="x"} 0.3 1700000000000`, milliseconds).
// Prometheus honors the timestamps a target sends, so the series stays present while its
// newest sample gets older, as when the source of a federated or pushed series stops
// updating it: the identical samples of later scrapes are dropped as duplicates, and a
// series with timestamps gets no staleness marker. Instant queries stop seeing it after
// their 5-minute lookback.
//
// The timestamp is taken while serving, not when FreezeSeries is called: Prometheus
// tracks staleness only of series without timestamps, so at the first scrape with one it
// writes a staleness marker stamped with that scrape's start. A timestamp taken while
// serving is no earlier, so the marker is refused; with one taken before the scrape, the
// marker would follow the frozen sample, Prometheus would refuse the samples of later
// scrapes as out of order, and the series would be stale instead of frozen.
func (s *Server) FreezeSeries(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, frozen := s.frozenAt[name]; !frozen {
		s.frozenAt[name] = 0
	}
}

// Stop ends Prometheus, as an outage would.
func (s *Server) Stop() {
	if s.command == nil || s.command.Process == nil {
		return
	}
	select {
	case <-s.exited:
		return // already stopped
	default:
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
		timestamp := ""
		if at, frozen := s.frozenAt[name]; frozen {
			if at == 0 {
				at = time.Now().UnixMilli()
				s.frozenAt[name] = at
			}
			timestamp = fmt.Sprintf(" %d", at)
		}
		for instance, value := range s.series[name] {
			fmt.Fprintf(w, "%s{instance=%q} %g%s\n", name, instance, value, timestamp)
		}
	}
	names = names[:0]
	for name := range s.collectors {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprint(w, s.collectors[name]())
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

// OperatorCRD is a kind of the Prometheus Operator's API group monitoring.coreos.com/v1
// (Prometheus, PrometheusRule), with an open schema, for a test cluster that plays one.
func OperatorCRD(kind, plural, singular string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + ".monitoring.coreos.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "monitoring.coreos.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: singular, Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true)}}}},
		},
	}
}

// NodeLoad is a node's utilisation as load-watcher's series carry it: fractions of the
// node's CPU and memory.
type NodeLoad struct{ CPU, Memory float64 }

// NodeLoadExposition is the exposition text of the two series load-watcher reads, named
// by the caller (metricsprobe.Series: metricsprobe's own tests use this package), one
// sample each for every node of nodes, in that order, labelled instance=<node name>; a
// node load lacks counts as idle.
func NodeLoadExposition(cpuSeries, memorySeries string, nodes []string, load map[string]NodeLoad) string {
	var cpu, memory strings.Builder
	fmt.Fprintf(&cpu, "# TYPE %s gauge\n", cpuSeries)
	fmt.Fprintf(&memory, "# TYPE %s gauge\n", memorySeries)
	for _, node := range nodes {
		fmt.Fprintf(&cpu, "%s{instance=%q} %g\n", cpuSeries, node, load[node].CPU)
		fmt.Fprintf(&memory, "%s{instance=%q} %g\n", memorySeries, node, load[node].Memory)
	}
	return cpu.String() + memory.String()
}
