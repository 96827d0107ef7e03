package controllers

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/extenderprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/gather"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/reasons"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/render"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/report"
)

// DefaultExtenderProbeInterval is how often each extender is probed again when nothing
// else changes: an unreachable extender that is not ignorable fails every pod, so it is
// looked at more often than metrics are.
const DefaultExtenderProbeInterval = time.Minute

// ExtenderProber probes the extenders of schedulers away from the reconcile, as
// MetricsProber does metrics: a reconcile reads the last result of each extender and,
// when there is none for its address and TLS or it is older than the interval, starts a
// probe in the background, whose end reconciles the resource again.
type ExtenderProber struct {
	// Dial opens connections; nil for net.Dialer's.
	Dial func(ctx context.Context, network, address string) (net.Conn, error)
	// Timeout bounds each probe.
	Timeout time.Duration
	// Interval is how long a result stands.
	Interval time.Duration

	probeNotifier

	mu      sync.Mutex
	last    map[extenderKey]extenderRecord
	running map[extenderKey]extenderRequest
}

type extenderKey struct {
	scheduler types.NamespacedName
	name      string
}

// extenderRequest is what a probe asks: a new address or TLS asks anew.
type extenderRequest struct{ address, verb, tlsVersion string }

type extenderRecord struct {
	at      time.Time
	request extenderRequest
	result  extenderprobe.Result
}

// probe returns the last result for extender of scheduler when it answers this request
// and is younger than the interval, and starts a probe when there is none or it is older.
func (p *ExtenderProber) probe(scheduler types.NamespacedName, extender gather.Extender) (extenderRecord, bool) {
	key := extenderKey{scheduler, extender.Name}
	request := extenderRequest{address: extender.Config.Extender.URLPrefix, verb: firstVerb(extender), tlsVersion: extender.TLSVersion}
	p.mu.Lock()
	defer p.mu.Unlock()
	last, found := p.last[key]
	answers := found && last.request == request
	if answers && time.Since(last.at) < p.Interval {
		return last, true
	}
	if running, isRunning := p.running[key]; !isRunning || running != request {
		if p.running == nil {
			p.running = map[extenderKey]extenderRequest{}
		}
		p.running[key] = request
		go p.runProbe(key, request, p.httpClient(extender))
	}
	// An older answer about the same extender stands while the new probe runs.
	return last, answers
}

func (p *ExtenderProber) runProbe(key extenderKey, request extenderRequest, httpClient *http.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), p.Timeout+time.Second)
	defer cancel()
	result := extenderprobe.Probe(ctx, httpClient, request.address, request.verb)
	p.mu.Lock()
	if p.running[key] != request {
		p.mu.Unlock()
		return
	}
	delete(p.running, key)
	if p.last == nil {
		p.last = map[extenderKey]extenderRecord{}
	}
	if result.Detail != "" && p.last[key].result.Detail != result.Detail {
		// Status says only which kind of failure; the cause, which may quote what the
		// host answered, is for whoever reads the operator's log. Once per change.
		logf.Log.WithName("extender-prober").Info("an extender cannot be reached", "secondaryScheduler", key.scheduler,
			"extender", key.name, "address", request.address, "cause", result.Detail)
	}
	p.last[key] = extenderRecord{at: time.Now(), request: request, result: result}
	p.mu.Unlock()
	p.finished(key.scheduler)
}

// httpClient connects as the scheduler does: with the extender's TLS configuration.
func (p *ExtenderProber) httpClient(extender gather.Extender) *http.Client {
	dial := p.Dial
	if dial == nil {
		dial = (&net.Dialer{Timeout: 5 * time.Second}).DialContext
	}
	transport := &http.Transport{DialContext: dial, DisableKeepAlives: true}
	if extender.TLS != nil {
		transport.TLSClientConfig = extender.TLS.Clone()
	}
	// A redirect is an answer: the probe follows none, so that an extender's address
	// cannot send the operator's requests elsewhere.
	return &http.Client{Timeout: p.Timeout, Transport: transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// forget drops the results of scheduler's extenders but those named keep.
func (p *ExtenderProber) forget(scheduler types.NamespacedName, keep ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := func(key extenderKey) bool {
		if key.scheduler != scheduler {
			return true
		}
		for _, name := range keep {
			if key.name == name {
				return true
			}
		}
		return false
	}
	for key := range p.last {
		if !kept(key) {
			delete(p.last, key)
		}
	}
	for key := range p.running {
		if !kept(key) {
			delete(p.running, key)
		}
	}
}

// firstVerb is the verb a probe asks: the scheduler's requests go to ADDRESS/VERB, so
// that is the path that must answer.
func firstVerb(extender gather.Extender) string {
	config := extender.Config.Extender
	for _, verb := range []string{config.FilterVerb, config.PrioritizeVerb, config.PreemptVerb, config.BindVerb} {
		if verb != "" {
			return verb
		}
	}
	return ""
}

// reportExtenders probes the extenders of cr's scheduler and reports them
// (report.Extenders): an extender in the scheduler's pod, which only the scheduler
// reaches, by its container's readiness in the pods of the current configuration (the
// leader's, leader naming the pod that holds the Lease); the
// others by the prober. It returns the problem that degrades the scheduler, nil for none,
// and when to look again (zero without extenders).
func (r *SecondarySchedulerReconciler) reportExtenders(ctx context.Context, cr *v1.SecondaryScheduler, found *gather.Facts, leader string,
	status *v1.SecondarySchedulerStatus, conditions *report.Conditions) (*reasons.Finding, time.Duration, error) {
	key := client.ObjectKeyFromObject(cr)
	names := make([]string, 0, len(found.Extenders))
	seen := make([]report.ExtenderSeen, 0, len(found.Extenders))
	var pods *corev1.PodList
	for _, extender := range found.Extenders {
		names = append(names, extender.Name)
		entry := report.ExtenderSeen{Name: extender.Name, Address: extender.Config.Extender.URLPrefix, Ignorable: extender.Config.Extender.Ignorable}
		if extender.InPod {
			if pods == nil {
				pods = &corev1.PodList{}
				if err := r.cache.List(ctx, pods, client.InNamespace(cr.Namespace), client.MatchingLabels(render.PodSelector(cr))); err != nil {
					return nil, 0, err
				}
			}
			entry.Probed, entry.Reachable, entry.Message = report.ContainerReadiness(pods.Items, status.ConfigHash, render.ExtenderContainerName(extender.Name), leader)
			entry.At = metav1.NewTime(r.now())
			if !entry.Reachable {
				entry.Reason = v1.ReasonExtenderNotReady
			}
		} else {
			record, probed := r.extenderProber.probe(key, extender)
			entry.Probed, entry.Reachable, entry.Reason, entry.Message = probed, record.result.Reachable, record.result.Reason, record.result.Message
			entry.At = metav1.NewTime(record.at)
		}
		seen = append(seen, entry)
	}
	r.extenderProber.forget(key, names...)
	problem := report.Extenders(status, conditions, seen)
	if len(seen) == 0 {
		return problem, 0, nil
	}
	return problem, r.extenderProber.Interval, nil
}
