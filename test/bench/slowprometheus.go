package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/promtest"
)

const (
	slowPrometheusNamespace = "bench-slow-prometheus"
	// slowLoadAwareCount is how many load-aware schedulers read the slow Prometheus, and
	// slowBinPackingCount how many BinPacking ones are created while it is being probed.
	slowLoadAwareCount  = 10
	slowBinPackingCount = 50
	// slowPrometheusDelay is how long the proxy holds every request before forwarding it.
	slowPrometheusDelay = 10 * time.Second
	// slowHeadStart is how long after creating the load-aware schedulers the first
	// BinPacking one is created: long enough for the operator to be in the first of their
	// reconciles, and so in its probe, with the others queued.
	slowHeadStart = time.Second
	// slowStaleAfter is the load-aware schedulers' profile.metrics.staleAfter, the longest
	// the API allows. The operator probes again after half of it (or its probe interval,
	// 5 min by default, if shorter), so that each is probed once during the run; with the
	// default 3m a second round of probes would start 90 s after the first, within the run.
	slowStaleAfter = 10 * time.Minute
	// slowLoadAwareTimeout bounds the wait for the load-aware schedulers' first status,
	// and for the first BinPacking one, which may wait behind every probe: the probes
	// alone may take slowLoadAwareCount × slowPrometheusDelay, one after another.
	slowLoadAwareTimeout = 4 * time.Minute
)

