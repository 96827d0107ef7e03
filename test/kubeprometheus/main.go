// Command kubeprometheus plays kube-prometheus on the local cluster, for the docs that
// assume it (docs/getting-started.md): what the secondary schedulers' operator and
// scheduler-plugins' load-watcher look for is real, and the rest is left out.
//
// What is real:
//   - A Prometheus (Debian's prometheus package) on a test host of its own, a network
//     namespace (test/netnshost), reachable the way a pod is, at 10.213.<subnet>.2:9090.
//   - In namespace monitoring, kube-prometheus' names: the Prometheus Operator's object
//     Prometheus k8s (selecting every PrometheusRule, as kube-prometheus' does), its
//     headless Service prometheus-operated and the Service prometheus-k8s, whose
//     EndpointSlices name that Prometheus, and the ServiceAccount prometheus-k8s.
//   - The Prometheus Operator's API (CRDs of Prometheus, ServiceMonitor and
//     PrometheusRule, with open schemas), and its handling of rules: every PrometheusRule
//     of the cluster is loaded into that Prometheus, which evaluates it, within seconds of
//     a change.
//   - Node metrics: demoload (hack/demoload) serves each node's CPU and memory use, made
//     up from the pods bound to it, as demoload_node_cpu_utilisation_ratio and
//     demoload_node_memory_utilisation_ratio; the PrometheusRule node-exporter-rules
//     records load-watcher's two series, instance:node_cpu:ratio and
//     instance:node_memory_utilisation:ratio, from them, as kube-prometheus' own rules
//     record them from node-exporter's.
//
// Left out: no Prometheus Operator, so ServiceMonitors are not scraped, no Alertmanager,
// Grafana or node-exporter, and its NetworkPolicies are not enforced (the local cluster's
// network plugin, CNI's bridge on its real node, enforces none).
//
// It runs until SIGTERM or SIGINT, then stops Prometheus and demoload and removes the
// network namespace; the cluster's objects stay. It needs root, for the network namespace.
//
// Usage: kubeprometheus --kubeconfig FILE --demoload BINARY [--work-dir DIR] [--subnet N]
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/secondary-scheduler/secondary-scheduler-operator/test/crdready"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/netnshost"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// fieldOwner applies the stand-in's objects.
const fieldOwner = "kube-prometheus-stand-in"

// prometheusPort is where Prometheus serves, as kube-prometheus' does.
const prometheusPort = "9090"

// demoloadPort is where demoload serves, on the root namespace's side of the link.
const demoloadPort = "9100"

// ruleSyncPeriod is how often PrometheusRules are loaded into Prometheus.
const ruleSyncPeriod = 2 * time.Second

func main() {
	var kubeconfig, demoload, workDir string
	var subnet int
	flag.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (an administrator's)")
	flag.StringVar(&demoload, "demoload", "bin/demoload", "the demoload binary (go build ./hack/demoload)")
	flag.StringVar(&workDir, "work-dir", "_output/kube-prometheus", "where Prometheus' configuration, rules, data and logs go")
	flag.IntVar(&subnet, "subnet", 251, "the test host's subnet: 10.213.N.0/24")
	klog.InitFlags(nil)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, kubeconfig, demoload, workDir, subnet); err != nil {
		klog.Fatal(err)
	}
}

func run(ctx context.Context, kubeconfig, demoload, workDir string, subnet int) error {
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("load kubeconfig: %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("create client: %w", err)
	}
	host, err := netnshost.New("ssop-kube-prometheus", subnet)
	if err != nil {
		return err
	}
	defer func() {
		if err := host.Close(); err != nil {
			klog.ErrorS(err, "remove the test host")
		}
	}()
	rulesDir := filepath.Join(workDir, "rules")
	if err := os.MkdirAll(rulesDir, 0o755); err != nil {
		return err
	}

	load := exec.CommandContext(ctx, demoload, "--kubeconfig", kubeconfig, "--listen", host.HostAddress+":"+demoloadPort,
		"--cpu-series", "demoload_node_cpu_utilisation_ratio", "--memory-series", "demoload_node_memory_utilisation_ratio")
	if err := startLogged(load, filepath.Join(workDir, "demoload.log")); err != nil {
		return fmt.Errorf("start demoload: %w", err)
	}
	defer stopProcess(load)
	prometheus, err := startPrometheus(ctx, host, workDir, rulesDir)
	if err != nil {
		return err
	}
	defer stopProcess(prometheus)

	if err := installAPI(ctx, c); err != nil {
		return err
	}
	if err := applyObjects(ctx, c, host.Address); err != nil {
		return err
	}
	klog.InfoS("kube-prometheus stands in", "prometheus", "http://"+host.Address+":"+prometheusPort, "namespace", "monitoring")
	loaded := map[string][]byte{}
	for {
		if err := syncRules(ctx, c, rulesDir, loaded, prometheus); err != nil {
			klog.ErrorS(err, "load PrometheusRules into Prometheus")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(ruleSyncPeriod):
		}
	}
}

