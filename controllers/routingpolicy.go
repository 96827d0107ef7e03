package controllers

// Routing (spec.routing) happens in the API server: one MutatingAdmissionPolicy, fixed,
// which the installer ships, sets the scheduler name of the new pods a route selects, as
// its parameters say: the RoutingTable that the controller here writes from every route
// internal/routing keeps. The operator writes that table only, by name, and only reads
// the policy and its binding: a right to create a mutating policy would be a right to
// change any pod of the cluster. Each SecondaryScheduler's reconcile reads the table and
// the policy back to report its Routing condition.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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

// The routing policy and its binding are the installer's: the operator reads them, to
// tell whether they are in place, and holds no write on any mutating policy.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=mutatingadmissionpolicies;mutatingadmissionpolicybindings,verbs=get;list;watch
// The routing table: the operator may change and delete that one name only; create
// cannot be limited to names, but a table of another name is read by no policy.
// +kubebuilder:rbac:groups=operator.secondary-scheduler.io,resources=routingtables,verbs=get;list;watch;create
// +kubebuilder:rbac:groups=operator.secondary-scheduler.io,resources=routingtables,verbs=update;delete,resourceNames=secondary-scheduler-operator-routing
// +kubebuilder:rbac:groups=operator.secondary-scheduler.io,resources=routingtables/status,verbs=update,resourceNames=secondary-scheduler-operator-routing
// The SecondaryScheduler CRD, read for its UID: it owns the routing table, so that the
// garbage collector deletes it when the API is uninstalled.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get,resourceNames=secondaryschedulers.operator.secondary-scheduler.io

// routingTableRetry is how soon the operator tries again to write the routing table after
// it could not (its permissions, or a same-named object of someone else, change with no
// event it would see).
const routingTableRetry = 30 * time.Second

// RoutingSupported reports whether the API server serves MutatingAdmissionPolicy v1,
// through which pods are routed. The manager's cache must know before it starts: it may
// hold that kind, and the RoutingTable kind, only where the API server serves them. It
// fails when the API server serves the policy but not the RoutingTable API, which the
// installer ships beside the SecondaryScheduler API: the installation is incomplete.
func RoutingSupported(discoverer discovery.DiscoveryInterface) (bool, error) {
	served, err := serves(discoverer, admissionregistrationv1.SchemeGroupVersion.String(), "mutatingadmissionpolicies")
	if !served || err != nil {
		return false, err
	}
	if served, err = serves(discoverer, v1.GroupVersion.String(), "routingtables"); err != nil {
		return false, err
	}
	if !served {
		return false, fmt.Errorf("the API server serves no %s routingtables: apply the CustomResourceDefinition "+
			"routingtables.operator.secondary-scheduler.io, which the installer ships with the operator", v1.GroupVersion)
	}
	return true, nil
}

// serves reports whether the API server serves resource in groupVersion.
func serves(discoverer discovery.DiscoveryInterface, groupVersion, resource string) (bool, error) {
	served, err := discoverer.ServerResourcesForGroupVersion(groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discover %s: %w", groupVersion, err)
	}
	return slices.ContainsFunc(served.APIResources, func(r metav1.APIResource) bool { return r.Name == resource }), nil
}

// RoutingFacts are what routing decisions depend on besides the SecondarySchedulers:
// shared by the controller that writes the routing table and the reconciler that
// reports each route, so that both decide alike.
type RoutingFacts struct {
	// Supported is whether the API server serves MutatingAdmissionPolicy v1.
	Supported bool
	Tenancy   tenancy.Policy
	// NeverRouted are the namespaces whose pods are never routed besides the cluster's
	// system ones: the operator's and the schedulers'.
	NeverRouted []string
	// Policy is the routing policy and its binding as the installer ships them
	// (render.RoutingAdmission), which the operator checks and never writes.
	Policy *admission.Policies
	// SchedulerNamePolicy is the policy that labels pods with their scheduler's name, and
	// its binding, as the installer ships them beside the routing policy
	// (render.SchedulerNameAdmission), by which descheduling selects its scheduler's pods.
	SchedulerNamePolicy *admission.Policies
	// OperatorNamespace is where the routing probe is created, in dry run.
	OperatorNamespace string

	// audited holds the pods routes in mode Audit labelled (auditedPods); nil until
	// the reconciler is set up.
	audited toolscache.Indexer

	// writeError is why the table could not be written the last time, nil when it was.
	writeError lastError
	// probeError is why the operator could not observe the routing policy applying the
	// table the last time it looked, nil when it could (or did not need to).
	probeError lastError
}

