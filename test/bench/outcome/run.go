package outcome

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

// Options are what Run needs and how it runs.
type Options struct {
	// Client creates the SecondarySchedulers; Clientset the nodes and pods. The operator
	// must be running and allowed every arm's namespace (Namespaces), and the scheduler
	// pods' kubelet must run the scheduler-plugins image as the real scheduler-plugins
	// kube-scheduler.
	Client    client.Client
	Clientset kubernetes.Interface
	// StartPrometheus starts a Prometheus on loopback that scrapes an exporter whose
	// collectors the loop sets; Run starts two: one for the arms, one for the outage arms.
	StartPrometheus func() (*promtest.Server, error)
	Log             logr.Logger

	Seed         uint64
	Shape        Shape
	Size         NodeSize
	NodesPerPool int
	// RunFor is how long the loop runs, from its start, when the workload's arrival times
	// start to count; the outage arms' Prometheus is down from OutageFrom to OutageTo.
	RunFor, OutageFrom, OutageTo time.Duration
	// SampleInterval is how often every node's utilisation is recorded; FinalWindow how
	// long before the end the final utilisation is averaged over.
	SampleInterval, FinalWindow time.Duration
	// Threshold is the utilisation counted as risk (node-minutes above it).
	Threshold float64
	// Arms are the placements compared; nil for Arms().
	Arms []Arm
	// Drift, when set, makes some pods' use grow after placement (WithDrift), and runs
	// every pod under a ReplicaSet of its own, so that a pod a descheduler evicts comes
	// back, to be placed again.
	Drift *Drift
}

// DefaultOptions are the benchmark's settings but for what connects it to a cluster.
//
// Why 10 minutes: every pod has arrived after 6, and the run goes on for 4 more, so that
// the placements of the last arrivals are in load-watcher's averages (it fetches every
// minute, the scheduler reads it every 30 s) and the final window of 2 minutes sees the
// loop settled, with each bursty pod's burst (1 minute in 4) in it at most once. It
// cannot be made much shorter: load-watcher averages over 15 minutes, so what a load-aware
// scheduler sees of a placement lags it by minutes whatever the run's length, and the
// outcome depends on the length. Two runs of 8 minutes (arrivals over 5, lifetimes 1.5
// to 3 minutes) placed TargetLoadPacking 40 %'s load on 20 and 21 nodes, where 10
// minutes placed it on 19 twice: in a shorter run the 15-minute averages hold less of
// the idle past, so a placed pod counts at more of its use and nodes look fuller.
var DefaultOptions = Options{
	Seed: 24, Shape: DefaultShape, Size: DefaultNodeSize, NodesPerPool: 50,
	RunFor: 10 * time.Minute, OutageFrom: 2 * time.Minute, OutageTo: 6 * time.Minute,
	SampleInterval: 5 * time.Second, FinalWindow: 2 * time.Minute, Threshold: 0.8,
}

// Result is what Run measured, for the report.
type Result struct {
	Options  Options
	Arms     []Arm
	Workload []Pod
	Records  map[string]*Record
	// Scoring is how each outage arm's scheduler scored at each sample, as its status said.
	Scoring map[string][]v1.ScoringMode
	// Started is when the loop started; LeadIn how long Prometheus served the idle nodes
	// before, while the schedulers started (load-watcher's 15-minute averages include
	// it); Duration how long the whole comparison took, set by the caller when it does
	// more around Run.
	Started          time.Time
	LeadIn, Duration time.Duration
}

