package controllers

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
)

// scoringState is the failsafe's memory, kept in status.metrics so that it survives a
// restart of the operator: how the scheduler scores nodes, since when, and since when the
// metrics have been unusable or, while it scores by requests, healthy again.
type scoringState struct {
	scoring          v1.ScoringMode
	scoringSince     *metav1.Time
	unavailableSince *metav1.Time
	healthySince     *metav1.Time
}

// scoringStateOf reads the failsafe's memory from the status last written.
func scoringStateOf(previous *v1.MetricsStatus) scoringState {
	if previous == nil {
		return scoringState{scoring: v1.ScoringLoadAware}
	}
	state := scoringState{scoring: previous.Scoring, scoringSince: previous.ScoringSince,
		unavailableSince: previous.UnavailableSince, healthySince: previous.HealthySince}
	if state.scoring == "" {
		state.scoring = v1.ScoringLoadAware
	}
	return state
}

// scoringDecision is what the failsafe decided after one probe.
type scoringDecision struct {
	state scoringState
	// recheckAfter is when the decision may change with no new probe result (a threshold
	// is crossed); zero when only a new probe can change it.
	recheckAfter time.Duration
}

// decideScoring advances the failsafe of profile.metrics.whenUnavailable by one probe
// result. Metrics unusable for staleAfter (or stale, which already means that) switch a
// scheduler with ScoreByRequests to request-based scoring; it returns to load-aware
// scoring only once they have been healthy for resumeAfter without a break. The two
// thresholds are the hysteresis: a provider that flaps more often than resumeAfter keeps
// the scheduler scoring by requests instead of restarting it at every flap.
func decideScoring(metrics *v1.LoadMetrics, previous scoringState, result metricsprobe.Result, now time.Time) scoringDecision {
	state := previous
	at := metav1.NewTime(now.Truncate(time.Second))
	if result.Available {
		state.unavailableSince = nil
	} else if state.unavailableSince == nil {
		state.unavailableSince = &at
	}
	switchTo := func(scoring v1.ScoringMode) {
		state.scoring, state.scoringSince, state.healthySince = scoring, &at, nil
	}
	if !metrics.ScoresByRequestsWhenUnavailable() {
		if state.scoring != v1.ScoringLoadAware {
			switchTo(v1.ScoringLoadAware) // the user turned the failsafe off
		}
		state.healthySince = nil
		return scoringDecision{state: state}
	}
	staleAfter, resumeAfter := metrics.EffectiveStaleAfter(), metrics.EffectiveResumeAfter()
	switch {
	case state.scoring == v1.ScoringLoadAware && !result.Available:
		unusableFor := now.Sub(state.unavailableSince.Time)
		if result.Reason == v1.ReasonMetricsStale || unusableFor >= staleAfter {
			switchTo(v1.ScoringByRequests)
			return scoringDecision{state: state}
		}
		return scoringDecision{state: state, recheckAfter: staleAfter - unusableFor}
	case state.scoring == v1.ScoringByRequests && result.Available:
		if state.healthySince == nil {
			state.healthySince = &at
		}
		healthyFor := now.Sub(state.healthySince.Time)
		if healthyFor >= resumeAfter {
			switchTo(v1.ScoringLoadAware)
			return scoringDecision{state: state}
		}
		return scoringDecision{state: state, recheckAfter: resumeAfter - healthyFor}
	case state.scoring == v1.ScoringByRequests:
		state.healthySince = nil // not healthy without a break: the count starts again
	}
	return scoringDecision{state: state}
}

// store writes the failsafe's memory into status.metrics.
func (s scoringState) store(metrics *v1.MetricsStatus) {
	metrics.Scoring, metrics.ScoringSince = s.scoring, s.scoringSince
	metrics.UnavailableSince, metrics.HealthySince = s.unavailableSince, s.healthySince
}

// failsafeNote tells, for the Degraded message, what the failsafe does about unusable
// metrics: what the scheduler scores with now, and what happens next.
func failsafeNote(metrics *v1.LoadMetrics, state scoringState) string {
	if metrics == nil {
		return " The scheduler keeps scoring with the last data it fetched: profile Custom has no failsafe " +
			"(the typed load-aware profiles have whenUnavailable: ScoreByRequests)."
	}
	if !metrics.ScoresByRequestsWhenUnavailable() {
		return " The scheduler keeps scoring with the last data it fetched (whenUnavailable: UseLastMetrics); " +
			"set whenUnavailable: ScoreByRequests to have it score by requests meanwhile."
	}
	if state.scoring == v1.ScoringByRequests {
		return fmt.Sprintf(" The scheduler scores by requests since %s (whenUnavailable: ScoreByRequests), until the metrics have been healthy for %s.",
			state.scoringSince.UTC().Format(time.RFC3339), metrics.EffectiveResumeAfter())
	}
	if state.unavailableSince == nil {
		return ""
	}
	return fmt.Sprintf(" If the metrics are still unusable at %s, the scheduler switches to scoring by requests (whenUnavailable: ScoreByRequests).",
		state.unavailableSince.Add(metrics.EffectiveStaleAfter()).UTC().Format(time.RFC3339))
}

// resumingMessage is the Degraded message while the metrics are healthy again but the
// scheduler still scores by requests, waiting out resumeAfter.
func resumingMessage(metrics *v1.LoadMetrics, state scoringState) string {
	return fmt.Sprintf("the metrics are healthy again since %s, but the scheduler scores by requests (since %s) until %s: "+
		"they must stay healthy for resumeAfter %s, so that a flapping provider does not restart the scheduler at every flap",
		state.healthySince.UTC().Format(time.RFC3339), state.scoringSince.UTC().Format(time.RFC3339),
		state.healthySince.Add(metrics.EffectiveResumeAfter()).UTC().Format(time.RFC3339), metrics.EffectiveResumeAfter())
}
