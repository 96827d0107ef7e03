package main

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// unrelatedNamespaces hold the ConfigMaps and Secrets the operator has no business
	// with, unrelatedPerKind of each kind in all.
	unrelatedNamespaces = 20
	unrelatedPerKind    = 20000
	unrelatedSize       = 1024
	// memorySettle is how long the operator is left at rest before its memory is read:
	// watch events arrive and the Go runtime returns some of what it freed.
	memorySettle = 10 * time.Second
)

// runMemory measures a fresh operator's memory with schedulers to keep, then again once
// the cluster holds many ConfigMaps and Secrets that are none of its business.
func runMemory(ctx context.Context, e *env) (*section, error) {
	s := &section{
		name:  "memory",
		title: fmt.Sprintf("%d schedulers, then %d unrelated ConfigMaps and Secrets", steadyCount, 2*unrelatedPerKind),
		what: fmt.Sprintf("Runs %d BinPacking SecondarySchedulers in one namespace (pods Ready without a process, podrunner --fake-ready) and restarts the operator, "+
			"which finds them all at its start: first allowed that namespace only (--scheduler-namespaces), as an installation of them would be, "+
			"then allowed the %d namespaces of all the benchmarks, to measure what each namespace allowed costs. "+
			"Then creates %d ConfigMaps and %d Secrets of %d bytes each in %d namespaces "+
			"where the operator runs no scheduler.", steadyCount, len(e.namespaces), unrelatedPerKind, unrelatedPerKind, unrelatedSize, unrelatedNamespaces),
		how: fmt.Sprintf("The operator's resident memory (VmRSS, /proc/PID/status) once it is at rest (nothing queued, no reconcile for %v) "+
			"and %v more, and again %v after the last unrelated object was created; its Go heap in use (go_memstats_heap_inuse_bytes) alongside.",
			quietFor, memorySettle, memorySettle),
	}
	if err := e.steadySchedulers(ctx); err != nil {
		return s, err
	}
	// First as an installation of 100 schedulers in one namespace runs: the operator
	// allowed that namespace only. It watches each kind of the schedulers' objects in
	// every namespace it is allowed, so the benchmarks' other namespaces would add their
	// watches' cost to what is measured; that cost is measured second, on its own.
	if err := e.startOperator(ctx, e.operatorBinary, []string{steadyNamespace}); err != nil {
		return s, err
	}
	withSchedulers, err := e.sampleAtRest(ctx)
	if err != nil {
		return s, err
	}
	// Read after the sample: the forced collection would lower the RSS it reads. A
	// baseline binary from before --pprof-bind-address has no profile to read.
	liveMiB := math.NaN()
	if e.pprofURL != "" {
		live, err := e.readLiveHeap(ctx, "memory-operator")
		if err != nil {
			return s, err
		}
		liveMiB = float64(live.bytes) / mebibyte
		s.notes = append(s.notes, fmt.Sprintf("The heap profile is kept as %s in the output directory: "+
			"`go tool pprof -sample_index=inuse_space -top` on it names what holds the live heap (%d objects).", filepath.Base(live.path), live.objects))
	}
	if err := e.useOperator(ctx, e.operatorBinary, true); err != nil {
		return s, err
	}
	everywhere, err := e.sampleAtRest(ctx)
	if err != nil {
		return s, err
	}
	logf("memory: creating %d unrelated ConfigMaps and Secrets", 2*unrelatedPerKind)
	createStarted := time.Now()
	if err := e.createUnrelated(ctx); err != nil {
		return s, err
	}
	createTook := time.Since(createStarted)
	if err := sleep(ctx, memorySettle); err != nil {
		return s, err
	}
	withUnrelated, err := e.sampleOperator(ctx)
	if err != nil {
		return s, err
	}
	heap := func(sample operatorSample) float64 {
		return sample.metrics.sum("go_memstats_heap_inuse_bytes", nil) / mebibyte
	}
	perNamespace := math.NaN()
	if others := len(e.namespaces) - 1; others > 0 {
		perNamespace = (everywhere.memory.rss - withSchedulers.memory.rss) / float64(others) / mebibyte
	}
	s.rows = []row{
		{figure: fmt.Sprintf("RSS with %d schedulers", steadyCount), values: []float64{withSchedulers.memory.rss / mebibyte}, unit: unitMiB, target: below(64), before: "74 MB",
			ifMissed: "Most of the RSS is not the schedulers': the binary's own pages (client-go, controller-runtime, kyaml and the API types they " +
				"register) and the Go runtime's, while the live heap after a forced collection is smaller (see the rows below). " +
				"The rest is garbage of the start, when 100 schedulers are reconciled at once, that the runtime has not yet collected or returned to the system."},
		{figure: fmt.Sprintf("RSS with %d schedulers: anonymous (RssAnon: heap, stacks)", steadyCount), values: []float64{withSchedulers.memory.anon / mebibyte}, unit: unitMiB},
		{figure: fmt.Sprintf("RSS with %d schedulers: file-backed (RssFile: the binary's pages)", steadyCount), values: []float64{withSchedulers.memory.file / mebibyte}, unit: unitMiB},
		{figure: fmt.Sprintf("Go heap in use with %d schedulers", steadyCount), values: []float64{heap(withSchedulers)}, unit: unitMiB},
		{figure: fmt.Sprintf("Go runtime's memory from the OS with %d schedulers (go_memstats_sys_bytes)", steadyCount),
			values: []float64{withSchedulers.metrics.sum("go_memstats_sys_bytes", nil) / mebibyte}, unit: unitMiB},
		{figure: fmt.Sprintf("Go heap live with %d schedulers, after a forced collection (inuse_space of a heap profile)", steadyCount),
			values: []float64{liveMiB}, unit: unitMiB},
		{figure: fmt.Sprintf("RSS with %d schedulers, the operator allowed %d namespaces", steadyCount, len(e.namespaces)),
			values: []float64{everywhere.memory.rss / mebibyte}, unit: unitMiB},
		{figure: "RSS per namespace allowed beyond the first (its watches of the schedulers' kinds)", values: []float64{perNamespace}, unit: unitMiB},
		{figure: "RSS after the unrelated objects", values: []float64{withUnrelated.memory.rss / mebibyte}, unit: unitMiB},
		{figure: "RSS growth", values: []float64{(withUnrelated.memory.rss - everywhere.memory.rss) / mebibyte}, unit: unitMiB, target: below(5), before: "none"},
		{figure: "peak RSS (VmHWM) since the second start", values: []float64{withUnrelated.memory.peakRSS / mebibyte}, unit: unitMiB},
		{figure: "Go heap in use after the unrelated objects", values: []float64{heap(withUnrelated)}, unit: unitMiB},
	}
	s.notes = append(s.notes, fmt.Sprintf("Creating the %d unrelated objects took %v.", 2*unrelatedPerKind, createTook.Round(time.Second)))
	return s, e.deleteUnrelated(ctx)
}

