package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
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
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/drift"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/observe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/schedconfig"
)

// How one scheduler-plugins controller serves every scheduler of the cluster:
//   - a scheduler whose configuration enables Coscheduling or CapacityScheduling carries,
//     on its Deployment, the controller image of its release
//     (render.PluginControllerImageAnnotation); the annotation is rendered and applied with
//     the rest of the scheduler, so it is there exactly while such a scheduler is rolled
//     out, and goes with the Deployment when the SecondaryScheduler goes;
//   - PluginControllerReconciler runs one controller Deployment in the operator's
//     namespace while any cached scheduler Deployment carries the annotation, of the newest
//     release among them, and deletes it, once proven its own, when none does;
//   - each such SecondaryScheduler reports the controller in status.pluginController.
//
// The controller watches PodGroups and ElasticQuotas cluster-wide, whichever scheduler
// places their pods, so one is all a cluster needs (two would fight over their status).

// PluginControllerFacts are what the reconcilers share about scheduler-plugins'
// controller: where it runs, and the last error writing it.
type PluginControllerFacts struct {
	// Namespace is the operator's namespace, where the controller runs; empty outside a
	// pod, where the operator runs none.
	Namespace  string
	writeError lastError
	// news wakes the schedulers that report the controller when writeError changes,
	// which no watched object tells them.
	news chan event.GenericEvent
}

// setWriteError records err, and tells the schedulers reporting the controller when it
// changes what they say. One pending message is enough: it wakes them all.
func (f *PluginControllerFacts) setWriteError(err error) {
	if !f.writeError.swap(err) {
		return
	}
	select {
	case f.news <- event.GenericEvent{Object: &appsv1.Deployment{}}:
	default:
	}
}

// WriteError is the last error writing or deleting the controller, nil once one
// succeeded.
func (f *PluginControllerFacts) WriteError() error { return f.writeError.get() }

// PluginControllerReconciler runs scheduler-plugins' controller while any scheduler
// needs it.
type PluginControllerReconciler struct {
	// cache reads the scheduler Deployments and the controller's, all labelled as the
	// operator's.
	cache client.Reader
	// kinds tells whether the API server serves the kinds the controller keeps.
	kinds gather.ServedKinds
	// write creates, applies and deletes the controller's Deployment, each write with its
	// proof that the object is the operator's.
	write *writer
	facts *PluginControllerFacts
}