// Run places the workload with every arm at once, each on its pool, and returns what it
// measured. It deletes what it created, also on failure.
func Run(ctx context.Context, opts Options) (result *Result, err error) {
	began := time.Now()
	arms := opts.Arms
	if arms == nil {
		arms = Arms()
	}
	workload := Generate(opts.Seed, opts.Shape)
	if opts.Drift != nil {
		workload = WithDrift(workload, opts.Seed, *opts.Drift)
	}
	nodes := map[string][]string{}
	for _, arm := range arms {
		nodes[arm.Key] = nodeNames(arm, opts.NodesPerPool)
	}
	load := NewLoad(workload, nodes, opts.Size)
	// What an aborted run left (a SecondaryScheduler reading a Prometheus long gone) would
	// be taken for this run's.
	if err := deletePools(ctx, opts.Client, opts.Clientset, arms); err != nil {
		return nil, fmt.Errorf("delete what an earlier run left: %w", err)
	}
	// A failed clean-up after a run that measured returns the result and the error.
	defer func() {
		cleanCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		err = errors.Join(err, deletePools(cleanCtx, opts.Client, opts.Clientset, arms))
	}()
	if err := createPools(ctx, opts.Clientset, arms, nodes, opts.Size, opts.Log); err != nil {
		return nil, err
	}

	// Until the loop's clock starts every node is idle.
	loop := &loopClock{}
	idleFrom := time.Now()
	prometheus, outagePrometheus, err := startPrometheuses(ctx, opts, arms, load, loop)
	if err != nil {
		return nil, err
	}
	defer prometheus.Stop()
	defer outagePrometheus.Stop()
	for _, arm := range arms {
		address := prometheus.URL
		if arm.Outage {
			address = outagePrometheus.URL
		}
		if scheduler := arm.SecondaryScheduler(address); scheduler != nil {
			if err := opts.Client.Create(ctx, scheduler); err != nil {
				return nil, fmt.Errorf("create SecondaryScheduler %s: %w", arm.Key, err)
			}
		}
	}
	if err := waitSchedulers(ctx, opts.Client, arms, opts.Log); err != nil {
		return nil, err
	}

	state := newRunState(arms, load, opts.Drift != nil)
	stopInformer, err := state.watchPods(ctx, opts.Clientset)
	if err != nil {
		return nil, err
	}
	defer stopInformer()

	opts.Log.Info("loop starts", "pods", len(workload), "arms", len(arms), "runFor", opts.RunFor)
	started := loop.start()
	state.setStart(started)
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var background sync.WaitGroup
	// The sampler ends by itself after its sample at RunFor, which ends the run; a failed
	// feed ends it early.
	sampled := make(chan struct{})
	var outageErr error
	background.Go(func() { state.sample(runCtx, opts, started); close(sampled) })
	if slices.ContainsFunc(arms, func(arm Arm) bool { return arm.Outage }) {
		background.Go(func() { outageErr = outage(runCtx, opts, outagePrometheus, started) })
	}
	feedErr := feed(runCtx, opts, arms, workload, state, started)
	if feedErr == nil {
		<-sampled
		feedErr = ctx.Err()
	}
	cancel()
	background.Wait()
	if err := errors.Join(feedErr, outageErr); err != nil {
		return nil, err
	}
	return &Result{Options: opts, Arms: arms, Workload: workload, Records: state.records, Scoring: state.scoring,
		Started: started, LeadIn: started.Sub(idleFrom), Duration: time.Since(began)}, nil
}

// loopClock is the time since the loop started, zero before: the exporter serves idle
// nodes until then.
type loopClock struct {
	mu      sync.Mutex
	started time.Time
}

func (c *loopClock) start() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started = time.Now()
	return c.started
}

func (c *loopClock) elapsed() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.started.IsZero() {
		return 0
	}
	return time.Since(c.started)
}

// startPrometheuses starts the arms' Prometheus and the outage arms' one, each serving its
// arms' nodes' load, and waits until each has a sample of every one of its nodes.
func startPrometheuses(ctx context.Context, opts Options, arms []Arm, load *Load, loop *loopClock) (*promtest.Server, *promtest.Server, error) {
	var steady, outaged []string
	for _, arm := range arms {
		if arm.Outage {
			outaged = append(outaged, arm.Key)
		} else {
			steady = append(steady, arm.Key)
		}
	}
	servers := make([]*promtest.Server, 0, 2)
	for _, keys := range [][]string{steady, outaged} {
		server, err := opts.StartPrometheus()
		if err != nil {
			for _, started := range servers {
				started.Stop()
			}
			return nil, nil, fmt.Errorf("start Prometheus: %w", err)
		}
		servers = append(servers, server)
		server.SetCollector("outcome", func() string { return load.Exposition(keys, loop.elapsed()) })
		var names []string
		for _, key := range keys {
			names = append(names, load.Nodes(key)...)
		}
		err = wait.PollUntilContextTimeout(ctx, time.Second, time.Minute, true, func(ctx context.Context) (bool, error) {
			probeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			return metricsprobe.Probe(probeCtx, http.DefaultClient, server.URL, "", names, 0).NodesWithMetrics == len(names), nil
		})
		if err != nil {
			for _, started := range servers {
				started.Stop()
			}
			return nil, nil, fmt.Errorf("wait for Prometheus to have the load of %d nodes: %w", len(names), err)
		}
	}
	return servers[0], servers[1], nil
}

