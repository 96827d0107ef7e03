package controllers

// Routing (spec.routing) happens in the API server: one MutatingAdmissionPolicy, which the
// operator renders from every route that internal/routing keeps, sets the scheduler name
// of the new pods a route selects. The controller here writes that policy and its binding,
// and only those, by name; each SecondaryScheduler's reconcile reads the policy back to
// report its Routing condition.

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	toolscache "k8s.io/client-go/tools/cache"
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
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/report"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/routing"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
)

// The routing policy and its binding: the operator may change and delete those two
// names only; create cannot be limited to names. A mutating policy could change any pod
// of the cluster, so the operator holds no other write on mutating policies.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingadmissionpolicies;mutatingadmissionpolicybindings,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingadmissionpolicies;mutatingadmissionpolicybindings,verbs=update;delete,resourceNames=secondary-scheduler-operator-routing
// The SecondaryScheduler CRD, read for its UID: it owns the policy and the binding, so
// that the garbage collector deletes them when the API is uninstalled.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get,resourceNames=secondaryschedulers.operator.secondary-scheduler.io

// routingPolicyRetry is how soon the operator tries again to write the routing policy
// after it could not (its permissions, or a same-named object of someone else, change
// with no event it would see).
const routingPolicyRetry = 30 * time.Second

// RoutingSupported reports whether the API server serves MutatingAdmissionPolicy v1.
// The manager's cache must know before it starts: it may hold that kind only where the
// API server serves it.
func RoutingSupported(discoverer discovery.DiscoveryInterface) (bool, error) {
	served, err := discoverer.ServerResourcesForGroupVersion(admissionregistrationv1.SchemeGroupVersion.String())
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", admissionregistrationv1.SchemeGroupVersion, err)
	}
	for _, resource := range served.APIResources {
		if resource.Name == "mutatingadmissionpolicies" {
			return true, nil
		}
	}
	return false, nil
}

// RoutingFacts are what routing decisions depend on besides the SecondarySchedulers:
// shared by the controller that writes the routing policy and the reconciler that
// reports each route, so that both decide alike.
type RoutingFacts struct {
	// Supported is whether the API server serves MutatingAdmissionPolicy v1.
	Supported bool
	Tenancy   tenancy.Policy
	// NeverRouted are the namespaces whose pods are never routed besides the cluster's
	// system ones: the operator's and the schedulers'.
	NeverRouted []string

	// audited holds the pods routes in mode Audit labelled (auditedPods); nil until
	// the reconciler is set up.
	audited toolscache.Indexer

	mu sync.Mutex
	// writeError is why the policy could not be written the last time, nil when it was.
	writeError error
}

// decide decides every route of secondarySchedulers at now.
func (f *RoutingFacts) decide(secondarySchedulers []v1.SecondaryScheduler, now time.Time) map[types.NamespacedName]routing.Verdict {
	return routing.Decide(secondarySchedulers, routing.Facts{Supported: f.Supported, Allowed: f.Tenancy.Allows, Now: now})
}

func (f *RoutingFacts) setWriteError(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writeError = err
}

// WriteError is why the routing policy could not be written the last time, nil when it
// was.
func (f *RoutingFacts) WriteError() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writeError
}

// RoutingPolicyReconciler keeps the routing policy as the routes of every
// SecondaryScheduler decide: rendered from those carried, deleted when none is.
type RoutingPolicyReconciler struct {
	client.Client
	// APIReader reads the policy as the API server has it (see admission.Policies.Ensure).
	APIReader client.Reader
	Facts     *RoutingFacts
	// Now is the time; nil for the real clock.
	Now func() time.Time
}

