package statusapply

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
)

// TestNewestStatus checks which status a reconcile starts from: the one last written
// while the cache is behind it, else the cache's, which then replaces the memory.
func TestNewestStatus(t *testing.T) {
	written := v1.SecondarySchedulerStatus{ObservedGeneration: 2, SchedulerName: "written"}
	cached := v1.SecondarySchedulerStatus{ObservedGeneration: 1, SchedulerName: "cached"}
	tests := []struct {
		name        string
		cachedUID   types.UID
		cachedRV    string
		want        string
		remembering bool
	}{
		{"the cache is behind the write", "uid-1", "41", "written", true},
		{"the cache has the write", "uid-1", "42", "cached", false},
		{"the cache has a later change", "uid-1", "1000", "cached", false},
		{"another resource of the same name", "uid-2", "41", "cached", false},
		{"resourceVersions that cannot be compared", "uid-1", "opaque-41", "cached", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewWriter(nil, "test")
			cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "packer", UID: "uid-1"}}
			w.remember(cr, "42", &written)
			cr.UID, cr.ResourceVersion, cr.Status = tt.cachedUID, tt.cachedRV, *cached.DeepCopy()
			w.Newest(cr)
			if cr.Status.SchedulerName != tt.want {
				t.Errorf("status of %q, want %q", cr.Status.SchedulerName, tt.want)
			}
			if _, remembering := w.written[types.NamespacedName{Namespace: "ns", Name: "packer"}]; remembering != tt.remembering {
				t.Errorf("remembering the write: %t, want %t", remembering, tt.remembering)
			}
		})
	}
}
