// Command demoload serves, for the demo's cluster, the two series scheduler-plugins'
// load-watcher reads from Prometheus, as kube-prometheus' recording rules would compute
// them from node-exporter: instance:node_cpu:ratio and
// instance:node_memory_utilisation:ratio, labelled instance=<node name>. kwok's nodes run
// nothing, so a node's load is made up from the pods bound to it: each pod uses what its
// annotations demo.secondary-scheduler.io/cpu-use and memory-use say (a quantity), else
// what it requests, plus a small idle load per node. A Prometheus on loopback scrapes it
// (hack/demo.sh prometheus), and load-aware schedulers of the demo read that Prometheus.
//
// With --rbac-proxy-listen it also serves that Prometheus over TLS behind a bearer-token
// check, as kube-rbac-proxy does in front of many clusters' Prometheus: a caller's token
// must pass a TokenReview, and its user may read get on prometheuses/api in namespace
// monitoring (ClusterRole prometheus-k8s-reader grants that). The serving certificate's CA
// is written to --rbac-proxy-ca-file, for a scheduler's caBundle.
//
// --cpu-series and --memory-series name the two series otherwise, for a Prometheus that
// records load-watcher's names from them with rules of its own (test/kubeprometheus).
//
// Usage: demoload --kubeconfig FILE [--listen 127.0.0.1:9100] [--cpu-series NAME --memory-series NAME]
// [--rbac-proxy-listen 127.0.0.1:9091 --rbac-proxy-upstream http://127.0.0.1:9090 --rbac-proxy-ca-file FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"math"
	"net/http"
	"net/url"
	"os"
	"slices"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/rbacproxy"
)

// The annotations that say how much of a resource a pod really uses, as a quantity.
const (
	cpuUseAnnotation    = "demo.secondary-scheduler.io/cpu-use"
	memoryUseAnnotation = "demo.secondary-scheduler.io/memory-use"
)

// idleFraction is the load of a node that runs no pod (its system daemons).
const idleFraction = 0.05

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig of the demo's cluster")
	listen := flag.String("listen", "127.0.0.1:9100", "address to serve /metrics on")
	proxyListen := flag.String("rbac-proxy-listen", "", "address to serve Prometheus on behind a token check; empty: none")
	proxyUpstream := flag.String("rbac-proxy-upstream", "http://127.0.0.1:9090", "the Prometheus the proxy serves")
	proxyCAFile := flag.String("rbac-proxy-ca-file", "", "where to write the PEM CA of the proxy's serving certificate")
	var series seriesNames
	flag.StringVar(&series.cpu, "cpu-series", metricsprobe.Series[0], "name of the series of each node's CPU use")
	flag.StringVar(&series.memory, "memory-series", metricsprobe.Series[1], "name of the series of each node's memory use")
	flag.Parse()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatalf("read kubeconfig: %v", err)
	}
	clientset, err := kubernetes.NewForConfig(config)
	if err != nil {
		log.Fatalf("client: %v", err)
	}
	if *proxyListen != "" {
		if err := startProxy(config, *proxyListen, *proxyUpstream, *proxyCAFile); err != nil {
			log.Fatal(err)
		}
	}
	http.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 5*time.Second)
		defer cancel()
		body, err := exposition(ctx, clientset, series)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(body))
	})
	server := &http.Server{Addr: *listen, ReadHeaderTimeout: 5 * time.Second}
	log.Printf("serving node load on http://%s/metrics", *listen)
	log.Fatal(server.ListenAndServe())
}

// seriesNames are the names demoload gives the two series.
type seriesNames struct{ cpu, memory string }

// exposition is the two series of every node, in Prometheus' text format.
func exposition(ctx context.Context, clientset kubernetes.Interface, series seriesNames) (string, error) {
	nodes, err := clientset.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list nodes: %w", err)
	}
	pods, err := clientset.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName!="})
	if err != nil {
		return "", fmt.Errorf("list pods: %w", err)
	}
	return render(nodes.Items, pods.Items, series), nil
}

