package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"math"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/test/installer"
)

// useOperator runs the operator from binary, starting it when it does not run or runs
// another binary; with fresh, it is restarted anyway. It returns once the operator's
// controller has started its workers.
func (e *env) useOperator(ctx context.Context, binary string, fresh bool) error {
	if !fresh && e.operator != nil && e.operator.running() && e.operatorBinary == binary {
		return nil
	}
	e.operator.stop()
	port, err := freePort()
	if err != nil {
		return err
	}
	e.operatorBinary, e.metricsURL = binary, fmt.Sprintf("http://127.0.0.1:%d/metrics", port)
	// The log is appended to across starts and runs of the harness: only what follows
	// this start tells that this process started.
	logOffset := (&process{logPath: filepath.Join(e.outputDir, "operator.log")}).logSize()
	args := []string{"--kubeconfig", e.operatorKubeconfig,
		"--metrics-bind-address=" + fmt.Sprintf("127.0.0.1:%d", port), "--metrics-secure=false", "--health-probe-bind-address=0",
		"--scheduler-namespaces=" + strings.Join(e.namespaces, ",")}
	e.pprofURL = ""
	// A baseline binary from before the flag existed would refuse it.
	if hasFlag(binary, "pprof-bind-address") {
		pprofPort, err := freePort()
		if err != nil {
			return err
		}
		args = append(args, fmt.Sprintf("--pprof-bind-address=127.0.0.1:%d", pprofPort))
		e.pprofURL = fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/", pprofPort)
	}
	// A new process counts its reconciles from zero: what waitQuiet found of the last
	// one says nothing of it.
	e.atRest = restState{}
	// As an installation does: the admission policy the installer ships, applied again
	// before each start (a baseline binary of an earlier release wrote its own), with its
	// parameters in the operator's namespace, where the operator writes them.
	if err := installer.ApplyAdmissionPolicies(ctx, e.client, e.repoRoot, operatorNamespace); err != nil {
		return err
	}
	e.operator, err = startProcess(e.outputDir, "operator", append([]string{"env", "POD_NAMESPACE=" + operatorNamespace, binary}, args...)...)
	if err != nil {
		return err
	}
	err = e.poll(ctx, 2*time.Minute, "the operator starts its workers", func() (bool, error) {
		if !e.operator.running() {
			return false, fmt.Errorf("the operator exited; see %s", e.operator.logPath)
		}
		return e.operator.logContains(logOffset, schedulerWorkersStarted), nil
	})
	if err != nil || !hasFlag(binary, "require-admission-policy") {
		return err
	}
	// A SecondaryScheduler created before the operator's admission policy and binding are
	// in place is refused (CreatedBeforeAdmissionPolicy): a benchmark that starts by
	// creating some, on a fresh cluster, waits for them (a baseline binary of an earlier
	// release writes its own).
	return e.poll(ctx, 2*time.Minute, "the operator's admission policy is in place", func() (bool, error) {
		for _, object := range []client.Object{&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}} {
			if err := e.client.Get(ctx, client.ObjectKey{Name: render.AuthorityPolicyName}, object); err != nil {
				return false, client.IgnoreNotFound(err)
			}
		}
		// The operator writes the parameters before its workers start.
		return true, nil
	})
}

// schedulerWorkersStarted is what the operator logs once the SecondaryScheduler
// controller has synced its caches and runs its workers. The operator's other controllers
// (routingtable, strandedpods, admissionparameters, orphans) log the same message for
// themselves, and start first: they watch less. A benchmark that went on at the first of
// them created its first SecondaryScheduler while the controller that reconciles it was
// still syncing, and measured that wait (a second and more, the single slowest of the
// convergence benchmark's 50 samples, so its p99) as creation latency.
const schedulerWorkersStarted = `"msg":"Starting workers","controller":"secondaryscheduler"`

func freePort() (int, error) {
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer func() { _ = listener.Close() }()
	return listener.Addr().(*net.TCPAddr).Port, nil
}

// scrape reads the operator's metrics.
func (e *env) scrape(ctx context.Context) (metricsSnapshot, error) {
	body, err := getOperator(ctx, e.metricsURL, "the operator's metrics")
	if err != nil {
		return nil, err
	}
	return parseMetrics(string(body))
}

