package controllers

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/admission"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/refusal"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// checkAdmission refuses cr when it may run no scheduler as far as admission goes: the
// authority policy, its binding (both shipped by the installer) and its parameters (the
// operator's) must be in place, as rendered, since they alone check that whoever creates
// or changes a SecondaryScheduler may run schedulers; and cr
// must not have been created before they were, unchecked, unless the operator already ran
// it then (a scheduler of an earlier release keeps running). It reads the policies from
// the cache and writes nothing.
func (r *SecondarySchedulerReconciler) checkAdmission(ctx context.Context, cr *v1.SecondaryScheduler) error {
	if r.admission == nil {
		return nil // --require-admission-policy=false, for development only
	}
	inPlace, err := r.admission.Check(ctx, r.cache)
	var notInPlace *admission.NotInPlaceError
	if errors.As(err, &notInPlace) {
		return refusal.New(v1.ReasonAdmissionPolicyMissing,
			"the admission policy that checks who creates or changes a SecondaryScheduler is not in place (%v), so nothing checks that its author may run schedulers; "+
				"the operator applies nothing until it is",
			notInPlace)
	}
	if err != nil {
		return err
	}
	var disallowed *admission.DisallowedImageError
	if err := r.admission.CheckImages(&cr.Spec); errors.As(err, &disallowed) {
		return refusal.New(v1.ReasonImageNotAllowed, "%v; the operator runs no such image, whatever admitted it (the admission policy's parameters "+
			"may have been changed when this spec was written): choose an allowed image", disallowed)
	} else if err != nil {
		return err
	}
	if cr.Status.ConfigHash == "" && cr.CreationTimestamp.Before(&inPlace.Since) {
		return refusal.New(v1.ReasonCreatedBeforeAdmissionPolicy,
			"this SecondaryScheduler was created at %s, before the admission policy, its binding and its parameters were last written as they are "+
				"(%s: created, applied again after a change, or updated), so nothing proves that its author was checked; "+
				"the operator runs nothing for it. Someone allowed to run schedulers (ClusterRole secondary-scheduler-operator-secondaryscheduler-admin-role) deletes and recreates it",
			cr.CreationTimestamp.UTC().Format("2006-01-02T15:04:05Z"), inPlace.Since.UTC().Format("2006-01-02T15:04:05Z"))
	}
	return nil
}

// everySecondaryScheduler wakes every SecondaryScheduler: when the admission policies
// change, each may be allowed again, or no longer.
func (r *SecondarySchedulerReconciler) everySecondaryScheduler(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.secondarySchedulersWhere(ctx, "a change of the admission policies", func(*v1.SecondaryScheduler) bool { return true })
}

// AdmissionParametersReconciler keeps the authority policy's parameters as rendered: it
// creates the ConfigMap when missing and restores its data when changed. It writes that
// object only, by name; the policy and binding are the installer's.
type AdmissionParametersReconciler struct {
	client.Client
	// APIReader reads the parameters as the API server has them (see Policies.Ensure).
	APIReader client.Reader
	Policies  *admission.Policies
}

// admissionParametersRetry is how soon the operator tries again to write the parameters
// after it could not: a cluster admin fixing its permissions makes no event it would see,
// and the controller's backoff would grow to many minutes meanwhile.
const admissionParametersRetry = 10 * time.Second

// Reconcile restores the parameters. A failure is logged and retried; each
// SecondaryScheduler says meanwhile why it runs nothing new.
func (r *AdmissionParametersReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	if err := r.Policies.Ensure(ctx, r.APIReader, r.Client); err != nil {
		logf.FromContext(ctx).Error(err, "cannot keep the admission policy's parameters in place; the operator applies nothing for any SecondaryScheduler until it can",
			"parameters", render.AuthorityPolicyName, "retryAfter", admissionParametersRetry)
		return ctrl.Result{RequeueAfter: admissionParametersRetry}, nil
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches the parameters in the cache (the operator's, by label) and
// restores them on any change. One reconcile runs at start, for parameters that do not
// exist and so make no event.
func (r *AdmissionParametersReconciler) SetupWithManager(mgr ctrl.Manager) error {
	atStart := make(chan event.GenericEvent, 1)
	atStart <- event.GenericEvent{Object: &corev1.ConfigMap{}}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: "admission-parameters"}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("admissionparameters").
		Watches(&corev1.ConfigMap{}, one, builder.WithPredicates(predicate.NewPredicateFuncs(r.Policies.IsParameters))).
		WatchesRawSource(source.Channel(atStart, one)).
		Complete(r)
}