// startLogged starts command with its output to logPath.
func startLogged(command *exec.Cmd, logPath string) error {
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	command.Stdout, command.Stderr = logFile, logFile
	// The command's own context stops it with SIGKILL; stopProcess asks first.
	command.Cancel = func() error { return command.Process.Signal(syscall.SIGTERM) }
	command.WaitDelay = 10 * time.Second
	return command.Start()
}

// stopProcess ends command and waits for it.
func stopProcess(command *exec.Cmd) {
	_ = command.Process.Signal(syscall.SIGTERM)
	_ = command.Wait()
}

// startPrometheus runs Prometheus in host, scraping demoload every 5 s and evaluating the
// rule files of rulesDir, and waits until it is ready.
func startPrometheus(ctx context.Context, host *netnshost.Host, workDir, rulesDir string) (*exec.Cmd, error) {
	binary, err := promtest.Binary()
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(workDir, "prometheus.yml")
	config := fmt.Sprintf(`global: {scrape_interval: 5s, evaluation_interval: 5s}
rule_files: [%q]
scrape_configs:
- job_name: node-load
  # demoload's series carry instance=<node name>, as load-watcher needs: keep it.
  honor_labels: true
  static_configs: [{targets: [%q]}]
`, filepath.Join(rulesDir, "*.yaml"), host.HostAddress+":"+demoloadPort)
	if err := os.WriteFile(configPath, []byte(config), 0o644); err != nil {
		return nil, err
	}
	address := host.Address + ":" + prometheusPort
	prometheus := host.Command(ctx, binary, "--config.file="+configPath, "--storage.tsdb.path="+filepath.Join(workDir, "data"),
		"--web.listen-address="+address)
	if err := startLogged(prometheus, filepath.Join(workDir, "prometheus.log")); err != nil {
		return nil, fmt.Errorf("start prometheus: %w", err)
	}
	if err := promtest.WaitReady(ctx, "http://"+address, 30*time.Second); err != nil {
		stopProcess(prometheus)
		return nil, err
	}
	return prometheus, nil
}

// installAPI creates the Prometheus Operator's CRDs and waits until they are served.
func installAPI(ctx context.Context, c client.Client) error {
	crds := []*apiextensionsv1.CustomResourceDefinition{
		promtest.OperatorCRD("Prometheus", "prometheuses", "prometheus"),
		promtest.OperatorCRD("ServiceMonitor", "servicemonitors", "servicemonitor"),
		promtest.OperatorCRD("PrometheusRule", "prometheusrules", "prometheusrule"),
	}
	for _, crd := range crds {
		if err := c.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create CRD %s: %w", crd.Name, err)
		}
	}
	for _, crd := range crds {
		if err := crdready.Wait(ctx, c, crd.Name, 30*time.Second); err != nil {
			return err
		}
	}
	return nil
}

// prometheusServices are the Services of kube-prometheus' Prometheus that discovery and
// users name; both route to the test host's Prometheus.
var prometheusServices = []string{"prometheus-operated", "prometheus-k8s"}

// applyObjects applies the stand-in's objects in namespace monitoring, and for each of
// prometheusServices an EndpointSlice naming address, where Prometheus serves.
func applyObjects(ctx context.Context, c client.Client, address string) error {
	documents := strings.Split(objects, "\n---\n")
	for _, service := range prometheusServices {
		documents = append(documents, fmt.Sprintf(endpointSlice, service, service, address))
	}
	for _, document := range documents {
		object := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(document), &object.Object); err != nil {
			return fmt.Errorf("read the stand-in's objects: %w", err)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(object), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("apply %s %s: %w", object.GetKind(), object.GetName(), err)
		}
	}
	return nil
}