// uncompressed reads the operator's endpoints without gzip: the metrics handler keeps a
// pool of gzip writers of about 600 KiB each for the scrapes that ask for it, which the
// heap profiles of the pending-pods benchmark showed as 1.8 MiB of its "growth".
var uncompressed = &http.Client{Transport: &http.Transport{DisableCompression: true}}

// getOperator GETs url, one of the operator's HTTP endpoints, and returns the body of an
// answer 200; what names it in errors.
func getOperator(ctx context.Context, url, what string) ([]byte, error) {
	request, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	response, err := uncompressed.Do(request)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	defer func() { _ = response.Body.Close() }()
	body, err := io.ReadAll(response.Body)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", what, err)
	}
	if response.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("read %s: %s", what, response.Status)
	}
	return body, nil
}

// hasFlag tells whether binary accepts --name, from its usage text.
func hasFlag(binary, name string) bool {
	// The usage goes to stderr, and -h exits non-zero: only the text matters.
	usage, _ := exec.Command(binary, "-h").CombinedOutput()
	return strings.Contains(string(usage), "-"+name+" ")
}

// operatorSample is what the harness reads of the operator at one moment.
type operatorSample struct {
	at         time.Time
	metrics    metricsSnapshot
	cpuSeconds float64
	memory     memoryStatus
	auditAt    int64
}

func (e *env) sampleOperator(ctx context.Context) (operatorSample, error) {
	sample := operatorSample{at: time.Now(), auditAt: e.audit.offset()}
	var err error
	if sample.metrics, err = e.scrape(ctx); err != nil {
		return sample, err
	}
	if sample.cpuSeconds, err = cpuSeconds(e.operator.pid()); err != nil {
		return sample, err
	}
	sample.memory, err = readMemoryStatus(e.operator.pid())
	return sample, err
}

// activity is what the operator did between two samples.
type activity struct {
	duration   time.Duration
	cpuSeconds float64
	// requests are the client's requests by "METHOD CODE", from its metrics.
	requests map[string]float64
	// reconciles are the controller's reconciles by result, and reconcileSeconds the time
	// they took, added up.
	reconciles       map[string]float64
	reconcileSeconds float64
	// workers is how many reconciles the controller runs at once.
	workers float64
	// audited are the requests the API server's audit log recorded, by verb, resource
	// and code.
	audited map[requestKey]int
}

func (e *env) activityBetween(before, after operatorSample) (activity, error) {
	const requests, reconciles = "rest_client_requests_total", "controller_runtime_reconcile_total"
	byController := map[string]string{"controller": "secondaryscheduler"}
	audited, err := e.audit.requestsBetween(before.auditAt, after.auditAt, operatorUser)
	if err != nil {
		return activity{}, err
	}
	return activity{
		duration:   after.at.Sub(before.at),
		cpuSeconds: after.cpuSeconds - before.cpuSeconds,
		requests:   counterDelta(before.metrics.by(requests, nil, "method", "code"), after.metrics.by(requests, nil, "method", "code")),
		reconciles: counterDelta(before.metrics.by(reconciles, byController, "result"), after.metrics.by(reconciles, byController, "result")),
		reconcileSeconds: after.metrics.sum("controller_runtime_reconcile_time_seconds_sum", byController) -
			before.metrics.sum("controller_runtime_reconcile_time_seconds_sum", byController),
		workers: after.metrics.sum("controller_runtime_max_concurrent_reconciles", byController),
		audited: audited,
	}, nil
}

// meanReconcile is how long a reconcile took on average, in milliseconds; NaN for none.
func (a activity) meanReconcile() float64 {
	count := total(a.reconciles)
	if count == 0 {
		return math.NaN()
	}
	return a.reconcileSeconds / count * 1000
}

// writes counts the client's requests that change something.
func (a activity) writes() float64 {
	writes := 0.0
	for key, count := range a.requests {
		method, _, _ := strings.Cut(key, " ")
		if method != http.MethodGet && method != http.MethodHead {
			writes += count
		}
	}
	return writes
}