// runSlowPrometheus measures whether load-aware schedulers whose Prometheus answers late
// hold up the others: it creates slowLoadAwareCount TargetLoadPacking
// SecondarySchedulers reading a Prometheus behind a proxy that holds each request
// slowPrometheusDelay, then slowBinPackingCount BinPacking ones one after another, and
// measures from each BinPacking create to its objects, as convergence does.
func runSlowPrometheus(ctx context.Context, e *env) (*section, error) {
	// No scheduler process is needed to see the operator's latency, and 60 of them would
	// make the run longer than the effect it measures.
	if err := e.usePodrunner(ctx, true); err != nil {
		return nil, err
	}
	s := &section{
		name:  "slow-prometheus",
		title: fmt.Sprintf("%d BinPacking schedulers beside %d whose Prometheus answers after %v", slowBinPackingCount, slowLoadAwareCount, slowPrometheusDelay),
		what: fmt.Sprintf("Starts Debian's Prometheus on loopback (test/promtest, serving the series load-watcher reads for every Node) behind a "+
			"reverse proxy in the harness that holds every request %v before forwarding it. Creates %d TargetLoadPacking SecondarySchedulers "+
			"at once whose spec.profile.metrics.address is the proxy's (staleAfter %v, so that each is probed once during the run), "+
			"then, %v later, %d BinPacking ones in the same namespace one after another, each once the one before has all its objects. "+
			"Pods are Ready without a process (podrunner --fake-ready), which keeps the run short: the figures are the operator's. "+
			"Then, once those are deleted, the control: %d BinPacking ones created the same way with no load-aware one beside them.",
			slowPrometheusDelay, slowLoadAwareCount, slowStaleAfter, slowHeadStart, slowBinPackingCount, slowBinPackingCount),
		how: "From just before each BinPacking create request to the watch event that brought the last of its objects (counted by the operator's " +
			"owner labels, of every kind it makes); the first is awaited until Available, the others until they have as many objects as it had then. " +
			"For the load-aware ones, from just before the first of their create requests to the last watch event that brought one of their objects, " +
			"and to the watch event (of a watch of its own) in which the last of them first showed a probe result, True or False, in its MetricsAvailable " +
			"condition (Unknown, MetricsProbing, is a probe still running). The proxy counts the requests it received. " +
			"MetricsAvailable is read with a Get once every load-aware one shows a result; " +
			"the operator's reconciles from controller_runtime_reconcile_total and _time_seconds, from a sample just before the creates to one just after.",
	}
	prometheus, err := e.startSlowPrometheus(ctx)
	if err != nil {
		return s, err
	}
	defer prometheus.stop()

	if err := e.waitSettled(ctx, slowPrometheusNamespace); err != nil {
		return s, err
	}
	before, err := e.sampleOperator(ctx)
	if err != nil {
		return s, err
	}
	loadAware := make([]ownerKey, slowLoadAwareCount)
	for i := range loadAware {
		loadAware[i] = ownerKey{slowPrometheusNamespace, fmt.Sprintf("slow-load-%03d", i)}
	}
	// Started before the creates, so that no event is missed.
	probeResults, err := e.watchProbeResults(ctx, slowPrometheusNamespace, loadAware, slowLoadAwareTimeout)
	if err != nil {
		return s, err
	}
	loadAwareStarted := time.Now()
	if err := e.createLoadAware(ctx, loadAware, prometheus.url); err != nil {
		return s, err
	}
	if err := sleep(ctx, slowHeadStart); err != nil {
		return s, err
	}
	toObjects, objectCounts, err := e.createBinPackingInTurn(ctx, "slow-pack")
	if err != nil {
		return s, err
	}
	after, err := e.sampleOperator(ctx)
	if err != nil {
		return s, err
	}
	reconciled, err := e.activityBetween(before, after)
	if err != nil {
		return s, err
	}

	resultAt, resultErr := probeResults.wait(ctx)
	notReached := fmt.Sprintf("not within %v", slowLoadAwareTimeout)
	allObjects, allResults := math.NaN(), math.NaN()
	if resultErr == nil {
		var lastObject, lastResult time.Time
		for _, key := range loadAware {
			lastObject = latest(lastObject, e.tracker.state(key).allObjectsAt())
			lastResult = latest(lastResult, resultAt[key])
		}
		allObjects, allResults = lastObject.Sub(loadAwareStarted).Seconds(), lastResult.Sub(loadAwareStarted).Seconds()
	}
	conditions, err := e.metricsConditions(ctx, loadAware, prometheus.url)
	if err != nil {
		return s, err
	}
	requests := prometheus.proxy.SettledCounts(ctx, slowPrometheusDelay+5*time.Second)
	// The control: the same BinPacking schedulers, created the same way with no load-aware
	// one beside them, tell what the slow Prometheus costs them from what creating them in
	// turn costs on this machine.
	if err := e.deleteSchedulers(ctx, slowPrometheusNamespace); err != nil {
		return s, err
	}
	if err := e.waitSettled(ctx, slowPrometheusNamespace); err != nil {
		return s, err
	}
	controlToObjects, _, err := e.createBinPackingInTurn(ctx, "control-pack")
	if err != nil {
		return s, err
	}
	control := milliseconds(controlToObjects)

	objects := milliseconds(toObjects)
	s.rows = []row{
		{figure: "BinPacking: create → every object, p50", values: []float64{percentile(objects, 50)}, unit: unitMilliseconds, target: below(100), ifMissed: slowPrometheusMissed(control)},
		{figure: "BinPacking: create → every object, p99", values: []float64{percentile(objects, 99)}, unit: unitMilliseconds, target: below(300),
			ifMissed: slowPrometheusMissed(control)},
		{figure: "control, the same without the load-aware ones: create → every object, p50", values: []float64{percentile(control, 50)}, unit: unitMilliseconds},
		{figure: "control, the same without the load-aware ones: create → every object, p99", values: []float64{percentile(control, 99)}, unit: unitMilliseconds},
		{figure: fmt.Sprintf("load-aware: create → every object of all %d", slowLoadAwareCount), values: []float64{allObjects}, unit: unitSeconds,
			missing: notReached},
		{figure: fmt.Sprintf("load-aware: create → probe result in status of all %d", slowLoadAwareCount), values: []float64{allResults},
			unit: unitSeconds, missing: notReached},
		{figure: "probe requests the slow Prometheus received", values: []float64{float64(requests.Received)}, unit: unitCount},
	}
	s.notes = append(s.notes,
		fmt.Sprintf("The first BinPacking scheduler, created %v after the load-aware ones, had every object %s after its create; the slowest %s, the fastest %s.",
			slowHeadStart, unitMilliseconds.format(objects[0]), unitMilliseconds.format(slices.Max(objects)), unitMilliseconds.format(slices.Min(objects))),
		fmt.Sprintf("Objects per BinPacking scheduler when counted: %s.", countsText(objectCounts)),
		fmt.Sprintf("MetricsAvailable of the %d load-aware schedulers at the end: %s.", slowLoadAwareCount, conditions),
		fmt.Sprintf("Of the proxy's %d requests, %d were forwarded to Prometheus after the %v hold, and %d the operator gave up on while they were held "+
			"(its probe timed out first).", requests.Received, requests.Forwarded, slowPrometheusDelay, requests.Abandoned),
		fmt.Sprintf("From the first create to the last BinPacking scheduler's objects, the operator ran %.0f reconciles, %.0f at a time "+
			"(controller_runtime_max_concurrent_reconciles), which took %.1f s together over %.1f s.",
			total(reconciled.reconciles), reconciled.workers, reconciled.reconcileSeconds, reconciled.duration.Seconds()))
	if resultErr != nil {
		s.notes = append(s.notes, fmt.Sprintf("Not reached: %v.", resultErr))
	}
	return s, e.clean(ctx, slowPrometheusNamespace)
}

