package controllers

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlcontroller "sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/operatormetrics"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/pendingpods"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
)

// CacheOptions scopes the manager's cache to what the operator owns: of each kind a
// scheduler is made of, only the objects labelled as the operator's, and only in the
// namespaces where schedulers run (and kube-system, for the authentication-reader
// RoleBinding), where the operator's namespaced RBAC lets it read. SecondarySchedulers are
// cached in every namespace, so that one created elsewhere is told why nothing runs.
// ConfigMaps and Secrets that users reference are read directly and watched one by one
// (internal/refwatch), so no cache ever holds every ConfigMap or Secret of the cluster.
// Nodes are cached whole, for their labels, taints and Ready condition, less what a
// kubelet reports that placement does not need (images, volumes, managed fields).
// No cached object keeps its managed fields but for who wrote each entry and when, of
// the admission policies and the scheduler's objects (the ConfigMaps of the parameters
// among them): the operator reads nothing else of them, and for an object written with
// server-side apply they are about as large as the object. The ConfigMaps are cached in the operator's namespace too, for the parameters.
func CacheOptions(schedulerNamespaces []string, operatorNamespace string, routingSupported bool) cache.Options {
	ours := labels.SelectorFromSet(labels.Set{render.LabelManagedBy: render.ManagedByValue})
	namespaces := map[string]cache.Config{}
	for _, namespace := range schedulerNamespaces {
		namespaces[namespace] = cache.Config{}
	}
	options := cache.Options{
		DefaultNamespaces: namespaces,
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&v1.SecondaryScheduler{}: {Namespaces: map[string]cache.Config{cache.AllNamespaces: {}}},
			&corev1.Node{}:           {Transform: trimNode},
			// The admission policies the operator keeps, and no one else's.
			// Their managed fields keep their times only: when they were last written
			// decides which resources admission provably checked (admission.Check).
			&admissionregistrationv1.ValidatingAdmissionPolicy{}:        {Label: ours, Transform: keepWriteTimes},
			&admissionregistrationv1.ValidatingAdmissionPolicyBinding{}: {Label: ours, Transform: keepWriteTimes},
		},
	}
	// The routing policy the installer ships, which the operator checks, and the routing
	// table it writes, where the API server serves their kinds: the cache fails to start
	// with a kind it does not.
	if routingSupported {
		options.ByObject[&admissionregistrationv1.MutatingAdmissionPolicy{}] = cache.ByObject{Label: ours}
		options.ByObject[&admissionregistrationv1.MutatingAdmissionPolicyBinding{}] = cache.ByObject{Label: ours}
		options.ByObject[&v1.RoutingTable{}] = cache.ByObject{Label: ours}
	}
	// The scheduler's pods, for observe: few, and each change of theirs worth a look.
	options.ByObject[&corev1.Pod{}] = cache.ByObject{Label: ours, Transform: trimPod}
	for _, kind := range allChildKinds {
		// Who wrote each managed-fields entry tells apply whether the operator created the
		// object and has yet to claim its fields (claimCreatedFields).
		scope := cache.ByObject{Label: ours, Transform: keepWriteTimes}
		switch kind.name {
		case roleBindingKind.name:
			scope.Namespaces = maps.Clone(namespaces)
			scope.Namespaces[render.AuthenticationReaderNamespace] = cache.Config{}
		case configMapKind.name, deploymentKind.name:
			// The admission policy's parameters; scheduler-plugins' controller.
			if operatorNamespace != "" {
				scope.Namespaces = maps.Clone(namespaces)
				scope.Namespaces[operatorNamespace] = cache.Config{}
			}
		}
		options.ByObject[kind.object()] = scope
	}
	return options
}

// keepWriteTimes keeps of a cached object's managed fields who wrote it, how and when,
// not which fields: admission.Check reads when the admission policies were last written,
// apply whether the operator's entry is still that of its create.
func keepWriteTimes(object any) (any, error) {
	if accessor, ok := object.(metav1.Object); ok {
		entries := accessor.GetManagedFields()
		for i := range entries {
			entries[i].FieldsV1 = nil
		}
		accessor.SetManagedFields(entries)
	}
	return object, nil
}