// Reconcile makes the controller's Deployment what the schedulers now need: rendered for
// the newest release they ask for, or gone.
func (r *PluginControllerReconciler) Reconcile(ctx context.Context, _ ctrl.Request) (ctrl.Result, error) {
	images, err := r.imagesAskedFor(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if len(images) == 0 {
		err = r.remove(ctx)
	} else {
		err = r.run(ctx, render.ChoosePluginControllerImage(images))
	}
	r.facts.setWriteError(err)
	var missing pluginControllerCRDMissingError
	switch {
	case errors.As(err, &missing):
		// Said in every needing scheduler's status; no event tells when a CRD comes.
		logf.FromContext(ctx).V(1).Info("not running scheduler-plugins' controller", "reason", err.Error(), "retryAfter", pluginControllerCRDPoll)
		return ctrl.Result{RequeueAfter: pluginControllerCRDPoll}, nil
	case errors.As(err, new(pluginControllerNameTakenError)):
		// Said in every needing scheduler's status; tried again when that Deployment goes.
		logf.FromContext(ctx).Error(err, "cannot run scheduler-plugins' controller")
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, err
}

// pluginControllerCRDPoll is how soon the kinds the controller keeps are looked for again
// while one is missing.
const pluginControllerCRDPoll = 30 * time.Second

// checkCRDs refuses to create the controller while the API server does not serve every
// kind it keeps (schedconfig.PluginControllerCRDs): its manager would fail to start, and
// crash-loop. Asked before a create only (a discovery request per group and version): a
// running controller is left as it is.
func (r *PluginControllerReconciler) checkCRDs() error {
	var missing []schedconfig.CustomResource
	kinds := gather.OneLookPerGroupVersion(r.kinds)
	for _, crd := range schedconfig.PluginControllerCRDs() {
		served, err := kinds.Serves(crd.GroupVersionKind)
		if err != nil {
			return err
		}
		if !served {
			missing = append(missing, crd)
		}
	}
	if len(missing) > 0 {
		return pluginControllerCRDMissingError{missing: missing}
	}
	return nil
}

// pluginControllerCRDMissingError says which kinds the controller keeps the cluster does
// not serve, and how to install them.
type pluginControllerCRDMissingError struct{ missing []schedconfig.CustomResource }

func (e pluginControllerCRDMissingError) Error() string {
	commands := make([]string, 0, len(e.missing))
	names := make([]string, 0, len(e.missing))
	for _, crd := range e.missing {
		names = append(names, crd.CRDName())
		commands = append(commands, crd.InstallCommand())
	}
	return fmt.Sprintf("scheduler-plugins' controller keeps the status of PodGroups and ElasticQuotas alike, and does not start without both CRDs; "+
		"this cluster lacks %s: install with %s", strings.Join(names, " and "), strings.Join(commands, " and "))
}

// imagesAskedFor are the controller images the cached scheduler Deployments carry, one
// per Deployment that asks for the controller, of SecondarySchedulers that are there and
// not being deleted: the controller goes with the last scheduler that needs it, not when
// the garbage collector gets to its Deployment. The Deployments that ask come from an
// index (asksForPluginControllerIndex), and only their SecondarySchedulers are read: every
// SecondaryScheduler deleted wakes this reconciler, and reading every scheduler and
// Deployment each time made deleting N of them cost N times N.
func (r *PluginControllerReconciler) imagesAskedFor(ctx context.Context) ([]string, error) {
	deployments, err := deploymentsAskingForPluginController(ctx, r.cache)
	if err != nil {
		return nil, err
	}
	var images []string
	for i := range deployments {
		deployment := &deployments[i]
		live, err := ownerIsLive(ctx, r.cache, deployment)
		if err != nil {
			return nil, err
		}
		if live {
			images = append(images, pluginControllerImageOf(deployment))
		}
	}
	return images, nil
}

// asksForPluginControllerIndex indexes the cached Deployments that ask for the controller
// (pluginControllerImageOf), all under one key.
const asksForPluginControllerIndex = "operator.secondary-scheduler.io/asks-for-plugin-controller"

func indexAsksForPluginController(object client.Object) []string {
	if pluginControllerImageOf(object) == "" {
		return nil
	}
	return []string{"true"}
}

// deploymentsAskingForPluginController lists, from a cache indexed by
// asksForPluginControllerIndex, the scheduler Deployments that ask for the controller.
func deploymentsAskingForPluginController(ctx context.Context, cache client.Reader) ([]appsv1.Deployment, error) {
	deployments := &appsv1.DeploymentList{}
	if err := cache.List(ctx, deployments, client.MatchingFields{asksForPluginControllerIndex: "true"},
		client.MatchingLabels{render.LabelManagedBy: render.ManagedByValue}); err != nil {
		return nil, fmt.Errorf("list the schedulers' Deployments that ask for scheduler-plugins' controller: %w", err)
	}
	return deployments.Items, nil
}

// ownerIsLive is whether the SecondaryScheduler that object's owner labels name, UID
// included, is in the cache and not being deleted. A scheduler's Deployment is in its
// SecondaryScheduler's namespace: labels naming another are no scheduler's (and may name
// a namespace the cache does not hold).
func ownerIsLive(ctx context.Context, cache client.Reader, object client.Object) (bool, error) {
	key, ok := ownership.OwnerKey(object)
	if !ok || key.Namespace != object.GetNamespace() {
		return false, nil
	}
	cr := &v1.SecondaryScheduler{}
	if err := cache.Get(ctx, key, cr); apierrors.IsNotFound(err) {
		return false, nil
	} else if err != nil {
		return false, fmt.Errorf("read SecondaryScheduler %s: %w", key, err)
	}
	return string(cr.UID) == object.GetLabels()[render.LabelOwnerUID] && cr.DeletionTimestamp.IsZero(), nil
}

// pluginControllerImageOf is the controller image a scheduler's Deployment asks for, ""
// for none (or for a Deployment being deleted, whose scheduler is going).
func pluginControllerImageOf(object client.Object) string {
	if !object.GetDeletionTimestamp().IsZero() || object.GetLabels()[render.LabelOwnerUID] == "" {
		return ""
	}
	return object.GetAnnotations()[render.PluginControllerImageAnnotation]
}

// run creates or applies the controller's Deployment for image. Nothing is written while
// the cached Deployment already is what applying would make it.
func (r *PluginControllerReconciler) run(ctx context.Context, image string) error {
	cached, err := r.cached(ctx)
	if err != nil {
		return err
	}
	if cached == nil {
		if err := r.checkCRDs(); err != nil {
			return err
		}
	}
	facts := render.PluginControllerFacts{Namespace: r.facts.Namespace, Image: image}
	if facts.PriorityClassName, err = r.defaultPriorityClass(ctx); err != nil {
		return err
	}
	if cached != nil {
		facts.Owner = installationOwnerOf(cached)
	}
	if facts.Owner.UID == "" {
		if facts.Owner, err = installationOwner(ctx, r.write.APIReader); err != nil {
			return err
		}
	}
	desired, err := render.PluginController(facts)
	if err != nil {
		return fmt.Errorf("render scheduler-plugins' controller: %w", err)
	}
	object, err := withAppliedHash(desired)
	if err != nil {
		return err
	}
	if cached == nil {
		return r.create(ctx, object)
	}
	current, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cached)
	if err != nil {
		return err
	}
	current["apiVersion"], current["kind"] = object.GetAPIVersion(), object.GetKind()
	if drift.Unchanged(current, object.Object) {
		return nil
	}
	return r.write.applyOwned(ctx, object, cached)
}

// defaultPriorityClass is the operator's default PriorityClass, the schedulers', when it
// exists, "" when it does not (the operator runs without its installer): the API server
// refuses pods of a missing class.
func (r *PluginControllerReconciler) defaultPriorityClass(ctx context.Context) (string, error) {
	class := &metav1.PartialObjectMetadata{}
	class.SetGroupVersionKind(gather.PriorityClassGVK)
	err := r.cache.Get(ctx, client.ObjectKey{Name: v1.DefaultPriorityClassName}, class)
	if apierrors.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read PriorityClass %s: %w", v1.DefaultPriorityClassName, err)
	}
	return v1.DefaultPriorityClassName, nil
}

