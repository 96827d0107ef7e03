package controllers

// Pods that name a scheduler no SecondaryScheduler provides (a typo, a deleted resource):
// nothing else would tell their owners, so each such pod still waiting after a grace
// (--stranded-pod-grace, by default the default pendingPodThreshold) gets one Warning Event naming the schedulers that do exist, and the
// operator's metrics count them by name.
//
// The Events are created here, not through the event broadcaster: each pod is told once
// (warned), and the broadcaster would keep a copy of every Event for 6 to 12 minutes to
// fold repeats into a series, which never come (2.5 MiB for the 1,100 Events of the
// pending-pods benchmark, in its heap profile).

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	recordutil "k8s.io/client-go/tools/record/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/operatormetrics"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/pendingpods"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/usertext"
)

// maxUnknownNameSeries bounds the series of the unknown-scheduler-name metric: names come
// from any pod's spec, so a flood of made-up names must not flood the metrics; the rest
// are counted under the name "(other)".
const maxUnknownNameSeries = 20

// strandedPods warns about pods, in the cache of unscheduled pods, that have waited past
// the threshold for a scheduler name no SecondaryScheduler claims.
type strandedPods struct {
	// secondarySchedulers reads the manager's cache of SecondarySchedulers, indexed by
	// the names they claim.
	secondarySchedulers client.Reader
	// unscheduled is the informer's store of unscheduled pods, read in place.
	unscheduled toolscache.Indexer
	// events creates the Warning Events; reportingInstance names this replica in them.
	events            eventCreator
	reportingInstance string
	// ignored are scheduler names that other schedulers of the cluster serve (the admin's
	// --ignored-scheduler-names), never told about.
	ignored []string
	// grace is how long a pod may wait before it is told.
	grace time.Duration
	now   func() time.Time
	// elected is closed once this replica leads: only the leader serves the metric.
	elected <-chan struct{}

	mu sync.Mutex
	// warned are the pods already told, so that each is told once: the UID of the pod
	// of each name.
	warned map[types.NamespacedName]types.UID
}