// trimNode drops from a cached Node what placement never reads and what makes up most of
// a node's size in a large cluster: the images it holds, its volumes, managed fields.
func trimNode(object any) (any, error) {
	if node, ok := object.(*corev1.Node); ok {
		node.ManagedFields = nil
		node.Status.Images = nil
		node.Status.VolumesInUse = nil
		node.Status.VolumesAttached = nil
	}
	return object, nil
}

// trimPod drops from a cached pod what observe never reads: its managed fields, and of
// its spec all but the node it runs on and its containers' names and images (for a
// message about an image that cannot be pulled) and ports (where a descheduler serves its
// metrics).
func trimPod(object any) (any, error) {
	if pod, ok := object.(*corev1.Pod); ok {
		pod.ManagedFields = nil
		containers := make([]corev1.Container, 0, len(pod.Spec.Containers))
		for _, container := range pod.Spec.Containers {
			containers = append(containers, corev1.Container{Name: container.Name, Image: container.Image, Ports: container.Ports})
		}
		pod.Spec = corev1.PodSpec{NodeName: pod.Spec.NodeName, Containers: containers}
	}
	return object, nil
}

// SetupWithManager registers the reconciler and its watches with mgr.
func (r *SecondarySchedulerReconciler) SetupWithManager(ctx context.Context, mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(ctx, &v1.SecondaryScheduler{}, gather.SchedulerNameIndex, gather.IndexSchedulerName); err != nil {
		return fmt.Errorf("index SecondarySchedulers by scheduler name: %w", err)
	}
	for _, kind := range allChildKinds {
		if err := mgr.GetFieldIndexer().IndexField(ctx, kind.object(), ownership.OwnerNameIndex, ownership.IndexOwnerName); err != nil {
			return fmt.Errorf("index %ss by their owner's name: %w", kind.name, err)
		}
	}
	for _, watch := range r.references {
		if err := mgr.Add(watch.watches); err != nil {
			return fmt.Errorf("add the watches of each %s referenced: %w", watch.name, err)
		}
	}
	if err := mgr.Add(r.deschedulerWatcher); err != nil {
		return fmt.Errorf("add the reader of the deschedulers' metrics: %w", err)
	}
	// The operator's own status writes change neither generation nor deletion, so they
	// wake nothing.
	specOrDeletionChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			e.ObjectOld.GetDeletionTimestamp().IsZero() != e.ObjectNew.GetDeletionTimestamp().IsZero()
	}}
	// Other claimants of a name care when a claimant goes or its claims change.
	claimsChanged := predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !slices.Equal(e.ObjectOld.(*v1.SecondaryScheduler).Status.SchedulerNames, e.ObjectNew.(*v1.SecondaryScheduler).Status.SchedulerNames)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	controller := ctrl.NewControllerManagedBy(mgr).
		Named("secondaryscheduler").
		For(&v1.SecondaryScheduler{}, builder.WithPredicates(specOrDeletionChanged)).
		Watches(&v1.SecondaryScheduler{}, handler.EnqueueRequestsFromMapFunc(r.otherClaimants), builder.WithPredicates(claimsChanged))
	for _, watch := range r.references {
		controller = controller.WatchesRawSource(watch.watches.Source())
	}
	controller = controller.
		WatchesRawSource(r.metricsProber.Source()).
		WatchesRawSource(r.extenderProber.Source()).
		WatchesRawSource(r.deschedulerWatcher.Source())
	// A Lease is renewed every few seconds, which matters not; a new holder does: it is
	// the hand-over from a pod of an older configuration that Available waits for.
	holderChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		return leaseHolderIdentity(e.ObjectOld) != leaseHolderIdentity(e.ObjectNew)
	}}
	for _, kind := range allChildKinds {
		if kind.name == leaseKind.name {
			controller = controller.Watches(kind.object(), echoesOfWrites(ownerOf), builder.WithPredicates(holderChanged))
			continue
		}
		controller = controller.Watches(kind.object(), echoesOfWrites(ownerOf))
	}
	// A pod that cannot pull its image or crashes changes only its own status.
	controller = controller.Watches(&corev1.Pod{}, echoesOfWrites(ownerOf))
	if r.pluginController != nil && r.pluginController.Namespace != "" {
		// scheduler-plugins' controller, which the schedulers needing it report.
		controller = controller.Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.everySchedulerNeedingPluginController),
			builder.WithPredicates(predicate.NewPredicateFuncs(r.pluginController.isController))).
			WatchesRawSource(source.Channel(r.pluginController.news, handler.EnqueueRequestsFromMapFunc(r.everySchedulerNeedingPluginController)))
	}
	if r.admission != nil {
		// Whether any scheduler may run hangs on the admission policies and their
		// parameters.
		for _, kind := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}} {
			controller = controller.Watches(kind, handler.EnqueueRequestsFromMapFunc(r.everySecondaryScheduler))
		}
		controller = controller.Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.everySecondaryScheduler),
			builder.WithPredicates(predicate.NewPredicateFuncs(r.admission.IsParameters)))
	}
	if r.routing != nil && r.routing.Supported {
		// What the routing table carries, and whether the routing policy and its binding
		// are in place, is each route's Routing condition; and a route changed or gone may
		// end another's conflict with it.
		named := predicate.NewPredicateFuncs(func(object client.Object) bool {
			return object.GetName() == render.RoutingPolicyName || object.GetName() == v1.RoutingTableName
		})
		routeChanged := predicate.Funcs{
			CreateFunc: func(e event.CreateEvent) bool { return hasRoute(e.Object) },
			UpdateFunc: func(e event.UpdateEvent) bool {
				return (hasRoute(e.ObjectOld) || hasRoute(e.ObjectNew)) && e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
			},
			DeleteFunc: func(e event.DeleteEvent) bool { return hasRoute(e.Object) },
		}
		for _, kind := range []client.Object{&admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{},
			&v1.RoutingTable{}} {
			controller = controller.Watches(kind, handler.EnqueueRequestsFromMapFunc(r.everyRoutedSecondaryScheduler), builder.WithPredicates(named))
		}
		controller = controller.
			Watches(&v1.SecondaryScheduler{}, handler.EnqueueRequestsFromMapFunc(r.everyRoutedSecondaryScheduler), builder.WithPredicates(routeChanged))

		// Whether the scheduler-name policy, by which descheduling selects pods, is in
		// place is each descheduling scheduler's Descheduling condition.
		labelling := predicate.NewPredicateFuncs(func(object client.Object) bool { return object.GetName() == render.SchedulerNamePolicyName })
		for _, kind := range []client.Object{&admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{}} {
			controller = controller.Watches(kind, handler.EnqueueRequestsFromMapFunc(r.everyDeschedulingSecondaryScheduler), builder.WithPredicates(labelling))
		}
	}
	controller = controller.Watches(&corev1.Node{}, r.nodeEvents(), builder.WithPredicates(placementInputsChanged))
	unscheduled, err := unscheduledPods(mgr)
	if err != nil {
		return err
	}
	r.pendingPods = pendingpods.NewFinder(unscheduled.GetIndexer())
	if err := r.registerMetrics(mgr); err != nil {
		return err
	}
	if err := r.strandedPodsController(mgr, unscheduled); err != nil {
		return err
	}
	controller = controller.WatchesRawSource(newUnscheduledPodSource(unscheduled, r.pendingPodEvents()))
	if r.routing != nil && r.routing.Supported {
		audited, err := auditedPods(mgr)
		if err != nil {
			return err
		}
		r.routing.audited = audited.GetIndexer()
		controller = controller.WatchesRawSource(r.auditedPodSource(audited))
	}
	// A PriorityClass's existence is all the operator reads of it.
	comesOrGoes := predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }}
	priorityClasses := &metav1.PartialObjectMetadata{}
	priorityClasses.SetGroupVersionKind(gather.PriorityClassGVK)
	controller = controller.Watches(priorityClasses, handler.EnqueueRequestsFromMapFunc(r.priorityClassUsers),
		builder.OnlyMetadata, builder.WithPredicates(comesOrGoes))
	// Reconciles of different SecondarySchedulers run concurrently (one resource is
	// never reconciled twice at once): most of a reconcile waits on the API server.
	if err := controller.WithOptions(ctrlcontroller.Options{MaxConcurrentReconciles: max(r.maxConcurrentReconciles, 1)}).Complete(r); err != nil {
		return err
	}
	// What a SecondaryScheduler gone without its finalizer left outside its namespace,
	// found through the index above.
	return (&OrphanSweeper{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}).SetupWithManager(mgr)
}