// decide decides every route of secondarySchedulers at now.
func (f *RoutingFacts) decide(secondarySchedulers []v1.SecondaryScheduler, now time.Time) map[types.NamespacedName]routing.Verdict {
	return routing.Decide(secondarySchedulers, routing.Facts{Supported: f.Supported, Allowed: f.Tenancy.Allows, Now: now})
}

// WriteError is why the routing table could not be written the last time, nil when it
// was.
func (f *RoutingFacts) WriteError() error { return f.writeError.get() }

// ProbeError is why the operator could not observe the routing policy applying the
// routing table the last time it looked, nil when it could (or did not need to).
func (f *RoutingFacts) ProbeError() error { return f.probeError.get() }

// lastError is the error of the last attempt of something one controller does and
// another reports, nil after a success.
type lastError struct {
	mu  sync.Mutex
	err error
}

func (e *lastError) set(err error) {
	e.swap(err)
}

// swap sets err and reports whether it says something else than the error before.
func (e *lastError) swap(err error) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	changed := (e.err == nil) != (err == nil) || (err != nil && e.err.Error() != err.Error())
	e.err = err
	return changed
}

func (e *lastError) get() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// RoutingTableReconciler keeps the routing table as the routes of every
// SecondaryScheduler decide: rendered from those carried, deleted when none is.
type RoutingTableReconciler struct {
	client.Client
	// APIReader reads the table as the API server has it: one of the same name without
	// the operator's label is missing from the cache, and yet in the way of a create.
	APIReader client.Reader
	Facts     *RoutingFacts
	// Now is the time; nil for the real clock.
	Now func() time.Time
}

func (r *RoutingTableReconciler) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

// Reconcile writes the routing table for the routes decided now, and looks again when a
// decision changes with time (a failover coming due). It writes the table whether or not
// the routing policy is in place: the policy routes as soon as a cluster admin applies
// it, and each route's condition says meanwhile that it is missing.
func (r *RoutingTableReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
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
	written, err := r.write(ctx, routes)
	r.Facts.writeError.set(err)
	if err != nil {
		logf.FromContext(ctx).Error(err, "cannot write the routing table; the SecondarySchedulers' Routing conditions say so", "routingTable", v1.RoutingTableName,
			"retryAfter", routingTableRetry)
		recheck = routingTableRetry
	}
	if written != nil {
		again, err := r.observeInEffect(ctx, written)
		r.Facts.probeError.set(err)
		if err != nil {
			logf.FromContext(ctx).V(1).Info("cannot observe the routing policy applying the routing table", "reason", err.Error(), "retryAfter", again)
		}
		recheck = report.Sooner(recheck, again)
	}
	return ctrl.Result{RequeueAfter: recheck}, nil
}

// How soon the routing policy is looked at again: while it still applies an earlier
// table (the API server's watch of its parameters lags by a second or so), and when it
// did not annotate the probe at all (a policy missing or older than the operator, which
// each route's condition reports, or a probe refused).
const (
	routingLagPoll      = time.Second
	routingProbeRetry   = 10 * time.Second
	routingProbeTimeout = 10 * time.Second
)

