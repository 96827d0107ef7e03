package controllers

import (
	"context"
	"errors"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
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
)

// checkAdmission refuses cr when it may run no scheduler as far as admission goes: the operator's admission policies must be in place, as rendered, since they alone
// check that whoever creates or changes a SecondaryScheduler may run schedulers; and cr
// must not have been created before they were, unchecked, unless the operator already ran
// it then (a scheduler of an earlier release keeps running). It reads the policies from
// the cache and writes nothing.
func (r *SecondarySchedulerReconciler) checkAdmission(ctx context.Context, cr *v1.SecondaryScheduler) error {
	if r.Admission == nil {
		return nil // --require-admission-policy=false, for development only
	}
	inPlace, err := r.Admission.Check(ctx, r.Client)
	var notInPlace *admission.NotInPlaceError
	if errors.As(err, &notInPlace) {
		return refusal.New(v1.ReasonAdmissionPolicyMissing,
			"the operator's admission policies are not in place (%v), so nothing checks that whoever creates or changes a SecondaryScheduler may run schedulers; "+
				"the operator applies nothing until they are. It keeps them in place itself: see its log for why it cannot "+
				"(it needs create, and update on %v, of validatingadmissionpolicies and validatingadmissionpolicybindings)",
			notInPlace, r.Admission.Names())
	}
	if err != nil {
		return err
	}
	if cr.Status.ConfigHash == "" && cr.CreationTimestamp.Before(&inPlace.Since) {
		return refusal.New(v1.ReasonCreatedBeforeAdmissionPolicy,
			"this SecondaryScheduler was created at %s, before the operator's admission policies were last written as they are "+
				"(%s: created, restored after a change, or updated), so nothing proves that its author was checked; "+
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

// AdmissionPolicyReconciler keeps the operator's admission policies and their bindings
// as rendered: it creates them when missing and restores their spec when changed. It
// writes those objects only, by name.
type AdmissionPolicyReconciler struct {
	client.Client
	// APIReader reads the policies as the API server has them (see Policies.Ensure).
	APIReader client.Reader
	Policies  *admission.Policies
}

// admissionPolicyRetry is how soon the operator tries again to put the admission policies
// in place after it could not: a cluster admin fixing its permissions makes no event it
// would see, and the controller's backoff would grow to many minutes meanwhile.
const admissionPolicyRetry = 10 * time.Second

// Reconcile restores the admission policies, whichever of them changed. A failure is
// logged and retried; each SecondaryScheduler says meanwhile why it runs nothing new.
func (r *AdmissionPolicyReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	if err := r.Policies.Ensure(ctx, r.APIReader, r.Client); err != nil {
		logf.FromContext(ctx).Error(err, "cannot keep the admission policies in place; the operator applies nothing for any SecondaryScheduler until it can",
			"policies", r.Policies.Names(), "retryAfter", admissionPolicyRetry)
		return ctrl.Result{RequeueAfter: admissionPolicyRetry}, nil
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches the policies and bindings the cache holds (the operator's, by
// label) and reconciles them as one: any event restores all. One reconcile runs at start,
// for those that do not exist and so make no event.
func (r *AdmissionPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	atStart := make(chan event.GenericEvent, 1)
	atStart <- event.GenericEvent{Object: &admissionregistrationv1.ValidatingAdmissionPolicy{}}
	ours := predicate.NewPredicateFuncs(func(object client.Object) bool {
		for _, name := range r.Policies.Names() {
			if object.GetName() == name {
				return true
			}
		}
		return false
	})
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: "admission-policies"}}}
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named("admissionpolicy").
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicy{}, one, builder.WithPredicates(ours)).
		Watches(&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, one, builder.WithPredicates(ours)).
		WatchesRawSource(source.Channel(atStart, one)).
		Complete(r)
}
