package failsafe

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
)

// TestFailsafeSwitchesWithHysteresis runs the failsafe through an outage, probe by probe,
// as the reconciles see it: each step is a probe result some time after the start.
func TestFailsafeSwitchesWithHysteresis(t *testing.T) {
	start := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	healthy := metricsprobe.Result{Available: true, Reason: v1.ReasonMetricsAvailable}
	unreachable := metricsprobe.Result{Reason: v1.ReasonPrometheusUnreachable}
	stale := metricsprobe.Result{Reason: v1.ReasonMetricsStale}
	failsafe := &v1.LoadMetrics{WhenUnavailable: v1.ScoreByRequests,
		StaleAfter: &metav1.Duration{Duration: time.Minute}, ResumeAfter: &metav1.Duration{Duration: 3 * time.Minute}}
	type step struct {
		after   time.Duration
		result  metricsprobe.Result
		Scoring v1.ScoringMode
		recheck time.Duration // zero: only a new probe can change the decision
	}
	tests := []struct {
		name    string
		metrics *v1.LoadMetrics
		steps   []step
	}{
		{
			name:    "an outage shorter than staleAfter changes nothing",
			metrics: failsafe,
			steps: []step{
				{0, healthy, v1.ScoringLoadAware, 0},
				{10 * time.Second, unreachable, v1.ScoringLoadAware, time.Minute},
				{40 * time.Second, unreachable, v1.ScoringLoadAware, 30 * time.Second},
				{50 * time.Second, healthy, v1.ScoringLoadAware, 0},
				// The count starts again with the next outage.
				{60 * time.Second, unreachable, v1.ScoringLoadAware, time.Minute},
			},
		},
		{
			name:    "unreachable for staleAfter switches; healthy for resumeAfter without a break switches back",
			metrics: failsafe,
			steps: []step{
				{0, unreachable, v1.ScoringLoadAware, time.Minute},
				{time.Minute, unreachable, v1.ScoringByRequests, 0},
				{2 * time.Minute, healthy, v1.ScoringByRequests, 3 * time.Minute},
				{4 * time.Minute, healthy, v1.ScoringByRequests, time.Minute},
				// A flap: the healthy time starts again.
				{4*time.Minute + 30*time.Second, unreachable, v1.ScoringByRequests, 0},
				{5 * time.Minute, healthy, v1.ScoringByRequests, 3 * time.Minute},
				{7 * time.Minute, healthy, v1.ScoringByRequests, time.Minute},
				{8 * time.Minute, healthy, v1.ScoringLoadAware, 0},
			},
		},
		{
			name:    "stale data switches at once: it is already older than staleAfter",
			metrics: failsafe,
			steps: []step{
				{0, healthy, v1.ScoringLoadAware, 0},
				{30 * time.Second, stale, v1.ScoringByRequests, 0},
			},
		},
		{
			name:    "UseLastMetrics, the default, never switches",
			metrics: &v1.LoadMetrics{},
			steps: []step{
				{0, unreachable, v1.ScoringLoadAware, 0},
				{time.Hour, stale, v1.ScoringLoadAware, 0},
			},
		},
		{
			name:    "profile Custom has no failsafe",
			metrics: nil,
			steps:   []step{{0, stale, v1.ScoringLoadAware, 0}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			state := StateOf(nil)
			for i, step := range tt.steps {
				decision := Decide(tt.metrics, state, step.result, start.Add(step.after))
				if decision.State.Scoring != step.Scoring || decision.RecheckAfter != step.recheck {
					t.Fatalf("step %d (%s, %s): scoring %s, recheck after %s; want %s, %s",
						i, step.after, step.result.Reason, decision.State.Scoring, decision.RecheckAfter, step.Scoring, step.recheck)
				}
				if step.result.Available != (decision.State.UnavailableSince == nil) {
					t.Fatalf("step %d: UnavailableSince %v with metrics available %t", i, decision.State.UnavailableSince, step.result.Available)
				}
				state = decision.State
			}
		})
	}
}