// strandedPodsController registers the controller of stranded pods with mgr.
func (r *SecondarySchedulerReconciler) strandedPodsController(mgr ctrl.Manager, unscheduled toolscache.SharedIndexInformer) error {
	grace := r.strandedPodGrace
	if grace <= 0 {
		grace = v1.DefaultPendingPodThreshold
	}
	// As the event broadcaster names the instance.
	hostname, _ := os.Hostname()
	stranded := &strandedPods{secondarySchedulers: r.cache, unscheduled: unscheduled.GetIndexer(),
		events: mgr.GetClient(), reportingInstance: EventReporter + "-" + hostname,
		ignored: r.ignoredSchedulerNames, grace: grace, now: r.now, elected: mgr.Elected(),
		warned: map[types.NamespacedName]types.UID{}}
	if err := registerCollector(stranded); err != nil {
		return fmt.Errorf("register the metric of pods naming an unknown scheduler: %w", err)
	}
	// A pod that names a provided scheduler is that SecondaryScheduler's to report: only
	// the others are looked at (and their placement or deletion, to forget them), so
	// that the pods of busy schedulers cost nothing here.
	namesUnprovided := predicate.TypedFuncs[*pendingpods.Pod]{
		CreateFunc: func(e event.TypedCreateEvent[*pendingpods.Pod]) bool { return stranded.unprovided(e.Object) },
		UpdateFunc: func(e event.TypedUpdateEvent[*pendingpods.Pod]) bool { return false },
		DeleteFunc: func(e event.TypedDeleteEvent[*pendingpods.Pod]) bool { return stranded.concerns(e.Object) },
	}
	// A SecondaryScheduler deleted leaves the pods that name it waiting for nothing.
	deleted := predicate.Funcs{
		CreateFunc: func(event.CreateEvent) bool { return false },
		UpdateFunc: func(event.UpdateEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("strandedpods").
		WatchesRawSource(newUnscheduledPodSource(unscheduled, enqueuePod(), namesUnprovided)).
		Watches(&v1.SecondaryScheduler{}, handler.EnqueueRequestsFromMapFunc(stranded.podsNaming), builder.WithPredicates(deleted)).
		Complete(stranded)
}

// unprovided reports whether pod names a scheduler this controller looks at that no
// SecondaryScheduler claims.
func (s *strandedPods) unprovided(pod *pendingpods.Pod) bool {
	if !s.concerns(pod) {
		return false
	}
	claimants, err := gather.Claimants(context.Background(), s.secondarySchedulers, pod.SchedulerName())
	return err == nil && len(claimants) == 0
}

// podsNaming are the unscheduled pods that name one of a SecondaryScheduler's names.
func (s *strandedPods) podsNaming(_ context.Context, object client.Object) []reconcile.Request {
	var requests []reconcile.Request
	for _, name := range gather.ClaimedNames(object.(*v1.SecondaryScheduler)) {
		pods, err := pendingpods.PodsNaming(s.unscheduled, name)
		if err != nil {
			return nil
		}
		for _, pod := range pods {
			requests = append(requests, reconcile.Request{NamespacedName: pod.Key()})
		}
	}
	return requests
}

// concerns reports whether pod's scheduler name is one this controller looks at: not the
// default scheduler's, nor one the admin said another scheduler serves.
func (s *strandedPods) concerns(pod *pendingpods.Pod) bool {
	name := pod.SchedulerName()
	return name != "" && name != corev1.DefaultSchedulerName && !slices.Contains(s.ignored, name)
}

// Reconcile tells one pod, once, that the scheduler it names is not provided, once it
// has waited past the threshold.
func (s *strandedPods) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := s.storedPod(req.NamespacedName)
	if pod == nil {
		// Placed or gone: it left the store of unscheduled pods.
		s.mu.Lock()
		delete(s.warned, req.NamespacedName)
		s.mu.Unlock()
		return reconcile.Result{}, nil
	}
	if !s.concerns(pod) || !pendingpods.WaitsForScheduler(pod) || s.isWarned(pod) {
		return reconcile.Result{}, nil
	}
	if due := pod.Created().Add(s.grace).Sub(s.now()); due > 0 {
		return reconcile.Result{RequeueAfter: due + time.Second}, nil
	}
	claimants, err := gather.Claimants(ctx, s.secondarySchedulers, pod.SchedulerName())
	if err != nil || len(claimants) > 0 {
		// A SecondaryScheduler provides it: its status.pendingPods tells.
		return reconcile.Result{}, err
	}
	provided, err := s.providedNames(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	note := fmt.Sprintf("no SecondaryScheduler provides scheduler %q, which this pod names in spec.schedulerName: %s%s; "+
		"recreate the pod naming one of them (spec.schedulerName cannot be changed), or create the SecondaryScheduler it names",
		pod.SchedulerName(), providedSentence(provided), nearestSentence(pod.SchedulerName(), provided))
	if err := s.events.Create(ctx, s.warning(pod, note)); err != nil {
		// Not told yet: told when the retry succeeds.
		return reconcile.Result{}, fmt.Errorf("tell pod %s that its scheduler is not provided: %w", pod.Key(), err)
	}
	logf.FromContext(ctx).V(1).Info("pod names a scheduler no SecondaryScheduler provides", "schedulerName", pod.SchedulerName())
	s.mu.Lock()
	s.warned[pod.Key()] = pod.UID()
	s.mu.Unlock()
	return reconcile.Result{}, nil
}

// maxEventNote is the longest note the API server takes in an Event.
const maxEventNote = 1024

// warning is the Warning Event telling pod's owners that no SecondaryScheduler provides
// the scheduler it names, about the pod as the API knows it (kind, name and UID), as the
// event broadcaster would make it.
func (s *strandedPods) warning(pod *pendingpods.Pod, note string) *eventsv1.Event {
	now := s.now()
	return &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: pod.Namespace(), Name: recordutil.GenerateEventName(pod.Name(), now.UnixNano())},
		EventTime:           metav1.NewMicroTime(now),
		ReportingController: EventReporter,
		ReportingInstance:   s.reportingInstance,
		Action:              "Schedule",
		Reason:              string(v1.ReasonSchedulerNotProvided),
		Type:                corev1.EventTypeWarning,
		Regarding:           corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: pod.Namespace(), Name: pod.Name(), UID: pod.UID()},
		Note:                usertext.Cut(note, maxEventNote-len("...")),
	}
}

// eventCreator creates Events: the one write of the controller of stranded pods.
type eventCreator interface {
	Create(ctx context.Context, object client.Object, opts ...client.CreateOption) error
}

