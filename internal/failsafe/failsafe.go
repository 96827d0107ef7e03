// Package failsafe decides, probe result by probe result, how a load-aware scheduler
// scores nodes while its metrics are unusable (profile.metrics.whenUnavailable): by load,
// or by requests until the metrics have been healthy for resumeAfter. It is pure: its
// memory is the status the controller last wrote, and time is given.
package failsafe

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
)

// State is the failsafe's memory, kept in status.metrics so that it survives a
// restart of the operator: how the scheduler scores nodes, since when, and since when the
// metrics have been unusable or, while it scores by requests, healthy again.
type State struct {
	Scoring          v1.ScoringMode
	ScoringSince     *metav1.Time
	UnavailableSince *metav1.Time
	HealthySince     *metav1.Time
}

// StateOf reads the failsafe's memory from the status last written.
func StateOf(previous *v1.MetricsStatus) State {
	if previous == nil {
		return State{Scoring: v1.ScoringLoadAware}
	}
	state := State{Scoring: previous.Scoring, ScoringSince: previous.ScoringSince,
		UnavailableSince: previous.UnavailableSince, HealthySince: previous.HealthySince}
	if state.Scoring == "" {
		state.Scoring = v1.ScoringLoadAware
	}
	return state
}

// Decision is what the failsafe decided after one probe.
type Decision struct {
	State State
	// RecheckAfter is when the decision may change with no new probe result (a threshold
	// is crossed); zero when only a new probe can change it.
	RecheckAfter time.Duration
}

// Decide advances the failsafe of profile.metrics.whenUnavailable by one probe
// result. Metrics unusable for staleAfter (or stale, which already means that) switch a
// scheduler with ScoreByRequests to request-based scoring; it returns to load-aware
// scoring only once they have been healthy for resumeAfter without a break. The two
// thresholds are the hysteresis: a provider that flaps more often than resumeAfter keeps
// the scheduler scoring by requests instead of restarting it at every flap.
func Decide(metrics *v1.LoadMetrics, previous State, result metricsprobe.Result, now time.Time) Decision {
	state := previous
	at := metav1.NewTime(now.Truncate(time.Second))
	if result.Available {
		state.UnavailableSince = nil
	} else if state.UnavailableSince == nil {
		state.UnavailableSince = &at
	}
	switchTo := func(scoring v1.ScoringMode) {
		state.Scoring, state.ScoringSince, state.HealthySince = scoring, &at, nil
	}
	if !metrics.ScoresByRequestsWhenUnavailable() {
		if state.Scoring != v1.ScoringLoadAware {
			switchTo(v1.ScoringLoadAware) // the user turned the failsafe off
		}
		state.HealthySince = nil
		return Decision{State: state}
	}
	staleAfter, resumeAfter := metrics.EffectiveStaleAfter(), metrics.EffectiveResumeAfter()
	switch {
	case state.Scoring == v1.ScoringLoadAware && !result.Available:
		unusableFor := now.Sub(state.UnavailableSince.Time)
		if result.Reason == v1.ReasonMetricsStale || unusableFor >= staleAfter {
			switchTo(v1.ScoringByRequests)
			return Decision{State: state}
		}
		return Decision{State: state, RecheckAfter: staleAfter - unusableFor}
	case state.Scoring == v1.ScoringByRequests && result.Available:
		if state.HealthySince == nil {
			state.HealthySince = &at
		}
		healthyFor := now.Sub(state.HealthySince.Time)
		if healthyFor >= resumeAfter {
			switchTo(v1.ScoringLoadAware)
			return Decision{State: state}
		}
		return Decision{State: state, RecheckAfter: resumeAfter - healthyFor}
	case state.Scoring == v1.ScoringByRequests:
		state.HealthySince = nil // not healthy without a break: the count starts again
	}
	return Decision{State: state}
}

// Verdict is the failsafe's decision for one reconcile, made before the scheduler is
// rendered so that the configuration applied is the one decided: from the probe result
// that answers the scheduler's metrics or, while that probe runs, the state the
// failsafe was in.
type Verdict struct {
	// Result is the probe result, when Probed.
	Result metricsprobe.Result
	// Probed says that Result answers the scheduler's metrics as they are now (address,
	// credentials, nodes); false while a probe runs.
	Probed bool
	Decision
}

// Judge is the failsafe's verdict for a scheduler whose status.metrics was previous: the
// decision from result when probed, else the previous state unchanged.
func Judge(metrics *v1.LoadMetrics, previous *v1.MetricsStatus, result metricsprobe.Result, probed bool, now time.Time) Verdict {
	if !probed {
		return Verdict{Decision: Decision{State: StateOf(previous)}}
	}
	return Verdict{Result: result, Probed: true, Decision: Decide(metrics, StateOf(previous), result, now)}
}

// ScoresByRequests reports whether the scheduler is to be rendered with the
// request-based stand-in of its load-aware configuration: the verdict says so, and the
// failsafe is on (a state kept while a probe runs does not outlive turning it off).
func (v Verdict) ScoresByRequests(metrics *v1.LoadMetrics) bool {
	return metrics.ScoresByRequestsWhenUnavailable() && v.State.Scoring == v1.ScoringByRequests
}

// Store writes the failsafe's memory into status.metrics.
func (s State) Store(metrics *v1.MetricsStatus) {
	metrics.Scoring, metrics.ScoringSince = s.Scoring, s.ScoringSince
	metrics.UnavailableSince, metrics.HealthySince = s.UnavailableSince, s.HealthySince
}

// Note tells, for the Degraded message, what the failsafe does about unusable
// metrics: what the scheduler scores with now, and what happens next.
func Note(metrics *v1.LoadMetrics, state State) string {
	if metrics == nil {
		return " The scheduler keeps scoring with the last data it fetched: profile Custom has no failsafe " +
			"(the typed load-aware profiles have whenUnavailable: ScoreByRequests)."
	}
	if !metrics.ScoresByRequestsWhenUnavailable() {
		return " The scheduler keeps scoring with the last data it fetched (whenUnavailable: UseLastMetrics); " +
			"set whenUnavailable: ScoreByRequests to have it score by requests meanwhile."
	}
	if state.Scoring == v1.ScoringByRequests {
		return fmt.Sprintf(" The scheduler scores by requests since %s (whenUnavailable: ScoreByRequests), until the metrics have been healthy for %s.",
			state.ScoringSince.UTC().Format(time.RFC3339), metrics.EffectiveResumeAfter())
	}
	if state.UnavailableSince == nil {
		return ""
	}
	return fmt.Sprintf(" If the metrics are still unusable at %s, the scheduler switches to scoring by requests (whenUnavailable: ScoreByRequests).",
		state.UnavailableSince.Add(metrics.EffectiveStaleAfter()).UTC().Format(time.RFC3339))
}

// ResumingMessage is the Degraded message while the metrics are healthy again but the
// scheduler still scores by requests, waiting out resumeAfter.
func ResumingMessage(metrics *v1.LoadMetrics, state State) string {
	return fmt.Sprintf("the metrics are healthy again since %s, but the scheduler scores by requests (since %s) until %s: "+
		"they must stay healthy for resumeAfter %s, so that a flapping provider does not restart the scheduler at every flap",
		state.HealthySince.UTC().Format(time.RFC3339), state.ScoringSince.UTC().Format(time.RFC3339),
		state.HealthySince.Add(metrics.EffectiveResumeAfter()).UTC().Format(time.RFC3339), metrics.EffectiveResumeAfter())
}