// slowPrometheusMissed explains a missed target of the slow-prometheus benchmark, with
// the control's figures (milliseconds) beside it.
func slowPrometheusMissed(control []float64) string {
	return fmt.Sprintf("The slow Prometheus costs the BinPacking schedulers nothing: the control, the same schedulers created the same way "+
		"with no load-aware one beside them, took %.0f ms at p50 and %.0f ms at p99. What the figure is: a new scheduler's objects take three "+
		"round trips to the API server, one after another (the objects its pods need, beside the finalizer patch; the bindings, which the "+
		"API server checks against the Role made in the first; the Deployment, whose pods need both), and each scheduler is created while "+
		"the one before it progresses (its Deployment's ReplicaSet and pod, the pod made Ready, the status writes and Events that follow), "+
		"which keeps both cores busy: in a run of 2026-11-28 the machine's processes used 2.2 cores over its 15 s (kube-apiserver 12.4 CPU s, "+
		"the operator 5.8, etcd 3.8), and the audit log showed each of the operator's requests taking 40 to 130 ms in the API server. "+
		"The convergence benchmark, which creates each scheduler once the one before is Available, has the same three round trips at "+
		"about 55 ms. One round trip fewer would meet the target here: creating the Deployment beside the bindings, so that its pods "+
		"could start before the permissions they need exist; the operator keeps that order.",
		percentile(control, 50), percentile(control, 99))
}

// waitSettled waits until namespace holds no pod (what the garbage collector deletes
// after the SecondarySchedulers of a run before) and the operator is at rest, so that
// the run and its control start on an equally quiet machine.
func (e *env) waitSettled(ctx context.Context, namespace string) error {
	err := e.pollEvery(ctx, time.Second, 2*time.Minute, "the pods of "+namespace+" gone", func() (bool, error) {
		pods := &corev1.PodList{}
		err := e.client.List(ctx, pods, client.InNamespace(namespace))
		return err == nil && len(pods.Items) == 0, err
	})
	if err != nil {
		return err
	}
	return e.waitQuiet(ctx, 2*time.Minute)
}

// createLoadAware creates the TargetLoadPacking SecondarySchedulers of keys at once, all
// reading the Prometheus at address.
func (e *env) createLoadAware(ctx context.Context, keys []ownerKey, address string) error {
	items := make(chan ownerKey, len(keys))
	for _, key := range keys {
		items <- key
	}
	close(items)
	return forEachParallel(ctx, len(keys), items, func(key ownerKey) error {
		if err := e.client.Create(ctx, targetLoadPacking(key.namespace, key.name, address)); err != nil {
			return fmt.Errorf("create %s: %w", key, err)
		}
		return nil
	})
}

// targetLoadPacking is a load-aware SecondaryScheduler that reads the Prometheus at
// address, given explicitly so that no discovery runs.
func targetLoadPacking(namespace, name, address string) *v1.SecondaryScheduler {
	return &v1.SecondaryScheduler{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: v1.SecondarySchedulerSpec{Profile: &v1.Profile{
			Type:    v1.TargetLoadPackingProfile,
			Metrics: &v1.LoadMetrics{Address: address, StaleAfter: &metav1.Duration{Duration: slowStaleAfter}},
		}},
	}
}

// createBinPackingInTurn creates the BinPacking SecondarySchedulers namePrefix-000 and on
// one after another, each once the one before has all its objects, and returns how long
// each took from its create to its last object, and how many schedulers had each object
// count. The first is awaited until Available, when its objects are complete; its count
// of objects is what the others are awaited for.
func (e *env) createBinPackingInTurn(ctx context.Context, namePrefix string) ([]time.Duration, map[int]int, error) {
	toObjects := make([]time.Duration, 0, slowBinPackingCount)
	objectCounts := map[int]int{}
	complete := 0
	for i := range slowBinPackingCount {
		key := ownerKey{slowPrometheusNamespace, fmt.Sprintf("%s-%03d", namePrefix, i)}
		done, timeout := func(state *ownerState) bool { return len(state.objects) >= complete }, 2*time.Minute
		if i == 0 {
			done, timeout = func(state *ownerState) bool { return state.available }, slowLoadAwareTimeout
		}
		started := time.Now()
		if err := e.client.Create(ctx, binPacking(key.namespace, key.name)); err != nil {
			return nil, nil, fmt.Errorf("create %s: %w", key, err)
		}
		if err := e.tracker.waitFor(ctx, timeout, key.String()+" has every object", func(owners map[ownerKey]*ownerState) bool {
			state, ok := owners[key]
			return ok && done(state)
		}); err != nil {
			return nil, nil, err
		}
		state := e.tracker.state(key)
		if i == 0 {
			complete = len(state.objects)
		}
		toObjects = append(toObjects, state.allObjectsAt().Sub(started))
		objectCounts[len(state.objects)]++
	}
	return toObjects, objectCounts, nil
}

