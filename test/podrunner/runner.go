package main

import (
	"context"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// runner keeps its Node alive and runs the pods bound to it.
type runner struct {
	clientset kubernetes.Interface
	// reader resolves Service names, as cluster networking would route them.
	reader    client.Reader
	apiServer string
	caData    []byte
	caFile    string
	nodeName  string
	workDir   string
	binaries  []imageBinary

	mu   sync.Mutex
	pods map[string]*podProcess // by namespace/name
}

const heartbeatPeriod = 10 * time.Second

func (r *runner) run(ctx context.Context) error {
	if err := r.registerNode(ctx); err != nil {
		return err
	}
	go r.heartbeat(ctx)

	factory := informers.NewSharedInformerFactoryWithOptions(r.clientset, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", r.nodeName).String()
	}))
	podInformer := factory.Core().V1().Pods().Informer()
	_, err := podInformer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { r.sync(ctx, obj.(*corev1.Pod)) },
		UpdateFunc: func(_, obj any) { r.sync(ctx, obj.(*corev1.Pod)) },
		DeleteFunc: func(obj any) {
			if tombstone, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tombstone.Obj
			}
			if pod, ok := obj.(*corev1.Pod); ok {
				r.stop(pod.Namespace + "/" + pod.Name)
			}
		},
	})
	if err != nil {
		return err
	}
	factory.Start(ctx.Done())
	klog.InfoS("podrunner ready", "node", r.nodeName)
	<-ctx.Done()
	r.mu.Lock()
	keys := make([]string, 0, len(r.pods))
	for key := range r.pods {
		keys = append(keys, key)
	}
	r.mu.Unlock()
	for _, key := range keys {
		r.stop(key)
	}
	return nil
}

// sync starts a pod's process, or stops it and lets the pod go once it is being deleted.
func (r *runner) sync(ctx context.Context, pod *corev1.Pod) {
	key := pod.Namespace + "/" + pod.Name
	if pod.DeletionTimestamp != nil {
		r.stop(key)
		// As a kubelet does once the containers are gone.
		err := r.clientset.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: ptr.To[int64](0), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			klog.ErrorS(err, "finalize pod deletion", "pod", key)
		}
		return
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if existing, ok := r.pods[key]; ok && existing.uid == pod.UID {
		return
	}
	process := newPodProcess(r, pod)
	r.pods[key] = process
	go process.supervise(ctx)
}

func (r *runner) stop(key string) {
	r.mu.Lock()
	process, ok := r.pods[key]
	delete(r.pods, key)
	r.mu.Unlock()
	if ok {
		process.stop()
	}
}

// registerNode creates the runner's Node: Ready, with room for the scheduler pods, and
// without the kwok annotation, so that kwok leaves it and its pods alone.
func (r *runner) registerNode(ctx context.Context) error {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{
		Name:   r.nodeName,
		Labels: map[string]string{corev1.LabelHostname: r.nodeName, "node-role.kubernetes.io/scheduler-host": ""},
	}}
	if _, err := r.clientset.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("register node %s: %w", r.nodeName, err)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return r.updateNodeStatus(ctx) }); err != nil {
		return fmt.Errorf("report node status: %w", err)
	}
	// The TaintNodesByCondition admission plugin taints new nodes not-ready; the node
	// lifecycle controller would lift it after a while, podrunner does at once.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := r.clientset.CoreV1().Nodes().Get(ctx, r.nodeName, metav1.GetOptions{})
		if err != nil || len(current.Spec.Taints) == 0 {
			return err
		}
		current.Spec.Taints = nil
		_, err = r.clientset.CoreV1().Nodes().Update(ctx, current, metav1.UpdateOptions{})
		return err
	})
}

func (r *runner) updateNodeStatus(ctx context.Context) error {
	node, err := r.clientset.CoreV1().Nodes().Get(ctx, r.nodeName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("16"),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	now := metav1.Now()
	node.Status.Capacity, node.Status.Allocatable = capacity, capacity
	node.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "PodrunnerReady",
		Message: "podrunner runs this node's pods as host processes", LastHeartbeatTime: now, LastTransitionTime: now,
	}}
	node.Status.NodeInfo.KubeletVersion = "podrunner"
	_, err = r.clientset.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	return err
}

// heartbeat renews the node's Lease, as a kubelet does, so the node stays Ready.
func (r *runner) heartbeat(ctx context.Context) {
	ticker := time.NewTicker(heartbeatPeriod)
	defer ticker.Stop()
	for {
		if err := r.renewLease(ctx); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "renew node lease")
		}
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error { return r.updateNodeStatus(ctx) }); err != nil && ctx.Err() == nil {
			klog.ErrorS(err, "report node status")
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (r *runner) renewLease(ctx context.Context) error {
	leases := r.clientset.CoordinationV1().Leases(corev1.NamespaceNodeLease)
	now := metav1.NewMicroTime(time.Now())
	lease, err := leases.Get(ctx, r.nodeName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		_, err = leases.Create(ctx, &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Name: r.nodeName, Namespace: corev1.NamespaceNodeLease},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To(r.nodeName), LeaseDurationSeconds: ptr.To[int32](40), RenewTime: &now},
		}, metav1.CreateOptions{})
		return err
	}
	if err != nil {
		return err
	}
	lease.Spec.RenewTime = &now
	_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
	return err
}