// render is the exposition of the nodes' load from the pods bound to them.
func render(nodes []corev1.Node, pods []corev1.Pod, series seriesNames) string {
	used := map[string]corev1.ResourceList{}
	for i := range pods {
		pod := &pods[i]
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		total := used[pod.Spec.NodeName]
		if total == nil {
			total = corev1.ResourceList{corev1.ResourceCPU: resource.Quantity{}, corev1.ResourceMemory: resource.Quantity{}}
			used[pod.Spec.NodeName] = total
		}
		for name, annotation := range map[corev1.ResourceName]string{corev1.ResourceCPU: cpuUseAnnotation, corev1.ResourceMemory: memoryUseAnnotation} {
			sum := total[name]
			sum.Add(podUse(pod, name, annotation))
			total[name] = sum
		}
	}
	names := make([]string, 0, len(nodes))
	load := make(map[string]promtest.NodeLoad, len(nodes))
	for i := range nodes {
		node := &nodes[i]
		usage := used[node.Name]
		names = append(names, node.Name)
		load[node.Name] = promtest.NodeLoad{
			CPU:    fraction(usage[corev1.ResourceCPU], node.Status.Allocatable[corev1.ResourceCPU]),
			Memory: fraction(usage[corev1.ResourceMemory], node.Status.Allocatable[corev1.ResourceMemory]),
		}
	}
	slices.Sort(names)
	return promtest.NodeLoadExposition(series.cpu, series.memory, names, load)
}

// podUse is how much of resource name pod uses: its annotation's quantity, else the sum
// of its containers' requests.
func podUse(pod *corev1.Pod, name corev1.ResourceName, annotation string) resource.Quantity {
	if value, ok := pod.Annotations[annotation]; ok {
		if quantity, err := resource.ParseQuantity(value); err == nil {
			return quantity
		}
	}
	var total resource.Quantity
	for _, container := range pod.Spec.Containers {
		total.Add(container.Resources.Requests[name])
	}
	return total
}

// fraction is used over allocatable plus the idle load, at most 1, to four places (a
// hundredth of a percent, finer than any scoring reads).
func fraction(used, allocatable resource.Quantity) float64 {
	if allocatable.IsZero() {
		return idleFraction
	}
	return math.Round(min(1, idleFraction+used.AsApproximateFloat64()/allocatable.AsApproximateFloat64())*1e4) / 1e4
}

// prometheusReaderAccess is what the proxy asks of a caller: get on the api of
// prometheuses in monitoring, which the demo's ClusterRole prometheus-k8s-reader grants.
var prometheusReaderAccess = authorizationv1.ResourceAttributes{
	Namespace: "monitoring", Verb: "get", Group: "monitoring.coreos.com", Resource: "prometheuses", Subresource: "api",
}

// proxyDNSNames are the names the proxy's certificate is valid for: kube-prometheus'
// Service, which test/kubeprometheus plays, and the demo's Service prometheus in namespace
// demo (hack/demo.sh prometheus), through which the demo's pods reach it.
var proxyDNSNames = []string{"prometheus-k8s.monitoring.svc", "prometheus.demo.svc"}

// startProxy serves upstream on listen over TLS behind the token check, and writes its CA.
func startProxy(config *rest.Config, listen, upstream, caFile string) error {
	target, err := url.Parse(upstream)
	if err != nil {
		return fmt.Errorf("--rbac-proxy-upstream: %w", err)
	}
	proxy, err := rbacproxy.Start(rbacproxy.Options{ListenAddress: listen, Upstream: target, Config: config,
		Authorization: prometheusReaderAccess, DNSNames: proxyDNSNames})
	if err != nil {
		return err
	}
	if caFile != "" {
		if err := os.WriteFile(caFile, proxy.CAPEM, 0o644); err != nil {
			return fmt.Errorf("write the proxy's CA: %w", err)
		}
	}
	log.Printf("serving %s on %s behind a token check", upstream, proxy.URL)
	return nil
}