// metricsConditions says what the MetricsAvailable conditions of keys are, as counts of
// "status/reason" and one message, with address replaced by words: its port changes
// from run to run, and notes of identical runs should read alike.
func (e *env) metricsConditions(ctx context.Context, keys []ownerKey, address string) (string, error) {
	counts := map[string]int{}
	message := ""
	for _, key := range keys {
		cr := &v1.SecondaryScheduler{}
		if err := e.client.Get(ctx, client.ObjectKey{Namespace: key.namespace, Name: key.name}, cr); err != nil {
			return "", err
		}
		condition := meta.FindStatusCondition(cr.Status.Conditions, string(v1.ConditionMetricsAvailable))
		if condition == nil {
			counts["none"]++
			continue
		}
		counts[string(condition.Status)+"/"+condition.Reason]++
		if message == "" {
			message = strings.ReplaceAll(condition.Message, address, "the proxy")
		}
	}
	return summarizeConditions(counts, message), nil
}

// summarizeConditions writes counts of conditions, "False/PrometheusUnreachable (10)",
// and an example message when there is one.
func summarizeConditions(counts map[string]int, message string) string {
	parts := make([]string, 0, len(counts))
	for _, condition := range slices.Sorted(maps.Keys(counts)) {
		parts = append(parts, fmt.Sprintf("%s (%d)", condition, counts[condition]))
	}
	text := strings.Join(parts, ", ")
	if message != "" {
		text += fmt.Sprintf(`; for example "%s"`, strings.TrimSuffix(message, "."))
	}
	return text
}

// probeResultWatch records, from a watch of SecondarySchedulers, when each of a set of
// them first showed the result of a probe in its MetricsAvailable condition.
type probeResultWatch struct {
	done chan struct{}
	// at and err are the watch's result, to read once done is closed.
	at  map[ownerKey]time.Time
	err error
}

// watchProbeResults starts recording when each of keys, all in namespace, first shows
// a probe result (hasProbeResult). It ends once all have, or after timeout. The
// tracker's watch records only Available of a SecondaryScheduler's conditions, hence a
// watch of its own.
func (e *env) watchProbeResults(ctx context.Context, namespace string, keys []ownerKey, timeout time.Duration) (*probeResultWatch, error) {
	watcher, err := client.NewWithWatch(e.config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	events, err := watcher.Watch(ctx, &v1.SecondarySchedulerList{}, client.InNamespace(namespace))
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch the SecondarySchedulers of %s: %w", namespace, err)
	}
	wanted := make(map[ownerKey]bool, len(keys))
	for _, key := range keys {
		wanted[key] = true
	}
	w := &probeResultWatch{done: make(chan struct{}), at: map[ownerKey]time.Time{}}
	go func() {
		defer close(w.done)
		defer cancel()
		defer events.Stop()
		for len(w.at) < len(keys) {
			select {
			case <-ctx.Done():
				w.err = fmt.Errorf("a probe result in status of every load-aware SecondaryScheduler: not within %v", timeout)
				return
			case event, open := <-events.ResultChan():
				if !open {
					w.err = errors.New("the watch of SecondarySchedulers ended")
					return
				}
				now := time.Now()
				cr, ok := event.Object.(*v1.SecondaryScheduler)
				if !ok {
					continue
				}
				key := ownerKey{cr.Namespace, cr.Name}
				if _, recorded := w.at[key]; wanted[key] && !recorded && hasProbeResult(cr) {
					w.at[key] = now
				}
			}
		}
	}()
	return w, nil
}

