package controllers

import (
	"context"
	"sync"

	appsv1 "k8s.io/api/apps/v1"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/observe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/report"
)

// observeScheduler looks at the scheduler (internal/observe) and sets readyReplicas and
// Available: True only when a ready pod runs the Deployment's current pod template (its
// configuration hash and CA bundle) and holds the Lease. A ready pod of an older
// configuration does not count, nor does one of the current configuration while an older
// one leads: the leader schedules, but not as the resource now says. So Available, and
// kubectl wait on it, mean that pods are placed as the generation asks. When no pod of
// the current template is ready, their state says why if it can. applied is the
// Deployment as this reconcile applied or found it, nil when it applied none.
func (r *SecondarySchedulerReconciler) observeScheduler(ctx context.Context, cr *v1.SecondaryScheduler,
	status *v1.SecondarySchedulerStatus, conditions *report.Conditions, applied *appsv1.Deployment) (report.Availability, error) {
	seen, err := r.observeStage().Scheduler(ctx, cr, applied)
	if err != nil {
		return report.Availability{}, err
	}
	return report.Available(cr, status, conditions, seen), nil
}

// observer holds the observe stage.
type observer struct {
	once     sync.Once
	observer *observe.Observer
}

// observeStage is the observe stage, made once from the reconciler's cache.
func (r *SecondarySchedulerReconciler) observeStage() *observe.Observer {
	r.observe.once.Do(func() { r.observe.observer = observe.New(r.Client, r.now) })
	return r.observe.observer
}
