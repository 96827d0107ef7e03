package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/secondary-scheduler/secondary-scheduler-operator/api/v1"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/ownership"
	"github.com/secondary-scheduler/secondary-scheduler-operator/internal/tenancy"
)

// writer is the write side of a reconcile: but for status (internal/statusapply, the last
// stage) and Events, the reconciler changes the cluster through its methods alone, each a
// named step:
//
//   - apply (apply.go): the scheduler's objects, then the pruning of those it no longer has;
//   - credentials and keepToken (credentials.go): the metrics token, requested and kept;
//   - stopScheduler and deleteChildren (stop.go, children.go): a scheduler's objects
//     deleted, only those provably its own;
//   - pruneRecordingRules (prunerules.go): its PrometheusRules no longer wanted;
//   - startAddingFinalizer and removeFinalizer (here and finalizer.go): the SecondaryScheduler's finalizer.
//
// The read stages are made from readers alone and never see it (readStages,
// TestReadStagesGetNoWriter). It is a type of this package rather than a package of its
// own because the kinds of children (children.go) are shared with the cache's scope, the
// watches and the OrphanSweeper.
type writer struct {
	// Client writes, and reads the scheduler's objects from the cache.
	client.Client
	// APIReader reads what the cache does not hold, or may not hold yet: objects outside
	// a SecondaryScheduler's namespace, the metrics token's Secret and ServiceAccount, the
	// managed fields of an object someone else edited.
	APIReader client.Reader
	// Recorder tells in Events what an apply wrote back of someone else's edits.
	Recorder events.EventRecorder
	// Tenancy says in which namespaces the operator may read (deleteChildren).
	Tenancy tenancy.Policy
	// owned proves, when a create answers AlreadyExists, whose the object is: the
	// ownership check's reading half (internal/ownership, readers only).
	owned *ownership.Checker
	// now is the reconciler's time, for metrics tokens.
	now func() time.Time
}

// addFinalizer adds the operator's finalizer to cr (finalizer.go).
func (r *writer) addFinalizer(ctx context.Context, cr *v1.SecondaryScheduler) error {
	return addFinalizer(ctx, r.Client, cr, Finalizer)
}

// startAddingFinalizer starts adding the operator's finalizer to a copy of cr, in the
// background; the returned patch is awaited with wait, which gives cr its result.
func (r *writer) startAddingFinalizer(ctx context.Context, cr *v1.SecondaryScheduler) *finalizerPatch {
	patch := &finalizerPatch{done: make(chan struct{}), patched: cr.DeepCopy()}
	go func() {
		defer close(patch.done)
		patch.err = r.addFinalizer(ctx, patch.patched)
	}()
	return patch
}

// finalizerPatch is the finalizer being added to a SecondaryScheduler while the first of
// its objects are written. Only the objects that cr's owner reference cannot bring down
// with it (needsFinalizer) must wait for it: were cr deleted before the finalizer is
// there, the garbage collector deletes the others. Every write goes through
// applyIfChanged, which waits for it before writing such an object (landed), so a new
// object or a new step that writes one waits without being told to. A nil patch is a
// finalizer that was already there.
type finalizerPatch struct {
	done    chan struct{}
	patched *v1.SecondaryScheduler
	err     error
}

// landed waits for the patch and returns its error; goroutines of a wave may call it
// together.
func (p *finalizerPatch) landed() error {
	if p == nil {
		return nil
	}
	<-p.done
	if p.err != nil {
		return fmt.Errorf("add finalizer: %w", p.err)
	}
	return nil
}

// wait waits for the patch and gives cr its finalizers and resourceVersion. Only the
// reconcile that started the patch calls it, with no write of its own in flight, and
// before it writes cr (status) again: cr's resourceVersion is then still the patch's.
func (p *finalizerPatch) wait(cr *v1.SecondaryScheduler) error {
	if err := p.landed(); err != nil || p == nil {
		return err
	}
	cr.Finalizers, cr.ResourceVersion = p.patched.Finalizers, p.patched.ResourceVersion
	return nil
}

// needsFinalizer reports whether object must not be created before cr's finalizer is
// there: an object cluster-scoped or in another namespace, which cr's owner reference
// cannot bring down, so that only the finalizer deletes it.
func needsFinalizer(cr *v1.SecondaryScheduler, object client.Object) bool {
	return object.GetNamespace() != cr.Namespace
}

// removeFinalizer removes the operator's finalizer from cr (finalizer.go).
func (r *writer) removeFinalizer(ctx context.Context, cr *v1.SecondaryScheduler) error {
	return removeFinalizer(ctx, r.Client, cr, Finalizer)
}
