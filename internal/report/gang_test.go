package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

func TestGang(t *testing.T) {
	tests := []struct {
		name, plugins string
		want          *v1.GangStatus
	}{
		{"no gangs", "score: {enabled: [{name: NodeResourcesFit}]}", nil},
		{"Coscheduling", "multiPoint: {enabled: [{name: Coscheduling}]}", &v1.GangStatus{Implementation: v1.CoschedulingGangs, Plugin: "Coscheduling"}},
		{"GangScheduling", "multiPoint: {enabled: [{name: GangScheduling}]}", &v1.GangStatus{Implementation: v1.WorkloadGangs, Plugin: "GangScheduling"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config, err := schedconfig.Parse([]byte("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: a\n  plugins:\n    "+tt.plugins+"\n"), "", "test")
			if err != nil {
				t.Fatal(err)
			}
			status := &v1.SecondarySchedulerStatus{Gang: &v1.GangStatus{Implementation: v1.CoschedulingGangs}}
			Gang(status, config)
			if diff := cmp.Diff(tt.want, status.Gang); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