// observeInEffect observes which generation of table, the routing table as just written
// (or found written), the API server's routing policy applies, by a dry-run create of the
// routing probe, and records in the table's status the routes of that generation once it
// is table's: each route's Routing condition is True only then (report.Routing). Nothing
// is done once the status records table's generation. It returns when to look again.
func (r *RoutingTableReconciler) observeInEffect(ctx context.Context, table *v1.RoutingTable) (time.Duration, error) {
	if table.Status != nil && table.Status.ObservedGeneration == table.Generation {
		return 0, nil
	}
	if r.Facts.OperatorNamespace == "" {
		return 0, errors.New("the operator's namespace is not known (set $POD_NAMESPACE), and its routing probe is created there")
	}
	probe := render.RoutingProbePod(r.Facts.OperatorNamespace)
	probeCtx, cancel := context.WithTimeout(ctx, routingProbeTimeout)
	defer cancel()
	if err := r.Create(probeCtx, probe, client.DryRunAll); err != nil {
		return routingProbeRetry, fmt.Errorf("the API server refused the routing probe, a pod created in dry run in namespace %s: %s",
			r.Facts.OperatorNamespace, apiErrorSummary(err))
	}
	applied, found := render.RoutingTableGenerationOf(probe)
	switch {
	case !found:
		return routingProbeRetry, fmt.Errorf("the routing policy did not mark the routing probe, a pod created in dry run in namespace %s: "+
			"it is missing, older than the operator, or failed to evaluate (its failurePolicy is Ignore)", r.Facts.OperatorNamespace)
	case applied != table.Generation:
		// Behind: the API server's watch of the table lags. Ahead: the operator's cache
		// does, and its watch brings the newer table, and another reconcile.
		return routingLagPoll, nil
	}
	updated := table.DeepCopy()
	updated.Status = &v1.RoutingTableStatus{ObservedGeneration: table.Generation, Routes: make([]v1.RouteInEffect, 0, len(table.Spec.Routes))}
	for _, route := range table.Spec.Routes {
		updated.Status.Routes = append(updated.Status.Routes, v1.RouteInEffect{SecondaryScheduler: route.SecondaryScheduler,
			Generation: route.Generation, Mode: route.Mode, Digest: render.RouteDigest(route)})
	}
	// The update carries the resourceVersion of the table probed: a table changed since is
	// probed again.
	if err := r.Status().Update(ctx, updated); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return routingLagPoll, nil
		}
		return routingProbeRetry, fmt.Errorf("record the routes in effect in the status of RoutingTable %s: %w", v1.RoutingTableName, err)
	}
	return 0, nil
}

// write makes the routing table carry routes, and returns it as written (or found), or
// deletes it when there is none, returning nil: the policy then evaluates nothing (its
// binding allows a missing table). It reads the cache
// first, which holds the operator's table only, so that a reconcile that changes nothing
// costs no request. The table is owned by the SecondaryScheduler CRD
// (render.InstallationOwner); when the operator cannot read the CRD, it writes the routes
// all the same, since a route that stays after its scheduler failed over would strand
// pods, and reports the error.
func (r *RoutingTableReconciler) write(ctx context.Context, routes []routing.Route) (*v1.RoutingTable, error) {
	if len(routes) == 0 {
		return nil, r.deleteTable(ctx)
	}
	want, err := render.RoutingTable(routes, r.Facts.NeverRouted, nil)
	if err != nil {
		return nil, err
	}
	cached := &v1.RoutingTable{}
	if err := r.Get(ctx, client.ObjectKey{Name: v1.RoutingTableName}, cached); err == nil && tableAsRendered(cached, want) && hasAPIOwner(cached) {
		return cached, nil
	}
	owner, ownerErr := installationOwner(ctx, r.APIReader)
	if ownerErr == nil {
		want.OwnerReferences = []metav1.OwnerReference{owner}
	}
	written, err := r.ensureTable(ctx, want)
	if err != nil {
		return nil, err
	}
	if ownerErr != nil {
		return written, fmt.Errorf("the routing table carries the routes, but nothing deletes it on uninstall: %w", ownerErr)
	}
	return written, nil
}

