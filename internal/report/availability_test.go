package report

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/observe"
)

// READY and AVAILABLE come from the same moment: the pods seen, not the Deployment's
// status, which its controller updates a sync later.
func TestReadyReplicasAgreeWithAvailable(t *testing.T) {
	cr := &v1.SecondaryScheduler{ObjectMeta: metav1.ObjectMeta{Namespace: "platform", Name: "packer", Generation: 1}}
	lagging := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2)},
		Status: appsv1.DeploymentStatus{ReadyReplicas: 0}}
	tests := []struct {
		name          string
		seen          observe.Scheduler
		wantReady     int32
		wantAvailable metav1.ConditionStatus
	}{
		{name: "a ready pod leading, the Deployment not updated yet",
			seen:      observe.Scheduler{Deployment: lagging, Current: 1, CurrentNames: []string{"packer-scheduler-a"}, LeaseHolder: "packer-scheduler-a_1234"},
			wantReady: 1, wantAvailable: metav1.ConditionTrue},
		{name: "a ready pod of the current template and one of the old, the Deployment not updated yet",
			seen:      observe.Scheduler{Deployment: lagging, Current: 1, Old: 1, CurrentNames: []string{"packer-scheduler-b"}, LeaseHolder: "packer-scheduler-b_1"},
			wantReady: 2, wantAvailable: metav1.ConditionTrue},
		{name: "no ready pod, the Deployment still counting one",
			seen:      observe.Scheduler{Deployment: &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}, Status: appsv1.DeploymentStatus{ReadyReplicas: 1}}},
			wantReady: 0, wantAvailable: metav1.ConditionFalse},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status := &v1.SecondarySchedulerStatus{SchedulerName: "packer"}
			Available(cr, status, NewConditions(cr, status), tt.seen)
			available := meta.FindStatusCondition(status.Conditions, string(v1.ConditionAvailable))
			if available == nil || available.Status != tt.wantAvailable || status.ReadyReplicas != tt.wantReady {
				t.Fatalf("readyReplicas %d, Available %v; want %d and %s", status.ReadyReplicas, available, tt.wantReady, tt.wantAvailable)
			}
		})
	}
}
