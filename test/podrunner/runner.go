package main

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// runner keeps its Nodes alive and runs the pods bound to them.
type runner struct {
	clientset kubernetes.Interface
	// reader resolves Service names, as cluster networking would route them.
	reader    client.Reader
	apiServer string
	caData    []byte
	caFile    string
	nodeName  string
	nodeCount int
	zoneCount int
	workDir   string
	binaries  []imageBinary
	// fakeReady reports pods Running and Ready without starting their processes.
	fakeReady bool
	// kubeletPort is where serveKubelet serves the nodes' kubelet endpoint on loopback.
	kubeletPort int32
	// hostPorts are where the processes serve their containers' declared ports.
	hostPorts *hostPortPool

	// noUTSNamespace is set once starting a process in a UTS namespace of its own failed
	// for want of privilege; processes then keep the host's hostname.
	noUTSNamespace atomic.Bool
	utsWarning     sync.Once

	mu   sync.Mutex
	pods map[string]*podProcess // by namespace/name
}

func (r *runner) run(ctx context.Context) error {
	port, err := r.serveKubelet(ctx)
	if err != nil {
		return fmt.Errorf("serve the kubelet's endpoint: %w", err)
	}
	r.kubeletPort = port
	nodes := desiredNodes(r.nodeName, r.nodeCount, r.zoneCount)
	names := make([]string, 0, len(nodes))
	for _, node := range nodes {
		// As a kubelet does, podrunner outlives an API server that is not there yet or
		// restarting: it keeps trying.
		uid, err := r.registerNode(ctx, node)
		for err != nil {
			klog.ErrorS(err, "register node; retrying in 2s", "node", node.Name)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(2 * time.Second):
			}
			uid, err = r.registerNode(ctx, node)
		}
		if err := r.runNode(ctx, node.Name, uid); err != nil {
			return err
		}
		names = append(names, node.Name)
	}
	klog.InfoS("podrunner ready", "nodes", names)
	<-ctx.Done()
	r.mu.Lock()
	processes := make([]*podProcess, 0, len(r.pods))
	for _, process := range r.pods {
		processes = append(processes, process)
	}
	r.mu.Unlock()
	for _, process := range processes {
		process.stop()
	}
	return nil
}

// runNode heartbeats one node and runs the pods bound to it, until ctx ends or the Node is
// deleted, which fails the node.
func (r *runner) runNode(ctx context.Context, nodeName string, nodeUID types.UID) error {
	nodeCtx, stopNode := context.WithCancel(ctx)
	podInformer := coreinformers.NewFilteredPodInformer(r.clientset, metav1.NamespaceAll, 0, toolscache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", nodeName).String()
	})
	_, err := podInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.sync(nodeCtx, obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { r.sync(nodeCtx, obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if pod, ok := deletedObject(obj).(*corev1.Pod); ok {
				r.stop(pod.Namespace+"/"+pod.Name, pod.UID)
			}
		},
	})
	if err != nil {
		stopNode()
		return err
	}
	nodeInformer := coreinformers.NewFilteredNodeInformer(r.clientset, 0, toolscache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", nodeName).String()
	})
	// Only deletion counts: a cordoned node, as a real one, keeps running its pods.
	_, err = nodeInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: func(any) { r.failNode(nodeName, stopNode) },
	})
	if err != nil {
		stopNode()
		return err
	}
	go r.heartbeat(nodeCtx, nodeName, nodeUID)
	go podInformer.Run(nodeCtx.Done())
	go nodeInformer.Run(nodeCtx.Done())
	return nil
}

// deletedObject is the object of a delete event, also when the informer missed the
// deletion and only knows the last state it saw.
func deletedObject(obj any) any {
	if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		return tombstone.Obj
	}
	return obj
}

// failNode does what losing a node would: its pods' processes die at once (SIGKILL, no
// grace period) and nothing reports on the node or its pods any more. The node is not
// registered again.
func (r *runner) failNode(nodeName string, stopNode context.CancelFunc) {
	klog.InfoS("node deleted; killing its pods' processes and no longer heartbeating it", "node", nodeName)
	r.mu.Lock()
	var failed []*podProcess
	for key, process := range r.pods {
		if process.nodeName == nodeName {
			process.failed.Store(true)
			failed = append(failed, process)
			delete(r.pods, key)
		}
	}
	// Under the lock, so that sync starts no more processes on the node.
	stopNode()
	r.mu.Unlock()
	for _, process := range failed {
		process.stop()
	}
}

// sync starts a pod's process, or stops it and lets the pod go once it is being deleted.
// ctx is the node's: it ends when podrunner stops or the node fails.
func (r *runner) sync(ctx context.Context, pod *corev1.Pod) {
	key := pod.Namespace + "/" + pod.Name
	if pod.DeletionTimestamp != nil {
		r.stop(key, pod.UID)
		// As a kubelet does once the containers are gone.
		err := r.clientset.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) && ctx.Err() == nil {
			klog.ErrorS(err, "finalize pod deletion", "pod", key)
		}
		return
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if ctx.Err() != nil {
		return
	}
	if existing, ok := r.pods[key]; ok {
		if existing.uid == pod.UID {
			return
		}
		// A new pod of the same name: the old one's process goes first, as its pod did.
		go existing.stop()
	}
	processCtx, cancel := context.WithCancel(ctx)
	process := newPodProcess(r, pod, cancel)
	r.pods[key] = process
	go process.supervise(processCtx)
}

// stop stops the process of the pod key with uid, if it runs: a pod of the same name
// created since has a process of its own, which stays.
func (r *runner) stop(key string, uid types.UID) {
	r.mu.Lock()
	process, ok := r.pods[key]
	ok = ok && process.uid == uid
	if ok {
		delete(r.pods, key)
	}
	r.mu.Unlock()
	if ok {
		process.stop()
	}
}