// outage stops the outage arms' Prometheus from OutageFrom to OutageTo. A Prometheus
// that does not start again is an error of the run.
func outage(ctx context.Context, opts Options, prometheus *promtest.Server, started time.Time) (err error) {
	if !sleepUntil(ctx, started.Add(opts.OutageFrom)) {
		return nil
	}
	opts.Log.Info("outage: the outage arms' Prometheus stops")
	prometheus.Stop()
	if !sleepUntil(ctx, started.Add(opts.OutageTo)) {
		return nil
	}
	opts.Log.Info("outage: the outage arms' Prometheus starts again")
	// promtest reports a start that fails through its TB's Fatal, which outside a test
	// (the harness' benchTB) panics: here, on a goroutine of the run's own, that would end
	// the harness before any clean-up.
	defer func() {
		if recovered := recover(); recovered != nil {
			err = fmt.Errorf("restart the outage arms' Prometheus: %v", recovered)
		}
	}()
	prometheus.Restart()
	return nil
}

func sleepUntil(ctx context.Context, at time.Time) bool {
	select {
	case <-ctx.Done():
		return false
	case <-time.After(time.Until(at)):
		return true
	}
}

// event is a create or delete of one pod of the workload, for every arm.
type event struct {
	at     time.Duration
	pod    Pod
	delete bool
}

// timeline is the workload's creates and deletes within runFor, in time order.
func timeline(workload []Pod, runFor time.Duration) []event {
	events := make([]event, 0, len(workload))
	for _, pod := range workload {
		events = append(events, event{at: pod.Arrival, pod: pod})
		if pod.Lifetime > 0 && pod.Arrival+pod.Lifetime < runFor {
			events = append(events, event{at: pod.Arrival + pod.Lifetime, pod: pod, delete: true})
		}
	}
	// Creates before deletes at the same time; otherwise in time order, as generated.
	slices.SortStableFunc(events, func(a, b event) int {
		if a.at != b.at {
			return cmp.Compare(a.at, b.at)
		}
		return cmp.Compare(boolRank(a.delete), boolRank(b.delete))
	})
	return events
}