// create creates the controller's Deployment: a Deployment of its name that is not the
// operator's answers AlreadyExists and is left alone.
func (r *PluginControllerReconciler) create(ctx context.Context, object *unstructured.Unstructured) error {
	err := r.write.Create(ctx, object, client.FieldOwner(FieldOwner))
	if apierrors.IsAlreadyExists(err) {
		existing := &metav1.PartialObjectMetadata{}
		existing.SetGroupVersionKind(appsv1.SchemeGroupVersion.WithKind("Deployment"))
		if err := r.write.APIReader.Get(ctx, client.ObjectKeyFromObject(object), existing); err != nil {
			return client.IgnoreNotFound(err) // gone meanwhile: the next reconcile creates it
		}
		if !render.ManagedByOperator(existing.Labels) {
			return pluginControllerNameTakenError{namespace: object.GetNamespace()}
		}
		return nil // the operator's, not cached yet: its event brings the next reconcile
	}
	return writeError("create", object, err)
}

// remove deletes the controller's Deployment, if the cache holds it (the operator's, by
// label), on the condition that it is still the object read.
func (r *PluginControllerReconciler) remove(ctx context.Context) error {
	cached, err := r.cached(ctx)
	if err != nil || cached == nil {
		return err
	}
	uid := cached.UID
	err = r.write.Delete(ctx, cached, client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete Deployment %s/%s: %w", r.facts.Namespace, render.PluginControllerName, err)
	}
	return nil
}

