package netnshost_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/netnshost"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// requireNamespaces skips the test where network namespaces cannot be made.
func requireNamespaces(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making network namespaces needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skipf("iproute2 is not installed: %v", err)
	}
}

func TestNewRejectsSubnetIndexOutsideOctet(t *testing.T) {
	for _, index := range []int{-1, 256} {
		t.Run(fmt.Sprint(index), func(t *testing.T) {
			if _, err := netnshost.New("netnshost-test", index); err == nil || !strings.Contains(err.Error(), "subnet index") {
				t.Fatalf("netnshost.New(%d) error = %v, want a subnet index error", index, err)
			}
		})
	}
}

// TestPrometheusInNamespace runs a real Prometheus in a host and checks that the root
// namespace reaches it on Address, that it reaches a scrape target on HostAddress, and
// that Close cuts it off.
func TestPrometheusInNamespace(t *testing.T) {
	requireNamespaces(t)
	binary, err := promtest.Binary()
	if err != nil {
		t.Fatal(err)
	}
	const name, subnet = "netnshost-test", 250
	// A host that is never closed is what a killed run leaves; New must clear it away.
	if _, err := netnshost.New(name, subnet); err != nil {
		t.Fatal(err)
	}
	host, err := netnshost.New(name, subnet)
	if err != nil {
		t.Fatalf("New over a leftover host: %v", err)
	}
	t.Cleanup(func() { _ = host.Close() })
	if host.Address != "10.213.250.2" || host.HostAddress != "10.213.250.1" {
		t.Fatalf("addresses = %s, %s; want 10.213.250.2, 10.213.250.1", host.Address, host.HostAddress)
	}

	// The target listens in the root namespace on the host side, as a server the pod
	// reaches through its gateway would.
	scraped := make(chan string, 1)
	var once sync.Once
	listener, err := net.Listen("tcp", net.JoinHostPort(host.HostAddress, "0"))
	if err != nil {
		t.Fatal(err)
	}
	target := &http.Server{ReadHeaderTimeout: time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { scraped <- r.RemoteAddr })
		fmt.Fprintln(w, "netnshost_test_up 1")
	})}
	go func() { _ = target.Serve(listener) }()
	t.Cleanup(func() { _ = target.Close() })

	dir := t.TempDir()
	config := fmt.Sprintf("global:\n  scrape_interval: 1s\nscrape_configs:\n- job_name: root\n  static_configs:\n  - targets: [%q]\n",
		listener.Addr().String())
	configPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "prometheus.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	prometheus := host.Command(ctx, binary, "--config.file="+configPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+net.JoinHostPort(host.Address, "9090"))
	prometheus.Stdout, prometheus.Stderr = logFile, logFile
	if err := prometheus.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		_ = prometheus.Wait()
		if t.Failed() {
			data, _ := os.ReadFile(logPath)
			t.Logf("prometheus log:\n%s", data)
		}
	})

	client := &http.Client{Timeout: time.Second}
	ready := "http://" + net.JoinHostPort(host.Address, "9090") + "/-/ready"
	deadline := time.Now().Add(10 * time.Second)
	for {
		status, err := get(client, ready)
		if status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: status %d, error %v; want 200", ready, status, err)
		}
		time.Sleep(100 * time.Millisecond)
	}

	select {
	case remote := <-scraped:
		if remoteHost, _, _ := net.SplitHostPort(remote); remoteHost != host.Address {
			t.Errorf("scrape came from %s, want %s", remote, host.Address)
		}
	// Prometheus applies discovered targets at most every 5 seconds, so the first scrape
	// comes about 5 seconds after the start.
	case <-time.After(10 * time.Second):
		t.Errorf("prometheus did not scrape %s", listener.Addr())
	}

	if err := host.Close(); err != nil {
		t.Fatal(err)
	}
	if err := host.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// Prometheus still runs, but nothing routes to its address any more. The address then
	// follows the default route, where a gateway may answer (some sandboxes answer every
	// HTTP request with 404), so the check is that Prometheus does not.
	if status, err := get(client, ready); status == http.StatusOK {
		t.Fatalf("GET %s after Close: status %d, error %v; want Prometheus not to answer", ready, status, err)
	}
}

// get returns the status of GET url.
func get(client *http.Client, url string) (int, error) {
	response, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	_ = response.Body.Close()
	return response.StatusCode, nil
}