// storedPod is the stored pod of key, shared with the store (never changed), nil when
// there is none.
func (s *strandedPods) storedPod(key types.NamespacedName) *pendingpods.Pod {
	object, found, err := s.unscheduled.GetByKey(key.String())
	if err != nil || !found {
		return nil
	}
	pod, _ := object.(*pendingpods.Pod)
	return pod
}

func (s *strandedPods) isWarned(pod *pendingpods.Pod) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.warned[pod.Key()] == pod.UID()
}

// providedNames are the scheduler names SecondarySchedulers serve, sorted.
func (s *strandedPods) providedNames(ctx context.Context) ([]string, error) {
	list := &v1.SecondarySchedulerList{}
	if err := s.secondarySchedulers.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list SecondarySchedulers: %w", err)
	}
	var names []string
	for i := range list.Items {
		for _, name := range gather.ClaimedNames(&list.Items[i]) {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	sort.Strings(names)
	return names, nil
}

// providedSentence tells which scheduler names are provided, a bounded list.
func providedSentence(names []string) string {
	const shown = 10
	switch {
	case len(names) == 0:
		return "no SecondaryScheduler exists"
	case len(names) > shown:
		return fmt.Sprintf("those provided are %s and %d more (kubectl get secondaryschedulers -A)", strings.Join(names[:shown], ", "), len(names)-shown)
	}
	return "those provided are " + strings.Join(names, ", ") + " (kubectl get secondaryschedulers -A)"
}

// nearestSentence suggests the provided name nearest to name, a typo of it perhaps; ""
// when none is near.
func nearestSentence(name string, provided []string) string {
	if nearest := usertext.Nearest(name, provided); nearest != "" {
		return fmt.Sprintf("; did you mean %q", nearest)
	}
	return ""
}

var unknownSchedulerPodsDesc = prometheus.NewDesc("secondary_scheduler_operator_pods_naming_unknown_scheduler",
	"Pods without a node that have waited longer than --stranded-pod-grace (default 2m) for a scheduler name no SecondaryScheduler "+
		"provides, by that name (at most 20 names; the rest as \"(other)\"). Pods of default-scheduler and of --ignored-scheduler-names are not counted.",
	[]string{"scheduler_name"}, nil)

// Describe implements prometheus.Collector.
func (s *strandedPods) Describe(ch chan<- *prometheus.Desc) { ch <- unknownSchedulerPodsDesc }

// Collect implements prometheus.Collector: it counts, at each scrape, from the caches.
func (s *strandedPods) Collect(ch chan<- prometheus.Metric) {
	if !operatormetrics.Leading(s.elected) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	counts := map[string]int{}
	claimed := map[string]bool{}
	for _, object := range s.unscheduled.List() {
		pod, ok := object.(*pendingpods.Pod)
		if !ok || !s.concerns(pod) || !pendingpods.WaitsForScheduler(pod) || s.now().Sub(pod.Created()) < s.grace {
			continue
		}
		name := pod.SchedulerName()
		if _, known := claimed[name]; !known {
			claimants, err := gather.Claimants(ctx, s.secondarySchedulers, name)
			claimed[name] = err != nil || len(claimants) > 0
		}
		if !claimed[name] {
			counts[name]++
		}
	}
	names := make([]string, 0, len(counts))
	for name := range counts {
		names = append(names, name)
	}
	// The names with most pods keep their own series.
	sort.Slice(names, func(i, j int) bool {
		if counts[names[i]] != counts[names[j]] {
			return counts[names[i]] > counts[names[j]]
		}
		return names[i] < names[j]
	})
	other := 0
	for i, name := range names {
		if i >= maxUnknownNameSeries {
			other += counts[name]
			continue
		}
		ch <- prometheus.MustNewConstMetric(unknownSchedulerPodsDesc, prometheus.GaugeValue, float64(counts[name]), name)
	}
	if other > 0 {
		ch <- prometheus.MustNewConstMetric(unknownSchedulerPodsDesc, prometheus.GaugeValue, float64(other), "(other)")
	}
}

// registerCollector registers collector with the registry the operator's /metrics
// serves, replacing one of the same kind registered by an earlier manager of this
// process (the integration tests start several).
func registerCollector(collector prometheus.Collector) error {
	err := crmetrics.Registry.Register(collector)
	var registered prometheus.AlreadyRegisteredError
	if errors.As(err, &registered) {
		crmetrics.Registry.Unregister(registered.ExistingCollector)
		return crmetrics.Registry.Register(collector)
	}
	return err
}