// TestFailsafeStateSurvivesTheStatus checks that the failsafe's memory is what status
// keeps: an operator restarted while the scheduler scores by requests goes on counting
// the healthy time it had.
func TestFailsafeStateSurvivesTheStatus(t *testing.T) {
	start := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	metrics := &v1.LoadMetrics{WhenUnavailable: v1.ScoreByRequests}
	decision := Decide(metrics, StateOf(nil), metricsprobe.Result{Reason: v1.ReasonMetricsStale}, start)
	decision = Decide(metrics, decision.State, metricsprobe.Result{Available: true}, start.Add(time.Minute))
	status := &v1.MetricsStatus{}
	decision.State.Store(status)
	if status.Scoring != v1.ScoringByRequests || status.HealthySince == nil || !status.HealthySince.Equal(&metav1.Time{Time: start.Add(time.Minute)}) {
		t.Fatalf("status after a stale probe and a healthy one: %+v", status)
	}
	restarted := Decide(metrics, StateOf(status), metricsprobe.Result{Available: true}, start.Add(time.Minute+v1.DefaultResumeAfter))
	if restarted.State.Scoring != v1.ScoringLoadAware {
		t.Fatalf("after resumeAfter of healthy metrics across a restart: %s", restarted.State.Scoring)
	}
}

// TestVerdictDecidesTheRenderedScoring checks what the scheduler is rendered with, in
// the reconcile that judges the metrics: a probe result that crosses a threshold
// switches at once, a running probe keeps the state, and a state of scoring by requests
// kept while the user turned the failsafe off renders load-aware scoring.
func TestVerdictDecidesTheRenderedScoring(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	longAgo := metav1.NewTime(now.Add(-time.Hour))
	failsafe := &v1.LoadMetrics{WhenUnavailable: v1.ScoreByRequests}
	useLast := &v1.LoadMetrics{WhenUnavailable: v1.UseLastMetrics}
	unavailableLongAgo := &v1.MetricsStatus{Scoring: v1.ScoringLoadAware, UnavailableSince: &longAgo}
	byRequests := &v1.MetricsStatus{Scoring: v1.ScoringByRequests, ScoringSince: &longAgo, HealthySince: &longAgo}
	healthy := metricsprobe.Result{Available: true, Reason: v1.ReasonMetricsAvailable}
	unreachable := metricsprobe.Result{Reason: v1.ReasonPrometheusUnreachable}
	tests := []struct {
		name             string
		metrics          *v1.LoadMetrics
		previous         *v1.MetricsStatus
		result           metricsprobe.Result
		probed           bool
		scoresByRequests bool
	}{
		{"unusable past staleAfter switches to requests in this reconcile", failsafe, unavailableLongAgo, unreachable, true, true},
		{"healthy past resumeAfter switches back in this reconcile", failsafe, byRequests, healthy, true, false},
		{"while a probe runs, scoring by requests stays", failsafe, byRequests, metricsprobe.Result{}, false, true},
		{"while a probe runs, load-aware scoring stays", failsafe, unavailableLongAgo, metricsprobe.Result{}, false, false},
		{"a kept state of scoring by requests does not outlive the failsafe", useLast, byRequests, metricsprobe.Result{}, false, false},
		{"no status yet: load-aware", failsafe, nil, metricsprobe.Result{}, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			verdict := Judge(tt.metrics, tt.previous, tt.result, tt.probed, now)
			if verdict.Probed != tt.probed {
				t.Errorf("Probed = %t, want %t", verdict.Probed, tt.probed)
			}
			if got := verdict.ScoresByRequests(tt.metrics); got != tt.scoresByRequests {
				t.Errorf("ScoresByRequests = %t, want %t (state %+v)", got, tt.scoresByRequests, verdict.State)
			}
		})
	}
}