// tableNotOursError says that a RoutingTable of the table's name exists that the operator
// did not create.
type tableNotOursError struct{}

func (tableNotOursError) Error() string {
	return fmt.Sprintf("RoutingTable %s exists and was not created by the operator (it lacks the label %s=%s): the operator leaves it alone; "+
		"delete it for the operator to write its own", v1.RoutingTableName, render.LabelManagedBy, render.ManagedByValue)
}

// tableAsRendered reports whether live has want's spec and labels, and each of its owners.
func tableAsRendered(live, want *v1.RoutingTable) bool {
	for key, value := range want.Labels {
		if live.Labels[key] != value {
			return false // the operator's cache, which selects by label, would miss it
		}
	}
	for _, owner := range want.OwnerReferences {
		if !slices.Contains(live.OwnerReferences, owner) {
			return false
		}
	}
	return equality.Semantic.DeepEqual(live.Spec, want.Spec)
}

// ensureTable creates the table as want, or writes want's spec, labels and owner over the
// operator's own table when it differs, and returns the table as the API server has it. The update carries the resourceVersion read, so
// that a table changed, or deleted and made again, meanwhile is read again, not
// overwritten; a same-named table of someone else is reported, never touched.
func (r *RoutingTableReconciler) ensureTable(ctx context.Context, want *v1.RoutingTable) (*v1.RoutingTable, error) {
	live := &v1.RoutingTable{}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(want), live)
	if apierrors.IsNotFound(err) {
		created := want.DeepCopy()
		if err := r.Create(ctx, created); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, nil // made meanwhile: the next reconcile reads it
			}
			return nil, fmt.Errorf("create RoutingTable %s: %w", want.Name, err)
		}
		return created, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read RoutingTable %s: %w", want.Name, err)
	}
	if !render.ManagedByOperator(live.Labels) {
		return nil, tableNotOursError{}
	}
	if tableAsRendered(live, want) {
		return live, nil
	}
	updated := live.DeepCopy()
	updated.Spec = want.Spec
	if updated.Labels == nil {
		updated.Labels = map[string]string{}
	}
	maps.Copy(updated.Labels, want.Labels)
	for _, owner := range want.OwnerReferences {
		if !slices.Contains(updated.OwnerReferences, owner) {
			// An owner of another UID (a CRD since deleted and made again) goes: the
			// garbage collector would delete the table for it.
			updated.OwnerReferences = slices.DeleteFunc(updated.OwnerReferences, isAPIOwner)
			updated.OwnerReferences = append(updated.OwnerReferences, owner)
		}
	}
	if err := r.Update(ctx, updated); err != nil {
		return nil, fmt.Errorf("update RoutingTable %s: %w", want.Name, err)
	}
	return updated, nil
}

// deleteTable deletes the operator's routing table, if there is one, on the condition
// that it is still the object read (its UID): a table someone else made, or made again
// meanwhile, is left alone.
func (r *RoutingTableReconciler) deleteTable(ctx context.Context) error {
	table := &v1.RoutingTable{}
	if err := r.Get(ctx, client.ObjectKey{Name: v1.RoutingTableName}, table); err != nil {
		return client.IgnoreNotFound(err) // the cache holds the operator's alone
	}
	if !render.ManagedByOperator(table.Labels) {
		return nil
	}
	uid := table.UID
	err := r.Delete(ctx, table, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete RoutingTable %s: %w", v1.RoutingTableName, err)
	}
	return nil
}

func hasAPIOwner(object client.Object) bool {
	return slices.ContainsFunc(object.GetOwnerReferences(), isAPIOwner)
}

// isAPIOwner reports whether owner is the SecondaryScheduler CRD, of any UID.
func isAPIOwner(owner metav1.OwnerReference) bool {
	want := render.InstallationOwner("")
	return owner.APIVersion == want.APIVersion && owner.Kind == want.Kind && owner.Name == want.Name
}