// transient is whether a request may succeed if tried again.
func transient(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// feed creates and deletes the workload's pods at their times, for every arm at once.
func feed(ctx context.Context, opts Options, arms []Arm, workload []Pod, state *runState, started time.Time) error {
	for _, next := range timeline(workload, opts.RunFor) {
		if !sleepUntil(ctx, started.Add(next.at)) {
			return ctx.Err()
		}
		errs := make([]error, len(arms))
		var requests sync.WaitGroup
		for i, arm := range arms {
			requests.Go(func() {
				if next.delete {
					errs[i] = retry.OnError(retry.DefaultBackoff, transient, func() error {
						return client.IgnoreNotFound(deleteWorkloadPod(ctx, opts.Clientset, arm, next.pod, state.replicaSets))
					})
					return
				}
				state.created(arm.Key, next.pod.Name, time.Since(started))
				errs[i] = retry.OnError(retry.DefaultBackoff, transient, func() error {
					err := createWorkloadPod(ctx, opts.Clientset, arm, next.pod, state.replicaSets)
					// A create that timed out may have been done: the pod is there.
					if apierrors.IsAlreadyExists(err) {
						return nil
					}
					return err
				})
			})
		}
		requests.Wait()
		if err := errors.Join(errs...); err != nil {
			return fmt.Errorf("pod %s: %w", next.pod.Name, err)
		}
	}
	return nil
}

// runState is what the loop observed: the records of every arm, fed by the feeder, the
// pod informer and the sampler.
type runState struct {
	arms []Arm
	load *Load
	// armOf is the arm key of each arm's pods' namespace.
	armOf map[string]string
	// replicaSets is whether the workload's pods run under ReplicaSets.
	replicaSets bool

	mu      sync.Mutex
	start   time.Time
	records map[string]*Record
	scoring map[string][]v1.ScoringMode
}

func newRunState(arms []Arm, load *Load, replicaSets bool) *runState {
	state := &runState{arms: arms, load: load, armOf: map[string]string{}, replicaSets: replicaSets,
		records: map[string]*Record{}, scoring: map[string][]v1.ScoringMode{}}
	for _, arm := range arms {
		state.armOf[arm.PodNamespace()] = arm.Key
		state.records[arm.Key] = NewRecord()
	}
	return state
}

func (s *runState) setStart(start time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.start = start
}

func (s *runState) created(arm, pod string, at time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[arm].Created[pod] = at
}

// observe takes a pod's watch event: its bind, the first time it shows a node, binds it in
// the loop; its deletion unbinds it.
func (s *runState) observe(object any, deleted bool) {
	if tombstone, ok := object.(toolscache.DeletedFinalStateUnknown); ok {
		object = tombstone.Obj
	}
	pod, ok := object.(*corev1.Pod)
	if !ok {
		return
	}
	arm, ok := s.armOf[pod.Namespace]
	if !ok {
		return
	}
	name := workloadPodName(pod)
	if evicted(pod) {
		s.mu.Lock()
		if record := s.records[arm]; !s.start.IsZero() && !record.evictedObjects[pod.Name] {
			record.evictedObjects[pod.Name] = true
			record.Evicted[name] = append(record.Evicted[name], Eviction{At: time.Since(s.start), Node: pod.Spec.NodeName})
		}
		s.mu.Unlock()
	}
	if deleted || pod.DeletionTimestamp != nil {
		s.load.Unbind(arm, pod.Name)
		return
	}
	if pod.Spec.NodeName == "" {
		return
	}
	s.mu.Lock()
	record := s.records[arm]
	if _, seen := record.Bound[name]; !seen && !s.start.IsZero() {
		record.Bound[name], record.Node[name] = time.Since(s.start), pod.Spec.NodeName
	}
	s.mu.Unlock()
	s.load.Bind(arm, pod.Name, name, pod.Spec.NodeName)
}

// evicted is whether pod is being deleted through the Eviction API, which marks it so
// before it deletes it.
func evicted(pod *corev1.Pod) bool {
	for _, condition := range pod.Status.Conditions {
		if condition.Type == corev1.DisruptionTarget && condition.Status == corev1.ConditionTrue && condition.Reason == evictionReason {
			return true
		}
	}
	return false
}

// evictionReason is the reason of the DisruptionTarget condition the API server gives a pod
// it evicts (pkg/registry/core/pod/storage/eviction.go of k8s.io/kubernetes).
const evictionReason = "EvictionByEvictionAPI"

// watchPods starts an informer of the workload's pods and returns once it has synced.
func (s *runState) watchPods(ctx context.Context, clientset kubernetes.Interface) (func(), error) {
	factory := informers.NewSharedInformerFactoryWithOptions(clientset, 0,
		informers.WithTweakListOptions(func(options *metav1.ListOptions) { options.LabelSelector = workloadLabel }))
	informer := factory.Core().V1().Pods().Informer()
	_, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(object any) { s.observe(object, false) },
		UpdateFunc: func(_, object any) { s.observe(object, false) },
		DeleteFunc: func(object any) { s.observe(object, true) },
	})
	if err != nil {
		return nil, err
	}
	stop := make(chan struct{})
	factory.Start(stop)
	syncCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if !toolscache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced) {
		close(stop)
		return nil, fmt.Errorf("the pod informer did not sync")
	}
	return func() { close(stop); factory.Shutdown() }, nil
}

// sample records every arm's nodes' utilisation, and how the outage arms score, every
// SampleInterval from the loop's start.
func (s *runState) sample(ctx context.Context, opts Options, started time.Time) {
	for i := 0; ; i++ {
		at := time.Duration(i) * opts.SampleInterval
		if at > opts.RunFor || !sleepUntil(ctx, started.Add(at)) {
			return
		}
		for _, arm := range s.arms {
			usage, pods := s.load.Usage(arm.Key, at)
			cpu := make(map[string]float64, len(usage))
			for node, use := range usage {
				cpu[node] = use.CPU
			}
			var scoring v1.ScoringMode
			if arm.Outage {
				scoring = scoringOf(ctx, opts.Client, arm)
			}
			s.mu.Lock()
			record := s.records[arm.Key]
			record.Samples = append(record.Samples, Sample{Elapsed: at, CPU: cpu, Pods: pods})
			if arm.Outage {
				s.scoring[arm.Key] = append(s.scoring[arm.Key], scoring)
			}
			s.mu.Unlock()
		}
	}
}
