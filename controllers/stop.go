package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// errWaiting means the operator waits for something it does not watch (scheduler pods
// terminating, a leader being elected) and looks again shortly.
var errWaiting = errors.New("waiting for objects the operator does not watch")

func requeueIfWaiting(err error) (ctrl.Result, error) {
	if errors.Is(err, errWaiting) {
		return ctrl.Result{RequeueAfter: 3 * time.Second}, nil
	}
	return ctrl.Result{}, err
}

// stopScheduler deletes the scheduler's Deployment and, once no scheduler pod is left,
// its Lease: kube-scheduler leaves its Lease held when it stops, and deleting the Lease
// while a scheduler still runs would only break its leader election. Both are deleted
// only if they are cr's.
func (r *SecondarySchedulerReconciler) stopScheduler(ctx context.Context, cr *v1.SecondaryScheduler) error {
	if err := r.deleteChildren(ctx, cr, []childKind{deploymentKind}); err != nil {
		return err
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(cr.Namespace), client.MatchingLabels(render.PodSelector(cr))); err != nil {
		return fmt.Errorf("list the scheduler's pods: %w", err)
	}
	if len(pods.Items) > 0 {
		return fmt.Errorf("the scheduler's pods are still terminating: %w", errWaiting)
	}
	return r.deleteChildren(ctx, cr, []childKind{leaseKind})
}
