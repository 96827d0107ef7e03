package pendingpods

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
)

// BenchmarkStore5000PendingPods measures what the store of unscheduled pods keeps for
// 5,000 pending pods, as the pending-pods cluster benchmark has them (100 scheduler
// names, 10 namespaces), each decoded from protobuf as the informer's watch has it: the
// live heap per pod, the decoder's strings it keeps and the index included, after a
// collection.
func BenchmarkStore5000PendingPods(b *testing.B) {
	const pods = 5000
	now := time.Now()
	encoded := make([][]byte, pods)
	for i := range encoded {
		full := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: fmt.Sprintf("bench-pods-%02d", i%10), Name: fmt.Sprintf("pod-%05d", i),
				UID: types.UID(fmt.Sprintf("0b6b8c1e-4f1a-4d0e-9a57-%012d", i)), ResourceVersion: fmt.Sprint(100000 + i), CreationTimestamp: metav1.NewTime(now),
				Labels: map[string]string{"app": "bench-pods"}},
			Spec: corev1.PodSpec{SchedulerName: fmt.Sprintf("steady-%03d", i%100),
				Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
		}
		var err error
		if encoded[i], err = full.Marshal(); err != nil {
			b.Fatal(err)
		}
	}
	var perPod float64
	for b.Loop() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		indexer := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{SchedulerNameIndex: IndexSchedulerName})
		for _, data := range encoded {
			// Decoded as the informer's watch decodes it: the strings a Pod keeps are
			// the decoder's, and count.
			pod := &corev1.Pod{}
			if err := pod.Unmarshal(data); err != nil {
				b.Fatal(err)
			}
			stored, err := Trim(pod)
			if err != nil {
				b.Fatal(err)
			}
			if err := indexer.Add(stored); err != nil {
				b.Fatal(err)
			}
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		perPod = float64(after.HeapAlloc-before.HeapAlloc) / pods
		runtime.KeepAlive(indexer)
	}
	b.ReportMetric(perPod, "B/stored-pod")
}