// requestsOf counts the client's requests of method, and of those, the ones answered code
// (any code when empty).
func (a activity) requestsOf(method, code string) float64 {
	count := 0.0
	for key, value := range a.requests {
		keyMethod, keyCode, _ := strings.Cut(key, " ")
		if keyMethod == method && (code == "" || keyCode == code) {
			count += value
		}
	}
	return count
}

// auditedReads counts the audited get and list requests: reads that are not watches.
func (a activity) auditedReads() int {
	reads := 0
	for key, count := range a.audited {
		if key.verb == "get" || key.verb == "list" {
			reads += count
		}
	}
	return reads
}

// requestDetails are the tables of a's requests: by method and code from the client's
// metrics, by verb and resource from the audit log.
func (a activity) requestDetails(title string) []detail {
	clientRows := make([][]string, 0, len(a.requests))
	for _, key := range slices.Sorted(maps.Keys(a.requests)) {
		method, code, _ := strings.Cut(key, " ")
		clientRows = append(clientRows, []string{method, code, strconv.FormatFloat(a.requests[key], 'f', 0, 64)})
	}
	keys := mapKeys(a.audited)
	auditRows := make([][]string, 0, len(keys))
	slices.SortFunc(keys, func(x, y requestKey) int {
		if c := a.audited[y] - a.audited[x]; c != 0 {
			return c
		}
		return strings.Compare(fmt.Sprint(x), fmt.Sprint(y))
	})
	for _, key := range keys {
		code := "–"
		if key.code != 0 {
			code = strconv.Itoa(key.code)
		}
		auditRows = append(auditRows, []string{key.verb, key.resource, code, strconv.Itoa(a.audited[key])})
	}
	return []detail{
		{title: title + ": the operator's requests by method and code (its client metrics, rest_client_requests_total)",
			header: []string{"method", "code", "requests"}, rows: clientRows},
		{title: title + ": the operator's requests by verb and resource (the API server's audit log; a watch counts once, when it starts)",
			header: []string{"verb", "resource", "code", "requests"}, rows: auditRows},
	}
}

func mapKeys[K comparable, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	return keys
}

// quietFor is how long the operator must have had nothing queued and reconciled nothing
// before it counts as at rest.
const quietFor = 5 * time.Second

// restState is the operator found at rest: its count of reconciles done, and since when
// that count held, nothing queued or running meanwhile.
type restState struct {
	reconciles float64
	since      time.Time
}

// waitQuiet waits until the operator has had nothing queued, no reconcile running and
// no reconcile done for quietFor, from its metrics, read once a second. It records in
// e.atRest since when the operator has been at rest: since an earlier waitQuiet, when
// no reconcile was done in between (the count of reconciles done is the same).
func (e *env) waitQuiet(ctx context.Context, timeout time.Duration) error {
	controller := map[string]string{"controller": "secondaryscheduler"}
	lastReconciles, quietSince, restingSince := -1.0, time.Now(), time.Time{}
	return e.pollEvery(ctx, time.Second, timeout, "the operator at rest", func() (bool, error) {
		metrics, err := e.scrape(ctx)
		if err != nil {
			return false, err
		}
		busy := metrics.sum("workqueue_depth", map[string]string{"name": "secondaryscheduler"}) > 0 ||
			metrics.sum("controller_runtime_active_workers", controller) > 0
		reconciles := metrics.sum("controller_runtime_reconcile_total", controller)
		if busy || reconciles != lastReconciles {
			restingSince = time.Time{}
			if !busy && lastReconciles < 0 && !e.atRest.since.IsZero() && e.atRest.reconciles == reconciles {
				restingSince = e.atRest.since
			}
			lastReconciles, quietSince = reconciles, time.Now()
			return false, nil
		}
		if time.Since(quietSince) < quietFor {
			return false, nil
		}
		e.atRest = restState{reconciles: reconciles, since: cmp.Or(restingSince, quietSince)}
		return true, nil
	})
}

// rest waits until the operator has been at rest for d, counting the time it already
// was: a long-running operator's memory is what stays once the runtime has collected
// and returned what its last work freed.
func (e *env) rest(ctx context.Context, d time.Duration) error {
	if err := e.waitQuiet(ctx, 5*time.Minute); err != nil {
		return err
	}
	if left := d - time.Since(e.atRest.since); left > 0 {
		return sleep(ctx, left)
	}
	return nil
}