// installationOwner is the owner reference of what the operator writes once for the
// installation (render.InstallationOwner): the SecondaryScheduler CRD, read from the API
// server (by metadata only) for its UID.
func installationOwner(ctx context.Context, reader client.Reader) (metav1.OwnerReference, error) {
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	if err := reader.Get(ctx, client.ObjectKey{Name: render.SecondarySchedulerCRDName}, crd); err != nil {
		return metav1.OwnerReference{}, fmt.Errorf("read CustomResourceDefinition %s, which owns what the operator writes for the installation: %w", render.SecondarySchedulerCRDName, err)
	}
	return render.InstallationOwner(crd.UID), nil
}

// TableRoutes are the routes of the routing table, by owner: those it carries, and those
// the routing policy was seen applying (its status).
type TableRoutes struct {
	Carried  map[types.NamespacedName]v1.TableRoute
	InEffect map[types.NamespacedName]v1.RouteInEffect
}

// ReadTableRoutes reads the routes of the routing table in reader; none when there is no
// table (or it is not the operator's: its cache holds only its own).
func ReadTableRoutes(ctx context.Context, reader client.Reader) (TableRoutes, error) {
	table := &v1.RoutingTable{}
	if err := reader.Get(ctx, client.ObjectKey{Name: v1.RoutingTableName}, table); err != nil {
		return TableRoutes{}, client.IgnoreNotFound(err)
	}
	var inEffect []v1.RouteInEffect
	if table.Status != nil {
		inEffect = table.Status.Routes
	}
	routes := TableRoutes{Carried: make(map[types.NamespacedName]v1.TableRoute, len(table.Spec.Routes)),
		InEffect: make(map[types.NamespacedName]v1.RouteInEffect, len(inEffect))}
	for _, route := range table.Spec.Routes {
		if owner, ok := routeOwner(route.SecondaryScheduler); ok {
			routes.Carried[owner] = route
		}
	}
	for _, route := range inEffect {
		if owner, ok := routeOwner(route.SecondaryScheduler); ok {
			routes.InEffect[owner] = route
		}
	}
	return routes, nil
}

// routeOwner is a route's owner, written namespace/name.
func routeOwner(secondaryScheduler string) (types.NamespacedName, bool) {
	namespace, name, found := strings.Cut(secondaryScheduler, "/")
	return types.NamespacedName{Namespace: namespace, Name: name}, found
}

// policyProblem is why the routing policy and its binding in the cache are not as the
// installer ships them, nil when they are: a *admission.NotInPlaceError, or the error of
// reading them.
func (f *RoutingFacts) policyProblem(ctx context.Context, reader client.Reader) error {
	if f.Policy == nil {
		return nil
	}
	_, err := f.Policy.Check(ctx, reader)
	return err
}

// SetUpRouting gives reconciler the facts routing is decided by and registers the
// controller that writes the routing table. supported says whether the API server
// serves MutatingAdmissionPolicy v1 (RoutingSupported). The pods of operatorNamespace,
// where the routing probe is created in dry run, and of the namespaces where schedulers
// run are never routed.
func SetUpRouting(mgr ctrl.Manager, reconciler *SecondarySchedulerReconciler, supported bool, operatorNamespace string) error {
	facts := &RoutingFacts{Supported: supported, Tenancy: reconciler.tenancy, NeverRouted: slices.Clone(reconciler.tenancy.Namespaces),
		OperatorNamespace: operatorNamespace}
	if operatorNamespace != "" {
		facts.NeverRouted = append(facts.NeverRouted, operatorNamespace)
	}
	if supported {
		shipped, err := render.RoutingAdmission()
		if err != nil {
			return fmt.Errorf("render the routing policy: %w", err)
		}
		if facts.Policy, err = admission.Installed(shipped); err != nil {
			return fmt.Errorf("read the routing policy: %w", err)
		}
		labelling, err := render.SchedulerNameAdmission()
		if err != nil {
			return fmt.Errorf("render the scheduler-name policy: %w", err)
		}
		if facts.SchedulerNamePolicy, err = admission.Installed(labelling); err != nil {
			return fmt.Errorf("read the scheduler-name policy: %w", err)
		}
	}
	reconciler.routing = facts
	return (&RoutingTableReconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Facts: facts, Now: reconciler.now}).SetupWithManager(mgr)
}