// registerMetrics serves the operator's metrics about the schedulers (internal/operatormetrics).
func (r *SecondarySchedulerReconciler) registerMetrics(mgr ctrl.Manager) error {
	r.reconcileErrors = operatormetrics.NewReconcileErrors()
	schedulers := &operatormetrics.Collector{Schedulers: mgr.GetCache(), Probes: r.metricsProber, Tokens: &r.tokenExpiries, Elected: mgr.Elected()}
	for _, collector := range []prometheus.Collector{r.reconcileErrors.Collector(), schedulers} {
		if err := registerCollector(collector); err != nil {
			return fmt.Errorf("register the operator's metrics: %w", err)
		}
	}
	return nil
}

// unscheduledPods is an informer of its own, beside the manager's cache (which holds
// only the operator's pods), of the pods of every namespace that have no node yet: the
// API server selects them (spec.nodeName=), so a cluster's scheduled pods never reach the
// operator. Each is stored as a pendingpods.Pod of a few hundred bytes, indexed by
// scheduler name alone, and read in place: a cache of the manager's kind would keep a
// corev1.Pod (1.1 KiB even trimmed) indexed three times, and copy each pod it lists.
// The pods come as protobuf, the cheapest to decode of the API server's encodings.
func unscheduledPods(mgr ctrl.Manager) (toolscache.SharedIndexInformer, error) {
	config := rest.CopyConfig(mgr.GetConfig())
	config.ContentType = runtime.ContentTypeProtobuf
	clientset, err := kubernetes.NewForConfigAndClient(config, mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("client of unscheduled pods: %w", err)
	}
	unscheduled := fields.OneTermEqualSelector("spec.nodeName", "").String()
	listWatch := toolscache.NewFilteredListWatchFromClient(clientset.CoreV1().RESTClient(), "pods", metav1.NamespaceAll,
		func(options *metav1.ListOptions) { options.FieldSelector = unscheduled })
	informer := toolscache.NewSharedIndexInformer(listWatch, &corev1.Pod{}, 0,
		toolscache.Indexers{pendingpods.SchedulerNameIndex: pendingpods.IndexSchedulerName})
	if err := informer.SetTransform(pendingpods.Trim); err != nil {
		return nil, fmt.Errorf("informer of unscheduled pods: %w", err)
	}
	if err := mgr.Add(informerRunnable{informer}); err != nil {
		return nil, fmt.Errorf("add the informer of unscheduled pods: %w", err)
	}
	return informer, nil
}