// cached is the controller's Deployment as the cache holds it (the operator's, since the
// cache selects by label), nil when it holds none.
func (r *PluginControllerReconciler) cached(ctx context.Context) (*appsv1.Deployment, error) {
	deployment := &appsv1.Deployment{}
	err := r.cache.Get(ctx, client.ObjectKey{Namespace: r.facts.Namespace, Name: render.PluginControllerName}, deployment)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read Deployment %s/%s: %w", r.facts.Namespace, render.PluginControllerName, err)
	}
	return deployment, nil
}

// installationOwnerOf is the SecondaryScheduler CRD's owner reference on object, zero
// when it has none: the CRD keeps its UID, so a reference once read is not read again.
func installationOwnerOf(object client.Object) metav1.OwnerReference {
	i := slices.IndexFunc(object.GetOwnerReferences(), isAPIOwner)
	if i < 0 {
		return metav1.OwnerReference{}
	}
	return object.GetOwnerReferences()[i]
}

// pluginControllerNameTakenError says that a Deployment of the controller's name, not the
// operator's, is in the operator's namespace.
type pluginControllerNameTakenError struct{ namespace string }

func (e pluginControllerNameTakenError) Error() string {
	return fmt.Sprintf("Deployment %s/%s exists and is not the operator's (it lacks the label %s=%s): the operator leaves it alone and runs no "+
		"scheduler-plugins controller; delete it for the operator to run its own", e.namespace, render.PluginControllerName,
		render.LabelManagedBy, render.ManagedByValue)
}

// SetUpPluginController adds the controller that runs scheduler-plugins' controller in
// operatorNamespace, and lets reconciler report it. Outside a pod (no namespace of the
// operator's) none runs, and each scheduler that needs one says so.
func SetUpPluginController(ctx context.Context, mgr ctrl.Manager, reconciler *SecondarySchedulerReconciler, operatorNamespace string) error {
	facts := &PluginControllerFacts{Namespace: operatorNamespace, news: make(chan event.GenericEvent, 1)}
	reconciler.pluginController = facts
	if operatorNamespace == "" {
		return nil
	}
	if err := mgr.GetFieldIndexer().IndexField(ctx, &appsv1.Deployment{}, asksForPluginControllerIndex, indexAsksForPluginController); err != nil {
		return fmt.Errorf("index the Deployments that ask for scheduler-plugins' controller: %w", err)
	}
	discoverer, err := discovery.NewDiscoveryClientForConfig(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("make a discovery client: %w", err)
	}
	r := &PluginControllerReconciler{cache: mgr.GetClient(), facts: facts, kinds: gather.DiscoveredKinds(discoverer),
		write: &writer{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}}
	atStart := make(chan event.GenericEvent, 1)
	atStart <- event.GenericEvent{Object: &appsv1.Deployment{}}
	one := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: operatorNamespace, Name: render.PluginControllerName}}}
	})
	// A scheduler Deployment that asks, or asked, for the controller, and the
	// controller's own Deployment (deleted, or edited by someone).
	asksOrIs := func(object client.Object) bool {
		return pluginControllerImageOf(object) != "" || facts.isController(object)
	}
	relevant := predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return asksOrIs(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return asksOrIs(e.ObjectOld) || asksOrIs(e.ObjectNew) },
		DeleteFunc:  func(e event.DeleteEvent) bool { return asksOrIs(e.Object) },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	// A SecondaryScheduler that goes takes its need with it.
	going := predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	// The default PriorityClass, created or deleted, changes the controller's pods.
	defaultClass := &metav1.PartialObjectMetadata{}
	defaultClass.SetGroupVersionKind(gather.PriorityClassGVK)
	named := predicate.NewPredicateFuncs(func(object client.Object) bool { return object.GetName() == v1.DefaultPriorityClassName })
	return ctrl.NewControllerManagedBy(mgr).
		Named("plugincontroller").
		Watches(&appsv1.Deployment{}, one, builder.WithPredicates(relevant)).
		Watches(&v1.SecondaryScheduler{}, one, builder.WithPredicates(going)).
		Watches(defaultClass, one, builder.WithPredicates(named)).
		WatchesRawSource(source.Channel(atStart, one)).
		Complete(r)
}