func (r *RoutingPolicyReconciler) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// Reconcile writes the routing policy for the routes decided now, and looks again when a
// decision changes with time (a failover coming due).
func (r *RoutingPolicyReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	if !r.Facts.Supported {
		return ctrl.Result{}, nil // each route says RoutingUnsupported
	}
	list := &v1.SecondarySchedulerList{}
	if err := r.List(ctx, list); err != nil {
		return ctrl.Result{}, fmt.Errorf("list SecondarySchedulers: %w", err)
	}
	var routes []routing.Route
	var recheck time.Duration
	for _, verdict := range r.Facts.decide(list.Items, r.now()) {
		if verdict.Route != nil {
			routes = append(routes, *verdict.Route)
		}
		if verdict.RecheckAfter > 0 && (recheck == 0 || verdict.RecheckAfter < recheck) {
			recheck = verdict.RecheckAfter
		}
	}
	err := r.write(ctx, routes)
	r.Facts.setWriteError(err)
	if err != nil {
		logf.FromContext(ctx).Error(err, "cannot write the routing policy; the SecondarySchedulers' Routing conditions say so", "policy", render.RoutingPolicyName,
			"retryAfter", routingPolicyRetry)
		recheck = routingPolicyRetry
	}
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// write makes the routing policy carry routes, or deletes it when there is none (the
// binding first, so that no pod meets a policy half gone). It reads the cache first,
// which holds the operator's policy and binding only, so that a reconcile that changes
// nothing costs no request. The policy and binding are owned by the SecondaryScheduler
// CRD (render.RoutingPolicyOwner); when the operator cannot read the CRD, it writes the
// routes all the same, since a route that stays after its scheduler failed over would
// strand pods, and reports the error.
func (r *RoutingPolicyReconciler) write(ctx context.Context, routes []routing.Route) error {
	named := metav1.ObjectMeta{Name: render.RoutingPolicyName}
	if len(routes) == 0 {
		return admission.DeleteOwned(ctx, r.Client, r.Client,
			&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: named},
			&admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: named})
	}
	rendered, err := render.RoutingPolicy(routes, r.Facts.NeverRouted)
	if err != nil {
		return err
	}
	policies, err := admission.Owned(rendered)
	if err != nil {
		return err
	}
	if _, err := policies.Check(ctx, r.Client); err == nil && r.ownedByAPI(ctx) {
		return nil
	}
	owner, ownerErr := r.apiOwner(ctx)
	if ownerErr == nil {
		for _, object := range rendered {
			object.SetOwnerReferences([]metav1.OwnerReference{owner})
		}
		if policies, err = admission.Owned(rendered); err != nil {
			return err
		}
	}
	if err := policies.Ensure(ctx, r.APIReader, r.Client); err != nil {
		return err
	}
	if ownerErr != nil {
		return fmt.Errorf("the routing policy carries the routes, but nothing deletes it on uninstall: %w", ownerErr)
	}
	return r.adopt(ctx, owner)
}

// routingObjects are the routing policy and its binding, named, empty.
func routingObjects() []client.Object {
	named := metav1.ObjectMeta{Name: render.RoutingPolicyName}
	return []client.Object{&admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: named},
		&admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: named}}
}

// ownedByAPI reports whether the routing policy and binding in the cache are owned by the
// SecondaryScheduler CRD (one of another UID would have been deleted by the garbage
// collector).
func (r *RoutingPolicyReconciler) ownedByAPI(ctx context.Context) bool {
	for _, object := range routingObjects() {
		if err := r.Get(ctx, client.ObjectKeyFromObject(object), object); err != nil || !hasAPIOwner(object) {
			return false
		}
	}
	return true
}

func hasAPIOwner(object client.Object) bool {
	want := render.RoutingPolicyOwner("")
	return slices.ContainsFunc(object.GetOwnerReferences(), func(owner metav1.OwnerReference) bool {
		return owner.APIVersion == want.APIVersion && owner.Kind == want.Kind && owner.Name == want.Name
	})
}

// apiOwner is the owner reference of the routing policy: the SecondaryScheduler CRD, read
// from the API server (by metadata only) for its UID.
func (r *RoutingPolicyReconciler) apiOwner(ctx context.Context) (metav1.OwnerReference, error) {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: render.SecondarySchedulerCRDName}, crd); err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("read CustomResourceDefinition %s, which owns the routing policy: %w", render.SecondarySchedulerCRDName, err)
	}
	return render.RoutingPolicyOwner(crd.UID), nil
}

// adopt gives owner to the routing policy and binding that lack it: Ensure leaves one
// that is as rendered alone, and those an older operator wrote have no owner. Only the
// operator's are changed, and the update carries the resourceVersion read.
func (r *RoutingPolicyReconciler) adopt(ctx context.Context, owner metav1.OwnerReference) error {
	for _, object := range routingObjects() {
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(object), object); err != nil {
			return fmt.Errorf("read %T %s: %w", object, object.GetName(), err)
		}
		if hasAPIOwner(object) || object.GetLabels()[render.LabelManagedBy] != render.ManagedByValue {
			continue
		}
		object.SetOwnerReferences(append(object.GetOwnerReferences(), owner))
		if err := r.Update(ctx, object); err != nil {
			return fmt.Errorf("set the owner of %T %s: %w", object, object.GetName(), err)
		}
	}
	return nil
}

// CarriedRoutes are the routes the routing policy in reader carries, by owner; none when
// there is no policy (or it is not the operator's: its cache holds only its own).
func CarriedRoutes(ctx context.Context, reader client.Reader) (map[types.NamespacedName]render.CarriedRoute, error) {
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{}
	err := reader.Get(ctx, client.ObjectKey{Name: render.RoutingPolicyName}, policy)
	if err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	var entries []render.CarriedRoute
	listed, found := policy.Annotations[render.AnnotationRoutes]
	if !found {
		return nil, nil // its next write lists them again
	}
	if err := json.Unmarshal([]byte(listed), &entries); err != nil {
		return nil, fmt.Errorf("read the routes MutatingAdmissionPolicy %s carries: %w", render.RoutingPolicyName, err)
	}
	carried := make(map[types.NamespacedName]render.CarriedRoute, len(entries))
	for _, entry := range entries {
		namespace, name, found := cutOwner(entry.SecondaryScheduler)
		if found {
			carried[types.NamespacedName{Namespace: namespace, Name: name}] = entry
		}
	}
	return carried, nil
}