// informerRunnable runs an informer for as long as the manager runs, on every replica,
// as the manager's caches run.
type informerRunnable struct{ toolscache.SharedIndexInformer }

// Start implements manager.Runnable.
func (i informerRunnable) Start(ctx context.Context) error {
	i.RunWithContext(ctx)
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (informerRunnable) NeedLeaderElection() bool { return false }

// unscheduledPodSource delivers the events of the informer of unscheduled pods to a
// controller, which waits for it (a SyncingSource): until the informer has listed every
// pod, a reconcile would count none and report no pod pending. controller-runtime's
// source.Informer would read a deletion whose object is no client.Object as a tombstone
// and drop it, and a stored pendingpods.Pod is none (it keeps no ObjectMeta).
type unscheduledPodSource struct {
	informer   toolscache.SharedIndexInformer
	events     handler.TypedEventHandler[*pendingpods.Pod, reconcile.Request]
	predicates []predicate.TypedPredicate[*pendingpods.Pod]
}

func newUnscheduledPodSource(informer toolscache.SharedIndexInformer, events handler.TypedEventHandler[*pendingpods.Pod, reconcile.Request],
	predicates ...predicate.TypedPredicate[*pendingpods.Pod]) *unscheduledPodSource {
	return &unscheduledPodSource{informer: informer, events: events, predicates: predicates}
}

// Start implements source.TypedSource: the informer tells the controller's queue of
// every pod added, changed and deleted, from now on and of those it holds.
func (s *unscheduledPodSource) Start(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	_, err := s.informer.AddEventHandlerWithOptions(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(object any, isInInitialList bool) {
			if pod, ok := object.(*pendingpods.Pod); ok {
				s.create(ctx, event.TypedCreateEvent[*pendingpods.Pod]{Object: pod, IsInInitialList: isInInitialList}, queue)
			}
		},
		UpdateFunc: func(oldObject, newObject any) {
			old, oldOK := oldObject.(*pendingpods.Pod)
			updated, newOK := newObject.(*pendingpods.Pod)
			if oldOK && newOK {
				s.update(ctx, event.TypedUpdateEvent[*pendingpods.Pod]{ObjectOld: old, ObjectNew: updated}, queue)
			}
		},
		DeleteFunc: func(object any) {
			deleted := event.TypedDeleteEvent[*pendingpods.Pod]{}
			// A pod deleted while the watch was down comes in a tombstone.
			if tombstone, ok := object.(toolscache.DeletedFinalStateUnknown); ok {
				deleted.DeleteStateUnknown = true
				object = tombstone.Obj
			}
			if pod, ok := object.(*pendingpods.Pod); ok {
				deleted.Object = pod
				s.delete(ctx, deleted, queue)
			}
		},
	}, toolscache.HandlerOptions{Logger: ptr.To(logf.FromContext(ctx))})
	if err != nil {
		return fmt.Errorf("watch the informer of unscheduled pods: %w", err)
	}
	return nil
}