// sampleAtRest waits until the steady schedulers are all Available and the operator is
// at rest, and samples it memorySettle later.
func (e *env) sampleAtRest(ctx context.Context) (operatorSample, error) {
	if err := e.waitAllAvailable(ctx, steadyNamespace, steadyCount, 5*time.Minute); err != nil {
		return operatorSample{}, err
	}
	if err := e.waitQuiet(ctx, 5*time.Minute); err != nil {
		return operatorSample{}, err
	}
	if err := sleep(ctx, memorySettle); err != nil {
		return operatorSample{}, err
	}
	return e.sampleOperator(ctx)
}

func unrelatedNamespace(i int) string { return fmt.Sprintf("bench-unrelated-%02d", i) }

// createUnrelated creates the ConfigMaps and Secrets, spread over their namespaces.
func (e *env) createUnrelated(ctx context.Context) error {
	for i := range unrelatedNamespaces {
		if err := e.createNamespace(ctx, unrelatedNamespace(i)); err != nil {
			return err
		}
	}
	payload := strings.Repeat("x", unrelatedSize)
	objects := make(chan int, 2*unrelatedPerKind)
	for i := range 2 * unrelatedPerKind {
		objects <- i
	}
	close(objects)
	return forEachParallel(ctx, 16, objects, func(i int) error {
		meta := metav1.ObjectMeta{Namespace: unrelatedNamespace(i % unrelatedNamespaces), Name: fmt.Sprintf("unrelated-%05d", i/2)}
		var err error
		if i%2 == 0 {
			err = e.client.Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"payload": payload}})
		} else {
			err = e.client.Create(ctx, &corev1.Secret{ObjectMeta: meta, Data: map[string][]byte{"payload": []byte(payload)}})
		}
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return err
	})
}

// deleteUnrelated deletes the unrelated namespaces and waits until they are gone, so that
// the namespace controller's work does not weigh on what runs next.
func (e *env) deleteUnrelated(ctx context.Context) error {
	if e.lastRun {
		return nil
	}
	for i := range unrelatedNamespaces {
		err := e.client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: unrelatedNamespace(i)}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return e.poll(ctx, 10*time.Minute, "the unrelated namespaces are gone", func() (bool, error) {
		list := &corev1.NamespaceList{}
		if err := e.client.List(ctx, list); err != nil {
			return false, err
		}
		for _, namespace := range list.Items {
			if strings.HasPrefix(namespace.Name, "bench-unrelated-") {
				return false, nil
			}
		}
		return true, nil
	})
}