// isController reports whether object is the controller's Deployment (or one of its name).
func (f *PluginControllerFacts) isController(object client.Object) bool {
	return object.GetNamespace() == f.Namespace && object.GetName() == render.PluginControllerName
}

// reportPluginController sets status.pluginController from the controller's Deployment
// as the cache holds it, while config enables a plugin the controller serves.
func (r *SecondarySchedulerReconciler) reportPluginController(ctx context.Context, status *v1.SecondarySchedulerStatus, rendered *render.Result) error {
	status.PluginController = nil
	plugins := schedconfig.PluginsNeedingController(rendered.Config)
	if len(plugins) == 0 {
		return nil
	}
	facts := r.pluginController
	report := &v1.PluginControllerStatus{Plugins: plugins}
	status.PluginController = report
	if facts == nil || facts.Namespace == "" {
		report.Message = "The operator runs outside a pod, with no namespace of its own to run scheduler-plugins' controller in: " +
			"gangs and quotas are scheduled all the same, but PodGroups and ElasticQuotas get no status"
		return nil
	}
	report.Deployment = facts.Namespace + "/" + render.PluginControllerName
	deployment := &appsv1.Deployment{}
	err := r.cache.Get(ctx, client.ObjectKey{Namespace: facts.Namespace, Name: render.PluginControllerName}, deployment)
	if apierrors.IsNotFound(err) {
		report.Message = "The operator is creating scheduler-plugins' controller"
		if writeErr := facts.WriteError(); writeErr != nil {
			report.Message = "The operator cannot run scheduler-plugins' controller: " + writeErr.Error()
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read Deployment %s: %w", report.Deployment, err)
	}
	report.Replicas, report.ReadyReplicas = deployment.Status.Replicas, deployment.Status.ReadyReplicas
	if containers := deployment.Spec.Template.Spec.Containers; len(containers) > 0 {
		report.Image = containers[0].Image
	}
	want := int32(1)
	if deployment.Spec.Replicas != nil {
		want = *deployment.Spec.Replicas
	}
	// The status counts pods of the image before while the Deployment controller has not
	// seen a change, and the old pods while it replaces them: neither is the image above.
	rolled := deployment.Status
	switch {
	case report.ReadyReplicas == 0:
		report.Message = fmt.Sprintf("No pod of scheduler-plugins' controller is ready (0 of %d): PodGroups and ElasticQuotas get no status meanwhile; "+
			"see kubectl -n %s describe deployment %s", want, facts.Namespace, render.PluginControllerName)
	case !observe.StatusOfCurrentTemplate(deployment):
		report.Message = fmt.Sprintf("scheduler-plugins' controller rolls out a change (image %s): its Deployment is at generation %d, its status of generation %d, "+
			"whose pods still run", report.Image, deployment.Generation, rolled.ObservedGeneration)
	case rolled.UpdatedReplicas < want || rolled.Replicas > rolled.UpdatedReplicas:
		report.Message = fmt.Sprintf("scheduler-plugins' controller rolls out image %s: %d of %d pods updated, %d of the template before still run",
			report.Image, rolled.UpdatedReplicas, want, max(rolled.Replicas-rolled.UpdatedReplicas, 0))
	case report.ReadyReplicas < want:
		report.Message = fmt.Sprintf("%d of %d pods of scheduler-plugins' controller are ready", report.ReadyReplicas, want)
	}
	return nil
}

// everySchedulerNeedingPluginController are the SecondarySchedulers whose Deployment asks
// for the controller: a change of the controller's Deployment changes their status.
func (r *SecondarySchedulerReconciler) everySchedulerNeedingPluginController(ctx context.Context, _ client.Object) []reconcile.Request {
	deployments, err := deploymentsAskingForPluginController(ctx, r.cache)
	if err != nil {
		logf.FromContext(ctx).Error(err, "cannot list the schedulers' Deployments after a change of scheduler-plugins' controller")
		return nil
	}
	var requests []reconcile.Request
	for i := range deployments {
		requests = append(requests, ownerRequest(&deployments[i])...)
	}
	return requests
}
