package report

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

func TestExtenders(t *testing.T) {
	reachable := ExtenderSeen{Name: "a", Address: "http://a", Probed: true, Reachable: true, Message: "GET http://a/filter was answered"}
	down := ExtenderSeen{Name: "b", Address: "http://b", Probed: true, Reason: v1.ReasonExtenderUnreachable, Message: "GET http://b/filter failed: connection refused"}
	badTLS := ExtenderSeen{Name: "c", Address: "https://c", Probed: true, Reason: v1.ReasonExtenderTLSFailed, Message: "GET https://c/filter failed: x509"}
	ignorableDown := down
	ignorableDown.Name, ignorableDown.Ignorable = "d", true
	tests := []struct {
		name         string
		seen         []ExtenderSeen
		status       metav1.ConditionStatus
		reason       v1.ConditionReason
		degradedBy   v1.ConditionReason // "" for not degraded
		messageParts []string
	}{
		{"all reachable", []ExtenderSeen{reachable}, metav1.ConditionTrue, v1.ReasonExtendersReachable, "", []string{"every extender answered"}},
		{"not probed yet", []ExtenderSeen{reachable, {Name: "new"}}, metav1.ConditionUnknown, v1.ReasonExtendersProbing, "", []string{"extender new has not been probed yet"}},
		{"one down", []ExtenderSeen{reachable, down}, metav1.ConditionFalse, v1.ReasonExtenderUnreachable, v1.ReasonExtenderUnreachable,
			[]string{"extender b is not ignorable", "connection refused", "every pod the scheduler calls it for fails scheduling", "ignorable: true"}},
		{"the first problem wins", []ExtenderSeen{badTLS, down}, metav1.ConditionFalse, v1.ReasonExtenderTLSFailed, v1.ReasonExtenderTLSFailed, []string{"extender c"}},
		{"ignorable down", []ExtenderSeen{reachable, ignorableDown}, metav1.ConditionFalse, v1.ReasonIgnorableExtenderUnreachable, "",
			[]string{"ignorable extender d (GET http://b/filter failed: connection refused)", "places pods without it"}},
		{"a problem beats an ignorable one", []ExtenderSeen{ignorableDown, down}, metav1.ConditionFalse, v1.ReasonExtenderUnreachable, v1.ReasonExtenderUnreachable, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cr := &v1.SecondaryScheduler{}
			status := &v1.SecondarySchedulerStatus{}
			problem := Extenders(status, NewConditions(cr, status), tt.seen)
			condition := meta.FindStatusCondition(status.Conditions, string(v1.ConditionExtendersAvailable))
			if condition == nil || condition.Status != tt.status || condition.Reason != string(tt.reason) {
				t.Fatalf("ExtendersAvailable = %+v, want %s/%s", condition, tt.status, tt.reason)
			}
			for _, part := range tt.messageParts {
				if !strings.Contains(condition.Message, part) {
					t.Errorf("message %q lacks %q", condition.Message, part)
				}
			}
			if (problem == nil) != (tt.degradedBy == "") || problem != nil && problem.Reason != tt.degradedBy {
				t.Errorf("problem = %+v, want reason %q", problem, tt.degradedBy)
			}
			if len(status.Extenders) != len(tt.seen) {
				t.Errorf("status.extenders has %d entries, want %d", len(status.Extenders), len(tt.seen))
			}
		})
	}
	status := &v1.SecondarySchedulerStatus{Extenders: []v1.ExtenderStatus{{Name: "gone"}},
		Conditions: []metav1.Condition{{Type: string(v1.ConditionExtendersAvailable), Status: metav1.ConditionTrue}}}
	if Extenders(status, NewConditions(&v1.SecondaryScheduler{}, status), nil) != nil || status.Extenders != nil ||
		meta.FindStatusCondition(status.Conditions, string(v1.ConditionExtendersAvailable)) != nil {
		t.Errorf("without extenders, status.extenders and the condition must go: %+v", status)
	}
}

// An extender whose address changed is not reported reachable on the word of a probe of
// the address before: until a probe of the new one answers, its entry says so.
func TestExtenderNotProbedAtItsAddressClaimsNothing(t *testing.T) {
	moved := ExtenderSeen{Name: "gpu", Address: "http://gpu-new", Probed: false, Reachable: true, Message: "GET http://gpu-old/filter was answered"}
	status := &v1.SecondarySchedulerStatus{}
	Extenders(status, NewConditions(&v1.SecondaryScheduler{}, status), []ExtenderSeen{moved})
	got := status.Extenders[0]
	want := v1.ExtenderStatus{Name: "gpu", Address: "http://gpu-new", Reachable: false, Reason: string(v1.ReasonExtendersProbing),
		Message: "not probed yet at this address"}
	if got != want {
		t.Errorf("status.extenders[0] = %+v, want %+v", got, want)
	}
}

func TestContainerReadiness(t *testing.T) {
	pod := func(name, hash string, ready bool, waiting string) corev1.Pod {
		status := corev1.ContainerStatus{Name: "extender-gpu", Ready: ready}
		if waiting != "" {
			status.State.Waiting = &corev1.ContainerStateWaiting{Reason: waiting}
		}
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{render.ConfigHashAnnotation: hash}},
			Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "kube-scheduler", Ready: true}, status}}}
	}
	tests := []struct {
		name                  string
		pods                  []corev1.Pod
		wantProbed, wantReady bool
		message               string
	}{
		{"no pod yet", nil, false, false, ""},
		{"only an old pod", []corev1.Pod{pod("old", "h0", true, "")}, false, false, ""},
		{"ready", []corev1.Pod{pod("old", "h0", false, ""), pod("new", "h1", true, "")}, true, true, "container extender-gpu of pod new is ready"},
		{"crashing", []corev1.Pod{pod("new", "h1", false, "CrashLoopBackOff")}, true, false, "is not ready (CrashLoopBackOff)"},
		// Highly available: the leader calls its own container, whatever the other's.
		{"the leader's container not ready, another replica's ready", []corev1.Pod{pod("leader", "h1", false, "CrashLoopBackOff"), pod("replica", "h1", true, "")},
			true, false, "container extender-gpu of pod leader is not ready"},
		{"the leader's container ready", []corev1.Pod{pod("replica", "h1", false, ""), pod("leader", "h1", true, "")}, true, true, "of pod leader is ready"},
		{"the leader of an earlier configuration: any current pod", []corev1.Pod{pod("leader", "h0", true, ""), pod("new", "h1", true, "")},
			true, true, "of pod new is ready"},
	}
	for _, tt := range tests {
		probed, ready, message := ContainerReadiness(tt.pods, "h1", "extender-gpu", "leader")
		if probed != tt.wantProbed || ready != tt.wantReady || !strings.Contains(message, tt.message) {
			t.Errorf("%s: ContainerReadiness = %t, %t, %q; want %t, %t, %q", tt.name, probed, ready, message, tt.wantProbed, tt.wantReady, tt.message)
		}
	}
}
