package tenancy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseList(t *testing.T) {
	tests := []struct {
		name, value string
		want        []string
	}{
		{"empty", "", nil},
		{"one", "platform", []string{"platform"}},
		{"spaces, empty items and repeats", " platform, ,team-a,platform ,", []string{"platform", "team-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ParseList(tt.value)); diff != "" {
				t.Errorf("ParseList(%q) (-want +got):\n%s", tt.value, diff)
			}
		})
	}
}

func TestPolicySaysWhyAndHow(t *testing.T) {
	policy := Policy{Namespaces: []string{"platform"}, Unbound: []string{"team-a"}}
	tests := []struct {
		namespace string
		allowed   bool
		refusal   []string
	}{
		{"platform", true, nil},
		// Named by the admin but not granted: no scheduler, and the command that grants it.
		{"team-a", false, []string{"named by the operator's --scheduler-namespaces flag", "kubectl -n team-a create rolebinding", SchedulerNamespaceClusterRole}},
		// Not named: how a cluster admin would allow it, and where schedulers do run.
		{"tenant", false, []string{"allowed: platform", "--scheduler-namespaces", "only a cluster admin allows a namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.namespace, func(t *testing.T) {
			if got := policy.Allows(tt.namespace); got != tt.allowed {
				t.Errorf("Allows(%s) = %t, want %t", tt.namespace, got, tt.allowed)
			}
			refusal := policy.Refusal(tt.namespace)
			for _, part := range tt.refusal {
				if !strings.Contains(refusal, part) {
					t.Errorf("Refusal(%s) = %q, want it to say %q", tt.namespace, refusal, part)
				}
			}
		})
	}
}