func (s *unscheduledPodSource) create(ctx context.Context, e event.TypedCreateEvent[*pendingpods.Pod], queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for _, p := range s.predicates {
		if !p.Create(e) {
			return
		}
	}
	s.events.Create(ctx, e, queue)
}

func (s *unscheduledPodSource) update(ctx context.Context, e event.TypedUpdateEvent[*pendingpods.Pod], queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for _, p := range s.predicates {
		if !p.Update(e) {
			return
		}
	}
	s.events.Update(ctx, e, queue)
}

func (s *unscheduledPodSource) delete(ctx context.Context, e event.TypedDeleteEvent[*pendingpods.Pod], queue workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	for _, p := range s.predicates {
		if !p.Delete(e) {
			return
		}
	}
	s.events.Delete(ctx, e, queue)
}

// WaitForSync implements source.SyncingSource.
func (s *unscheduledPodSource) WaitForSync(ctx context.Context) error {
	return waitForInformer(ctx, s.informer, "the informer of unscheduled pods")
}

// waitForInformer waits until informer, which what names, has listed every object.
func waitForInformer(ctx context.Context, informer toolscache.SharedIndexInformer, what string) error {
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return fmt.Errorf("%s did not sync: %w", what, ctx.Err())
	}
	return nil
}

// String names the source in the controller's logs.
func (s *unscheduledPodSource) String() string { return "informer of unscheduled pods" }

// enqueuePod is the event handler that reconciles a stored pod by its key.
func enqueuePod() handler.TypedEventHandler[*pendingpods.Pod, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	add := func(pod *pendingpods.Pod, q queue) { q.Add(reconcile.Request{NamespacedName: pod.Key()}) }
	return handler.TypedFuncs[*pendingpods.Pod, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*pendingpods.Pod], q queue) { add(e.Object, q) },
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*pendingpods.Pod], q queue) { add(e.ObjectNew, q) },
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*pendingpods.Pod], q queue) { add(e.Object, q) },
	}
}

// leaseHolderIdentity is who a Lease names as its holder, "" for none or another object.
func leaseHolderIdentity(object client.Object) string {
	if lease, ok := object.(*coordinationv1.Lease); ok && lease.Spec.HolderIdentity != nil {
		return *lease.Spec.HolderIdentity
	}
	return ""
}
