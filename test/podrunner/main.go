// Command podrunner is the kubelet of the scheduler pods in the local test cluster. kwok
// runs no containers, so podrunner keeps a Node of its own (which kwok does not manage),
// and runs each pod placed there as a host process: the image is mapped to a local
// binary, ConfigMap and Secret volumes are written to a directory and the pod's paths
// rewritten to it, and the process reaches the API server with a token of the pod's own
// ServiceAccount, so that the RBAC the operator rendered is what gets tested. The pod's
// status (Running, Ready from the process's own readiness probe, restarts) comes from the
// real process.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func main() {
	var (
		kubeconfig, nodeName, workDir, binaries string
	)
	flag.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (an administrator's)")
	flag.StringVar(&nodeName, "node-name", "scheduler-host", "name of the Node whose pods podrunner runs")
	flag.StringVar(&workDir, "work-dir", "_artifacts/podrunner", "where pod volumes, kubeconfigs and process logs go")
	flag.StringVar(&binaries, "binaries", "",
		"comma-separated IMAGE-SUBSTRING=PATH pairs mapping images to local binaries, first match wins, for example scheduler-plugins=/path/kube-scheduler,kube-scheduler=/path/kube-scheduler")
	klog.InitFlags(nil)
	flag.Parse()

	mapping, err := parseBinaries(binaries)
	if err != nil {
		klog.Fatal(err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		klog.Fatalf("load kubeconfig: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	reader, err := client.New(config, client.Options{})
	if err != nil {
		klog.Fatalf("create client: %v", err)
	}
	r := &runner{
		clientset: kubernetes.NewForConfigOrDie(config),
		reader:    reader,
		apiServer: config.Host,
		caData:    config.CAData,
		caFile:    config.CAFile,
		nodeName:  nodeName,
		workDir:   workDir,
		binaries:  mapping,
		pods:      map[string]*podProcess{},
	}
	if err := r.run(ctx); err != nil {
		klog.Fatal(err)
	}
}

// imageBinary maps images whose reference contains a substring to a local binary.
type imageBinary struct{ imageSubstring, path string }

func parseBinaries(value string) ([]imageBinary, error) {
	var mapping []imageBinary
	for _, pair := range strings.Split(value, ",") {
		if pair == "" {
			continue
		}
		substring, path, ok := strings.Cut(pair, "=")
		if !ok || substring == "" || path == "" {
			return nil, fmt.Errorf("--binaries: %q is not IMAGE-SUBSTRING=PATH", pair)
		}
		mapping = append(mapping, imageBinary{substring, path})
	}
	return mapping, nil
}