// wait returns what the watch recorded, once it has ended.
func (w *probeResultWatch) wait(ctx context.Context) (map[ownerKey]time.Time, error) {
	select {
	case <-w.done:
		return w.at, w.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// hasProbeResult reports whether cr's MetricsAvailable condition holds the result of a
// probe, True or False. An operator that probes within the reconcile writes the result
// with its first status; one that probes in the background may first write Unknown
// (MetricsProbing), which is no result.
func hasProbeResult(cr *v1.SecondaryScheduler) bool {
	condition := meta.FindStatusCondition(cr.Status.Conditions, string(v1.ConditionMetricsAvailable))
	return condition != nil && condition.Status != metav1.ConditionUnknown
}

// slowPrometheus is a real Prometheus and, in front of it, a proxy that answers late.
type slowPrometheus struct {
	// url is the proxy's: where the load-aware schedulers read metrics.
	url    string
	proxy  *promtest.DelayingProxy
	server *http.Server
	tb     *benchTB
}

// startSlowPrometheus starts Prometheus (with its files in the output directory), makes
// it serve the series load-watcher reads for every Node, and starts the delaying proxy
// in front of it on loopback, which the operator, a process on this host, reaches.
func (e *env) startSlowPrometheus(ctx context.Context) (*slowPrometheus, error) {
	dir := filepath.Join(e.outputDir, "slow-prometheus")
	if err := os.RemoveAll(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	tb := &benchTB{dir: dir}
	server, err := startPromtest(tb)
	if err != nil {
		tb.cleanUp()
		return nil, fmt.Errorf("start Prometheus: %w", err)
	}
	p := &slowPrometheus{tb: tb}
	nodes := &corev1.NodeList{}
	if err := e.client.List(ctx, nodes); err != nil {
		p.stop()
		return nil, err
	}
	// Fresh load for every Node, so that the only thing wrong is how late it comes.
	load := make(map[string]float64, len(nodes.Items))
	for _, node := range nodes.Items {
		load[node.Name] = 0.3
	}
	for _, series := range metricsprobe.Series {
		server.SetSeries(series, load)
	}
	target, err := url.Parse(server.URL)
	if err != nil {
		p.stop()
		return nil, err
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		p.stop()
		return nil, err
	}
	p.url, p.proxy = "http://"+listener.Addr().String(), promtest.NewDelayingProxy(target, slowPrometheusDelay)
	p.server = &http.Server{Handler: p.proxy, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := p.server.Serve(listener); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logf("the slow Prometheus' proxy: %v", err)
		}
	}()
	logf("Prometheus at %s, behind a proxy at %s that holds each request %v", server.URL, p.url, slowPrometheusDelay)
	return p, nil
}

// stop ends the proxy, with the requests it holds, and Prometheus.
func (p *slowPrometheus) stop() {
	if p.server != nil {
		_ = p.server.Close()
	}
	p.tb.cleanUp()
}

// benchTB is the promtest.TB that promtest.Start runs with outside a test: its
// temporary directories are under dir, Fatal ends the start with an error (through
// startPromtest), and its clean-ups run at cleanUp.
type benchTB struct {
	dir string

	mu       sync.Mutex
	cleanups []func()
	failed   bool
}

// tbFatal is what benchTB.Fatal panics with, for startPromtest to recover.
type tbFatal struct{ message string }

func (f tbFatal) Error() string { return f.message }

// startPromtest runs promtest.Start with tb, turning a Fatal into an error.
func startPromtest(tb *benchTB) (server *promtest.Server, err error) {
	defer func() {
		if recovered := recover(); recovered != nil {
			fatal, ok := recovered.(tbFatal)
			if !ok {
				panic(recovered)
			}
			err = fatal
		}
	}()
	return promtest.Start(tb), nil
}

// Helper does nothing: there is no test log to point at a line of.
func (tb *benchTB) Helper() {}

// Fatal ends promtest.Start: startPromtest returns the message as an error.
func (tb *benchTB) Fatal(args ...any) { tb.fail(fmt.Sprint(args...)) }

// Fatalf is Fatal with a format.
func (tb *benchTB) Fatalf(format string, args ...any) { tb.fail(fmt.Sprintf(format, args...)) }

func (tb *benchTB) fail(message string) {
	tb.mu.Lock()
	tb.failed = true
	tb.mu.Unlock()
	panic(tbFatal{message})
}

// Logf logs as the harness does.
func (tb *benchTB) Logf(format string, args ...any) { logf("prometheus: "+format, args...) }

// Cleanup registers cleanup to run at cleanUp, the last registered first, as a test's.
func (tb *benchTB) Cleanup(cleanup func()) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	tb.cleanups = append(tb.cleanups, cleanup)
}

// TempDir is a new directory under tb's directory, kept after the run with the logs.
func (tb *benchTB) TempDir() string {
	dir, err := os.MkdirTemp(tb.dir, "prometheus-")
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}

// Failed is whether Fatal was called.
func (tb *benchTB) Failed() bool {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	return tb.failed
}

// cleanUp runs the registered clean-ups, the last registered first, each once.
func (tb *benchTB) cleanUp() {
	tb.mu.Lock()
	cleanups := tb.cleanups
	tb.cleanups = nil
	tb.mu.Unlock()
	for _, cleanup := range slices.Backward(cleanups) {
		cleanup()
	}
}
