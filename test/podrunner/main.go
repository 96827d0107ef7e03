// Command podrunner is the kubelet of the local test cluster's real nodes. kwok runs no
// containers, so podrunner keeps Nodes of its own (which kwok does not manage) and runs
// the first container of each pod placed there as a host process, restarting it when it
// exits. The pod's status (Running, Ready from the process's readiness probe, restarts)
// comes from the real process.
//
// The nodes, which a test author can count on too:
//
//   - Names and labels: --nodes N Nodes (default 1), named --node-name when N is 1, else
//     NAME-1..NAME-N; each labelled kubernetes.io/hostname=ITS-NAME,
//     node-role.kubernetes.io/scheduler-host="" and topology.kubernetes.io/zone=zone-a,
//     zone-b, ... round-robin over --zones zones (default 2). Each is Ready, untainted, and
//     heartbeated every 10s (its Lease in kube-node-lease, owned by the Node, and its Ready
//     condition).
//   - Node failure: deleting one of podrunner's Nodes fails it as losing the machine would.
//     podrunner kills its pods' processes at once (SIGKILL to each process group, no grace
//     period), reports nothing more on them, stops heartbeating the node and does not
//     register it again (restart podrunner for that). The pods stay bound to the missing
//     node until kube-controller-manager's pod garbage collector deletes them, about a
//     minute later, and their controllers replace them.
//   - Cordoning a node (spec.unschedulable) changes nothing here: its pods keep running, as
//     on a real node, and kwok's kube-controller-manager evicts nothing unless taints say so.
//
// What a pod's process gets, which is what a test author can count on:
//
//   - Binary: the image maps to a local binary (--binaries), which takes the place of the
//     command's first element, or of the image's entrypoint when there is no command.
//   - Identity: a kubeconfig under --work-dir with a token of the pod's ServiceAccount,
//     bound to the pod, so that the RBAC under test is all the process has. KUBECONFIG
//     points at it, standing in for the in-cluster configuration (client-go and
//     controller-runtime programs honour it).
//   - Environment: the container's env: value; fieldRef to metadata.name, metadata.namespace,
//     metadata.uid, metadata.labels['KEY'], metadata.annotations['KEY'] (a missing one is
//     ""), spec.nodeName and spec.serviceAccountName; configMapKeyRef and secretKeyRef,
//     optional honoured. Besides, KUBECONFIG and podrunner's PATH and HOME, and nothing else
//     of podrunner's environment. Any other valueFrom, or envFrom, leaves the pod waiting in
//     CreateContainerConfigError.
//   - Volumes: each mount is a directory under --work-dir holding the ConfigMap's or
//     Secret's keys, or only the keys of its items, under their paths (empty for other
//     volumes). An argument, or the value of --flag=value, that is a path under a mount
//     path is moved to that directory. In the files, paths under a mount path are moved
//     alike, Service DNS names become a ready endpoint of the Service, and a
//     KubeSchedulerConfiguration is pointed at the kubeconfig.
//   - Ports: pods share the host's loopback, so each port the container declares (ports[]
//     and the ports of its httpGet probes, by number or name) gets a free host port, from
//     below the kernel's ephemeral range, which no other socket takes unasked. An
//     argument, or the value of --flag=value, of the form :PORT, 0.0.0.0:PORT or HOST:PORT
//     on a declared port becomes 127.0.0.1:HOSTPORT, and probes reach the host port.
//   - Probes: only httpGet probes run; others count as passing. Startup is checked every
//     periodSeconds after its initialDelaySeconds until it passes; until then the process
//     is not ready and liveness is not checked. Readiness is checked every second after its
//     initialDelaySeconds. Liveness is checked every periodSeconds after its
//     initialDelaySeconds; failureThreshold failures in a row of startup or liveness kill
//     the process (SIGTERM, then SIGKILL after the pod's grace period) and count a restart.
//   - Hostname: each process runs in a UTS namespace of its own whose hostname is the pod's,
//     as the kubelet names it (spec.hostname, else the pod's name, cut to 63 characters),
//     so that os.Hostname(), and so a leader election identity, tells replicas apart.
//     podrunner starts the process through itself (podrunner --exec-as-hostname NAME --
//     BINARY ARGS...), which sets the hostname and execs the binary in its place. That
//     needs root; otherwise processes keep the host's hostname, and podrunner logs one
//     warning.
//   - Service names: the process resolves name.namespace.svc (and .cluster.local) of the
//     Services that exist when it starts, as cluster DNS would for a headless Service: to
//     each ready endpoint's address, through an /etc/hosts of its own (the host's lines,
//     then the Services'), mounted by the helper in a mount namespace of its own. An
//     endpoint is listed only where it serves the Service's ports on the same numbers,
//     since a name cannot translate a port. Like the hostname, this needs root.
//   - kube-scheduler (the base name of command[0]) also gets --secure-port, the host port of
//     its default secure port 10259, and --authentication-kubeconfig and
//     --authorization-kubeconfig, which it would take from the cluster in a pod.
//
// With --fake-ready, podrunner starts no process at all: each pod is reported Running and
// Ready at once, and stays so until it is deleted. This is for benchmarks of the operator
// that run more schedulers than the machine could run as processes; nothing is scheduled
// by such a pod.
//
// The process's output goes to pods/NAMESPACE_NAME_UIDPREFIX/process.log under --work-dir,
// and its pid to the file pid beside it: the program's own pid, so that a test kills the
// program (to simulate a crash, which podrunner restarts) by killing that pid. podrunner
// serves that output as a kubelet does (its containerLogs endpoint, over TLS on a loopback
// port that its Nodes give as their kubelet's, with 127.0.0.1 as their address), so that
// kubectl logs works: the current run, or --previous the one before, with --tail,
// --limit-bytes and --follow; --timestamps and --since are refused, as no time per line is
// kept. On the same port it serves the kubelet's resource metrics (/metrics/resource): each
// running process's CPU time and resident memory, read from /proc, and the host's use as
// its nodes', so that metrics-server, where the cluster runs one, makes kubectl top work.
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
	hostnameHelper(os.Args[1:])
	var (
		kubeconfig, nodeName, workDir, binaries string
		nodeCount, zoneCount                    int
		fakeReady                               bool
	)
	flag.StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (an administrator's)")
	flag.StringVar(&nodeName, "node-name", "scheduler-host", "name of the Node whose pods podrunner runs; with --nodes above 1, the Nodes are NAME-1..NAME-N")
	flag.IntVar(&nodeCount, "nodes", 1, "how many Nodes podrunner keeps and runs the pods of")
	flag.IntVar(&zoneCount, "zones", 2, "how many zones (zone-a, zone-b, ...) the Nodes are spread over, round-robin, by their topology.kubernetes.io/zone label")
	flag.StringVar(&workDir, "work-dir", "_artifacts/podrunner", "where pod volumes, kubeconfigs and process logs go")
	flag.StringVar(&binaries, "binaries", "",
		"comma-separated IMAGE-SUBSTRING=PATH pairs mapping images to local binaries, first match wins, for example scheduler-plugins=/path/kube-scheduler,kube-scheduler=/path/kube-scheduler")
	flag.BoolVar(&fakeReady, "fake-ready", false,
		"start no process: report every pod Running and Ready at once (for benchmarks that run more pods than the machine can run processes)")
	klog.InitFlags(nil)
	flag.Parse()

	if nodeCount < 1 {
		klog.Fatalf("--nodes %d: podrunner keeps at least one Node", nodeCount)
	}
	if zoneCount < 1 || zoneCount > 26 {
		klog.Fatalf("--zones %d: zones are zone-a to zone-z, from 1 to 26 of them", zoneCount)
	}
	mapping, err := parseBinaries(binaries)
	if err != nil {
		klog.Fatal(err)
	}
	config, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		klog.Fatalf("load kubeconfig: %v", err)
	}
	// A kubelet's defaults (--kube-api-qps, --kube-api-burst); client-go's, 5 and 10, would
	// make hundreds of pods wait for their status.
	config.QPS, config.Burst = 50, 100
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
		nodeCount: nodeCount,
		zoneCount: zoneCount,
		workDir:   workDir,
		binaries:  mapping,
		fakeReady: fakeReady,
		hostPorts: newHostPortPool(),
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
