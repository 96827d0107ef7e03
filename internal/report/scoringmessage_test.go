package report

import (
	"strings"
	"testing"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/failsafe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
)

// The Degraded message of unusable metrics says how the scheduler scores nodes as it
// really does: by requests under the failsafe, by old data, by the load of the nodes that
// have series, or every node alike.
func TestScoringWithUnusableMetrics(t *testing.T) {
	tests := []struct {
		name    string
		result  metricsprobe.Result
		scoring v1.ScoringMode
		want    string
		wantNot []string
	}{
		{name: "stale, failsafe scoring by requests", scoring: v1.ScoringByRequests,
			result: metricsprobe.Result{Reason: v1.ReasonMetricsStale, Nodes: 8, StaleNodes: 8},
			want:   "scores nodes by their requests", wantNot: []string{"old data"}},
		{name: "stale, scoring by load", scoring: v1.ScoringLoadAware,
			result: metricsprobe.Result{Reason: v1.ReasonMetricsStale, Nodes: 8, StaleNodes: 8},
			want:   "scores nodes by old data"},
		{name: "3 of 8 nodes with series", scoring: v1.ScoringLoadAware,
			result:  metricsprobe.Result{Reason: v1.ReasonNodeLabelMismatch, Nodes: 8, NodesWithMetrics: 3},
			want:    "sees the load of 3 of 8 nodes only: it places pods by the load of those, and scores the other 5, which have no series, lowest",
			wantNot: []string{"every node alike"}},
		{name: "no node with series", scoring: v1.ScoringLoadAware,
			result: metricsprobe.Result{Reason: v1.ReasonRecordingRuleMissing, Nodes: 8},
			want:   "cannot see node load, so it scores every node alike"},
		{name: "unreachable, failsafe scoring by requests", scoring: v1.ScoringByRequests,
			result: metricsprobe.Result{Reason: v1.ReasonPrometheusUnreachable, Nodes: 8},
			want:   "scores nodes by their requests", wantNot: []string{"every node alike"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scoringWithUnusableMetrics(tt.result, failsafe.State{Scoring: tt.scoring})
			if !strings.Contains(got, tt.want) {
				t.Errorf("message %q does not say %q", got, tt.want)
			}
			for _, wrong := range tt.wantNot {
				if strings.Contains(got, wrong) {
					t.Errorf("message %q says %q, which is not the scheduler's state", got, wrong)
				}
			}
		})
	}
}
