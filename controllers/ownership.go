package controllers

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
)

// checkOwnershipAndAddFinalizer runs the ownership check (internal/ownership) while it adds the finalizer to cr,
// when cr lacks it: the finalizer must be there before anything is created, and doing
// both at once spares a new scheduler a round trip on its way to running. The finalizer
// is patched onto a copy, whose finalizers and resourceVersion cr takes once both are
// done, so that the check reads a cr that does not change under it.
func (r *SecondarySchedulerReconciler) checkOwnershipAndAddFinalizer(ctx context.Context, cr *v1.SecondaryScheduler,
	desired []*unstructured.Unstructured) (ownership.Live, error) {
	if controllerutil.ContainsFinalizer(cr, Finalizer) {
		return r.ownershipStage().Check(ctx, cr, desired)
	}
	withFinalizer := cr.DeepCopy()
	var live ownership.Live
	var refused error
	group, groupCtx := errgroup.WithContext(ctx)
	group.Go(func() error {
		if err := addFinalizer(groupCtx, r.Client, withFinalizer, Finalizer); err != nil {
			return fmt.Errorf("add finalizer: %w", err)
		}
		return nil
	})
	group.Go(func() error {
		var err error
		live, err = r.ownershipStage().Check(groupCtx, cr, desired)
		if refusal.Is(err) {
			// The finalizer patch goes on: cr must take its result whatever the check says.
			refused, err = err, nil
		}
		return err
	})
	if err := group.Wait(); err != nil {
		return nil, err
	}
	cr.Finalizers, cr.ResourceVersion = withFinalizer.Finalizers, withFinalizer.ResourceVersion
	return live, refused
}

// deleteOwned deletes object if, and only if, it is cr's, with a precondition on its UID
// so that an object replaced meanwhile by someone else's of the same name survives.
func deleteOwned(ctx context.Context, c client.Client, cr *v1.SecondaryScheduler, object client.Object) error {
	if !ownership.OwnedBy(object, cr) {
		return nil
	}
	uid := object.GetUID()
	err := c.Delete(ctx, object, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	if client.IgnoreNotFound(err) != nil && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete %s %s: %w", ownership.KindOf(object), client.ObjectKeyFromObject(object), err)
	}
	return nil
}

// nameTakenRetry is when a name taken by someone else's object is looked at again: no
// event tells when it goes away, so it is polled, backing off from 3 s to 5 minutes as
// the problem lasts.
func nameTakenRetry(status *v1.SecondarySchedulerStatus, now time.Time) time.Duration {
	condition := meta.FindStatusCondition(status.Conditions, string(v1.ConditionDegraded))
	if condition == nil || condition.Reason != string(v1.ReasonObjectNameTaken) || condition.Status != metav1.ConditionTrue {
		return 3 * time.Second
	}
	return min(max(now.Sub(condition.LastTransitionTime.Time), 3*time.Second), 5*time.Minute)
}

// ownershipStage is the ownership check, made once from the reconciler's readers.
func (r *SecondarySchedulerReconciler) ownershipStage() *ownership.Checker {
	r.ownership.once.Do(func() {
		r.ownership.checker = ownership.NewChecker(r.Client, r.APIReader, r.Scheme())
	})
	return r.ownership.checker
}

// ownershipChecker holds the ownership stage.
type ownershipChecker struct {
	once    sync.Once
	checker *ownership.Checker
}
