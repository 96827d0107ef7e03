package controllers

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// errWaiting means the operator waits for something to go away (scheduler pods
// terminating, someone else's ServiceAccount) and looks again shortly.
var errWaiting = errors.New("waiting for objects to go away")

// stopScheduler deletes the scheduler's Deployment and, once no scheduler pod is left,
// its Lease: kube-scheduler leaves its Lease held when it stops, and deleting the Lease
// while a scheduler still runs would only break its leader election. Both are deleted
// only if they are cr's.
func (r *writer) stopScheduler(ctx context.Context, cr *v1.SecondaryScheduler) error {
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
