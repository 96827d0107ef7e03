package controllers

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/deschedmetrics"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/metricsprobe"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/report"
)

// DefaultDeschedulerReadInterval is how often the operator reads what each descheduler's
// metrics and the nodes' use say.
const DefaultDeschedulerReadInterval = time.Minute

// deschedulerReadParallelism bounds the descheduler looks run at once.
const deschedulerReadParallelism = 4

// DeschedulerWatcher reads, away from the reconciles and on a timer of its own, what the
// descheduler of each SecondaryScheduler with spec.descheduling says of its work (its own
// metrics: cycles, and evictions by node, kept for the hour by deschedmetrics.History) and
// the nodes' use by the descheduler's query, with the scheduler's credentials. A reconcile
// says what to read (watch) and takes the last activity; a look whose activity differs
// from the last one reported brings a reconcile, and nothing else does, so that an idle
// descheduler costs reads, never writes.
type DeschedulerWatcher struct {
	// Timeout bounds each request; Interval is the time between two looks.
	Timeout, Interval time.Duration
	// Now is the clock.
	Now func() time.Time

	probeNotifier

	mu      sync.Mutex
	watched map[types.NamespacedName]*deschedulerWatch
}

// deschedulerTarget is what a look reads for one SecondaryScheduler.
type deschedulerTarget struct {
	// mode is the descheduler's: its counts are evictions in one, would-be evictions in
	// the other, so a switch starts the hour's history anew.
	mode v1.DeschedulingMode
	// pods are the descheduler's running pods.
	pods []deschedulerPod
	// prometheus, token, query and the TLS settings read the nodes' use as the
	// descheduler does; prometheus is empty when the address cannot be read.
	prometheus, token, query string
	httpClient               *http.Client
}

// deschedulerPod is a running pod of a descheduler, and where its metrics are: url, or
// why they cannot be read (unreadable) when the pod gives no address.
type deschedulerPod struct {
	name       string
	uid        types.UID
	url        string
	unreadable string
}

// deschedulerWatch is what is known of one descheduler.
type deschedulerWatch struct {
	target   deschedulerTarget
	source   [32]byte
	history  deschedmetrics.History
	activity report.DeschedulerActivity
	reported string
	looked   bool
}

// fingerprint is what the status reports of an activity, to tell a change.
func fingerprint(a report.DeschedulerActivity) string {
	nodes := make([]string, 0, len(a.NodeUse))
	for node, use := range a.NodeUse {
		nodes = append(nodes, node+"="+strconv.FormatFloat(use, 'f', 2, 64))
	}
	slices.Sort(nodes)
	evicted := make([]string, 0, len(a.Summary.Evicted))
	for node, count := range a.Summary.Evicted {
		evicted = append(evicted, node+"="+strconv.FormatUint(count, 10))
	}
	slices.Sort(evicted)
	return fmt.Sprintf("%t|%d|%s|%s|%s|%s|%t|%s", a.Read, a.Summary.Cycles, a.Summary.LastCycleSeen, a.Summary.CountedSince,
		strings.Join(evicted, ","), strings.Join(nodes, ","), a.NodeUse == nil, a.Unread)
}

// watch says what to read for key from now on, and returns the last activity read, ok
// false before the first look.
func (w *DeschedulerWatcher) watch(key types.NamespacedName, target deschedulerTarget, source [32]byte) (report.DeschedulerActivity, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched == nil {
		w.watched = map[types.NamespacedName]*deschedulerWatch{}
	}
	watched, found := w.watched[key]
	if !found || watched.target.mode != target.mode {
		watched = &deschedulerWatch{}
		w.watched[key] = watched
	}
	if watched.source != source {
		// Another Prometheus, query or credentials: the nodes' use read before is not theirs.
		watched.activity.NodeUse, watched.looked = nil, false
	}
	watched.target, watched.source = target, source
	return watched.activity, watched.looked
}

// forget stops reading for key and drops its history.
func (w *DeschedulerWatcher) forget(key types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.watched, key)
}

// Start looks at every watched descheduler each Interval until ctx ends.
func (w *DeschedulerWatcher) Start(ctx context.Context) error {
	ticker := time.NewTicker(w.Interval)
	defer ticker.Stop()
	for {
		w.lookAll(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: only the leader
// reconciles, so only it reads.
func (*DeschedulerWatcher) NeedLeaderElection() bool { return true }

// lookAll looks at every watched descheduler, a few at a time.
func (w *DeschedulerWatcher) lookAll(ctx context.Context) {
	w.mu.Lock()
	keys := make([]types.NamespacedName, 0, len(w.watched))
	targets := make([]deschedulerTarget, 0, len(w.watched))
	for key, watched := range w.watched {
		keys, targets = append(keys, key), append(targets, watched.target)
	}
	w.mu.Unlock()
	workqueue.ParallelizeUntil(ctx, deschedulerReadParallelism, len(keys), func(i int) {
		w.lookAt(ctx, keys[i], targets[i])
	})
}

// lookAt reads target's metrics and nodes' use, keeps them for key unless key's target
// changed meanwhile, and reports key when what status says of it changes.
func (w *DeschedulerWatcher) lookAt(ctx context.Context, key types.NamespacedName, target deschedulerTarget) {
	ctx, cancel := context.WithTimeout(ctx, 3*w.Timeout)
	defer cancel()
	var readings []deschedmetrics.Reading
	var unread []string
	scraper := &http.Client{Timeout: w.Timeout, Transport: &http.Transport{
		// The descheduler serves its metrics with a certificate it makes itself at start,
		// which nothing can verify; the operator sends it nothing, and takes only numbers.
		TLSClientConfig:   &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: true}, //nolint:gosec // see above
		DisableKeepAlives: true,
	}, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, pod := range target.pods {
		if pod.unreadable != "" {
			unread = append(unread, fmt.Sprintf("the metrics of pod %s: %s", pod.name, pod.unreadable))
			continue
		}
		reading, err := deschedmetrics.Scrape(ctx, scraper, pod.url, string(pod.uid), w.now())
		if err != nil {
			unread = append(unread, fmt.Sprintf("the metrics of pod %s: %v", pod.name, err))
			continue
		}
		readings = append(readings, reading)
	}
	var nodeUse map[string]float64
	if target.prometheus != "" {
		var err error
		if nodeUse, err = metricsprobe.NodeUse(ctx, target.httpClient, target.prometheus, target.token, target.query); err != nil {
			unread = append(unread, err.Error())
		}
	}

	w.mu.Lock()
	watched, found := w.watched[key]
	if !found || watched.target.mode != target.mode || watched.target.query != target.query || watched.target.prometheus != target.prometheus ||
		watched.target.token != target.token {
		w.mu.Unlock()
		return
	}
	for _, reading := range readings {
		_ = watched.history.Add(reading) // an older reading than one kept is dropped
	}
	activity := report.DeschedulerActivity{Read: len(readings) > 0 || watched.activity.Read, Summary: watched.history.Summarize(w.now()), NodeUse: nodeUse,
		Unread: strings.Join(unread, "; ")}
	watched.activity, watched.looked = activity, true
	changed := fingerprint(activity) != watched.reported
	watched.reported = fingerprint(activity)
	w.mu.Unlock()
	if changed {
		w.finished(key)
	}
}

func (w *DeschedulerWatcher) now() time.Time {
	if w.Now == nil {
		return time.Now()
	}
	return w.Now()
}
