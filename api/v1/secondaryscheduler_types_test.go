package v1

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestEffectiveValues(t *testing.T) {
	tests := []struct {
		name              string
		spec              SecondarySchedulerSpec
		wantSchedulerName string
		wantProfile       ProfileType
		wantState         ManagementState
		wantReplicas      int32
	}{
		{"defaults", SecondarySchedulerSpec{SchedulerConfig: "cm"}, "my-scheduler", CustomProfile, Managed, 1},
		{"explicit name and profile", SecondarySchedulerSpec{SchedulerName: "packing", Profile: &Profile{Type: BinPackingProfile}},
			"packing", BinPackingProfile, Managed, 1},
		{"Force means Managed", SecondarySchedulerSpec{ManagementState: Force}, "my-scheduler", CustomProfile, Managed, 1},
		{"Unmanaged", SecondarySchedulerSpec{ManagementState: Unmanaged}, "my-scheduler", CustomProfile, Unmanaged, 1},
		{"Removed", SecondarySchedulerSpec{ManagementState: Removed}, "my-scheduler", CustomProfile, Removed, 1},
		{"HA default replicas", SecondarySchedulerSpec{Topology: &Topology{Mode: HighlyAvailable}}, "my-scheduler", CustomProfile, Managed, 3},
		{"HA max replicas", SecondarySchedulerSpec{Topology: &Topology{Mode: HighlyAvailable,
			HighlyAvailableTopology: &HighlyAvailableTopology{MaxReplicas: ptr.To[int32](5)}}}, "my-scheduler", CustomProfile, Managed, 5},
		{"single replica ignores HA settings", SecondarySchedulerSpec{Topology: &Topology{Mode: SingleReplica}}, "my-scheduler", CustomProfile, Managed, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := &SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Name: "my-scheduler"}, Spec: tt.spec}
			if got := cr.EffectiveSchedulerName(); got != tt.wantSchedulerName {
				t.Errorf("EffectiveSchedulerName = %q, want %q", got, tt.wantSchedulerName)
			}
			if got := cr.EffectiveProfile(); got != tt.wantProfile {
				t.Errorf("EffectiveProfile = %q, want %q", got, tt.wantProfile)
			}
			if got := cr.EffectiveManagementState(); got != tt.wantState {
				t.Errorf("EffectiveManagementState = %q, want %q", got, tt.wantState)
			}
			if got := cr.MaxReplicas(); got != tt.wantReplicas {
				t.Errorf("MaxReplicas = %d, want %d", got, tt.wantReplicas)
			}
		})
	}
}

func TestLogLevelVerbosity(t *testing.T) {
	for level, want := range map[LogLevel]int{"": 2, Normal: 2, Debug: 4, Trace: 6, TraceAll: 8} {
		if got := level.Verbosity(); got != want {
			t.Errorf("%q.Verbosity() = %d, want %d", level, got, want)
		}
	}
}