// reportRouting reports cr's route in the Routing condition (report.Routing), deciding
// with the status about to be written, and returns when the verdict changes with time
// alone, zero for never.
func (r *SecondarySchedulerReconciler) reportRouting(ctx context.Context, cr *v1.SecondaryScheduler, status *v1.SecondarySchedulerStatus,
	conditions *report.Conditions) (time.Duration, error) {
	if r.routing == nil || cr.Spec.Routing == nil {
		report.Routing(cr, status, conditions, report.RoutingFacts{Audited: -1})
		return 0, nil
	}
	list := &v1.SecondarySchedulerList{}
	if err := r.cache.List(ctx, list); err != nil {
		return 0, fmt.Errorf("list SecondarySchedulers: %w", err)
	}
	key := client.ObjectKeyFromObject(cr)
	for i := range list.Items {
		if client.ObjectKeyFromObject(&list.Items[i]) == key {
			list.Items[i].Status = *status
		}
	}
	facts := report.RoutingFacts{Verdict: r.routing.decide(list.Items, r.now())[key], Audited: -1}
	if r.routing.Supported {
		routes, err := ReadTableRoutes(ctx, r.cache)
		if err != nil {
			return 0, err
		}
		if route, found := routes.Carried[key]; found {
			facts.Carried = &route
		}
		if route, found := routes.InEffect[key]; found {
			facts.InEffect = &route
		}
		facts.ProbeProblem = r.routing.ProbeError()
		facts.PolicyProblem = r.routing.policyProblem(ctx, r.cache)
		var notInPlace *admission.NotInPlaceError
		if facts.PolicyProblem != nil && !errors.As(facts.PolicyProblem, &notInPlace) {
			return 0, facts.PolicyProblem
		}
	}
	verdict := facts.Verdict
	if verdict.Route != nil && verdict.Route.Mode == v1.RoutingAudit && r.routing.audited != nil {
		var err error
		if facts.Audited, err = countAudited(r.routing.audited, verdict.Route.SchedulerName); err != nil {
			return 0, err
		}
	}
	report.Routing(cr, status, conditions, facts)
	if err := r.routing.WriteError(); err != nil && verdict.Route != nil && (facts.Carried == nil || facts.Carried.Generation != verdict.Route.Generation) {
		conditions.AppendToMessage(v1.ConditionRouting, "The operator could not write the routing table: "+err.Error())
	}
	return verdict.RecheckAfter, nil
}

// SetupWithManager reconciles the routing table as one, on any change of a
// SecondaryScheduler (its route, or its availability) and of the table the cache holds
// (the operator's, by label), and once at start.
func (r *RoutingTableReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if !r.Facts.Supported {
		return nil
	}
	atStart := make(chan event.GenericEvent, 1)
	atStart <- event.GenericEvent{Object: &v1.RoutingTable{}}
	named := predicate.NewPredicateFuncs(func(object client.Object) bool { return object.GetName() == v1.RoutingTableName })
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: "routing-table"}}}
	})
	// Only a resource that has, or had, a route changes what the table carries.
	routed := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return hasRoute(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool { return hasRoute(e.ObjectOld) || hasRoute(e.ObjectNew) },
		DeleteFunc: func(e event.DeleteEvent) bool { return hasRoute(e.Object) },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("routingtable").
		Watches(&v1.SecondaryScheduler{}, one, builder.WithPredicates(routed)).
		Watches(&v1.RoutingTable{}, one, builder.WithPredicates(named)).
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
