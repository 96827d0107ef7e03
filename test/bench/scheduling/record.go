package scheduling

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
)

// bindRecorder watches one run's pods and notes, on the benchmark's monotonic clock, when
// it first sees each one bound (spec.nodeName set) and where.
type bindRecorder struct {
	mu      sync.Mutex
	start   time.Time                // the first create of the run
	boundAt map[string]time.Duration // since start
	nodeOf  map[string]string
	want    int
	allDone chan struct{}

	stop chan struct{}
}

// watchBindings starts recording the bindings of run's pods, of which want are expected,
// and returns once the watch is established. Times count from begin.
func watchBindings(ctx context.Context, client kubernetes.Interface, run string, want int) (*bindRecorder, error) {
	recorder := &bindRecorder{
		start: time.Now(), boundAt: make(map[string]time.Duration, want), nodeOf: make(map[string]string, want),
		want: want, allDone: make(chan struct{}), stop: make(chan struct{}),
	}
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(benchNamespace),
		informers.WithTweakListOptions(func(options *metav1.ListOptions) { options.LabelSelector = runLabel + "=" + run }))
	informer := factory.Core().V1().Pods().Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    recorder.observe,
		UpdateFunc: func(_, pod any) { recorder.observe(pod) },
	}); err != nil {
		return nil, fmt.Errorf("watch pods: %w", err)
	}
	factory.Start(recorder.stop)
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !cache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		recorder.close()
		return nil, fmt.Errorf("watch pods: the informer did not sync")
	}
	return recorder, nil
}

// begin sets the start of the run, from which bind times count, and returns it.
func (r *bindRecorder) begin() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.start = time.Now()
	return r.start
}

func (r *bindRecorder) observe(object any) {
	pod, ok := object.(*corev1.Pod)
	if !ok || pod.Spec.NodeName == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Since(r.start)
	if _, seen := r.boundAt[pod.Name]; seen {
		return
	}
	r.boundAt[pod.Name] = now
	r.nodeOf[pod.Name] = pod.Spec.NodeName
	if len(r.boundAt) == r.want {
		close(r.allDone)
	}
}

// bindings is a copy of what was recorded: when each pod was seen bound, and where.
func (r *bindRecorder) bindings() (boundAt map[string]time.Duration, nodeOf map[string]string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	boundAt = make(map[string]time.Duration, len(r.boundAt))
	nodeOf = make(map[string]string, len(r.nodeOf))
	for name, at := range r.boundAt {
		boundAt[name] = at
		nodeOf[name] = r.nodeOf[name]
	}
	return boundAt, nodeOf
}

func (r *bindRecorder) close() { close(r.stop) }