// syncRules writes each PrometheusRule's groups to a rule file of rulesDir, as the
// Prometheus Operator does, removes the files of deleted ones, and has prometheus reload
// them when anything changed. loaded holds the files last written, by name.
func syncRules(ctx context.Context, c client.Client, rulesDir string, loaded map[string][]byte, prometheus *exec.Cmd) error {
	rules := &unstructured.UnstructuredList{}
	rules.SetAPIVersion("monitoring.coreos.com/v1")
	rules.SetKind("PrometheusRuleList")
	if err := c.List(ctx, rules); err != nil {
		return fmt.Errorf("list PrometheusRules: %w", err)
	}
	wanted := map[string][]byte{}
	for _, rule := range rules.Items {
		groups, _, err := unstructured.NestedSlice(rule.Object, "spec", "groups")
		if err != nil {
			klog.ErrorS(err, "PrometheusRule left out", "rule", klog.KObj(&rule))
			continue
		}
		content, err := yaml.Marshal(map[string]any{"groups": groups})
		if err != nil {
			return err
		}
		wanted[rule.GetNamespace()+"-"+rule.GetName()+".yaml"] = content
	}
	changed := false
	for name := range loaded {
		if _, ok := wanted[name]; !ok {
			if err := os.Remove(filepath.Join(rulesDir, name)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return err
			}
			delete(loaded, name)
			changed = true
		}
	}
	for name, content := range wanted {
		if bytes.Equal(loaded[name], content) {
			continue
		}
		if err := os.WriteFile(filepath.Join(rulesDir, name), content, 0o644); err != nil {
			return err
		}
		loaded[name] = content
		changed = true
	}
	if !changed {
		return nil
	}
	klog.InfoS("loading PrometheusRules", "files", len(loaded))
	// Prometheus reloads its configuration and rule files on SIGHUP.
	return prometheus.Process.Signal(syscall.SIGHUP)
}

// objects are kube-prometheus' objects that the operator and load-watcher look for, in
// namespace monitoring, but for the Services' EndpointSlices (endpointSlice).
const objects = `apiVersion: v1
kind: Namespace
metadata:
  name: monitoring
---
apiVersion: v1
kind: ServiceAccount
metadata:
  name: prometheus-k8s
  namespace: monitoring
---
apiVersion: monitoring.coreos.com/v1
kind: Prometheus
metadata:
  name: k8s
  namespace: monitoring
  labels:
    app.kubernetes.io/name: prometheus
    app.kubernetes.io/instance: k8s
spec:
  serviceAccountName: prometheus-k8s
  ruleSelector: {}
  ruleNamespaceSelector: {}
  serviceMonitorSelector: {}
  serviceMonitorNamespaceSelector: {}
---
apiVersion: v1
kind: Service
metadata:
  name: prometheus-operated
  namespace: monitoring
spec:
  clusterIP: None
  ports:
  - name: web
    port: 9090
    targetPort: web
---
apiVersion: v1
kind: Service
metadata:
  name: prometheus-k8s
  namespace: monitoring
spec:
  ports:
  - name: web
    port: 9090
    targetPort: 9090
---
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: node-exporter-rules
  namespace: monitoring
  labels:
    app.kubernetes.io/name: kube-prometheus
    prometheus: k8s
    role: alert-rules
spec:
  groups:
  - name: node-exporter.rules
    rules:
    - record: instance:node_cpu:ratio
      expr: demoload_node_cpu_utilisation_ratio
    - record: instance:node_memory_utilisation:ratio
      expr: demoload_node_memory_utilisation_ratio`

// endpointSlice routes the Service named by its first and second arguments to the
// Prometheus at the address of its third, on kube-prometheus' port web.
const endpointSlice = `apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: %s-k8s
  namespace: monitoring
  labels:
    kubernetes.io/service-name: %s
addressType: IPv4
endpoints:
- addresses: [%q]
  conditions: {ready: true}
ports:
- name: web
  port: 9090
  protocol: TCP`