func cutOwner(owner string) (namespace, name string, found bool) {
	return strings.Cut(owner, "/")
}

// SetUpRouting gives reconciler the facts routing is decided by and registers the
// controller that writes the routing policy. supported says whether the API server
// serves MutatingAdmissionPolicy v1 (RoutingSupported); the pods of neverRouted (the
// operator's namespace) and of the namespaces where schedulers run are never routed.
func SetUpRouting(mgr ctrl.Manager, reconciler *SecondarySchedulerReconciler, supported bool, neverRouted ...string) error {
	facts := &RoutingFacts{Supported: supported, Tenancy: reconciler.Tenancy, NeverRouted: slices.Clone(reconciler.Tenancy.Namespaces)}
	for _, namespace := range neverRouted {
		if namespace != "" {
			facts.NeverRouted = append(facts.NeverRouted, namespace)
		}
	}
	reconciler.Routing = facts
	return (&RoutingPolicyReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Facts: facts, Now: reconciler.now}).SetupWithManager(mgr)
}

// reportRouting reports cr's route in the Routing condition (report.Routing), deciding
// with the status about to be written, and returns when the verdict changes with time
// alone, zero for never.
func (r *SecondarySchedulerReconciler) reportRouting(ctx context.Context, cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus,
	conditions *report.Conditions) (time.Duration, error) {
	if r.Routing == nil || cr.Spec.Routing == nil {
		report.Routing(cr, status, conditions, routing.Verdict{}, nil, -1)
		return 0, nil
	}
	list := &v1.SecondarySchedulerList{}
	if err := r.List(ctx, list); err != nil {
		return 0, fmt.Errorf("list SecondarySchedulers: %w", err)
	}
	key := client.ObjectKeyFromObject(cr)
	for i := range list.Items {
		if client.ObjectKeyFromObject(&list.Items[i]) == key {
			list.Items[i].Status = *status
		}
	}
	verdict := r.Routing.decide(list.Items, r.now())[key]
	var carried *render.CarriedRoute
	if r.Routing.Supported {
		routes, err := CarriedRoutes(ctx, r.Client)
		if err != nil {
			return 0, err
		}
		if route, found := routes[key]; found {
			carried = &route
		}
	}
	audited := -1
	if verdict.Route != nil && verdict.Route.Mode == v1.RoutingAudit && r.Routing.audited != nil {
		var err error
		if audited, err = countAudited(r.Routing.audited, verdict.Route.SchedulerName); err != nil {
			return 0, err
		}
	}
	report.Routing(cr, status, conditions, verdict, carried, audited)
	if err := r.Routing.WriteError(); err != nil && verdict.Route != nil && (carried == nil || carried.Generation != verdict.Route.Generation) {
		conditions.AppendToMessage(v1.ConditionRouting, "The operator could not write the routing policy: "+err.Error())
	}
	return verdict.RecheckAfter, nil
}

// SetupWithManager reconciles the routing policy as one, on any change of a
// SecondaryScheduler (its route, or its availability) and of the policy or binding the
// cache holds (the operator's, by label), and once at start.
func (r *RoutingPolicyReconciler) SetupWithManager(mgr ctrl.Manager) error {
	atStart := make(chan event.GenericEvent, 1)
	atStart <- event.GenericEvent{Object: &admissionregistrationv1.MutatingAdmissionPolicy{}}
	named := predicate.NewPredicateFuncs(func(object client.Object) bool { return object.GetName() == render.RoutingPolicyName })
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: "routing-policy"}}}
	})
	if !r.Facts.Supported {
		return nil
	}
	// Only a resource that has, or had, a route changes what the policy carries.
	routed := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return hasRoute(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool { return hasRoute(e.ObjectOld) || hasRoute(e.ObjectNew) },
		DeleteFunc: func(e event.DeleteEvent) bool { return hasRoute(e.Object) },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("routingpolicy").
		Watches(&v1.SecondaryScheduler{}, one, builder.WithPredicates(routed)).
		Watches(&admissionregistrationv1.MutatingAdmissionPolicy{}, one, builder.WithPredicates(named)).
		Watches(&admissionregistrationv1.MutatingAdmissionPolicyBinding{}, one, builder.WithPredicates(named)).
		WatchesRawSource(source.Channel(atStart, one)).
		Complete(r)
}

// everyRoutedSecondaryScheduler are the SecondarySchedulers with spec.routing.
func (r *SecondarySchedulerReconciler) everyRoutedSecondaryScheduler(ctx context.Context, _ client.Object) []reconcile.Request {
	return r.secondarySchedulersWhere(ctx, "a change of routing", func(cr *v1.SecondaryScheduler) bool { return cr.Spec.Routing != nil })
}

func hasRoute(object client.Object) bool {
	cr, ok := object.(*v1.SecondaryScheduler)
	return ok && cr.Spec.Routing != nil
}
